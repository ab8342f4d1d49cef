use crate::boundary::{self, entry, entry_or, Versioned};
use crate::event::{hos_event_create, hos_event_signal, hos_event_wait};
use crate::result::*;
use crate::runtime::{hos_runtime_free, hos_runtime_shutdown};
use crate::stats::hos_stats;
use crate::thread::hos_thread_params;
use hos_rs::ResultCode;
use std::ffi::CStr;
use std::mem::size_of;

fn last_error() -> String {
    // SAFETY: a static or thread-local string, read before the next failing call.
    unsafe { CStr::from_ptr(hos_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_panic_is_an_internal_error_and_hos_stays_usable() {
    let rt = super::runtime(&[]);
    assert_eq!(
        entry(|| panic!("boom in a call")),
        HOS_RESULT_INTERNAL_ERROR
    );
    assert!(last_error().contains("boom in a call"), "{}", last_error());
    assert_eq!(
        entry_or(7, || panic!("boom")),
        7,
        "a value call gives its fallback"
    );
    let mut ev = 0;
    // SAFETY: a valid out-pointer; the runtime is shut down and freed once.
    unsafe {
        assert_eq!(hos_event_create(1, &mut ev), HOS_RESULT_SUCCESS);
        assert_eq!(hos_event_signal(ev), HOS_RESULT_SUCCESS);
        assert_eq!(
            hos_event_wait(ev, 0),
            HOS_RESULT_SUCCESS,
            "usable after the panic"
        );
        assert_eq!(hos_runtime_shutdown(rt, -1), HOS_RESULT_SUCCESS);
        hos_runtime_free(rt);
    }
}

#[test]
fn codes_are_the_rust_apis_and_each_has_its_name() {
    let kernel = [
        (
            HOS_RESULT_TERMINATION_REQUESTED,
            ResultCode::TERMINATION_REQUESTED,
        ),
        (HOS_RESULT_INVALID_ADDRESS, ResultCode::INVALID_ADDRESS),
        (HOS_RESULT_OUT_OF_HANDLES, ResultCode::OUT_OF_HANDLES),
        (
            HOS_RESULT_INVALID_CURRENT_MEMORY,
            ResultCode::INVALID_CURRENT_MEMORY,
        ),
        (HOS_RESULT_INVALID_PRIORITY, ResultCode::INVALID_PRIORITY),
        (HOS_RESULT_INVALID_CORE_ID, ResultCode::INVALID_CORE_ID),
        (HOS_RESULT_INVALID_HANDLE, ResultCode::INVALID_HANDLE),
        (
            HOS_RESULT_INVALID_COMBINATION,
            ResultCode::INVALID_COMBINATION,
        ),
        (HOS_RESULT_TIMED_OUT, ResultCode::TIMED_OUT),
        (HOS_RESULT_CANCELLED, ResultCode::CANCELLED),
        (HOS_RESULT_OUT_OF_RANGE, ResultCode::OUT_OF_RANGE),
        (
            HOS_RESULT_INVALID_ENUM_VALUE,
            ResultCode::INVALID_ENUM_VALUE,
        ),
        (HOS_RESULT_INVALID_STATE, ResultCode::INVALID_STATE),
    ];
    for (ours, rust) in kernel {
        assert_eq!(ours, rust.0);
        assert_eq!(Some(name(ours).to_str().unwrap()), rust.name(), "{rust:?}");
    }
    for (code, module, description) in [
        (HOS_RESULT_INVALID_SIZE, 1, 101),
        (HOS_RESULT_INVALID_POINTER, 1, 115),
        (HOS_RESULT_INTERNAL_ERROR, 511, 1),
        (HOS_RESULT_UNKNOWN_KEY, 511, 2),
        (HOS_RESULT_INVALID_VALUE, 511, 3),
        (HOS_RESULT_INVALID_UTF8, 511, 4),
        (HOS_RESULT_ABANDONED, 511, 5),
    ] {
        assert_eq!(code, module | description << 9, "{code:#x}");
        assert_ne!(name(code).to_str(), Ok("Unknown"), "{code:#x}");
    }
    // SAFETY: static strings.
    let named = |r| {
        unsafe { CStr::from_ptr(hos_result_name(r)) }
            .to_str()
            .unwrap()
    };
    assert_eq!(named(0xEA01), "TimedOut");
    assert_eq!(named(0xDEAD), "Unknown");
}

/// A second version of `hos_thread_params`, with a field added at the end.
#[repr(C)]
#[derive(Clone, Copy)]
struct ParamsV2 {
    v1: hos_thread_params,
    added: u64,
}

// SAFETY: repr(C), the size first (v1's), zero valid.
unsafe impl Versioned for ParamsV2 {
    const FIRST_SIZE: usize = size_of::<hos_thread_params>();
}

#[test]
fn structs_grow_both_ways() {
    // A caller built against version 1 handing its struct to a library of version 2: the
    // added field reads 0.
    let v1 = hos_thread_params {
        size: size_of::<hos_thread_params>() as u32,
        name: std::ptr::null(),
        priority: 44,
        ideal_core: -2,
        core_mask: 0x3f,
    };
    // SAFETY: `v1` is readable for its size; ParamsV2 reads only `size` bytes of it.
    let read =
        unsafe { boundary::read_sized((&v1 as *const hos_thread_params).cast::<ParamsV2>(), "p") };
    let read = read.expect("a first version is accepted");
    assert_eq!(
        (read.v1.priority, read.v1.core_mask, read.added),
        (44, 0x3f, 0)
    );
    // A size below the first version's is refused.
    let short = hos_thread_params { size: 8, ..v1 };
    // SAFETY: readable.
    let err = unsafe { boundary::read_sized(&short, "p") }.unwrap_err();
    assert_eq!(err.code, HOS_RESULT_INVALID_SIZE);

    // A caller built against an older, shorter hos_stats (here: 16 bytes, the size, the
    // thread count and one u64) gets the prefix it knows; nothing past it is touched.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Short(hos_stats);
    // SAFETY: repr(C) over hos_stats: the size first, zero valid.
    unsafe impl Versioned for Short {
        const FIRST_SIZE: usize = 16;
    }
    #[repr(C, align(8))]
    struct Buf([u8; size_of::<hos_stats>() + 8]);
    let mut buf = Buf([0xAA; size_of::<hos_stats>() + 8]);
    buf.0[..4].copy_from_slice(&16u32.to_ne_bytes());
    let stats = hos_stats {
        threads: 3,
        ..hos_stats::default()
    };
    let out = buf.0.as_mut_ptr().cast::<Short>();
    // SAFETY: 16 bytes writable at an 8-aligned address.
    unsafe { boundary::write_sized(out, &Short(stats), "out") }.expect("written");
    assert_eq!(u32::from_ne_bytes(buf.0[4..8].try_into().unwrap()), 3);
    assert_eq!(
        u32::from_ne_bytes(buf.0[..4].try_into().unwrap()),
        16,
        "size kept"
    );
    assert!(
        buf.0[16..].iter().all(|b| *b == 0xAA),
        "nothing past the caller's size"
    );
}

#[test]
fn the_svc_constants_are_hoss() {
    use crate::arbiter::*;
    use hos_rs::svc::{self, ArbitrationType, SignalType};
    assert_eq!(HOS_MUTEX_WAITERS, svc::WAITERS);
    assert_eq!(
        crate::svc::HOS_INFO_TYPE_THREAD_TICK_COUNT,
        svc::INFO_TYPE_THREAD_TICK_COUNT
    );
    for (ours, theirs) in [
        (
            HOS_ARBITRATION_WAIT_IF_LESS_THAN,
            ArbitrationType::WaitIfLessThan,
        ),
        (
            HOS_ARBITRATION_DECREMENT_AND_WAIT_IF_LESS_THAN,
            ArbitrationType::DecrementAndWaitIfLessThan,
        ),
        (HOS_ARBITRATION_WAIT_IF_EQUAL, ArbitrationType::WaitIfEqual),
    ] {
        assert_eq!(ArbitrationType::try_from(ours), Ok(theirs));
    }
    for (ours, theirs) in [
        (HOS_SIGNAL, SignalType::Signal),
        (
            HOS_SIGNAL_AND_INCREMENT_IF_EQUAL,
            SignalType::SignalAndIncrementIfEqual,
        ),
        (
            HOS_SIGNAL_AND_MODIFY_BY_WAITING_COUNT_IF_EQUAL,
            SignalType::SignalAndModifyByWaitingCountIfEqual,
        ),
    ] {
        assert_eq!(SignalType::try_from(ours), Ok(theirs));
    }
}

#[test]
fn a_spawn_racing_the_shutdown_leaves_no_thread_in_the_runtime() {
    use crate::runtime::{hos_runtime, hos_runtime_new};
    use crate::stats::hos_stats_get;
    use crate::svc::hos_svc_close_handle;
    use crate::thread::hos_thread_spawn;
    use std::ffi::c_void;
    use std::time::{Duration, Instant};
    extern "C" fn nothing(_: *mut c_void) {}
    // Found by the C-boundary fuzzer: a spawn that the shutdown's join list missed kept its
    // thread (and its handle) in the runtime until hos_runtime_free.
    for i in 0..400u64 {
        let mut rt: *mut hos_runtime = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; NULL config.
        assert_eq!(unsafe { hos_runtime_new(std::ptr::null(), &mut rt) }, 0);
        let at = rt as usize;
        let spawner = std::thread::spawn(move || {
            let mut made = Vec::new();
            loop {
                let mut h = 0;
                // SAFETY: the runtime lives until the spawner is joined; valid pointers.
                let r = unsafe {
                    let (p, arg) = (std::ptr::null(), std::ptr::null_mut());
                    hos_thread_spawn(at as *mut hos_runtime, p, Some(nothing), arg, &mut h)
                };
                match r {
                    HOS_RESULT_SUCCESS => made.push(h),
                    _ => break made,
                }
            }
        });
        std::thread::sleep(Duration::from_micros(100 + i * 37 % 900));
        // SAFETY: the runtime is live; shut down, then freed once below.
        assert_eq!(unsafe { hos_runtime_shutdown(rt, -1) }, HOS_RESULT_SUCCESS);
        for h in spawner.join().expect("the spawner") {
            assert_eq!(hos_svc_close_handle(h), HOS_RESULT_SUCCESS);
        }
        let mut s = hos_stats {
            size: size_of::<hos_stats>() as u32,
            ..hos_stats::default()
        };
        let start = Instant::now();
        // A thread's record goes with its OS thread's end: allow it a moment.
        loop {
            // SAFETY: a live runtime and a valid struct.
            assert_eq!(unsafe { hos_stats_get(rt, &mut s) }, HOS_RESULT_SUCCESS);
            if s.threads == 0 || start.elapsed() > Duration::from_secs(2) {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(s.threads, 0, "a guest thread left in the shut-down runtime");
        // SAFETY: shut down above; freed once.
        unsafe { hos_runtime_free(rt) };
    }
}
