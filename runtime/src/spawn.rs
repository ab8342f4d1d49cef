//! How the runtime starts its own threads (the reactor, the calibration's helper, the
//! watchdog): through a [`Spawn`] function it is handed, so that a test can play an OS that
//! refuses a thread.
//!
//! Invariant: no thread of the runtime is started any other way, and a refusal comes back as
//! the OS's `io::Error`, never a panic: the caller turns it into a build error naming the
//! thread, with nothing left running.

use std::io;
use std::thread::JoinHandle;

/// Starts a thread named `name` that runs `f`; the OS's refusal as an error.
pub(crate) type Spawn =
    fn(name: &'static str, f: Box<dyn FnOnce() + Send>) -> io::Result<JoinHandle<()>>;

/// The OS's threads, through std.
pub(crate) fn os(name: &'static str, f: Box<dyn FnOnce() + Send>) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name.into()).spawn(f)
}
