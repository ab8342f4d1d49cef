//! The flight recorder's wait bound (HOS_FLIGHT_WAIT_MS): a thread of the runtime that dumps
//! the flight recorder once for each guest wait that lasts past the bound; and, in the
//! deterministic mode, the token's bound (HOS_DET_WATCHDOG_MS): the same thread reports, once,
//! a holder that keeps the token that long in wall time without a checkpoint (a guest loop
//! without checkpoints, a host primitive outside the runtime's waits), naming it
//! (`Runtime::tell_softlock`).
//!
//! Invariant: the decision is made here, from the config and each guest thread's activity
//! (what it waits on, since when: `ThreadRecord::activity`), never from the trace, and the
//! dump is written here, never by the thread that waits (which holds no core and should not
//! do a file's I/O on its way back to one). The thread holds its runtime only while it looks
//! at the threads: it waits for its next look on a reactor timer, which the runtime's
//! shutdown or drop fires, so it ends with the runtime. A host's pause is no wait: a paused
//! thread is not dumped. The token's holder is judged by the token's progress count alone
//! (`Token::held`: a checkpoint, a tick read or a hand-off changes it), timed from when this
//! thread first saw that count, or from the turn's start if later (after its pacing's sleep),
//! so a checkpoint never reads the clock for it.

use crate::pause::PAUSED;
use crate::reactor::DeadlineClass;
use crate::runtime::{Runtime, WeakRuntime};
use crate::spawn::Spawn;
use crate::sys;
use crate::thread::Activity;
use crate::token::Held;
use std::collections::HashMap;

/// The watchdog thread's name.
pub(crate) const NAME: &str = "hos-watchdog";

/// Starts `rt`'s watchdog through `spawn`, where it has one (the flight recorder on and a
/// wait bound set, or the deterministic mode on and a token bound set); the OS's refusal as
/// an error.
pub(crate) fn start(rt: &Runtime, spawn: Spawn) -> std::io::Result<()> {
    let c = rt.config();
    let ns = |ms: u64, on: bool| if on { ms.saturating_mul(1_000_000) } else { 0 };
    let bounds = Bounds {
        wait: ns(c.flight_wait_ms, c.flight),
        token: ns(c.det_watchdog_ms, rt.token().is_some()),
    };
    if bounds.wait == 0 && bounds.token == 0 {
        return Ok(());
    }
    let weak = rt.downgrade();
    spawn(NAME, Box::new(move || watch(&weak, bounds))).map(drop)
}

/// The watchdog's bounds, in ns (0: that one is off).
#[derive(Clone, Copy)]
struct Bounds {
    /// A guest wait's (HOS_FLIGHT_WAIT_MS).
    wait: u64,
    /// A token held without a checkpoint (HOS_DET_WATCHDOG_MS).
    token: u64,
}

/// The token's holder as the watchdog saw it: what [`Token::held`](crate::token::Token::held)
/// said, when this thread first saw that, and whether it was told.
#[derive(Clone, Copy)]
struct Seen {
    held: Held,
    first: u64,
    told: bool,
}

/// The watchdog's loop: looks, then waits for the next wait to pass the bound (or a bound
/// from now), until the runtime shuts down or is gone.
fn watch(weak: &WeakRuntime, bounds: Bounds) {
    // Each guest thread's wait dumped already: its id, and the wait's write number.
    let mut dumped = HashMap::new();
    let mut seen = None;
    loop {
        let Some(rt) = weak.upgrade() else { return };
        if rt.is_shut_down() {
            return;
        }
        let mut next = u64::MAX;
        if bounds.wait > 0 {
            next = look(&rt, bounds.wait, &mut dumped);
        }
        if bounds.token > 0 {
            next = next.min(look_token(&rt, bounds.token, &mut seen));
        }
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
        let reading = t.activity_reading();
        let Activity::Waiting { on, since } = reading.activity else {
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
        if dumped.get(&t.id()) != Some(&reading.write) {
            rt.dump_flight(&format!("{} waited past HOS_FLIGHT_WAIT_MS", t.name()));
        }
        still.insert(t.id(), reading.write);
    }
    *dumped = still;
    next
}

/// Tells, once, a holder of `rt`'s token that made no progress for `bound` since `seen`
/// first saw it; returns when to look again (a `sys::now()` value): a quarter of the bound
/// from now, so a report comes at most a quarter late.
fn look_token(rt: &Runtime, bound: u64, seen: &mut Option<Seen>) -> u64 {
    let now = sys::now();
    let next = now.saturating_add((bound / 4).max(1_000_000));
    let Some(token) = rt.token() else {
        return next;
    };
    let Some(held) = token.held() else {
        *seen = None;
        return next;
    };
    match seen {
        Some(s) if s.held.thread == held.thread && s.held.progress == held.progress => {
            let start = s.first.max(held.since);
            let for_ns = now.saturating_sub(start);
            if !s.told && for_ns >= bound {
                s.told = true;
                if let Some(report) = token.held_report(held, for_ns / 1_000_000) {
                    rt.tell_softlock(report);
                }
            }
        }
        _ => {
            *seen = Some(Seen {
                held,
                first: now,
                told: false,
            });
        }
    }
    next
}
