use crate::boundary::{self, entry, entry_or, TextOut, Versioned};
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
        (HOS_RESULT_IO_ERROR, 511, 6),
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
fn text_is_cut_as_snprintf_cuts_on_a_character_boundary() {
    let text = "ab\u{2514}cd"; // "└" is 3 bytes: 2..5
    let write = |size: usize| {
        let mut buf = [0x55u8; 16];
        let mut len = 0usize;
        // SAFETY: `size` <= 16 writable bytes, a writable length.
        let out = unsafe { TextOut::new(buf.as_mut_ptr().cast(), size, &mut len, "buf") };
        out.expect("checked").write(text);
        (buf, len)
    };
    for (size, kept) in [(1, 0), (3, 2), (4, 2), (5, 2), (6, 5), (8, 7), (16, 7)] {
        let (buf, len) = write(size);
        assert_eq!(len, 7, "the whole length, whatever fits");
        assert_eq!(&buf[..kept], &text.as_bytes()[..kept], "size {size}");
        assert_eq!(buf[kept], 0, "NUL-terminated at {kept} for size {size}");
        assert!(
            buf[kept + 1..].iter().all(|b| *b == 0x55),
            "nothing past it"
        );
    }
    let (buf, len) = write(0);
    assert_eq!(
        (buf[0], len),
        (0x55, 7),
        "a size of 0 writes nothing but the length"
    );
    let mut len = 9usize;
    // SAFETY: a NULL buffer with a size is refused before anything is written.
    let err = unsafe { TextOut::new(std::ptr::null_mut(), 4, &mut len, "buf") }.unwrap_err();
    assert_eq!((err.code, len), (HOS_RESULT_INVALID_POINTER, 9));
    assert_eq!(boundary::c_field::<4>("ab\u{2514}"), [b'a', b'b', 0, 0]);
}

#[test]
fn an_array_of_structs_lies_at_the_callers_stride() {
    // A caller built against a newer, 16-byte-longer hos_stats: each element is written at
    // its stride, the bytes this library lacks zeroed, the count whole.
    const STRIDE: usize = size_of::<hos_stats>() + 16;
    #[repr(C, align(8))]
    struct Buf([u8; 2 * STRIDE]);
    let mut buf = Buf([0xAA; 2 * STRIDE]);
    buf.0[..4].copy_from_slice(&(STRIDE as u32).to_ne_bytes());
    let items: Vec<hos_stats> = (1..=3)
        .map(|threads| hos_stats {
            threads,
            ..hos_stats::default()
        })
        .collect();
    let out = buf.0.as_mut_ptr().cast::<hos_stats>();
    // SAFETY: 2 elements of STRIDE writable bytes at an 8-aligned address.
    let n = unsafe { boundary::write_array(out, 2, &items, "out") }.expect("written");
    assert_eq!(n, 3, "the count, past the capacity");
    for i in 0..2 {
        let at = &buf.0[i * STRIDE..];
        assert_eq!(
            u32::from_ne_bytes(at[..4].try_into().unwrap()),
            STRIDE as u32
        );
        assert_eq!(
            u32::from_ne_bytes(at[4..8].try_into().unwrap()),
            i as u32 + 1
        );
        assert!(at[size_of::<hos_stats>()..STRIDE].iter().all(|b| *b == 0));
    }
    buf.0[..4].copy_from_slice(&(STRIDE as u32 + 4).to_ne_bytes());
    // SAFETY: as above; a stride that is not a multiple of 8 is refused before any write.
    let err = unsafe { boundary::write_array(out, 2, &items, "out") }.unwrap_err();
    assert_eq!(err.code, HOS_RESULT_INVALID_SIZE);
    // SAFETY: a capacity of 0 touches nothing, NULL included.
    let n = unsafe { boundary::write_array(std::ptr::null_mut::<hos_stats>(), 0, &items, "out") };
    assert_eq!(n.expect("a count query"), 3);
}
