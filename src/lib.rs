//! hos: a guest thread executor for hosts that run Horizon OS (Switch) game code natively.
//!
//! Guest threads are OS threads; every wait they make is a future blocked on through one
//! policy-driven `block_on`; one reactor thread owns every deadline; six virtual cores rank
//! guest threads by Horizon priority. See the README for the whole picture.
//!
//! A host builds a [`Runtime`] ([`RuntimeBuilder`]), spawns guest threads on it
//! ([`Runtime::thread`]), shares nn::os objects ([`os`]) between them and its own threads (each
//! object is a handle: a clone names the same object), serves svcs ([`svc`]), and shuts down:
//!
//! ```
//! use hos::os::{ClearMode, Event};
//! use std::time::Duration;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Calibration::default() pins the calibration: no boot measurement.
//!     let rt = hos::Runtime::builder()
//!         .calibration(hos::Calibration::default())
//!         .build()?;
//!     let go = Event::new(ClearMode::Auto);
//!     let worker = rt.thread().name("Worker0").priority(44).spawn({
//!         let go = go.clone(); // the same event, for the guest thread
//!         move || go.wait_timeout(Duration::from_secs(10)) // TimedOut or Cancelled, else Ok
//!     })?;
//!     go.signal(); // from the host thread
//!     assert_eq!(worker.join().expect("the guest thread did not panic"), Ok(()));
//!     rt.shutdown(); // ends every wait left, joins the guest threads
//!     Ok(())
//! }
//! ```
//!
//! # Layers
//!
//! Each file imports only files below it; `src/tests/layers.rs` holds the order and fails on
//! any other import (the checker is the one hos-runtime's and hos-capi's tests use too).
//! Leaves are the vocabulary every other part shares: `sync`, `result` ([`ResultCode`]),
//! `entry` (what every svc and nn::os call does first), `machine`, and in `svc/` the
//! [`svc::Handle`] (`handle.rs`), the arbitration types (`arbitration.rs`) and the one reading
//! of a timeout in nanoseconds ([`svc::timeout_from_ns`], `timeout.rs`). Above them the
//! one wait of every object (`os/{waiters, waiting, wait_any}`) and the arbiter's pure table
//! (`svc/arbiter/table` and its helpers), then the nn::os objects ([`os`]), then the runtime
//! ([`Runtime`] in `runtime.rs`, its guest registry, builder and shutdown), then guest threads
//! and the svcs ([`thread`], [`svc`]). The facades, this file and `svc.rs`, re-export and hold
//! no vocabulary: no file imports them.
//!
//! One knot, kept on purpose: guest threads and two parts of the svcs import each other. The
//! handle table (`svc/handles.rs`) names guest threads, and a thread makes and closes its own
//! handle there; the arbiter (`svc/arbiter/`) lends a lock waiter's priority to the owner's
//! thread, and a thread tells it when its own priority changes or it ends. Breaking it would
//! mean callbacks between the two for what is one relation; the test allows these two
//! pairs and no other.

// Denied, not forbidden: svc/arbiter/lent.rs lends a blocked waiter's mutex word to the
// arbiter (the module says why safe Rust cannot, and what keeps it sound).
#![deny(unsafe_code)]

mod builder;
mod entry;
mod guests;
pub mod machine;
pub mod os;
mod result;
mod runtime;
mod shutdown;
pub mod svc;
mod sync;
#[cfg(all(test, not(loom)))]
mod tests;
pub mod thread;

pub use builder::RuntimeBuilder;
pub use guests::{Doing, GuestState};
/// hos's warnings and errors, routed as the runtime routes its own: for the C API, not hosts.
#[doc(hidden)]
pub use hos_runtime::{error, internal::report, warn};
/// hos's C API's and its examples' share of the runtime's helpers, not for hosts: the one
/// poison-free way to take a std lock or wait on a std condition variable (hos-runtime's sync
/// module says why poison tells nothing), and the one `Duration` to nanoseconds conversion.
#[doc(hidden)]
pub mod internal {
    pub use hos_runtime::internal::{lock, nanos, read, wait, write};
}
/// The deterministic mode's parts: selectors and their switch, the virtual clock's pacing,
/// witnesses, posted events, the `.hosrec` format (docs/determinism.md).
pub use hos_runtime::det;
pub use hos_runtime::{
    Bound, Breakdown, BuildError, Calibration, Config, ConfigError, CpuTime, DetStats, Lateness,
    Node, PrecisePath, ShortSleep, SleepPath, State, Stats, ThreadStats, WaitTree, LATE_BUCKETS,
};
pub use hos_runtime::{DetVerified, VerifyError};
/// The README's Rust examples, compiled (and the runnable ones run) as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

pub use result::ResultCode;
pub use runtime::Runtime;
pub use shutdown::ShutdownReport;
