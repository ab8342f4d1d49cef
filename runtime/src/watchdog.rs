//! The flight recorder's wait bound (HOS_FLIGHT_WAIT_MS): a thread of the runtime that dumps
//! the flight recorder once for each guest wait that lasts past the bound.
//!
//! Invariant: the decision is made here, from the config and each guest thread's activity
//! (what it waits on, since when: `ThreadRecord::activity`), never from the trace, and the
//! dump is written here, never by the thread that waits (which holds no core and should not
//! do a file's I/O on its way back to one). The thread holds its runtime only while it looks
//! at the threads: it waits for its next look on a reactor timer, which the runtime's
//! shutdown or drop fires, so it ends with the runtime. A host's pause is no wait: a paused
//! thread is not dumped.

use crate::pause::PAUSED;
use crate::reactor::DeadlineClass;
use crate::runtime::{Runtime, WeakRuntime};
use crate::spawn::Spawn;
use crate::sys;
use crate::thread::Activity;
use std::collections::HashMap;

/// The watchdog thread's name.
pub(crate) const NAME: &str = "hos-watchdog";

/// Starts `rt`'s watchdog through `spawn`, where it has one (the flight recorder on and a
/// wait bound set); the OS's refusal as an error.
pub(crate) fn start(rt: &Runtime, spawn: Spawn) -> std::io::Result<()> {
    let bound = rt.config().flight_wait_ms.saturating_mul(1_000_000);
    if bound == 0 || !rt.config().flight {
        return Ok(());
    }
    let weak = rt.downgrade();
    spawn(NAME, Box::new(move || watch(&weak, bound))).map(drop)
}

/// The watchdog's loop: looks, then waits for the next wait to pass the bound (or a bound
/// from now), until the runtime shuts down or is gone.
fn watch(weak: &WeakRuntime, bound: u64) {
    // Each guest thread's wait dumped already: its id, and the wait's start.
    let mut dumped = HashMap::new();
    loop {
        let Some(rt) = weak.upgrade() else { return };
        if rt.is_shut_down() {
            return;
        }
        let next = look(&rt, bound, &mut dumped);
        let mut timer = rt.reactor().timer(next, DeadlineClass::Relaxed);
        // The handle goes before the wait: the runtime's last one may drop meanwhile.
        drop(rt);
        crate::parker::with_parker(|p, w| {
            timer.register(w);
            while !timer.is_fired() {
                p.park(None);
            }
        });
    }
}

/// Dumps the flight recorder for each guest wait of `rt` past `bound` not dumped yet; returns
/// when the next wait passes it (a `sys::now()` value).
fn look(rt: &Runtime, bound: u64, dumped: &mut HashMap<u64, u64>) -> u64 {
    let now = sys::now();
    let mut next = now.saturating_add(bound);
    let mut still = HashMap::new();
    for t in rt.threads() {
        let Activity::Waiting { on, since } = t.activity() else {
            continue;
        };
        if on == PAUSED {
            continue;
        }
        let due = since.saturating_add(bound);
        if due > now {
            next = next.min(due);
            continue;
        }
        if dumped.get(&t.id()) != Some(&since) {
            rt.dump_flight(&format!("{} waited past HOS_FLIGHT_WAIT_MS", t.name()));
        }
        still.insert(t.id(), since);
    }
    *dumped = still;
    next
}
