//! Each thread's cache of its recent lookups in the handle table ([`with_object`]), so that a
//! call on an object it used lately takes neither the table's process-wide lock nor a
//! reference count: four shared read-modify-writes a lookup, which two threads calling on
//! the same handles pass between their processors at every call.
//!
//! Invariant: an entry is used only while the table's count of closes is the one the cache
//! read when it last emptied itself, so a handle closed before a lookup begins (anything
//! that orders the close before it) is never found here; and entries are replaced or
//! dropped only by their own thread while none of them is lent out, so an object lent to a
//! call outlives the call. A lookup made while another is lent out on the same thread (a
//! callback inside a call) goes to the table.
//!
//! The price: an object whose handle was closed stays alive in a thread's cache until that
//! thread's next lookup (or its exit), so only objects whose drop nobody can see are kept
//! ([`cacheable`]).

use super::{closes, get_object, Handle, HandleObject};
use crate::result::ResultCode;
use std::cell::{Cell, RefCell};

/// Entries a thread keeps: the one a handle may sit in is chosen by its low bits (its slot
/// in the table, so handles made one after another do not collide).
const WAYS: usize = 8;

struct Cache {
    /// The table's count of closes when the entries were last emptied.
    closes: Cell<u64>,
    /// Lookups lent out of the entries now (calls in progress on this thread).
    lent: Cell<u32>,
    entries: RefCell<[Option<(Handle, HandleObject)>; WAYS]>,
}

std::thread_local! {
    static CACHE: Cache = const {
        Cache {
            closes: Cell::new(0),
            lent: Cell::new(0),
            entries: RefCell::new([const { None }; WAYS]),
        }
    };
}

/// Whether a thread's cache may keep `o` past the close of its handle: only what a late
/// drop cannot change (kernel events, host objects that say so; not a guest thread, not a
/// waitable of unknown kind, such as a timer event, whose drop stops its timer).
fn cacheable(o: &HandleObject) -> bool {
    match o {
        HandleObject::WritableEvent(_) | HandleObject::ReadableEvent(_) => true,
        HandleObject::Host(h) => h.cacheable(),
        HandleObject::Waitable(_) | HandleObject::Thread(_) => false,
    }
}

/// Gives a lookup back when dropped (unwinding included).
struct Lent<'a>(&'a Cell<u32>);

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

/// Runs `f` on what `h` names, lent from the calling thread's cache if it holds `h` and no
/// handle was closed since it emptied itself, else looked up in the table (and kept, where
/// [`cacheable`]).
///
/// # Errors
/// InvalidHandle for a handle that is not open (then `f` is not called).
pub(crate) fn with_object<R>(
    h: Handle,
    f: impl FnOnce(&HandleObject) -> R,
) -> Result<R, ResultCode> {
    let mut f = Some(f);
    match CACHE.try_with(|c| c.with(h, closes(), &mut f)) {
        Ok(Some(out)) => out,
        // This thread's cache is torn down (its exit), or lent out (a callback): the table.
        _ => {
            let o = get_object(h)?;
            Ok(f.take().expect("not called")(&o))
        }
    }
}

impl Cache {
    /// `f` on `h`'s object from the entries (looked up and kept first if missing), taking
    /// `f` out; `None`, leaving `f`, while another lookup is lent out.
    fn with<R, F: FnOnce(&HandleObject) -> R>(
        &self,
        h: Handle,
        closes: u64,
        f: &mut Option<F>,
    ) -> Option<Result<R, ResultCode>> {
        if self.lent.get() > 0 {
            return None;
        }
        let f = f.take().expect("not called");
        // Lent from here on: an entry dropped below may run anything, a lookup of this
        // thread's included, which then goes to the table and leaves the entries alone.
        self.lent.set(1);
        let _lent = Lent(&self.lent);
        if self.closes.get() != closes {
            self.closes.set(closes);
            drop(self.entries.take());
        }
        let way = h.0 as usize % WAYS;
        let hit = matches!(&self.entries.borrow()[way], Some((k, _)) if *k == h);
        if !hit {
            let o = match get_object(h) {
                Ok(o) => o,
                Err(e) => return Some(Err(e)),
            };
            if !cacheable(&o) {
                return Some(Ok(f(&o)));
            }
            let old = self.entries.borrow_mut()[way].replace((h, o));
            drop(old);
        }
        let entries = self.entries.borrow();
        let (_, o) = entries[way]
            .as_ref()
            .expect("kept above, and nothing else replaces it");
        Some(Ok(f(o)))
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
