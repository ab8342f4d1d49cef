//! The runtime's tests that need its internals (the public surface is what the `hos` crate
//! re-exports, so these live inside the crate, as tokio keeps its loom models). The loom
//! models run only under `--cfg loom`, every other test only without it.

#[cfg(not(loom))]
mod build_errors;
#[cfg(not(loom))]
mod chaos;
#[cfg(not(loom))]
mod common;
#[cfg(not(loom))]
mod det_guide;
#[cfg(not(loom))]
mod det_record;
#[cfg(not(loom))]
mod det_selector;
#[cfg(not(loom))]
mod idle_poll;
#[cfg(not(loom))]
mod layers;
#[cfg(loom)]
mod loom_block_on;
#[cfg(loom)]
mod loom_poll;
#[cfg(loom)]
mod loom_token;
#[cfg(loom)]
mod loom_vcore;
#[cfg(not(loom))]
mod policy_table;
#[cfg(not(loom))]
mod reactor;
#[cfg(not(loom))]
mod report;
#[cfg(not(loom))]
mod sleep;
#[cfg(not(loom))]
mod switches;
#[cfg(not(loom))]
mod trace_epoch;
#[cfg(not(loom))]
mod vcore_claim;
#[cfg(not(loom))]
mod vcore_defer;
#[cfg(not(loom))]
mod vcore_fast;
#[cfg(not(loom))]
mod vcore_grace;
#[cfg(not(loom))]
mod vcore_harness;
#[cfg(not(loom))]
mod vcore_runtime;
#[cfg(not(loom))]
mod vcore_spin;
#[cfg(not(loom))]
mod vcore_table;
#[cfg(not(loom))]
mod vcore_table_random;
#[cfg(not(loom))]
mod wait_bracket;
#[cfg(not(loom))]
mod wake_slice;
#[cfg(not(loom))]
mod watchdog;
