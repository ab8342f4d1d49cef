use crate::log::{hos_log_record, hos_set_log_sink, HOS_LOG_WARN};
use crate::object::{hos_handle, HOS_CURRENT_THREAD};
use crate::result::HOS_RESULT_SUCCESS;
use crate::runtime::{hos_runtime, hos_runtime_free, hos_runtime_shutdown};
use crate::stats::hos_stats;
use crate::svc::hos_svc_set_thread_priority;
use crate::thread::{hos_thread_join, hos_thread_params, hos_thread_spawn};
use hos_rs::internal::lock;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// What the sink saw: (level, message, the thread it was called on).
struct Seen {
    rt: *mut hos_runtime,
    records: Mutex<Vec<(u32, String, Option<String>)>>,
}

unsafe extern "C" fn sink(user: *mut c_void, record: *const hos_log_record) {
    // SAFETY: `user` is the test's `Seen`, alive while the sink is set; the record and its
    // strings are valid during the call.
    let (seen, record) = unsafe { (&*(user as *const Seen), &*record) };
    // SAFETY: as above.
    let message = unsafe { CStr::from_ptr(record.message) }
        .to_string_lossy()
        .into_owned();
    let thread = std::thread::current().name().map(str::to_string);
    if message.contains("HOS_VCORE_ESCAPE_MS") {
        // Calls that take the virtual cores' and the runtime's locks: they would deadlock if
        // the sink were called under either.
        let mut stats = hos_stats {
            size: std::mem::size_of::<hos_stats>() as u32,
            ..hos_stats::default()
        };
        // SAFETY: the test's runtime, alive; a valid out-pointer.
        unsafe {
            assert_eq!(
                hos_svc_set_thread_priority(HOS_CURRENT_THREAD, 20),
                HOS_RESULT_SUCCESS
            );
            assert_eq!(
                crate::stats::hos_stats_get(seen.rt, &mut stats),
                HOS_RESULT_SUCCESS
            );
        }
    }
    let mut records = lock(&seen.records);
    records.push((record.level, message, thread));
}

static SPIN: AtomicBool = AtomicBool::new(true);
static STARTED: AtomicBool = AtomicBool::new(false);

/// Holds the one virtual core without a checkpoint until told to stop.
unsafe extern "C-unwind" fn spinner(_: *mut c_void) {
    STARTED.store(true, Ordering::Release);
    while SPIN.load(Ordering::Acquire) {
        std::hint::spin_loop();
    }
}

/// Runs once it escaped past the spinner: stops it.
unsafe extern "C-unwind" fn escaper(_: *mut c_void) {
    SPIN.store(false, Ordering::Release);
}

fn spawn(
    rt: *mut hos_runtime,
    name: &CStr,
    f: unsafe extern "C-unwind" fn(*mut c_void),
    arg: *mut c_void,
) -> hos_handle {
    let p = hos_thread_params {
        size: std::mem::size_of::<hos_thread_params>() as u32,
        name: name.as_ptr(),
        priority: 44,
        ideal_core: 0,
        core_mask: 1,
        role: 0,
    };
    let mut h = 0;
    // SAFETY: the live runtime, valid params and out-pointer.
    assert_eq!(
        unsafe { hos_thread_spawn(rt, &p, Some(f), arg, &mut h) },
        HOS_RESULT_SUCCESS
    );
    h
}

fn messages(seen: &Seen) -> Vec<(u32, String, Option<String>)> {
    lock(&seen.records).clone()
}

#[test]
fn the_sink_gets_escapes_outside_every_lock_and_never_on_the_reactor() {
    let rt = super::runtime(&[("HOS_CORES", "1"), ("HOS_VCORE_ESCAPE_MS", "1")]);
    let seen: &'static Seen = Box::leak(Box::new(Seen {
        rt,
        records: Mutex::new(Vec::new()),
    }));
    let user = seen as *const Seen as *mut c_void;
    // SAFETY: `sink` may run on any thread; `seen` lives for the process.
    assert_eq!(
        unsafe { hos_set_log_sink(Some(sink), user) },
        HOS_RESULT_SUCCESS
    );

    // An escape: the spinner holds the one core without a checkpoint; the escaper waits 1 ms
    // for it, runs anyway, and logs who held the core. Watched: a sink called under the
    // virtual cores' lock would deadlock here.
    let (done, finished) = mpsc::channel();
    let rt_addr = rt as usize;
    std::thread::spawn(move || {
        let rt = rt_addr as *mut hos_runtime;
        let a = spawn(rt, c"Spinner", spinner, std::ptr::null_mut());
        while !STARTED.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        let b = spawn(rt, c"Escaper", escaper, std::ptr::null_mut());
        assert_eq!(hos_thread_join(b, -1), HOS_RESULT_SUCCESS);
        assert_eq!(hos_thread_join(a, -1), HOS_RESULT_SUCCESS);
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the escape and the sink's calls into hos finished (no deadlock)");
    let escape = messages(seen)
        .into_iter()
        .find(|(_, m, _)| m.contains("HOS_VCORE_ESCAPE_MS"))
        .expect("the escape was logged to the sink");
    assert_eq!(escape.0, HOS_LOG_WARN);
    assert!(
        escape.1.contains("Spinner"),
        "names the holder: {}",
        escape.1
    );
    assert_eq!(
        escape.2.as_deref(),
        Some("Escaper"),
        "on the thread that escaped"
    );

    // What the reactor thread logs waits for another thread's message.
    std::thread::Builder::new()
        .name("hos-reactor".into())
        .spawn(|| tracing::warn!("logged on the reactor"))
        .expect("thread")
        .join()
        .expect("joined");
    let on_reactor = |m: &str| messages(seen).into_iter().find(|(_, x, _)| x.contains(m));
    assert_eq!(
        on_reactor("logged on the reactor"),
        None,
        "not delivered on the reactor"
    );
    tracing::warn!("logged on a host thread");
    let held = on_reactor("logged on the reactor").expect("delivered with the next message");
    assert_ne!(held.2.as_deref(), Some("hos-reactor"));
    assert!(messages(seen)
        .iter()
        .all(|(_, _, t)| t.as_deref() != Some("hos-reactor")));

    // SAFETY: NULL stops the sink.
    assert_eq!(
        unsafe { hos_set_log_sink(None, std::ptr::null_mut()) },
        HOS_RESULT_SUCCESS
    );
    tracing::warn!("logged with no sink");
    assert_eq!(on_reactor("logged with no sink"), None);
    // SAFETY: the test's runtime, freed once.
    unsafe {
        assert_eq!(hos_runtime_shutdown(rt, -1), HOS_RESULT_SUCCESS);
        hos_runtime_free(rt);
    }
}
