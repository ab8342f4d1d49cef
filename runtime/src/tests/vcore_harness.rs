//! The harness of the virtual-core table tests: a table, an injected clock, the sum of every
//! operation's effects and one counting waker per thread. Shared by `vcore_table.rs` (one test
//! per rule) and `vcore_table_random.rs` (random sequences); each uses a part of it.

#![allow(dead_code)]

use crate::stats::KickReason;
use crate::vcore::step::{Effects, Flag, Step, Traits, WaitId, Who, YieldKind};
use crate::vcore::table::Table;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};

pub(super) const US: u64 = 1_000;
pub(super) const MS: u64 = 1_000_000;
pub(super) const SLICE: u64 = 2_000 * US;
pub(super) const ESCAPE: u64 = 2_000 * MS;

/// Counts its wakes.
#[derive(Default)]
pub(super) struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Where a test thread stands, as the harness tracks it from the steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum At {
    Off,
    Slot(usize),
    Waiting,
    Escaped,
    Revoked,
}

/// A table, a clock, the sum of every operation's effects, and one waker per thread.
pub(super) struct H {
    pub t: Table,
    pub now: u64,
    pub kicks: [u32; 3],
    pub waits: u32,
    pub escapes: u32,
    /// The slots whose holder a kick was set on, a bit per slot (what the trace records).
    pub kicked_slots: u8,
    /// Every slot taken after a kick's grace, with the holder it was taken from, in order.
    pub revoked: Vec<(usize, u64)>,
    pub traits: HashMap<u64, Traits>,
    pub keys: HashMap<u64, WaitId>,
    pub wakes: HashMap<u64, Arc<Count>>,
}

pub(super) fn traits(priority: u8, first: bool, mask: u64, ideal: Option<usize>) -> Traits {
    Traits {
        priority,
        first,
        mask,
        ideal,
    }
}

impl H {
    pub(super) fn new(cores: usize) -> H {
        H::with(cores, SLICE, ESCAPE)
    }

    pub(super) fn with(cores: usize, slice: u64, escape: u64) -> H {
        H::graced(cores, slice, escape, 0)
    }

    /// A table whose kicks have a grace of `grace` ns.
    pub(super) fn graced(cores: usize, slice: u64, escape: u64, grace: u64) -> H {
        H {
            t: Table::new(cores, slice, escape, grace),
            now: 1_000 * MS,
            kicks: [0; 3],
            waits: 0,
            escapes: 0,
            kicked_slots: 0,
            revoked: Vec::new(),
            traits: HashMap::new(),
            keys: HashMap::new(),
            wakes: HashMap::new(),
        }
    }

    /// Registers thread `id` (not yet asking for a core).
    pub(super) fn thread(
        &mut self,
        id: u64,
        priority: u8,
        first: bool,
        mask: u64,
        ideal: Option<usize>,
    ) {
        self.traits.insert(id, traits(priority, first, mask, ideal));
        self.wakes.insert(id, Arc::default());
    }

    pub(super) fn absorb(&mut self, fx: Effects) {
        for (i, n) in fx.kicks.iter().enumerate() {
            self.kicks[i] += n;
        }
        self.waits += fx.waits;
        self.escapes += fx.escapes;
        self.kicked_slots |= fx.kicked;
        self.revoked.extend(fx.revoked);
        for w in fx.wake {
            w.wake();
        }
        for s in 0..self.t.cores() {
            // The flags the holders read are always the recomputed ones.
            let f = self.t.flag(s);
            if self.t.holder(s).is_none() {
                assert_eq!(f, Flag::Idle, "free slot {s} flagged");
            }
        }
    }

    pub(super) fn kicked(&self, r: KickReason) -> u32 {
        self.kicks[r as usize]
    }

    pub(super) fn follow(&mut self, id: u64, step: Step) -> Step {
        if let Step::Queued(k) = step {
            self.keys.insert(id, k);
        }
        step
    }

    pub(super) fn acquire(&mut self, id: u64) -> Step {
        let mut fx = Effects::default();
        let who = Who {
            id,
            traits: self.traits[&id],
        };
        let step = self.t.acquire(who, self.now, &mut fx);
        self.absorb(fx);
        self.follow(id, step)
    }

    /// Polls `id`'s wait; `None` while it waits.
    pub(super) fn poll(&mut self, id: u64) -> Option<Step> {
        let key = self.keys[&id];
        let waker = Waker::from(self.wakes[&id].clone());
        let mut fx = Effects::default();
        let step = self.t.poll_wait(key, self.now, &waker, &mut fx);
        self.absorb(fx);
        if step.is_some() {
            self.keys.remove(&id);
        }
        step
    }

    pub(super) fn release(&mut self, id: u64) -> bool {
        let mut fx = Effects::default();
        let held = self.t.release(id, self.now, &mut fx);
        self.absorb(fx);
        held
    }

    pub(super) fn checkpoint(&mut self, id: u64) -> Step {
        let mut fx = Effects::default();
        let step = self.t.checkpoint(id, self.now, &mut fx);
        self.absorb(fx);
        self.follow(id, step)
    }

    pub(super) fn yield_core(&mut self, id: u64, kind: YieldKind) -> Step {
        let mut fx = Effects::default();
        let step = self.t.yield_core(id, kind, self.now, &mut fx);
        self.absorb(fx);
        self.follow(id, step)
    }

    pub(super) fn refresh(&mut self, id: u64, t: Traits) {
        self.traits.insert(id, t);
        let mut fx = Effects::default();
        self.t.refresh(id, t, self.now, &mut fx);
        self.absorb(fx);
    }

    pub(super) fn abandon(&mut self, id: u64) {
        let key = self.keys.remove(&id).expect("a wait to abandon");
        let mut fx = Effects::default();
        self.t.abandon(key, self.now, &mut fx);
        self.absorb(fx);
    }

    pub(super) fn shutdown(&mut self) {
        let mut fx = Effects::default();
        self.t.shutdown(&mut fx);
        self.absorb(fx);
    }

    pub(super) fn at(&self, id: u64) -> At {
        if let Some(s) = self.t.slot_of(id) {
            At::Slot(s)
        } else if self.t.is_escaped(id) {
            At::Escaped
        } else if self.t.is_revoked(id) {
            At::Revoked
        } else if self.t.queue().contains(&id) {
            At::Waiting
        } else {
            At::Off
        }
    }

    pub(super) fn wakes(&self, id: u64) -> usize {
        self.wakes[&id].0.load(Ordering::Relaxed)
    }

    pub(super) fn advance(&mut self, ns: u64) {
        self.now += ns;
    }

    /// Fills every slot with threads 100.. of `priority` (not first, any core).
    pub(super) fn fill(&mut self, priority: u8) {
        for s in 0..self.t.cores() {
            let id = 100 + s as u64;
            self.thread(id, priority, false, u64::MAX, Some(s));
            assert_eq!(self.acquire(id), self.held(s));
        }
    }

    pub(super) fn held(&self, slot: usize) -> Step {
        Step::Held {
            slot,
            since: self.now,
        }
    }
}

pub(super) const ALL: u64 = u64::MAX;
