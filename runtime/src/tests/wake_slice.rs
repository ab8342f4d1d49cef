//! The wake slice (HOS_WAKE_SLICE_US, docs/switches.md): the OS layer's pair (ask, read back)
//! on the OS the tests run on, then what the runtime asks for each guest thread, when it asks
//! again, and what a thread leaving gets back.
//!
//! Where the OS reports slices (Linux 6.12 and later), every expectation is read back from
//! the kernel; where it does not (older kernels, the std fallback), the runtime must say the
//! OS ignored each ask, and nothing else changes.

use crate::context;
use crate::runtime::Runtime;
use crate::sys::{self, ThreadClock};
use crate::thread::{ThreadRecord, ThreadSpec};
use crate::Builder;
use std::sync::Arc;

use super::common::with_env;

const SLICE_NS: u64 = 300_000;

/// A runtime without virtual cores, its other switches from `vars`.
fn runtime(vars: &[(&str, &str)]) -> Runtime {
    let mut vars = vars.to_vec();
    vars.push(("HOS_VCORES", "0"));
    with_env(&vars).build().expect("valid config")
}

/// Runs `f` on a fresh OS thread with its OS id.
fn on_thread<T: Send + 'static>(f: impl FnOnce(u64) -> T + Send + 'static) -> T {
    std::thread::spawn(move || f(ThreadClock::current().tid()))
        .join()
        .expect("test thread")
}

#[test]
fn the_os_takes_a_slice_or_says_it_did_not() {
    on_thread(|tid| {
        let default = sys::wake_slice_ns(tid);
        let took = sys::set_wake_slice(tid, SLICE_NS);
        match sys::wake_slice_ns(tid) {
            Some(ns) if took => {
                assert_eq!(ns, SLICE_NS);
                let child = on_thread(sys::wake_slice_ns);
                assert_eq!(child, default, "a thread it starts begins at the default");
                assert!(sys::set_wake_slice(tid, 0), "back to the default");
                assert_eq!(sys::wake_slice_ns(tid), default);
            }
            now => {
                assert!(!took, "took it but reads back {now:?}");
                assert_eq!(now, default, "an ignored ask changed the slice");
            }
        }
    });
    // No such thread: refused, never a panic.
    assert!(!sys::set_wake_slice(u64::from(i32::MAX as u32), SLICE_NS));
    assert_eq!(sys::wake_slice_ns(u64::from(i32::MAX as u32)), None);
}

/// Whether the OS reports a slice for a thread (else every ask is ignored).
fn reports() -> bool {
    on_thread(|tid| sys::set_wake_slice(tid, SLICE_NS))
}

/// The slice the calling thread has now, as `Some(SLICE_NS)` or `None` (anything else).
fn asked(tid: u64) -> Option<u64> {
    sys::wake_slice_ns(tid).filter(|&ns| ns == SLICE_NS)
}

/// A guest thread of `rt` named `name` at `priority` that runs `f` with its record; returns
/// whether it had the slice inside, and whether it had it after it left.
fn guest(
    rt: &Runtime,
    name: &str,
    priority: u8,
    f: impl FnOnce(&Runtime, &Arc<ThreadRecord>, u64) + Send + 'static,
) -> (bool, bool) {
    let rec = rt.register_thread(&ThreadSpec {
        name: name.into(),
        priority,
        core_mask: 0b11_1111,
        ideal_core: 0,
    });
    let rt = rt.clone();
    on_thread(move |tid| {
        let inside = {
            let _ctx = context::enter(&rt, rec.clone());
            let had = asked(tid).is_some();
            f(&rt, &rec, tid);
            had
        };
        (inside, asked(tid).is_some())
    })
}

#[test]
fn the_chain_asks_and_worse_threads_do_not() {
    let os = reports();
    let rt = runtime(&[]);
    assert_eq!(
        guest(&rt, "Job", 44, |_, _, _| {}),
        (os, false),
        "priority 44"
    );
    assert_eq!(
        guest(&rt, "Job", 0, |_, _, _| {}),
        (os, false),
        "priority 0"
    );
    assert_eq!(guest(&rt, "Job", 45, |_, _, _| {}), (false, false), "45");
    assert_eq!(
        guest(&rt, "MainThread", 63, |_, _, _| {}),
        (os, false),
        "serial at 63"
    );
    let s = rt.stats();
    let (took, ignored) = if os { (3, 0) } else { (0, 3) };
    assert_eq!((s.wake_slices, s.wake_slices_ignored), (took, ignored));
    rt.shutdown();
}

#[test]
fn a_priority_or_role_change_asks_again() {
    let os = reports();
    let rt = runtime(&[("HOS_WAKE_SLICE_PRIORITY", "30")]);
    let (inside, after) = guest(&rt, "Loader", 31, move |rt, rec, tid| {
        assert_eq!(asked(tid), None, "31 is worse than 30");
        rt.set_priority(rec, 30);
        assert_eq!(asked(tid).is_some(), os, "at 30");
        rt.set_priority(rec, 50);
        assert_eq!(asked(tid), None, "at 50");
        rt.rename_thread(rec, "Presentation Loader");
        assert_eq!(asked(tid).is_some(), os, "serial");
        // Another thread changes it: the ask names the thread, not the caller.
        let (rt2, rec2) = (rt.clone(), rec.clone());
        std::thread::spawn(move || rt2.rename_thread(&rec2, "Loader"))
            .join()
            .unwrap();
        assert_eq!(asked(tid), None, "renamed back by another thread");
        rt.set_priority(rec, 10);
    });
    assert_eq!((inside, after), (false, false), "left with the default");
    let s = rt.stats();
    assert_eq!(
        s.wake_slices + s.wake_slices_ignored,
        3,
        "three asks of a slice"
    );
    assert_eq!(s.wake_slices > 0, os);
    rt.shutdown();
}

#[test]
fn off_asks_nothing() {
    let rt = runtime(&[("HOS_WAKE_SLICE_US", "0")]);
    assert_eq!(guest(&rt, "MainThread", 0, |_, _, _| {}), (false, false));
    let s = rt.stats();
    assert_eq!((s.wake_slices, s.wake_slices_ignored), (0, 0));
    rt.shutdown();
    let code = Builder::<Runtime>::new()
        .wake_slice_us(100)
        .wake_slice_priority(63)
        .resolve()
        .unwrap();
    let p = crate::policy::Policy::new(&code, Some(4));
    assert_eq!(p.wake_slice_ns(63, false), 100_000);
}
