//! Horizon's three yields (svcSleepThread 0, -1, -2) in the deterministic mode, as mesosphère's
//! `KScheduler` makes them within a core: `YieldWithoutCoreMigration`,
//! `YieldWithCoreMigration`, `YieldToAnyThread`, and an idle core's migration of a suggested
//! thread (`UpdateHighestPriorityThreadsImpl`). The mode keeps every thread on its logical
//! core, so what moves a thread between cores is not modelled: only what each yield does to
//! its own core's queue.
//!
//! Invariant: a thread is *away* (the kernel's active core -1) from its yield to any thread
//! until a decision finds no other ready thread on its core (the kernel migrates a suggested
//! thread only to an idle core), or a yield with core migration on its core pulls it to the
//! front; away, it is no candidate, whatever it does meanwhile (it may wait and be woken:
//! it stays away, as its active core stays -1).
//!
//! | kind | the yielder | and |
//! | --- | --- | --- |
//! | `SamePriority` (0) | goes behind the ready threads of its priority on its core | |
//! | `Migrate` (-1) | the same | its core's best away thread goes to the front of the queue if its priority is better, or equal and no equal of the yielder ran less recently |
//! | `Any` (-2) | goes away: every ready thread of its core runs before it, lower priorities too | it comes back once nothing else on its core is ready |

use super::{Run, Slot, State};
use crate::vcore::step::YieldKind;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The first ready order number: a thread a yield pulls to the front of its queue takes one
/// below every order given, and there is room below this one for that.
pub(super) const FIRST_ORDER: u64 = 1 << 62;

/// A ready thread's order among its equals; `None` for a thread not ready.
fn ready(t: &Slot) -> Option<u64> {
    match t.run {
        Run::Ready(order) => Some(order),
        _ => None,
    }
}

/// When a thread last ran, for the kernel's "waited longer" (its last scheduled tick): its
/// last turn's decision, after 0 for a thread that never ran. Turns never overlap, so the
/// order of their starts is the order of their ends.
fn last_ran(t: &Slot) -> u64 {
    t.history.last().map_or(0, |turn| turn.decision + 1)
}

impl State {
    /// Thread `id`, the holder, yields by `kind`: what it becomes, ready behind its equals
    /// (module doc).
    pub(super) fn yielded(&mut self, id: u64, kind: YieldKind) -> Run {
        let order = self.order();
        match kind {
            YieldKind::SamePriority => {}
            YieldKind::Migrate => self.pull_back(id),
            YieldKind::Any => {
                if let Some(t) = self.threads.get_mut(&id) {
                    t.away = true;
                }
            }
        }
        Run::Ready(order)
    }

    /// Each core with no ready thread but away ones takes its best back (lowest priority
    /// value, then first ready): an idle core's migration. Paused threads are in no queue.
    pub(super) fn return_away(&mut self) {
        let mut present = 0u64;
        let mut best: BTreeMap<u8, (u8, u64, u64)> = BTreeMap::new();
        for (&id, t) in self.threads.iter().filter(|(_, t)| !t.paused) {
            let Some(order) = ready(t) else { continue };
            if !t.away {
                present |= 1 << t.core;
                continue;
            }
            let key = (t.priority, order, id);
            let e = best.entry(t.core).or_insert(key);
            if key < *e {
                *e = key;
            }
        }
        for (core, (_, _, id)) in best {
            if present & (1 << core) == 0 {
                if let Some(t) = self.threads.get_mut(&id) {
                    t.away = false;
                }
            }
        }
    }

    /// A yield with core migration by `id` (the holder, about to go behind its equals): its
    /// core's best away thread goes to the front of the queue if its priority is better than
    /// the yielder's, or equal and the first of the yielder's equals (the yielder itself if
    /// none) ran no less recently than it.
    fn pull_back(&mut self, id: u64) {
        let Some(me) = self.threads.get(&id) else {
            return;
        };
        let (core, priority) = (me.core, me.priority);
        let queued = |t: &Slot| t.core == core && !t.paused && ready(t).is_some();
        let Some((&back, away)) = (self.threads.iter())
            .filter(|(_, t)| queued(t) && t.away)
            .min_by_key(|(&i, t)| (t.priority, ready(t), i))
        else {
            return;
        };
        let next = (self.threads.iter())
            .filter(|(&i, t)| i != id && queued(t) && !t.away && t.priority == priority)
            .min_by_key(|(&i, t)| (ready(t), i));
        let pull = match away.priority.cmp(&priority) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => next.is_none_or(|(_, n)| last_ran(n) >= last_ran(away)),
        };
        if !pull {
            return;
        }
        let first = self.threads.values().filter_map(ready).min();
        let front = first.unwrap_or(FIRST_ORDER).min(FIRST_ORDER) - 1;
        if let Some(t) = self.threads.get_mut(&back) {
            t.away = false;
            t.run = Run::Ready(front);
        }
    }
}
