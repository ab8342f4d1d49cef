//! The machine the runtime runs on, as the runtime counts it: its processors, and what the
//! process spends of them.
//!
//! Invariant: [`logical_processors`] is the count the policy decides with at build (unless the
//! host pins one with `RuntimeBuilder::logical_processors`): the processors in this process's
//! affinity mask, counted once; the reference host's rules (timer sleeps at 6 or fewer, a
//! poller cap of a quarter, spin by role) are written in those terms.

/// The logical processors in this process's affinity mask; `None` where the OS cannot say.
///
/// ```
/// if let Some(n) = hos::machine::logical_processors() {
///     assert!(n >= 1);
/// }
/// ```
pub fn logical_processors() -> Option<usize> {
    hos_runtime::internal::sys::logical_processors()
}

/// Restricts every thread of the process to the first `n` processors of those it was allowed
/// at the first call (a later call may widen the mask again, up to that first one): how a
/// host (or a benchmark) emulates a smaller PC on a bigger one, the way the reference host
/// measured its rules (an affinity mask on a 16-thread CPU). Call it before building a
/// runtime, so that the policy counts `n`.
///
/// # Errors
/// `InvalidInput` when the process was allowed fewer than `n` processors; the OS's error when it
/// refuses the mask, or where the OS layer cannot set one (the std fallback).
pub fn restrict_processors(n: usize) -> std::io::Result<()> {
    hos_runtime::internal::sys::set_affinity_first(n)
}

/// The CPU time of the whole process, user and kernel, and its voluntary context switches:
/// one system call (`getrusage(RUSAGE_SELF)` on Linux; zero in the std fallback). A host's
/// CPU a frame is the difference of two readings over the frames between them.
pub fn process_cpu_time() -> hos_runtime::CpuTime {
    hos_runtime::internal::sys::process_cpu()
}
