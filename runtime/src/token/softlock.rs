//! The token's softlocks (docs/determinism.md section 7): the decision that finds nothing
//! can run again by itself makes a report, once for that quiescence, which the runtime's hook
//! completes and tells outside the lock; and what the runtime's watchdog sees of the holder
//! (its progress count), to name one that keeps the token past a wall-time bound.
//!
//! Invariant: a report is made under the token's lock from the schedule as it stands, and
//! told only after the lock is dropped (`Token::decide`), so the hook may take any lock.

use super::{Run, State, Token};
use crate::det::softlock::{Cause, Softlock, Standing, Stuck};
use crate::sync::lock;

/// What the watchdog sees of the token's holder ([`Token::held`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    /// The holder's id.
    pub(crate) thread: u64,
    /// The token's progress count: a checkpoint, a tick read or a hand-off changes it.
    pub(crate) progress: u64,
    /// When the holder's turn began (a `sys::now()` value).
    pub(crate) since: u64,
}

/// What completes and tells a softlock's report (the runtime's, `Token::on_softlock`).
pub(crate) type Tell = Box<dyn Fn(Softlock) + Send + Sync>;

impl Token {
    /// Sets the hook that completes and tells each softlock's report (once; the runtime's).
    pub(crate) fn on_softlock(&self, tell: Tell) {
        let _ = self.tell.set(tell);
    }

    /// Keeps `report`, completed and told, as the last softlock.
    pub(crate) fn keep(&self, report: Softlock) {
        lock(&self.state).report = Some(report);
    }

    /// The last softlock reported, if any.
    pub(crate) fn softlock(&self) -> Option<Softlock> {
        lock(&self.state).report.clone()
    }

    /// The token's holder now, with its progress count and when its turn began; `None`
    /// when the token rests or the mode stopped.
    pub(crate) fn held(&self) -> Option<Held> {
        let s = lock(&self.state);
        s.held_now().map(|(thread, progress)| Held {
            thread,
            progress,
            since: s.turn_start,
        })
    }

    /// The report of `held`'s holder keeping the token `held_ms` of wall time, if it still
    /// holds it with no progress since.
    pub(crate) fn held_report(&self, held: Held, held_ms: u64) -> Option<Softlock> {
        let s = lock(&self.state);
        (s.held_now() == Some((held.thread, held.progress))).then(|| {
            s.report(Cause::Held {
                thread: held.thread,
                held_ms,
            })
        })
    }
}

impl State {
    /// Nothing can run by itself (no thread ready or starting: `decide` returns before this
    /// while one starts, since its spawner will make it ready; no deadline or post pending):
    /// if threads wait, the run is deadlocked, and the first such decision of this
    /// quiescence finds a softlock.
    pub(super) fn quiesce(&mut self) {
        let waits = self
            .threads
            .values()
            .any(|t| matches!(t.run, Run::Waiting(..)));
        // A paused thread waits for whoever paused it to resume it: no deadlock to tell.
        let paused = self.threads.values().any(|t| t.paused);
        if self.stopped || self.quiet || !waits || paused {
            return;
        }
        self.quiet = true;
        self.found = Some(self.report(Cause::Deadlock));
    }

    /// The holder and the progress count now, while the mode schedules.
    fn held_now(&self) -> Option<(u64, u64)> {
        self.holder
            .filter(|_| !self.stopped)
            .map(|h| (h, self.progress))
    }

    /// A softlock's report of what the token knows now (the runtime adds names, objects,
    /// holders and the selector).
    fn report(&self, cause: Cause) -> Softlock {
        let threads = self
            .threads
            .iter()
            .map(|(&id, t)| Stuck {
                id,
                name: String::new(),
                priority: t.priority,
                lent: None,
                core: t.core,
                standing: match t.run {
                    Run::Starting => Standing::Starting,
                    Run::Ready(_) => Standing::Ready,
                    Run::Running => Standing::Holds,
                    Run::Waiting(_, until) => Standing::Waiting { until },
                    Run::Sleeping(until, _) => Standing::Sleeping { until },
                },
                waits_on: String::new(),
                holders: Vec::new(),
                turns: t.history.turns(),
            })
            .collect();
        Softlock {
            cause,
            decision: self.rolling.decisions(),
            vt: self.clock.now(),
            selector: String::new(),
            threads,
            cycles: Vec::new(),
        }
    }
}
