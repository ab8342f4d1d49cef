//! The C functions a program calls, one entry each: its name, the error codes its doc
//! promises, and the call with arguments drawn by the context. A new function of hos.h is
//! one line here (`call!`), with a new draw in `ctx` if it takes a new kind of argument.
//!
//! The runtime's and the config's lifecycle (`hos_config_*`, `hos_runtime_new`,
//! `hos_runtime_free`) are the case driver's (`super::case`): they happen once a case.
//!
//! Invariant: an entry's codes are those its function's doc lists under "Errors" (the
//! checks in `World::record` hold every code returned to them); Success is always allowed
//! unless a required pointer was bad.

use super::ctx::{Ctx, Kind};
use crate::activity::*;
use crate::arbiter::*;
use crate::attach::*;
use crate::barrier::*;
use crate::condvar::*;
use crate::event::*;
use crate::kernel_event::*;
use crate::log::{hos_log_record, hos_set_log_sink, HOS_LOG_ERROR, HOS_LOG_INFO};
use crate::mutex::*;
use crate::queue::*;
use crate::result::*;
use crate::role::*;
use crate::runtime::{hos_host_sleep, hos_runtime_cores, hos_runtime_shutdown};
use crate::rwlock::*;
use crate::semaphore::*;
use crate::stats::{hos_stats_get, hos_stats_threads};
use crate::svc::*;
use crate::thread::{hos_thread_join, hos_thread_spawn};
use crate::tick::*;
use crate::timer_event::*;
use crate::trace::hos_frame_mark;
use hos_rs::internal::lock;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// One C function as a program calls it.
pub struct Call {
    /// Its C name.
    pub name: &'static str,
    /// The error codes its doc lists.
    pub codes: &'static [hos_result],
    /// The call, with arguments drawn from the context; its code (0 for a function with no
    /// result: what it gives is checked inside).
    pub run: fn(&mut Ctx) -> hos_result,
}

/// An entry calling `$f` with the arguments drawn by the expressions after `|c|`, in order.
macro_rules! call {
    (unsafe $f:ident, $codes:expr, |$c:ident| $($arg:expr),* $(,)?) => {
        Call {
            name: stringify!($f),
            codes: $codes,
            // SAFETY: every pointer the context draws is NULL, misaligned into its own
            // buffers, or valid for the call (ctx's module invariant).
            run: |$c| unsafe { $f($($arg),*) },
        }
    };
    ($f:ident, $codes:expr, |$c:ident| $($arg:expr),* $(,)?) => {
        Call { name: stringify!($f), codes: $codes, run: |$c| $f($($arg),*) }
    };
}

const P: hos_result = HOS_RESULT_INVALID_POINTER;
const H: hos_result = HOS_RESULT_INVALID_HANDLE;
const TO: hos_result = HOS_RESULT_TIMED_OUT;
const C: hos_result = HOS_RESULT_CANCELLED;
const R: hos_result = HOS_RESULT_OUT_OF_RANGE;
const S: hos_result = HOS_RESULT_INVALID_STATE;
const E: hos_result = HOS_RESULT_INVALID_ENUM_VALUE;
const A: hos_result = HOS_RESULT_INVALID_ADDRESS;
const M: hos_result = HOS_RESULT_INVALID_CURRENT_MEMORY;
const CREATE: &[hos_result] = &[P, HOS_RESULT_OUT_OF_HANDLES];
/// A wait's: a positive timeout with no runtime alive to time it is InvalidState.
const WAIT: &[hos_result] = &[H, TO, C, S];
/// Thread parameters' errors (spawn and attach).
const PARAMS: &[hos_result] = &[
    P,
    HOS_RESULT_INVALID_SIZE,
    HOS_RESULT_INVALID_UTF8,
    HOS_RESULT_INVALID_PRIORITY,
    HOS_RESULT_INVALID_CORE_ID,
    HOS_RESULT_INVALID_COMBINATION,
    HOS_RESULT_INVALID_ENUM_VALUE,
    HOS_RESULT_OUT_OF_HANDLES,
    S,
];

/// The entry of a thread spawned by a program: a short guest sleep, `arg` ns long.
extern "C-unwind" fn brief(arg: *mut c_void) {
    hos_svc_sleep_thread(arg as i64 % 200_000);
}

/// Records the log sink received, and what was wrong with them.
static SINK_RECORDS: AtomicU64 = AtomicU64::new(0);
static SINK_BAD: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The programs' log sink: checks each record (size, level, two strings).
extern "C" fn sink(_user: *mut c_void, record: *const hos_log_record) {
    // Relaxed: a counter.
    SINK_RECORDS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: hos passes a record valid for the call, or NULL (a finding).
    let bad = match unsafe { record.as_ref() } {
        None => Some("a NULL record".to_string()),
        Some(r) if r.size as usize != std::mem::size_of::<hos_log_record>() => {
            Some(format!("a record of size {}", r.size))
        }
        Some(r) if !(HOS_LOG_ERROR..=HOS_LOG_INFO).contains(&r.level) => {
            Some(format!("a record of level {}", r.level))
        }
        Some(r) if r.target.is_null() || r.message.is_null() => {
            Some("a record with a NULL string".to_string())
        }
        Some(r) => {
            // SAFETY: NUL-terminated strings valid for the call (the sink's contract);
            // reading them through is what the sanitizer checks.
            let _ = unsafe { (CStr::from_ptr(r.target), CStr::from_ptr(r.message)) };
            None
        }
    };
    if let Some(bad) = bad {
        lock(&SINK_BAD).push(format!("the log sink got {bad}"));
    }
}

/// What was wrong with the records the sink got since the last call.
pub(crate) fn sink_findings() -> Vec<String> {
    std::mem::take(&mut *lock(&SINK_BAD))
}

/// A string function's result: never NULL, readable.
fn string(c: &mut Ctx, what: &str, s: *const std::ffi::c_char) -> hos_result {
    match s.is_null() {
        true => c.world.finding(format!("{what} gave NULL")),
        // SAFETY: a static or thread-local string, read at once.
        false => drop(unsafe { CStr::from_ptr(s) }.to_bytes().len()),
    }
    0
}

/// Every function a program calls.
pub static CALLS: &[Call] = &[
    // runtime.rs, stats.rs
    call!(unsafe hos_runtime_shutdown, &[P, TO], |c| c.rt(), c.grace()),
    call!(unsafe hos_host_sleep, &[P], |c| c.rt(), c.timeout()),
    call!(unsafe hos_runtime_cores, &[P], |c| c.rt(), c.out()),
    call!(unsafe hos_stats_get, &[P, HOS_RESULT_INVALID_SIZE], |c| c.rt(), c.stats()),
    Call {
        name: "hos_stats_threads",
        codes: &[P, HOS_RESULT_INVALID_SIZE],
        run: |c| {
            let (rt, (out, capacity)) = (c.rt(), c.thread_stats());
            // SAFETY: as in `call!`.
            unsafe { hos_stats_threads(rt, out, capacity, c.out()) }
        },
    },
    // log.rs, result.rs
    Call {
        name: "hos_set_log_sink",
        codes: &[S],
        run: |c| {
            let on = c.u32() % 2 == 1;
            // SAFETY: `sink` may be called from any thread at any time.
            unsafe { hos_set_log_sink(on.then_some(sink as _), std::ptr::null_mut()) }
        },
    },
    Call {
        name: "hos_result_name",
        codes: &[],
        run: |c| {
            let r = c.u32();
            string(c, "hos_result_name", hos_result_name(r))
        },
    },
    Call {
        name: "hos_last_error_message",
        codes: &[],
        run: |c| string(c, "hos_last_error_message", hos_last_error_message()),
    },
    // thread.rs, attach.rs
    Call {
        name: "hos_thread_spawn",
        codes: PARAMS,
        run: |c| {
            let (rt, p) = (c.rt(), c.params());
            let entry = match c.u32() % 8 {
                0 => None,
                _ => Some(brief as _),
            };
            let arg = c.u64() as *mut c_void;
            // SAFETY: as in `call!`; `brief` only reads `arg` as a number.
            unsafe { hos_thread_spawn(rt, p, entry, arg, c.out_handle()) }
        },
    },
    call!(hos_thread_join, &[H, S, TO, C], |c| c.handle(), c.timeout()),
    Call {
        name: "hos_thread_attach",
        codes: PARAMS,
        run: |c| {
            let (rt, p) = (c.rt(), c.params());
            // SAFETY: as in `call!`.
            let r = unsafe { hos_thread_attach(rt, p, c.out_handle()) };
            c.attached(r)
        },
    },
    Call {
        name: "hos_thread_detach",
        codes: &[S],
        run: |c| c.detached(hos_thread_detach()),
    },
    Call {
        name: "hos_thread_kick_flag",
        codes: &[],
        run: |c| {
            let word = hos_thread_kick_flag();
            match word.is_null() {
                true => c.world.finding("hos_thread_kick_flag gave NULL".into()),
                // SAFETY: never NULL, readable for the thread's life; read as generated
                // code reads it.
                false => drop(unsafe { word.read_volatile() }),
            }
            0
        },
    },
    // svc.rs
    Call {
        name: "hos_svc_sleep_thread",
        codes: &[],
        run: |c| {
            hos_svc_sleep_thread(c.timeout());
            0
        },
    },
    Call {
        name: "hos_checkpoint",
        codes: &[],
        run: |_| {
            hos_checkpoint();
            0
        },
    },
    call!(unsafe hos_svc_get_thread_priority, &[P, H], |c| c.handle(), c.out()),
    call!(
        hos_svc_set_thread_priority,
        &[H, HOS_RESULT_INVALID_PRIORITY],
        |c| c.handle(),
        c.priority()
    ),
    call!(unsafe hos_svc_get_thread_core_mask, &[P, H], |c| c.handle(), c.out(), c.out()),
    call!(
        hos_svc_set_thread_core_mask,
        &[
            H,
            HOS_RESULT_INVALID_CORE_ID,
            HOS_RESULT_INVALID_COMBINATION
        ],
        |c| c.handle(),
        c.i32(),
        c.u64()
    ),
    Call {
        name: "hos_svc_wait_synchronization",
        codes: &[P, R, H, TO, C, S],
        run: |c| {
            let (index, (handles, count)) = (c.out(), c.handles());
            // SAFETY: as in `call!`.
            unsafe { hos_svc_wait_synchronization(index, handles, count, c.timeout()) }
        },
    },
    Call {
        name: "hos_svc_close_handle",
        codes: &[H],
        run: |c| {
            let h = c.handle();
            let r = hos_svc_close_handle(h);
            if r == 0 {
                c.world.closed(h);
            }
            r
        },
    },
    call!(hos_svc_cancel_synchronization, &[H], |c| c.handle()),
    Call {
        name: "hos_svc_get_current_thread_handle",
        codes: &[],
        run: |c| {
            let h = hos_svc_get_current_thread_handle();
            if (h != 0) != (c.kind() == Kind::Guest) {
                let what = format!("hos_svc_get_current_thread_handle gave {h:#x}");
                c.world
                    .finding(format!("{what} on a {:?} thread", c.kind()));
            }
            0
        },
    },
    call!(unsafe hos_svc_get_thread_id, &[P, H], |c| c.handle(), c.out()),
    Call {
        name: "hos_svc_get_current_processor_number",
        codes: &[],
        run: |c| {
            let n = hos_svc_get_current_processor_number();
            if !(0..64).contains(&n) {
                let what = format!("hos_svc_get_current_processor_number gave {n}");
                c.world.finding(what);
            }
            0
        },
    },
    call!(
        unsafe hos_svc_get_info,
        &[P, E, HOS_RESULT_INVALID_COMBINATION, H, S],
        |c| match c.u32() % 2 {
            0 => HOS_INFO_TYPE_THREAD_TICK_COUNT,
            _ => c.u32(),
        },
        c.handle(),
        c.u64(),
        c.out()
    ),
    // arbiter.rs
    call!(unsafe hos_svc_arbitrate_lock, &[A, M, H, S, C], |c| c.handle(), c.word32(), c.tag()),
    call!(unsafe hos_svc_arbitrate_unlock, &[A, M], |c| c.word32()),
    call!(
        unsafe hos_svc_wait_process_wide_key_atomic,
        &[A, M, TO, S, C],
        |c| c.word32(),
        c.word32(),
        c.tag(),
        c.timeout()
    ),
    call!(unsafe hos_svc_signal_process_wide_key, &[A, M], |c| c.word32(), c.i32()),
    call!(
        unsafe hos_svc_wait_for_address,
        &[A, M, E, S, TO, C],
        |c| c.word32(),
        c.u32() % 5,
        c.i32(),
        c.timeout()
    ),
    call!(unsafe hos_svc_wait_for_address64, &[A, M, S, TO, C], |c| c.word64(), c.u64() as i64, c.timeout()),
    call!(unsafe hos_svc_signal_to_address, &[A, M, E, S], |c| c.word32(), c.u32() % 5, c.i32(), c.i32()),
    Call {
        name: "(a guest store to a word)",
        codes: &[],
        run: |c| {
            let i = c.u32() as usize % 8;
            let v = c.tag();
            let words = &c.world.words;
            // Guest code's own atomics on its words; Relaxed as a plain store is.
            let w = &words[i / 2];
            let shift = 32 * (i % 2);
            let old = w.load(Ordering::Relaxed);
            let new = old & !(0xFFFF_FFFF << shift) | u64::from(v) << shift;
            let _ = w.compare_exchange(old, new, Ordering::Relaxed, Ordering::Relaxed);
            0
        },
    },
    // kernel_event.rs
    call!(unsafe hos_svc_create_event, CREATE, |c| c.out_handle(), c.out_handle()),
    call!(hos_svc_signal_event, &[H], |c| c.handle()),
    call!(hos_svc_clear_event, &[H], |c| c.handle()),
    call!(hos_svc_reset_signal, &[S, H], |c| c.handle()),
    // event.rs, timer_event.rs
    call!(unsafe hos_event_create, CREATE, |c| c.i32(), c.out_handle()),
    call!(hos_event_signal, &[H], |c| c.handle()),
    call!(hos_event_clear, &[H], |c| c.handle()),
    call!(hos_event_wait, WAIT, |c| c.handle(), c.timeout()),
    call!(unsafe hos_timer_event_create, CREATE, |c| c.i32(), c.out_handle()),
    call!(
        hos_timer_event_start_one_shot,
        &[H, R, S, C],
        |c| c.handle(),
        c.timeout()
    ),
    call!(
        hos_timer_event_start_periodic,
        &[H, R, S, C],
        |c| c.handle(),
        c.timeout(),
        c.timeout()
    ),
    call!(hos_timer_event_stop, &[H], |c| c.handle()),
    // queue.rs, semaphore.rs
    call!(unsafe hos_queue_create, &[P, R, HOS_RESULT_OUT_OF_HANDLES], |c| c.u32(), c.out_handle()),
    call!(hos_queue_send, WAIT, |c| c.handle(), c.u64(), c.timeout()),
    call!(unsafe hos_queue_receive, &[P, H, TO, C, S], |c| c.handle(), c.out(), c.timeout()),
    call!(
        unsafe hos_semaphore_create,
        &[P, R, HOS_RESULT_OUT_OF_HANDLES],
        |c| c.u32(),
        c.u32(),
        c.out_handle()
    ),
    call!(hos_semaphore_acquire, WAIT, |c| c.handle(), c.timeout()),
    call!(hos_semaphore_release, &[H, R], |c| c.handle(), c.u32()),
    // mutex.rs, condvar.rs
    call!(unsafe hos_mutex_create, CREATE, |c| c.i32(), c.out_handle()),
    call!(
        hos_mutex_lock,
        &[H, TO, C, S, R, HOS_RESULT_ABANDONED],
        |c| c.handle(),
        c.timeout()
    ),
    call!(hos_mutex_unlock, &[H, S], |c| c.handle()),
    call!(unsafe hos_condvar_create, CREATE, |c| c.out_handle()),
    call!(
        hos_condvar_wait,
        &[H, S, TO, C, HOS_RESULT_ABANDONED],
        |c| c.handle(),
        c.handle(),
        c.timeout()
    ),
    call!(hos_condvar_signal, &[H], |c| c.handle()),
    call!(hos_condvar_broadcast, &[H], |c| c.handle()),
    // rwlock.rs, barrier.rs
    call!(unsafe hos_rwlock_create, CREATE, |c| c.out_handle()),
    call!(
        hos_rwlock_acquire_read,
        &[H, TO, C, S, R],
        |c| c.handle(),
        c.timeout()
    ),
    call!(hos_rwlock_release_read, &[H, S], |c| c.handle()),
    call!(
        hos_rwlock_acquire_write,
        &[H, TO, C, S, R],
        |c| c.handle(),
        c.timeout()
    ),
    call!(hos_rwlock_release_write, &[H, S], |c| c.handle()),
    call!(unsafe hos_rwlock_held, &[P, H], |c| c.handle(), c.out(), c.out(), c.out()),
    call!(unsafe hos_barrier_create, &[P, R, HOS_RESULT_OUT_OF_HANDLES], |c| c.u32() % 4, c.out_handle()),
    call!(hos_barrier_wait, WAIT, |c| c.handle(), c.timeout()),
    // tick.rs, activity.rs, role.rs, trace.rs
    Call {
        name: "hos_svc_get_system_tick",
        codes: &[],
        run: |_| {
            let (a, b) = (hos_svc_get_system_tick(), hos_svc_get_system_tick());
            assert!(b >= a, "the system tick went back: {a} then {b}");
            0
        },
    },
    call!(
        hos_svc_set_thread_activity,
        &[E, H, HOS_RESULT_BUSY, S, C],
        |c| c.handle(),
        c.u32() % 3
    ),
    call!(unsafe hos_pause_guests, &[P, TO, C], |c| c.rt(), c.timeout(), c.out()),
    call!(unsafe hos_resume_guests, &[P], |c| c.rt(), c.out()),
    call!(unsafe hos_thread_get_role, &[H, P], |c| c.handle(), c.out()),
    call!(hos_thread_set_role, &[H, E], |c| c.handle(), c.u32() % 6),
    call!(unsafe hos_frame_mark, &[P], |c| c.rt()),
];
