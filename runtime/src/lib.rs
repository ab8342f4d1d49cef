//! hos-runtime: the reactor of hos. It knows threads, priorities, deadlines and cores; it
//! knows no svc number and no Horizon result code (those live in the `hos` crate).
//!
//! | module | what |
//! | --- | --- |
//! | [`wheel`] | hierarchical timer wheel, a pure data structure |
//! | [`reactor`] | the reactor thread that owns every deadline |
//! | [`calibration`] | the machine's timer lateness and wake latency, measured and tracked |
//! | [`park`] | the per-thread parker and `block_on`, the one place waits block |
//! | [`sleep`] | guest and host sleeps: short-sleep modes, precise and relaxed classes |
//! | [`vcore`] | the virtual-core semaphore |
//! | [`policy`] | every choice: short-sleep path, poller cap, spin length, spin gate |
//! | [`config`] | the typed config, its builder and the environment switches |
//! | [`stats`] | counters and snapshots |
//! | [`thread`] | the runtime's record of a guest thread |
//! | [`context`] | which runtime and guest thread the calling OS thread is |
//! | [`sys`] | the OS layer behind one contract |

#![warn(missing_docs)]

pub mod calibration;
pub mod config;
pub mod context;
pub mod park;
pub mod policy;
pub mod reactor;
mod runtime;
pub mod sleep;
pub mod stats;
mod sync;
pub mod sys;
pub mod thread;
pub mod vcore;
pub mod wheel;

pub use calibration::{Calibration, PrecisePath};
pub use config::{Builder, Config, ConfigError, ShortSleep};
pub use park::{block_on, Wait, WaitFor};
pub use policy::Role;
pub use runtime::Runtime;
pub use stats::{SleepPath, Stats};

/// What the `hos` crate needs of the runtime and a host must not call.
#[doc(hidden)]
pub mod internal {
    pub use crate::sync::{lock, read, write, Lockable};
}
