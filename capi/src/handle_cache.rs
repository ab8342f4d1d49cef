//! Each thread's cache of the objects its C calls looked up by handle, so that a call on an
//! object it used lately finds it without the handle table's process-wide lock and without
//! counting a reference: both are writes to memory the other threads write too (a lock word,
//! an object's reference count), four of them a C call, which the threads of a ping-pong
//! passed between their processors, four calls a round trip.
//!
//! Invariant: an entry is used only while the table's count of closes
//! (`hos_rs::internal::handle_closes`) still reads what it read before the entry's lookup. So
//! a handle closed before a call began is never found here: it is InvalidHandle, as from the
//! table. A call takes its entry out and puts it back after ([`Lent`]): the cache is never
//! borrowed while an object is used (a wait blocks, a host callback may call back in), and a
//! call made meanwhile on the same handle looks it up in the table. A closed object lives on
//! in each thread's cache until that thread's next C call sees the count move, or until the
//! thread exits: only objects whose drop does nothing but free memory are kept
//! ([`lend`]'s `keep`).

use hos_rs::internal::handle_closes;
use hos_rs::svc::{self, Handle, HandleObject, HostObject};
use hos_rs::ResultCode;
use std::cell::RefCell;
use std::sync::Arc;

/// Objects a thread keeps: a ping-pong's two events, with room for a queue and a lock.
const ENTRIES: usize = 4;

type Entry = Option<(u32, Arc<dyn HostObject>)>;

/// One thread's entries, of the table as it stood at `closes` closes.
struct Cache {
    closes: u64,
    /// The entry the next put fills if no entry is free.
    next: usize,
    entries: [Entry; ENTRIES],
}

impl Cache {
    /// Makes the cache one of `closes` closes; the entries of an older count are returned, to
    /// be dropped once the cache is no longer borrowed.
    fn renew(&mut self, closes: u64) -> Option<[Entry; ENTRIES]> {
        (self.closes != closes).then(|| {
            self.closes = closes;
            std::mem::take(&mut self.entries)
        })
    }

    /// Takes out the object of handle `h`, if there is one.
    fn take(&mut self, h: u32) -> Option<Arc<dyn HostObject>> {
        let entry = self
            .entries
            .iter_mut()
            .find(|e| matches!(e, Some((k, _)) if *k == h))?;
        entry.take().map(|(_, object)| object)
    }

    /// Keeps `object` for `h` in a free entry, else in place of the oldest put; gives back the
    /// object it replaced.
    fn put(&mut self, h: u32, object: Arc<dyn HostObject>) -> Entry {
        let i = match self.entries.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                let i = self.next;
                self.next = (i + 1) % ENTRIES;
                i
            }
        };
        self.entries[i].replace((h, object))
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = const {
        RefCell::new(Cache {
            closes: 0,
            next: 0,
            entries: [const { None }; ENTRIES],
        })
    };
}

/// A host object taken out of the calling thread's cache, or looked up in the table, for one
/// call ([`lend`]); put back into the cache on drop if `keep` says it may be.
pub(crate) struct Lent {
    h: u32,
    /// The table's close count read before the object was found.
    closes: u64,
    object: Option<Arc<dyn HostObject>>,
    keep: fn(&dyn HostObject) -> bool,
}

/// What a handle names, for a call on a host object.
pub(crate) enum Named {
    /// A host object, lent for the call.
    Host(Lent),
    /// Something else (a guest thread, a kernel event).
    Other,
}

/// The object `h` names: from the calling thread's cache, else from the table. `keep` says
/// which host objects the cache may keep (those whose drop only frees memory).
pub(crate) fn lend(h: u32, keep: fn(&dyn HostObject) -> bool) -> Result<Named, ResultCode> {
    let closes = handle_closes();
    // A thread whose thread-locals are gone (a C call from a destructor at its exit)
    // looks up in the table.
    let found = CACHE.try_with(|c| {
        let mut c = c.borrow_mut();
        let stale = c.renew(closes);
        (c.take(h), stale)
    });
    let object = match found {
        Ok((Some(object), _)) => object,
        // Dropped here, the cache no longer borrowed: an object's drop may do anything.
        Ok((None, _)) | Err(_) => match svc::handle_object(Handle(h))? {
            HandleObject::Host(object) => object,
            _ => return Ok(Named::Other),
        },
    };
    Ok(Named::Host(Lent {
        h,
        closes,
        object: Some(object),
        keep,
    }))
}

impl Lent {
    /// The object.
    pub(crate) fn object(&self) -> &dyn HostObject {
        self.object.as_deref().expect("taken only on drop")
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let Some(object) = self.object.take() else {
            return;
        };
        // Not kept if a close came since the lookup (it may have been this handle's), nor in
        // a cache that a call made during this one renewed.
        if !(self.keep)(&*object) || handle_closes() != self.closes {
            return;
        }
        let replaced = CACHE.try_with(|c| {
            let mut c = c.borrow_mut();
            (c.closes == self.closes).then(|| c.put(self.h, object))
        });
        // Dropped after the borrow ends, as in `lend`.
        drop(replaced);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Thing(u32);

    impl HostObject for Thing {
        fn waitable(&self) -> Option<&dyn hos_rs::os::Waitable> {
            None
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    fn thing(o: &dyn HostObject) -> u32 {
        o.as_any().downcast_ref::<Thing>().expect("a Thing").0
    }

    fn lend_host(h: Handle) -> Lent {
        match lend(h.0, |_| true).expect("open") {
            Named::Host(lent) => lent,
            Named::Other => panic!("not a host object"),
        }
    }

    fn cached(h: Handle) -> bool {
        CACHE.with(|c| c.borrow().entries.iter().flatten().any(|(k, _)| *k == h.0))
    }

    #[test]
    fn a_lookup_is_kept_and_found_again_without_the_table() {
        let object: Arc<dyn HostObject> = Arc::new(Thing(7));
        let h = svc::create_handle(object.clone()).expect("a handle");
        assert_eq!(thing(lend_host(h).object()), 7);
        assert!(cached(h), "kept after the call");
        // The table's entry, this test's and the cache's.
        assert_eq!(Arc::strong_count(&object), 3);
        let lent = lend_host(h);
        assert!(!cached(h), "taken out while lent");
        assert_eq!(Arc::strong_count(&object), 3, "taken out, not cloned");
        drop(lent);
        svc::close_handle(h).expect("open");
    }

    #[test]
    fn a_closed_handle_is_not_found_in_the_cache() {
        let object: Arc<dyn HostObject> = Arc::new(Thing(8));
        let h = svc::create_handle(object.clone()).expect("a handle");
        drop(lend_host(h));
        assert!(cached(h));
        svc::close_handle(h).expect("open");
        assert!(
            matches!(lend(h.0, |_| true), Err(ResultCode::INVALID_HANDLE)),
            "closed"
        );
        assert!(!cached(h), "the cache renewed");
        assert_eq!(Arc::strong_count(&object), 1, "the object let go");
    }

    #[test]
    fn a_close_during_a_call_keeps_the_object_out_of_the_cache() {
        let h = svc::create_handle(Arc::new(Thing(9)) as Arc<dyn HostObject>).expect("a handle");
        let lent = lend_host(h);
        svc::close_handle(h).expect("open");
        assert_eq!(thing(lent.object()), 9, "the object lives on for the call");
        drop(lent);
        assert!(!cached(h), "looked up before the close: not kept");
    }

    #[test]
    fn what_keep_refuses_is_not_kept_and_the_oldest_entry_makes_room() {
        let h = svc::create_handle(Arc::new(Thing(1)) as Arc<dyn HostObject>).expect("a handle");
        match lend(h.0, |_| false).expect("open") {
            Named::Host(lent) => drop(lent),
            Named::Other => panic!("a host object"),
        }
        assert!(!cached(h), "refused");
        let hs: Vec<Handle> = (0..=ENTRIES as u32)
            .map(|i| svc::create_handle(Arc::new(Thing(i)) as Arc<dyn HostObject>).unwrap())
            .collect();
        for &h in &hs {
            drop(lend_host(h));
        }
        assert!(hs[1..].iter().all(|&h| cached(h)), "the newest kept");
        assert!(!cached(hs[0]), "the oldest replaced");
        for h in hs.into_iter().chain([h]) {
            svc::close_handle(h).expect("open");
        }
    }

    #[test]
    fn a_kernel_event_is_named_other() {
        let (write, read) = svc::create_event().expect("handles");
        assert!(matches!(lend(write.0, |_| true), Ok(Named::Other)));
        assert!(!cached(write));
        svc::close_handle(write).expect("open");
        svc::close_handle(read).expect("open");
    }
}
