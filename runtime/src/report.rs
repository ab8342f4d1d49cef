//! Where hos's warnings and errors go: to the `tracing` subscriber that takes them, else to
//! stderr.
//!
//! Invariant: no warning or error of hos goes nowhere unless the host said so. Each one goes
//! through [`warn!`](crate::warn) or [`error!`](crate::error), and [`emit`] decides, once per
//! event: the current `tracing` subscriber gets it if it is enabled for it (a host's
//! subscriber, or the C log sink's forwarder while a sink is set); otherwise it is written to
//! stderr as one line, `hos: <message> <field>=<value>...` (`hos: error: ...` for an error),
//! unless stderr is turned off (HOS_LOG_STDERR=0 or `Builder::log_stderr(false)`: the newest
//! runtime built decides, for the whole process; on until one says otherwise). Notices
//! (`info`) never reach stderr.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Level, Metadata, Subscriber};

/// Whether warnings no subscriber takes are written to stderr.
static STDERR: AtomicBool = AtomicBool::new(true);

/// Turns the stderr fallback on or off for the process (the newest runtime built decides).
pub(crate) fn set_stderr(on: bool) {
    // Relaxed: a lone flag; nothing else is published with it.
    STDERR.store(on, Ordering::Relaxed);
}

/// Sends one event: `event` (a `tracing` macro call) runs under the current subscriber if
/// `heard` (the callsite's `enabled!` for it), else under the stderr writer if stderr is on,
/// else not at all. The one place that decides; the macros only gather the callsite's answer.
pub fn emit(heard: bool, event: impl FnOnce()) {
    // Relaxed: a lone flag; nothing else is published with it.
    let to_stderr = STDERR.load(Ordering::Relaxed);
    if heard {
        event();
    } else if to_stderr {
        tracing::dispatcher::with_default(stderr(), event);
    }
}

/// The stderr writer, as a dispatcher (made once; it stays registered with `tracing`).
fn stderr() -> &'static Dispatch {
    static STDERR_DISPATCH: OnceLock<Dispatch> = OnceLock::new();
    STDERR_DISPATCH.get_or_init(|| Dispatch::new(Stderr))
}

/// Writes warning and error events to stderr, one line each (a message's own newlines kept).
struct Stderr;

impl Subscriber for Stderr {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        match self.enabled(meta) {
            true => Interest::always(),
            false => Interest::never(),
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        meta.is_event() && *meta.level() <= Level::WARN
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::WARN)
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let kind = match *event.metadata().level() {
            Level::ERROR => "error: ",
            _ => "",
        };
        // A write error is ignored: stderr is where a failure would be told.
        let _ = writeln!(std::io::stderr().lock(), "hos: {kind}{}", text(event));
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// An event as text: its message, then its other fields as ` key=value` (the C log sink's
/// records are written so too).
pub fn text(event: &Event<'_>) -> String {
    let mut line = Line::default();
    event.record(&mut line);
    line.message + &line.fields
}

/// An event's message and its other fields, as they are visited.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message.push_str(value),
            name => {
                let _ = write!(self.fields, " {name}={value}");
            }
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => {
                let _ = write!(self.message, "{value:?}");
            }
            name => {
                let _ = write!(self.fields, " {name}={value:?}");
            }
        }
    }
}

/// A warning of hos (what `tracing::warn!` takes): to the `tracing` subscriber that takes it,
/// else to stderr (the runtime's `report` module decides).
#[doc(hidden)]
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => {
        $crate::internal::report::emit(
            $crate::internal::tracing::enabled!(
                kind: $crate::internal::tracing::metadata::Kind::EVENT,
                $crate::internal::tracing::Level::WARN
            ),
            || $crate::internal::tracing::warn!($($arg)+),
        )
    };
}

/// An error of hos (what `tracing::error!` takes): to the `tracing` subscriber that takes it,
/// else to stderr (the runtime's `report` module decides).
#[doc(hidden)]
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => {
        $crate::internal::report::emit(
            $crate::internal::tracing::enabled!(
                kind: $crate::internal::tracing::metadata::Kind::EVENT,
                $crate::internal::tracing::Level::ERROR
            ),
            || $crate::internal::tracing::error!($($arg)+),
        )
    };
}
