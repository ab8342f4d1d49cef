//! Supervisor calls a guest thread makes: sleeps and yields, checkpoints.
//!
//! Invariant: no call here panics on any argument; bad input is counted and traced, or
//! answered with a Horizon result code where the call returns one.

use hos_runtime::context;
use hos_runtime::vcore::YieldKind;

/// svcSleepThread (0x0B): sleeps `ns` nanoseconds; `0`, `-1` and `-2` are yields; any other
/// negative value returns at once and is counted as bad input.
pub fn sleep_thread(ns: i64) {
    let Some(rt) = context::runtime() else {
        if ns > 0 {
            std::thread::sleep(std::time::Duration::from_nanos(ns as u64));
        } else {
            std::thread::yield_now();
        }
        return;
    };
    match ns {
        1.. => rt.sleep(ns as u64),
        0 | -1 | -2 => {
            hos_runtime::stats::Stats::bump(&rt.counters().yields);
            let kind = match ns {
                0 => YieldKind::SamePriority,
                -1 => YieldKind::Migrate,
                _ => YieldKind::Any,
            };
            // A yield that kept its virtual core (nobody to hand it to) yields the OS thread.
            let handed = context::thread().is_some_and(|t| rt.vcores().yield_core(&t, kind));
            if !handed {
                hos_runtime::sys::yield_now();
            }
        }
        _ => {
            hos_runtime::stats::Stats::bump(&rt.counters().bad_sleeps);
            tracing::debug!(ns, "svcSleepThread with a negative length: returns at once");
        }
    }
}

/// A point where a kicked guest thread gives its virtual core up (svc entry, nn::os calls,
/// polled loop headers).
pub fn checkpoint() {
    if let (Some(rt), Some(t)) = (context::runtime(), context::thread()) {
        rt.vcores().checkpoint(&t);
    }
}
