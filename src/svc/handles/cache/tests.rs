//! The cache's rules, on host objects that count their drops: a lookup is lent, not cloned,
//! and kept; a close on another thread is seen at this thread's next lookup, which lets the
//! object go; a lookup inside a lent one goes to the table; what is not cacheable (a host
//! object that does not say it is) is never kept; a panic inside a call gives its lookup
//! back; hosts borrow through `with_handle_object`; a handle not open is InvalidHandle.

use super::*;
use crate::svc::handles::{close, close_handle, insert, with_handle_object, HostObject};
use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Weak};

/// A host object that counts its drops.
struct Thing {
    drops: Arc<AtomicUsize>,
    cacheable: bool,
}

impl Drop for Thing {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

impl HostObject for Thing {
    fn waitable(&self) -> Option<&dyn crate::os::Waitable> {
        None
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn cacheable(&self) -> bool {
        self.cacheable
    }
}

/// A handle to a new thing, a weak share of it and its drop count.
fn thing(cacheable: bool) -> (Handle, Weak<dyn HostObject>, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let o: Arc<dyn HostObject> = Arc::new(Thing {
        drops: drops.clone(),
        cacheable,
    });
    let weak = Arc::downgrade(&o);
    (
        insert(HandleObject::Host(o)).expect("a free slot"),
        weak,
        drops,
    )
}

/// The address of the host object `o` names.
fn addr(o: &HandleObject) -> usize {
    match o {
        HandleObject::Host(h) => Arc::as_ptr(h) as *const () as usize,
        _ => panic!("a host object"),
    }
}

/// Whether the calling thread's cache holds an entry for `h`.
fn cached(h: Handle) -> bool {
    CACHE.with(|c| c.entries.borrow().iter().flatten().any(|(k, _)| *k == h))
}

#[test]
fn a_lookup_is_lent_and_kept_so_the_next_one_takes_no_share() {
    let (h, weak, _) = thing(true);
    let first = with_object(h, addr).unwrap();
    assert!(cached(h));
    // The table's share and the cache's; a lookup from the cache clones neither.
    assert_eq!(weak.strong_count(), 2);
    let strong = with_object(h, |_| weak.strong_count()).unwrap();
    assert_eq!(strong, 2, "lent from the cache, not cloned");
    assert_eq!(with_object(h, addr).unwrap(), first);
    close(h).unwrap();
}

#[test]
fn a_close_on_another_thread_is_seen_at_the_next_lookup_which_lets_the_object_go() {
    let (h, weak, drops) = thing(true);
    let (go, wait) = mpsc::channel::<()>();
    let (done, seen) = mpsc::channel();
    let caller = std::thread::spawn(move || {
        with_object(h, |_| ()).unwrap();
        assert!(cached(h));
        wait.recv().unwrap();
        // The close happened before (the channel orders it): the handle is gone, and the
        // cache has emptied itself.
        done.send(with_object(h, |_| ()).err()).unwrap();
        assert!(!cached(h));
        wait.recv().unwrap();
    });
    // Wait until the caller has its entry: then only its cache holds the thing besides the table.
    while weak.strong_count() < 2 {
        std::thread::yield_now();
    }
    close(h).unwrap();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "the caller's cache still holds it"
    );
    go.send(()).unwrap();
    assert_eq!(seen.recv().unwrap(), Some(ResultCode::INVALID_HANDLE));
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "let go at the caller's next lookup"
    );
    go.send(()).unwrap();
    caller.join().unwrap();
}

#[test]
fn a_lookup_inside_a_lent_one_goes_to_the_table_and_leaves_the_entries_alone() {
    let (outer, _, _) = thing(true);
    let (inner, inner_weak, _) = thing(true);
    let outer_at = with_object(outer, addr).unwrap();
    let (inner_at, still) = with_object(outer, |o| {
        let inner_at = with_object(inner, addr).unwrap();
        // Cloned out of the table for the nested call, and not kept.
        assert!(!cached(inner));
        assert_eq!(inner_weak.strong_count(), 1);
        (inner_at, addr(o))
    })
    .unwrap();
    assert_eq!(still, outer_at, "the outer lookup was left alone");
    assert_ne!(inner_at, outer_at);
    assert!(cached(outer));
    close(outer).unwrap();
    close(inner).unwrap();
}

#[test]
fn what_is_not_cacheable_is_never_kept_and_goes_at_its_close() {
    let (h, weak, drops) = thing(false);
    with_object(h, |_| ()).unwrap();
    assert!(!cached(h));
    assert_eq!(weak.strong_count(), 1);
    close(h).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_panic_inside_a_call_gives_its_lookup_back() {
    let (h, _, _) = thing(true);
    let panicked = std::panic::catch_unwind(|| with_object(h, |_| panic!("inside")));
    assert!(panicked.is_err());
    assert_eq!(CACHE.with(|c| c.lent.get()), 0);
    // Still served from the cache, and kept.
    assert!(with_object(h, |_| ()).is_ok());
    assert!(cached(h));
    close(h).unwrap();
}

/// A host object that leaves `cacheable` as the trait has it.
struct Plain;

impl HostObject for Plain {
    fn waitable(&self) -> Option<&dyn crate::os::Waitable> {
        None
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn a_host_object_that_says_nothing_is_not_kept() {
    let h = insert(HandleObject::Host(Arc::new(Plain))).expect("a free slot");
    with_object(h, |_| ()).unwrap();
    assert!(!cached(h), "cacheable is false unless the host says so");
    close(h).unwrap();
}

#[test]
fn hosts_borrow_through_with_handle_object() {
    let (h, _, _) = thing(true);
    let at = with_handle_object(h, addr).unwrap();
    assert!(cached(h), "kept by the hosts' way in too");
    assert_eq!(with_object(h, addr), Ok(at));
    // This test's thread is no guest: its pseudo-handle names nothing.
    assert_eq!(
        with_handle_object(Handle::CURRENT_THREAD, |_| ()),
        Err(ResultCode::INVALID_HANDLE)
    );
    close(h).unwrap();
}

#[test]
fn a_handle_that_is_not_open_is_invalid_and_calls_nothing() {
    let (h, _, _) = thing(true);
    close_handle(h).unwrap();
    assert_eq!(
        close_handle(h),
        Err(ResultCode::INVALID_HANDLE),
        "closed once"
    );
    for bad in [h, Handle(0), Handle(0xC000_0001), Handle::CURRENT_THREAD] {
        assert_eq!(
            with_object(bad, |_| unreachable!("not called")),
            Err(ResultCode::INVALID_HANDLE),
            "{bad:?}"
        );
    }
}
