//! hos-runtime: the reactor of hos. It knows threads, priorities, deadlines and cores; it
//! knows no svc number and no Horizon result code (those live in the `hos` crate, which is
//! what hosts use: this crate's public items are the ones `hos` re-exports, and `det`, the
//! deterministic mode's parts, which `token` wires into the runtime).
//!
//! # Layers
//!
//! Each module sits in a layer and uses only the layers below it, never one above; no file
//! reaches up to the runtime it is part of. Leaves depend on nothing of hos but each other:
//! data structures, the OS, units. Primitives sit on the leaves. Decisions (how the machine
//! behaves, and what to do about it) are made from primitives. Waiting uses the decisions,
//! handed in as arguments: `block_on` takes its spin, counters and core hooks from its
//! caller, the idle pollers know an object only as a generation and a list of sleepers, the
//! virtual cores know a thread only as an id, its traits and its seat. Composition puts one
//! runtime together and is the only layer that knows it. Within a layer too, a file imports
//! only files before it: `src/tests/layers.rs` holds the order and fails on any other import.
//!
//! | module | layer | what |
//! | --- | --- | --- |
//! | `sync` | leaf | the loom seam and the one poison-free lock |
//! | `report` | leaf | where warnings and errors go: the `tracing` subscriber, else stderr |
//! | `time` | leaf | nanoseconds: the one `Duration` conversion |
//! | `sys` | leaf | the OS layer behind one contract (Linux; a std fallback) |
//! | `spawn` | leaf | how the runtime starts its own threads (a refusal is an error) |
//! | `det::{rng, witness, decisions, history, softlock, selector, clock, post, record}` | leaf | the deterministic mode's parts (seeded streams, witnesses, threads' last turns, the softlock report, selectors, virtual clock, posted events, `.hosrec`) |
//! | `chaos` | leaf | seeded yields and delays at every decision point (off: one load) |
//! | `wheel` | leaf | hierarchical timer wheel, a pure data structure |
//! | `machine` | leaf | [`Calibration`]: what the machine's timers and wake-ups cost, a value |
//! | `stats` | leaf | counters, and the [`Stats`] snapshot a host reads |
//! | `vcore::{step, rank, table, escape, kick, seat}` | leaf | the virtual cores' pure table |
//! | `trace` | leaf | the event stream, its rings and recorder: records, decides nothing |
//! | `analysis` | leaf | made of the trace: states, Chrome file, critical paths, wait tree |
//! | `parker` | primitive | the per-thread futex parker |
//! | `config` | primitive | [`Config`], its switches' rules and checks |
//! | `role` | primitive | [`Role`]: what a guest thread is, and what the policies make of it |
//! | `build_error` | primitive | [`BuildError`]: why a runtime did not start |
//! | `activity` | primitive | a guest thread's activity: what it waits on since when, written by it alone |
//! | `calibration` | decision | the machine's timer lateness and wake latency, measured and tracked |
//! | `reactor` | decision | the reactor thread that owns every deadline |
//! | `policy` | decision | every choice: sleep routes, poller cap, spin, spin gate, deadline class |
//! | `token` | waiting | the deterministic mode's token: one guest thread runs at a time, each hand-off a selector's decision |
//! | `block_on` | waiting | the one loop every wait blocks in |
//! | `pollers` | waiting | idle pollers: an object's (or a guest word's) sleeping pollers, their wait |
//! | `poll` | waiting | idle pollers: each thread's poll marks, and what its next sleep follows |
//! | `vcore` (`mod.rs`, `claim`) | waiting | the virtual-core semaphore, and the claims of woken threads |
//! | `pause` | waiting | a guest thread's pause: asked, taken at its next pause point |
//! | `thread` | waiting | the runtime's record of a guest thread |
//! | `runtime` | composition | one runtime: config, policy, reactor, cores, counters, threads |
//! | `stuck` | composition | the deterministic mode's softlocks: completed from the wait tree, told, kept |
//! | `context` | composition | which runtime and guest thread the calling thread is |
//! | `sleep` | composition | guest and host sleeps along their routes |
//! | `watchdog` | composition | the flight recorder's wait bound (dumps a guest wait past it) and the deterministic token's (names its holder) |
//! | `builder` | composition | [`Builder`]: switches in code and from the environment |
//! | `observe` | composition | the trace file, frame marks, dumps, the wait tree, critical paths |
//!
//! docs/design.md tells the flow of one wait and the rules each policy keeps.

#![deny(unsafe_code)]

mod activity;
mod analysis;
mod block_on;
mod build_error;
mod builder;
mod calibration;
mod chaos;
mod config;
mod context;
pub mod det;
mod det_run;
mod entropy;
mod machine;
mod observe;
mod parker;
mod pause;
mod policy;
mod poll;
mod pollers;
mod posting;
mod reactor;
mod report;
mod role;
mod runtime;
mod sleep;
mod spawn;
mod spin_gate;
mod stats;
mod stuck;
mod sync;
mod sys;
mod thread;
mod time;
mod token;
mod trace;
mod vcore;
mod verify;
mod watchdog;
mod wheel;

#[cfg(test)]
mod tests;

pub use analysis::{Breakdown, Node, State, WaitTree};
pub use build_error::BuildError;
pub use builder::Builder;
pub use config::{Config, ConfigError, ShortSleep};
pub use machine::{Calibration, PrecisePath};
pub use role::Role;
pub use stats::{Bound, Lateness, SleepPath, Stats, ThreadStats, LATE_BUCKETS};
pub use sys::CpuTime;
pub use token::DetStats;
pub use verify::{DetVerified, VerifyError};

/// What the `hos` crate, hos's benches and its examples' internals need of the runtime, and a
/// host must not call: a host uses the `hos` crate.
#[doc(hidden)]
pub mod internal {
    pub use crate::block_on::{block_on_with, Wait, WaitPolicy};
    /// What a wait is for (the trace's vocabulary, which `Wait` uses too).
    pub use crate::trace::WaitFor;
    /// Seeded yields and delays at every decision point, for tests and soaks.
    pub mod chaos {
        pub use crate::chaos::{disable, enable, point, seed, MAX_DELAY_NS};
    }
    pub use crate::context::{
        block_on, checkpoint, det_deadline, det_now, det_tick, det_timeout_at, enter, mark_wait,
        runtime, with_current, with_guest, Current, EnterGuard,
    };
    pub use crate::parker::{with_parker, Parker};
    pub use crate::pause::PAUSED;
    pub use crate::policy::{promotions, Spin, Waiter};
    pub use crate::poll::{clear as poll_found, missed as poll_missed, note_call as svc_entered};
    pub use crate::pollers::PollSite;
    pub use crate::reactor::{DeadlineClass, Reactor, Timer};
    pub use crate::spin_gate::SpinGate;
    /// Where warnings and errors go (the `warn!` and `error!` macros call it).
    pub mod report {
        pub use crate::report::{emit, text};
    }
    pub use crate::runtime::Runtime;
    pub use crate::sleep::{host_sleep, sleep_current};
    pub use crate::stats::{Counters, Stripe};
    pub use crate::sync::{lock, read, wait, write, Lockable, Waitable};
    pub use crate::sys::deadline_after;
    pub use crate::thread::{Activity, ThreadRecord, ThreadSpec};
    pub use crate::time::nanos;
    pub use crate::vcore::{Escape, Occupant, Seat, Traits, Vcores, Who, YieldKind, Yielded};
    pub use crate::verify::verify as det_verify;
    pub use crate::wheel::{Wheel, WheelKey};
    pub use tracing;

    /// The trace's event sites and what a reading of it holds (docs/design.md section 17).
    pub mod trace {
        pub use crate::trace::*;
    }

    /// The OS layer (its contract is in its module doc).
    pub mod sys {
        pub use crate::sys::*;
    }
}
