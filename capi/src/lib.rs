//! hos-capi: the C ABI of hos (`libhos.a`, `libhos.so`, `include/hos.h`), over the public
//! surface of the `hos` crate.
//!
//! # The rules of the boundary (each has a test)
//!
//! - Every call that can fail returns a [`hos_result`]: 0 for success, else the Horizon result
//!   code the Rust API returns, or a code of the boundary itself (a bad pointer, a bad string,
//!   a config key or value, a caught panic). [`hos_result_name`] names each one, and
//!   [`hos_last_error_message`] gives the detail of the calling thread's last failure.
//! - No panic crosses the boundary: every entry point runs its body under `catch_unwind`
//!   ([`boundary::entry`]) and answers a panic with `HOS_RESULT_INTERNAL_ERROR`. hos's locks
//!   recover from poisoning, so the runtime stays usable.
//! - Objects are handles in hos's process-wide handle table (as on Horizon: one table per
//!   process; hos's objects are not bound to a runtime, so nothing is gained by one table per
//!   runtime, and handles stay what hos's svc layer and a guest see). A closed, garbage or
//!   wrong-kind handle is InvalidHandle; the object lives on while a call that looked it up
//!   uses it. Only the runtime and the config are pointers.
//! - Structs that cross the boundary are plain data starting with a `uint32_t size` that the
//!   caller sets ([`boundary::read_sized`], [`boundary::write_sized`]), so the ABI can grow.
//! - A NULL where a pointer is required, a misaligned pointer or a string that is not UTF-8
//!   is a result code, never a crash. A pointer that is not NULL is trusted to point to
//!   memory of its type: that much the C contract cannot check.
//! - No host callback (a thread's entry, the log sink) is called while hos holds a lock, and
//!   the reactor thread never calls into the host ([`log`]).
//!
//! | file | what |
//! | --- | --- |
//! | [`version`] | the ABI's version, `HOS_ABI_VERSION` and `hos_abi_version` |
//! | [`result`] | `hos_result`, its codes and names, the last error's message |
//! | [`boundary`] | the panic catch, pointer and string checks, size-prefixed structs, arrays and text out |
//! | [`config`] | `hos_config`: switches by name, validated as they are set; the processor and calibration pins |
//! | [`runtime`] | `hos_runtime`: boot, bounded shutdown, host sleep |
//! | [`stats`] | `hos_stats` and `hos_thread_stats` |
//! | [`det`] | the deterministic mode's figures: `hos_det_stats` |
//! | [`softlock`] | the deterministic mode's last softlock: `hos_det_softlock`, its text |
//! | [`det_post`] | host events into the deterministic mode: `hos_det_post`, `hos_det_post_at`, `hos_det_next_post` |
//! | [`det_check`] | a deterministic run against a reference: its divergence, `hos_det_verify` |
//! | [`guest_state`] | what each live guest thread is doing now |
//! | [`wait_tree`] | the wait tree, as nodes or text |
//! | [`trace`] | the trace file, frame marks, flight dumps, each frame's critical path |
//! | [`shutdown`] | what the last shutdown did: counts, the threads left behind, its text |
//! | [`role`] | guest thread roles: the `HOS_ROLE_*` values, a thread's role by handle |
//! | [`thread`] | guest threads: spawn and join |
//! | [`reaper`] | the OS threads of spawned guest threads, until joined |
//! | [`attach`] | a host's own threads as guest threads, and their kick flag |
//! | [`svc`] | the svc calls: sleeps, priorities, cores, waits on handles and their cancel, checkpoints, thread ids and ticks |
//! | [`tick`], [`exit`], [`activity`] | svcGetSystemTick; svcExitThread; svcSetThreadActivity and the pause of every guest thread |
//! | [`arbiter`] | the kernel's svcs on guest words: locks, condition variables, address arbitration |
//! | [`kernel_event`] | kernel events (two handles each: writable, readable) |
//! | [`object`] | the objects a handle names, and their lookup |
//! | [`event`], [`timer_event`], [`queue`], [`semaphore`], [`mutex`], [`condvar`], [`rwlock`], [`barrier`] | one nn::os object each |
//! | [`log`] | the log sink: hos's warnings into the host's logger |

// The C names (`hos_result`, `hos_config`) are the ABI.
#![allow(non_camel_case_types)]
#![warn(unsafe_op_in_unsafe_fn)]

// In the order of the header.
pub mod version;

pub mod result;

pub mod boundary;

pub mod config;

pub mod runtime;

pub mod stats;

pub mod det;

pub mod softlock;

pub mod det_post;

pub mod det_check;

pub mod guest_state;

pub mod wait_tree;

pub mod trace;

pub mod shutdown;

pub mod log;

pub mod role;

pub mod thread;

mod reaper;

pub mod attach;

pub mod svc;

pub mod tick;

pub mod exit;

pub mod activity;

pub mod arbiter;

pub mod kernel_event;

pub mod object;

pub mod event;

pub mod timer_event;

pub mod queue;

pub mod semaphore;

pub mod mutex;

pub mod condvar;

pub mod rwlock;

pub mod barrier;

// The fuzzers' interpreter: in the tests and in capi/fuzz (cargo-fuzz sets `fuzzing`).
#[cfg(any(test, fuzzing))]
pub mod calls;

#[cfg(test)]
mod tests;
