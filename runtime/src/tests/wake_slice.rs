//! The wake slice (HOS_WAKE_SLICE_US, docs/switches.md): the OS layer's pair (ask, read back)
//! on the OS the tests run on, then what the runtime asks for each guest thread, when it asks
//! again, and what a thread leaving gets back.
//!
//! Where the OS reports slices (Linux 6.12 and later), every expectation is read back from
//! the kernel; where it does not (older kernels, the std fallback), the runtime must say the
//! OS ignored each ask, and nothing else changes.

use crate::context;
use crate::role::Role;
use crate::runtime::Runtime;
use crate::sys::{self, ThreadClock};
use crate::thread::ThreadRecord;
use crate::Builder;
use std::sync::Arc;

use super::common::{alone, record, with_env, Messages};

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

/// Whether this build on this OS gives threads custom slices: Linux 6.12 or later (read from
/// the kernel's own release string, not through the OS layer under test), not the fallback
/// nor the Windows simulation (Windows has no slices).
fn os_has_slices() -> bool {
    if cfg!(any(
        not(target_os = "linux"),
        hos_force_fallback,
        hos_winsim
    )) {
        return false;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let version = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    version >= (6, 12)
}

#[test]
fn the_os_takes_a_slice_where_it_has_them() {
    let has = os_has_slices();
    on_thread(move |tid| {
        let default = sys::wake_slice_ns(tid);
        assert_eq!(default.is_some(), has, "the default slice is reported");
        assert_eq!(sys::set_wake_slice(tid, SLICE_NS), has, "taken");
        if has {
            assert_eq!(sys::wake_slice_ns(tid), Some(SLICE_NS));
            let child = on_thread(sys::wake_slice_ns);
            assert_eq!(child, default, "a thread it starts begins at the default");
            assert!(sys::set_wake_slice(tid, 0), "back to the default");
        }
        assert_eq!(sys::wake_slice_ns(tid), default);
    });
    // No such thread: refused, never a panic.
    assert!(!sys::set_wake_slice(u64::from(i32::MAX as u32), SLICE_NS));
    assert_eq!(sys::wake_slice_ns(u64::from(i32::MAX as u32)), None);
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
    let rec = record(rt, name, priority);
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
    let os = os_has_slices();
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
    let os = os_has_slices();
    let rt = runtime(&[("HOS_WAKE_SLICE_PRIORITY", "30")]);
    let (inside, after) = guest(&rt, "Loader", 31, move |rt, rec, tid| {
        assert_eq!(asked(tid), None, "31 is worse than 30");
        rt.set_priority(rec, 30);
        assert_eq!(asked(tid).is_some(), os, "at 30");
        rt.set_priority(rec, 20);
        assert_eq!(
            asked(tid).is_some(),
            os,
            "at 20: the same slice, not asked again"
        );
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
        rt.set_role(rec, Role::Serial);
        assert_eq!(asked(tid).is_some(), os, "serial by role");
        rt.rename_thread(rec, "Loader Pool");
        assert_eq!(asked(tid).is_some(), os, "a rename keeps an explicit role");
        rt.set_role(rec, Role::Auto);
        assert_eq!(asked(tid), None, "its name decides again");
        rt.set_priority(rec, 10);
    });
    assert_eq!((inside, after), (false, false), "left with the default");
    let s = rt.stats();
    assert_eq!(
        s.wake_slices + s.wake_slices_ignored,
        4,
        "four asks of a slice"
    );
    assert_eq!(s.wake_slices > 0, os);
    rt.shutdown();
}

#[test]
fn what_the_os_did_is_logged_once() {
    if !alone("tests::wake_slice::what_the_os_did_is_logged_once") {
        return;
    }
    let log = Arc::new(Messages(Default::default()));
    tracing::subscriber::set_global_default(log.clone()).unwrap();
    let rt = runtime(&[]);
    for name in ["MainThread", "Presentation Thread", "Job"] {
        guest(&rt, name, 44, |_, _, _| {});
    }
    rt.shutdown();
    let lines = log.0.lock().unwrap().clone();
    let said: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("wake slice: the OS"))
        .collect();
    let verb = if os_has_slices() { "took" } else { "ignored" };
    assert_eq!(said.len(), 1, "{lines:?}");
    assert!(
        said[0].starts_with(&format!(
            "wake slice: the OS {verb} 300000 ns for MainThread"
        )),
        "{said:?}"
    );
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
