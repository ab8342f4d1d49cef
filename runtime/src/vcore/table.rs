//! The virtual cores as a pure state machine: slots, the queue of waiters, kicks, turns,
//! escapes and the kicks' grace ([`grace`]; docs/design.md section 8). No threads, no lock and
//! no clock of its own: every operation takes a [`Clock`] and says what the caller must do
//! afterwards ([`Effects`]; the words it speaks are in [`super::step`]), so tests drive it
//! step by step with an injected clock, and [`super::Vcores`] runs it under its one mutex.
//!
//! # Invariants (checked by `check` after every operation in debug builds)
//!
//! - A slot has at most one holder, and a thread is in at most one place: a slot, the escaped
//!   list, the revoked list, or the queue (a granted waiter's thread is in its slot, not in the
//!   queue).
//! - No queued waiter is allowed on a free slot: a slot that frees goes at once to the best
//!   waiter allowed on it, and an arrival takes a free allowed slot without queueing. So an
//!   arrival that finds a free slot it may take passes nobody who ranks before it.
//! - `order` holds exactly the queued waiters, best first by (rank, ticket).
//! - `flags[s]` is what the holder of `s` reads at its checkpoint, and always equals
//!   `flag_for(s)`: Idle for a free slot.
//!
//! Costs: N (at most 8) slots and W waiters; an operation that changes the queue recomputes
//! kicks and flags in O(N * W). Waiters are OS threads (tens, at most hundreds), not tasks.

mod grace;
mod lend;

use super::rank::Rank;
use super::step::{Clock, Effects, Flag, Step, Traits, WaitId, Who, YieldKind, MAX_CORES};
use crate::stats::KickReason;
use slab::Slab;
use std::cmp::Reverse;
use std::task::Waker;

#[derive(Debug)]
struct Hold {
    who: Who,
    /// When it was granted ([`Clock::stamp`]).
    since: u64,
    /// Set once when a waiter claims the slot (counted then); cleared when the slot changes
    /// hands or the holder's checkpoint finds no claim any more.
    kick: Option<KickReason>,
    /// When `kick` was last set: its grace counts from then (read only while it is set).
    kicked_at: u64,
}

impl Hold {
    fn rank(&self) -> Rank {
        Rank::new(self.who.traits.priority, self.who.traits.first)
    }

    /// When the pending kick was set, if one is.
    fn kicked_at(&self) -> Option<u64> {
        self.kick.map(|_| self.kicked_at)
    }
}

#[derive(Debug)]
enum State {
    Queued(Who),
    Granted { slot: usize, since: u64 },
    Cancelled,
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    /// The wait's rank: the thread's rank, by priority alone after a turn.
    rank: Rank,
    /// Slots this wait may take (the core mask, or the one slot after a yield 0).
    mask: u64,
    ideal: Option<usize>,
    /// It gave its core up by turn (slice or yield): ranks by priority until it holds again.
    turn: bool,
    /// After a yield 0: the one slot it waits for.
    pin: Option<usize>,
    since: u64,
    /// Arrival order: FIFO among equal ranks.
    ticket: u64,
    state: State,
    waker: Option<Waker>,
    /// While queued with the kicks' grace on: when its thread polls again at the latest for a
    /// revocation, as it was last told ([`grace::NEVER`]: not for one).
    poll_at: u64,
}

/// The slots and the queue.
#[derive(Debug)]
pub(crate) struct Table {
    /// # Invariant: `slots[s]` is `None` exactly when bit `s` of `free` is set.
    slots: Vec<Option<Hold>>,
    free: u64,
    all: u64,
    flags: [Flag; MAX_CORES],
    waiters: Slab<Waiter>,
    /// # Invariant: the queued waiters' slab keys, best first by (rank, ticket).
    order: Vec<usize>,
    /// Threads that run past the slots by escape.
    escaped: Vec<Who>,
    /// Threads whose slot a waiter took after the kick's grace, still running guest code
    /// until their next checkpoint, yield or release ([`grace`]).
    revoked: Vec<Who>,
    next_ticket: u64,
    /// The time slice, in stamp ticks ([`Clock::stamp`]).
    slice: u64,
    escape_ns: u64,
    /// HOS_VCORE_GRACE_US in ns; 0: a kicked holder's slot is never taken.
    grace_ns: u64,
    shut: bool,
}

/// The slot to take among `free` (not empty): the ideal core if free, else the lowest.
fn pick(free: u64, ideal: Option<usize>) -> usize {
    debug_assert_ne!(free, 0, "picking from no free slot");
    match ideal {
        Some(i) if free & (1 << i) != 0 => i,
        _ => free.trailing_zeros() as usize,
    }
}

/// The set bits of `mask`, lowest first.
pub(crate) fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let b = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            b
        })
    })
}

impl Table {
    /// A table of `cores` free slots (1..=8), with a time slice in stamp ticks
    /// ([`Clock::stamp`]), an escape time and the kicks' grace (0: none) in ns.
    ///
    /// # Panics
    /// If `cores` is outside 1..=8 (the config rejects such a value before).
    pub(crate) fn new(cores: usize, slice: u64, escape_ns: u64, grace_ns: u64) -> Self {
        assert!(
            (1..=MAX_CORES).contains(&cores),
            "{cores} virtual cores: expected 1..=8"
        );
        let all = (1u64 << cores) - 1;
        Table {
            slots: (0..cores).map(|_| None).collect(),
            free: all,
            all,
            flags: [Flag::Idle; MAX_CORES],
            waiters: Slab::new(),
            order: Vec::new(),
            escaped: Vec::new(),
            revoked: Vec::new(),
            next_ticket: 0,
            slice,
            escape_ns,
            grace_ns,
            shut: false,
        }
    }

    /// Number of slots.
    pub(crate) fn cores(&self) -> usize {
        self.slots.len()
    }

    /// Free slots, a bit per slot.
    pub(crate) fn free_mask(&self) -> u64 {
        self.free
    }

    /// The flag of `slot`, for its holder's checkpoint.
    pub(crate) fn flag(&self, slot: usize) -> Flag {
        self.flags[slot]
    }

    /// The holder of `slot`, and when it acquired the slot.
    pub(crate) fn holder(&self, slot: usize) -> Option<(&Who, u64)> {
        self.slots[slot].as_ref().map(|h| (&h.who, h.since))
    }

    #[cfg(all(test, not(loom)))]
    /// The kick pending on `slot`, if any.
    pub(crate) fn kick(&self, slot: usize) -> Option<KickReason> {
        self.slots[slot].as_ref().and_then(|h| h.kick)
    }

    /// The slot thread `id` holds.
    pub(crate) fn slot_of(&self, id: u64) -> Option<usize> {
        self.slots
            .iter()
            .position(|h| h.as_ref().is_some_and(|h| h.who.id == id))
    }

    /// Whether thread `id` runs past the slots by escape.
    pub(crate) fn is_escaped(&self, id: u64) -> bool {
        self.escaped.iter().any(|w| w.id == id)
    }

    /// The queued threads' ids, best first.
    pub(crate) fn queue(&self) -> Vec<u64> {
        self.order.iter().map(|&k| self.waiters[k].id).collect()
    }

    #[cfg(all(test, not(loom)))]
    /// Whether [`Table::shutdown`] ran.
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut
    }

    /// Thread `who` asks for a core at `now`: it takes a free allowed slot (its ideal core
    /// first) or queues by rank, kicking the worst holder it outranks on its allowed cores.
    pub(crate) fn acquire(&mut self, who: Who, now: impl Clock, fx: &mut Effects) -> Step {
        let now: &dyn Clock = &now;
        let step = self.enter(who, false, None, now, fx);
        self.check();
        step
    }

    /// Polls a queued wait at `now`: `None` while it waits (`waker` is kept to wake it; poll
    /// again at [`Table::poll_at`] at the latest), else how it ended. A waiter past the escape
    /// time leaves the queue and runs beside the slots. Before it, with the kicks' grace on, a
    /// waiter whose claimed holder's kick is older than the grace takes that slot ([`grace`]);
    /// past it, the escape's rule and report stand, as without the grace.
    pub(crate) fn poll_wait(
        &mut self,
        key: WaitId,
        now: impl Clock,
        waker: &Waker,
        fx: &mut Effects,
    ) -> Option<Step> {
        let now: &dyn Clock = &now;
        let waited = now.now().saturating_sub(self.waiters[key.0].since);
        if waited < self.escape_ns {
            self.revoke_for(key.0, now, fx);
        }
        let w = &mut self.waiters[key.0];
        if matches!(w.state, State::Queued(_)) && waited < self.escape_ns {
            if !w.waker.as_ref().is_some_and(|x| x.will_wake(waker)) {
                w.waker = Some(waker.clone());
            }
            return None;
        }
        let step = match self.waiters.remove(key.0).state {
            State::Granted { slot, since } => Step::Held { slot, since },
            State::Cancelled => Step::Cancelled,
            State::Queued(who) => {
                self.unqueue(key.0);
                self.escaped.push(who);
                fx.escapes += 1;
                self.rebalance(now, fx);
                Step::Escaped
            }
        };
        self.check();
        Some(step)
    }

    /// Gives queued wait `key` the waker of its thread before the thread polls it (a
    /// deferred claim's, `claim.rs`): what its grant, a shutdown or a sooner grace wakes.
    pub(crate) fn wake_with(&mut self, key: WaitId, waker: Waker) {
        self.waiters[key.0].waker = Some(waker);
    }

    /// Takes the waker out of wait `key`, if it holds one.
    pub(crate) fn take_waker(&mut self, key: WaitId) -> Option<Waker> {
        self.waiters[key.0].waker.take()
    }

    /// Ends a wait that will not be polled again (its future was dropped): a queued waiter
    /// leaves the queue; a slot granted to it goes to the next waiter.
    pub(crate) fn abandon(&mut self, key: WaitId, now: impl Clock, fx: &mut Effects) {
        let now: &dyn Clock = &now;
        if matches!(self.waiters[key.0].state, State::Queued(_)) {
            self.unqueue(key.0);
        }
        if let State::Granted { slot, .. } = self.waiters.remove(key.0).state {
            self.unseat(slot, fx);
        }
        self.rebalance(now, fx);
        self.check();
    }

    /// Thread `id` gives its core back (it blocks or ends): the slot goes to the best waiter
    /// allowed on it. `false` if it held none (an escaped or a revoked thread holds none but
    /// leaves).
    pub(crate) fn release(&mut self, id: u64, now: impl Clock, fx: &mut Effects) -> bool {
        let now: &dyn Clock = &now;
        let held = if let Some(s) = self.slot_of(id) {
            self.unseat(s, fx);
            if !self.order.is_empty() {
                self.rebalance(now, fx);
            }
            true
        } else if let Some(i) = self.escaped.iter().position(|w| w.id == id) {
            self.escaped.swap_remove(i);
            true
        } else {
            self.take_revoked(id).is_some()
        };
        self.check();
        held
    }

    /// Thread `id` is at a checkpoint at `now`. A holder gives its slot up if a better waiter
    /// claimed it or its mask no longer allows it (then waits by its rank), or if its slice
    /// is over and a waiter as good by priority asks for a turn (then waits by priority
    /// alone). An escaped thread takes a free allowed slot if there is one. A revoked thread
    /// takes a free allowed slot or waits by its rank.
    pub(crate) fn checkpoint(&mut self, id: u64, now: impl Clock, fx: &mut Effects) -> Step {
        let now: &dyn Clock = &now;
        let step = if let Some(s) = self.slot_of(id) {
            if self.must_leave(s) {
                self.give_up(s, false, None, now, fx)
            } else if self.turn_wanted(s) && self.slice_over(s, now) {
                fx.kicks[KickReason::Slice as usize] += 1;
                self.give_up(s, true, None, now, fx)
            } else {
                self.keep(s, now, fx)
            }
        } else if let Some(i) = self.escaped.iter().position(|w| w.id == id) {
            let free = self.free & self.allowed(&self.escaped[i].traits, None);
            if free == 0 {
                Step::Kept
            } else {
                let who = self.escaped.swap_remove(i);
                let slot = pick(free, who.traits.ideal);
                self.seat(slot, who, now);
                Step::Held {
                    slot,
                    since: now.stamp(),
                }
            }
        } else if let Some(who) = self.take_revoked(id) {
            self.enter(who, false, None, now, fx)
        } else {
            Step::Kept
        };
        self.check();
        step
    }

    /// Thread `id` yields its core at `now` (see [`YieldKind`]). A yield is a checkpoint too:
    /// a claimed slot is given up as at a checkpoint. A thread that gives its slot up by a
    /// yield waits by priority alone (a turn), so a first thread does not take it straight
    /// back. A revoked thread waits by its rank as at a checkpoint. An escaped thread, or one
    /// without a slot, keeps going.
    pub(crate) fn yield_core(
        &mut self,
        id: u64,
        kind: YieldKind,
        now: impl Clock,
        fx: &mut Effects,
    ) -> Step {
        let now: &dyn Clock = &now;
        let step = match self.slot_of(id) {
            None => match self.take_revoked(id) {
                Some(who) => self.enter(who, false, None, now, fx),
                None => Step::Kept,
            },
            Some(s) if self.must_leave(s) => self.give_up(s, false, None, now, fx),
            Some(s) => match self.yield_target(s, kind) {
                None => self.keep(s, now, fx),
                Some(k) => {
                    self.unqueue(k);
                    let h = self.unseat(s, fx);
                    self.grant(k, s, now, fx);
                    // The target left the queue: other slots' flags may drop.
                    self.rebalance(now, fx);
                    let pin = (kind == YieldKind::SamePriority).then_some(s);
                    self.enter(h.who, true, pin, now, fx)
                }
            },
        };
        self.check();
        step
    }

    /// Thread `id`'s priority, first flag, mask or ideal core changed: re-rank it wherever it
    /// is. A holder whose mask no longer allows its slot is asked to leave (not a kick).
    pub(crate) fn refresh(&mut self, id: u64, traits: Traits, now: impl Clock, fx: &mut Effects) {
        let now: &dyn Clock = &now;
        if let Some(s) = self.slot_of(id) {
            self.slots[s]
                .as_mut()
                .expect("a found slot is held")
                .who
                .traits = traits;
        } else if let Some(w) = (self.escaped.iter_mut())
            .chain(self.revoked.iter_mut())
            .find(|w| w.id == id)
        {
            w.traits = traits;
        } else if let Some(i) = self.order.iter().position(|&k| self.waiters[k].id == id) {
            let k = self.order.remove(i);
            let w = &mut self.waiters[k];
            let State::Queued(who) = &mut w.state else {
                unreachable!("a waiter in the order is queued")
            };
            who.traits = traits;
            let rank = Rank::new(traits.priority, traits.first);
            w.rank = if w.turn { rank.by_priority() } else { rank };
            w.ideal = traits.ideal;
            let (traits, pin) = (who.traits, w.pin);
            self.waiters[k].mask = self.allowed(&traits, pin);
            self.insert(k);
        }
        self.rebalance(now, fx);
        self.check();
    }

    /// Shuts down: every queued waiter's wait ends `Cancelled`, kicks are dropped, and later
    /// acquires return `Cancelled` at once. Holders keep their slots until they release.
    pub(crate) fn shutdown(&mut self, fx: &mut Effects) {
        self.shut = true;
        for k in std::mem::take(&mut self.order) {
            let w = &mut self.waiters[k];
            w.state = State::Cancelled;
            fx.wake.extend(w.waker.take());
        }
        for h in self.slots.iter_mut().flatten() {
            h.kick = None;
        }
        self.set_flags(fx);
        self.check();
    }

    /// Takes a free allowed slot or queues. `turn`: rank by priority alone; `pin`: wait for
    /// that slot only (after a yield 0).
    fn enter(
        &mut self,
        who: Who,
        turn: bool,
        pin: Option<usize>,
        now: &dyn Clock,
        fx: &mut Effects,
    ) -> Step {
        if self.shut {
            return Step::Cancelled;
        }
        debug_assert!(
            self.slot_of(who.id).is_none()
                && !self.is_escaped(who.id)
                && !self.is_revoked(who.id)
                && !self.waiters.iter().any(|(_, w)| w.id == who.id),
            "thread {} asks for a core it holds or waits for",
            who.id
        );
        let mask = self.allowed(&who.traits, pin);
        let free = self.free & mask;
        if free != 0 {
            let slot = pick(free, who.traits.ideal);
            self.seat(slot, who, now);
            return Step::Held {
                slot,
                since: now.stamp(),
            };
        }
        let rank = Rank::new(who.traits.priority, who.traits.first);
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let k = self.waiters.insert(Waiter {
            id: who.id,
            rank: if turn { rank.by_priority() } else { rank },
            mask,
            ideal: who.traits.ideal,
            turn,
            pin,
            since: now.now(),
            ticket,
            state: State::Queued(who),
            waker: None,
            poll_at: grace::NEVER,
        });
        self.insert(k);
        fx.waits += 1;
        self.rebalance(now, fx);
        Step::Queued(WaitId(k))
    }

    /// The slots a thread may take: its mask cut to the table, or the pinned slot.
    fn allowed(&self, traits: &Traits, pin: Option<usize>) -> u64 {
        let mask = traits.mask & self.all;
        debug_assert_ne!(
            mask, 0,
            "core mask {:#x} has none of the {} cores",
            traits.mask, self.all
        );
        let mask = if mask == 0 { self.all } else { mask };
        match pin {
            Some(s) if mask & (1 << s) != 0 => 1 << s,
            _ => mask,
        }
    }

    /// Puts queued waiter `k` at its place in `order` (after its equals: FIFO).
    fn insert(&mut self, k: usize) {
        let rank = |w: &Waiter| (w.rank, w.ticket);
        let r = rank(&self.waiters[k]);
        let at = self.order.partition_point(|&o| rank(&self.waiters[o]) < r);
        self.order.insert(at, k);
    }

    fn unqueue(&mut self, k: usize) {
        let i = self
            .order
            .iter()
            .position(|&o| o == k)
            .expect("a queued waiter is in the order");
        self.order.remove(i);
    }

    fn seat(&mut self, slot: usize, who: Who, now: &dyn Clock) {
        debug_assert!(
            self.slots[slot].is_none(),
            "slot {slot} taken by {} while held by {:?}",
            who.id,
            self.holder(slot).map(|(w, _)| w.id)
        );
        self.slots[slot] = Some(Hold {
            who,
            since: now.stamp(),
            kick: None,
            kicked_at: 0,
        });
        self.free &= !(1 << slot);
    }

    fn unseat(&mut self, slot: usize, fx: &mut Effects) -> Hold {
        let h = self.slots[slot].take().expect("unseating a held slot");
        self.free |= 1 << slot;
        self.set_flag(slot, Flag::Idle, fx);
        h
    }

    fn grant(&mut self, k: usize, slot: usize, now: &dyn Clock, fx: &mut Effects) {
        let w = &mut self.waiters[k];
        let State::Queued(who) = std::mem::replace(
            &mut w.state,
            State::Granted {
                slot,
                since: now.stamp(),
            },
        ) else {
            unreachable!("granting slot {slot} to a waiter that is not queued")
        };
        fx.wake.extend(w.waker.take());
        self.seat(slot, who, now);
    }

    /// Whether the holder of `s` must give it up now: claimed by a better waiter, or its
    /// mask no longer allows the slot.
    fn must_leave(&self, s: usize) -> bool {
        let h = self.slots[s].as_ref().expect("a held slot");
        h.who.traits.mask & (1 << s) == 0 || self.claims()[s].is_some()
    }

    fn slice_over(&self, s: usize, now: &dyn Clock) -> bool {
        let h = self.slots[s].as_ref().expect("a held slot");
        now.stamp().saturating_sub(h.since) >= self.slice
    }

    /// Whether a queued waiter allowed on `s` is as good as its holder by priority.
    fn turn_wanted(&self, s: usize) -> bool {
        self.flag_for(s) == Flag::Turn
    }

    /// The holder of `s` keeps it: a kick nobody claims any more is dropped.
    fn keep(&mut self, s: usize, now: &dyn Clock, fx: &mut Effects) -> Step {
        self.slots[s].as_mut().expect("a held slot").kick = None;
        self.rebalance(now, fx);
        Step::Kept
    }

    /// The holder of `s` gives it up and waits again; `s` goes to the best waiter allowed on it.
    fn give_up(
        &mut self,
        s: usize,
        turn: bool,
        pin: Option<usize>,
        now: &dyn Clock,
        fx: &mut Effects,
    ) -> Step {
        let h = self.unseat(s, fx);
        self.rebalance(now, fx);
        debug_assert!(
            self.free & (1 << s) == 0 || h.who.traits.mask & (1 << s) == 0,
            "slot {s} given up by {} with nobody to take it",
            h.who.id
        );
        self.enter(h.who, turn, pin, now, fx)
    }

    /// The waiter a yield of `kind` from slot `s` hands the slot to.
    fn yield_target(&self, s: usize, kind: YieldKind) -> Option<usize> {
        let h = self.slots[s].as_ref().expect("a held slot");
        let mut allowed = self
            .order
            .iter()
            .copied()
            .filter(|&k| self.waiters[k].mask & (1 << s) != 0);
        match kind {
            YieldKind::Any => allowed.next(),
            YieldKind::SamePriority | YieldKind::Migrate => allowed
                .filter(|&k| self.waiters[k].rank.priority() == h.who.traits.priority)
                .min_by_key(|&k| self.waiters[k].ticket),
        }
    }

    /// Which holder each queued waiter claims, in rank order: the worst holder on its allowed
    /// slots that it outranks and no better waiter claimed (then the waiter's ideal core, then
    /// the longest held, then the lowest slot). A claimed slot is kicked. Each slot's claim is
    /// the kick's reason and the claiming waiter's key.
    fn claims(&self) -> [Option<(KickReason, usize)>; MAX_CORES] {
        let mut out = [None; MAX_CORES];
        let held = self.all & !self.free;
        let mut claimed = 0u64;
        for &k in &self.order {
            if claimed == held {
                break;
            }
            let w = &self.waiters[k];
            let victim = bits(w.mask & held & !claimed)
                .map(|s| (s, self.slots[s].as_ref().expect("a held slot")))
                .filter(|(_, h)| w.rank.outranks(h.rank()))
                .max_by_key(|&(s, h)| (h.rank(), Some(s) == w.ideal, Reverse(h.since), Reverse(s)));
            if let Some((s, h)) = victim {
                claimed |= 1 << s;
                out[s] = Some((w.rank.kick_reason(h.rank()), k));
            }
        }
        out
    }

    /// What the holder of `s` is asked (see [`Flag`]).
    fn flag_for(&self, s: usize) -> Flag {
        // A shut-down table asks nobody to move: its kicks are dropped, and a holder its mask
        // no longer allows would leave for a queue that answers Cancelled.
        let Some(h) = self.slots[s].as_ref().filter(|_| !self.shut) else {
            return Flag::Idle;
        };
        if h.kick.is_some() || h.who.traits.mask & (1 << s) == 0 {
            return Flag::Kick;
        }
        let mut flag = Flag::Idle;
        for &k in &self.order {
            let w = &self.waiters[k];
            if w.mask & (1 << s) != 0 {
                if w.rank.may_take_turn(h.rank()) {
                    return Flag::Turn;
                }
                flag = Flag::Waiter;
            }
        }
        flag
    }

    /// Sets every slot's flag by [`Table::flag_for`].
    fn set_flags(&mut self, fx: &mut Effects) {
        for s in 0..self.cores() {
            let f = self.flag_for(s);
            self.set_flag(s, f, fx);
        }
    }

    fn set_flag(&mut self, s: usize, f: Flag, fx: &mut Effects) {
        if self.flags[s] != f {
            self.flags[s] = f;
            fx.dirty |= 1 << s;
        }
    }

    /// Restores the invariants after the queue or the slots changed: free slots go to the best
    /// allowed waiters in rank order, claimed slots are kicked, flags are recomputed.
    fn rebalance(&mut self, now: &dyn Clock, fx: &mut Effects) {
        let mut i = 0;
        while i < self.order.len() && self.free != 0 {
            let k = self.order[i];
            let free = self.free & self.waiters[k].mask;
            if free == 0 {
                i += 1;
                continue;
            }
            let slot = pick(free, self.waiters[k].ideal);
            self.order.remove(i);
            self.grant(k, slot, now, fx);
        }
        let claims = self.claims();
        for (s, claim) in claims.into_iter().enumerate() {
            if let Some((reason, _)) = claim {
                let h = self.slots[s].as_mut().expect("a claimed slot is held");
                if h.kick.is_none() {
                    h.kick = Some(reason);
                    h.kicked_at = now.now();
                    fx.kicks[reason as usize] += 1;
                    fx.kicked |= 1 << s;
                }
            }
        }
        if self.grace_ns > 0 {
            self.tell_claimers(&claims, fx);
        }
        self.set_flags(fx);
    }

    /// Checks every invariant of the module doc (debug builds only).
    fn check(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        let mut ids: Vec<u64> = self.slots.iter().flatten().map(|h| h.who.id).collect();
        ids.extend(self.escaped.iter().chain(&self.revoked).map(|w| w.id));
        ids.extend(self.order.iter().map(|&k| self.waiters[k].id));
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(
            ids.len(),
            n,
            "a thread is in two places: {:?}",
            self.queue()
        );
        for (s, h) in self.slots.iter().enumerate() {
            assert_eq!(
                h.is_none(),
                self.free & (1 << s) != 0,
                "slot {s} and free mask {:#x} disagree",
                self.free
            );
            assert_eq!(
                self.flags[s],
                self.flag_for(s),
                "slot {s}: flag {:?}, expected {:?}",
                self.flags[s],
                self.flag_for(s)
            );
        }
        let queued = self
            .waiters
            .iter()
            .filter(|(_, w)| matches!(w.state, State::Queued(_)))
            .count();
        assert_eq!(queued, self.order.len(), "queued waiters outside the order");
        for pair in self.order.windows(2) {
            let (a, b) = (&self.waiters[pair[0]], &self.waiters[pair[1]]);
            assert!(
                (a.rank, a.ticket) < (b.rank, b.ticket),
                "order broken: {:?}/{} before {:?}/{}",
                a.rank,
                a.ticket,
                b.rank,
                b.ticket
            );
        }
        for &k in &self.order {
            let w = &self.waiters[k];
            assert!(
                matches!(w.state, State::Queued(_)) && w.mask & self.free == 0,
                "thread {} waits with mask {:#x} while slots {:#x} are free",
                w.id,
                w.mask,
                self.free
            );
        }
        self.check_grace();
    }
}
