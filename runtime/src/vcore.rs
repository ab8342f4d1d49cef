//! INTERFACE PLACEHOLDER for the virtual-core semaphore (the vcore task replaces this file).

use crate::config::Config;
use crate::stats::Stats;
use crate::thread::ThreadRecord;
use std::sync::Arc;

/// A thread's virtual-core state.
#[derive(Debug, Default)]
pub struct Seat {}

/// How a thread yields its core (sleep_thread 0, -1, -2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YieldKind {
    /// 0: to a waiter of the same priority.
    SamePriority,
    /// -1: the same, and the thread may come back on any allowed core.
    Migrate,
    /// -2: to the best waiter whatever its priority.
    Any,
}

/// The virtual-core semaphore.
#[derive(Debug)]
pub struct Vcores {}

impl Vcores {
    /// Slots per the config.
    pub fn new(_config: &Config, _stats: Arc<Stats>) -> Self {
        Vcores {}
    }
    /// Takes a core for `t` (a ranked wait).
    pub fn acquire(&self, _t: &Arc<ThreadRecord>) {}
    /// Gives `t`'s core back; `true` if it held one.
    pub fn release(&self, _t: &ThreadRecord) -> bool {
        false
    }
    /// Gives the core up if kicked or out of slice, then takes one again.
    pub fn checkpoint(&self, _t: &Arc<ThreadRecord>) {}
    /// A yield on the virtual cores.
    pub fn yield_core(&self, _t: &Arc<ThreadRecord>, _kind: YieldKind) {}
    /// Wakes every waiter (shutdown).
    pub fn shutdown(&self) {}
}
