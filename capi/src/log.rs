//! The log sink: hos's warnings, errors and notices (escape reports, guest panics, the boot
//! line, HOS_SLEEP_LOG and HOS_TLS_TRACE lines) into the host's logger, through a `tracing`
//! subscriber that forwards each event to a C function.
//!
//! Invariant: the sink (function and user pointer) is read as one value under its own lock
//! and copied out, and the host's function is called after that lock is released; hos itself
//! logs with none of its locks held. The reactor thread never calls into the host: what it
//! logs waits in a bounded queue ([`HELD`]) for the next message another thread logs. With no
//! sink set, every callsite is disabled here (`Interest::never`): notices cost hos nothing,
//! and warnings and errors, which nothing here takes then, go to stderr (the runtime's
//! `report` decides, the same way for Rust and C hosts; HOS_LOG_STDERR=0 turns it off).

use crate::boundary::{entry, Error};
use crate::result::{hos_result, HOS_RESULT_INVALID_STATE};
use hos_rs::internal::{lock, read, write};
use hos_rs::report;
use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CString};
use std::sync::{Mutex, OnceLock, RwLock};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

/// A log level: `HOS_LOG_ERROR` .. `HOS_LOG_INFO` reach the sink.
pub type hos_log_level = u32;
/// Something failed.
pub const HOS_LOG_ERROR: hos_log_level = 1;
/// Something a host should look at: a virtual-core escape, a guest thread that panicked, a
/// shutdown that left threads behind.
pub const HOS_LOG_WARN: hos_log_level = 2;
/// A notice: the runtime started (with its calibration), the policy chosen, HOS_SLEEP_LOG and
/// HOS_TLS_TRACE lines.
pub const HOS_LOG_INFO: hos_log_level = 3;

/// One message, as the sink receives it. The strings are valid during the call only.
#[repr(C)]
#[derive(Debug)]
pub struct hos_log_record {
    /// `sizeof(hos_log_record)` of the library: fields past your header's are unknown to you.
    pub size: u32,
    /// `HOS_LOG_ERROR`, `HOS_LOG_WARN` or `HOS_LOG_INFO`.
    pub level: hos_log_level,
    /// Where it comes from ("hos_runtime::vcore", "hos::sleep"), NUL-terminated.
    pub target: *const c_char,
    /// The message, then its fields as ` key=value`, NUL-terminated.
    pub message: *const c_char,
}

/// The host's logger: called with the `user` pointer given to `hos_set_log_sink` and one
/// record, from whichever thread logs (never the reactor thread, never under a lock of hos).
/// It may call hos.
pub type hos_log_sink =
    Option<unsafe extern "C" fn(user: *mut c_void, record: *const hos_log_record)>;

#[derive(Clone, Copy)]
struct Sink {
    f: unsafe extern "C" fn(*mut c_void, *const hos_log_record),
    /// The host's pointer, kept as an integer: hos never reads what it points to.
    user: usize,
}

static SINK: RwLock<Option<Sink>> = RwLock::new(None);

/// Whether [`Forward`] is the process's tracing subscriber (set once, on the first sink).
static INSTALLED: OnceLock<bool> = OnceLock::new();

/// The reactor thread's name: it never calls the host.
const REACTOR: &str = "hos-reactor";

/// Messages the reactor thread logged, waiting for another thread's message; past
/// [`HELD_MAX`] the oldest is dropped.
static HELD: Mutex<VecDeque<Message>> = Mutex::new(VecDeque::new());
const HELD_MAX: usize = 64;

fn sink() -> Option<Sink> {
    *read(&SINK)
}

/// A formatted event, owned.
struct Message {
    level: hos_log_level,
    target: CString,
    text: CString,
}

impl Message {
    fn of(event: &Event<'_>) -> Message {
        let meta = event.metadata();
        let level = match *meta.level() {
            Level::ERROR => HOS_LOG_ERROR,
            Level::WARN => HOS_LOG_WARN,
            _ => HOS_LOG_INFO,
        };
        Message {
            level,
            target: c_string(meta.target()),
            text: c_string(&report::text(event)),
        }
    }

    fn deliver(&self, sink: Sink) {
        let record = hos_log_record {
            size: std::mem::size_of::<hos_log_record>() as u32,
            level: self.level,
            target: self.target.as_ptr(),
            message: self.text.as_ptr(),
        };
        // SAFETY: the host's function with its own pointer and a record valid for the call.
        unsafe { (sink.f)(sink.user as *mut c_void, &record) }
    }
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// The subscriber that forwards events to the sink. Spans are not followed.
struct Forward;

impl Subscriber for Forward {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        match self.enabled(meta) {
            true => Interest::always(),
            false => Interest::never(),
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        meta.is_event() && *meta.level() <= Level::INFO && sink().is_some()
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(match sink() {
            Some(_) => LevelFilter::INFO,
            None => LevelFilter::OFF,
        })
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let message = Message::of(event);
        if std::thread::current().name() == Some(REACTOR) {
            let mut held = lock(&HELD);
            if held.len() == HELD_MAX {
                held.pop_front();
            }
            held.push_back(message);
            return;
        }
        let Some(sink) = sink() else { return };
        let held = std::mem::take(&mut *lock(&HELD));
        for m in held.iter().chain(std::iter::once(&message)) {
            m.deliver(sink);
        }
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Sends hos's log messages (levels `HOS_LOG_ERROR` to `HOS_LOG_INFO`) to `sink`, called with
/// `user`; NULL stops it. The first non-NULL sink makes hos's forwarder the process's
/// `tracing` subscriber. With no sink (and no `tracing` subscriber of a Rust part of the host),
/// warnings and errors are written to stderr, one line each starting `hos: `, unless the
/// newest runtime was built with HOS_LOG_STDERR=0; notices are dropped.
///
/// Errors: InvalidState if another `tracing` subscriber already is the process's (a Rust
/// part of the host installed one: hos logs there instead).
///
/// # Safety
/// `sink` is NULL or a function that may be called from any thread until the sink is changed;
/// `user` is whatever it expects.
#[no_mangle]
pub unsafe extern "C" fn hos_set_log_sink(sink: hos_log_sink, user: *mut c_void) -> hos_result {
    entry(|| {
        let new = sink.map(|f| Sink {
            f,
            user: user as usize,
        });
        if new.is_some() {
            let installed =
                *INSTALLED.get_or_init(|| tracing::subscriber::set_global_default(Forward).is_ok());
            if !installed {
                return Err(Error::new(
                    HOS_RESULT_INVALID_STATE,
                    "another tracing subscriber is the process's default: hos logs there",
                ));
            }
        }
        *write(&SINK) = new;
        // Callsites re-ask `register_callsite`: always with a sink, never without.
        tracing::callsite::rebuild_interest_cache();
        Ok(())
    })
}
