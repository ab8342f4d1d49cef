//! The table's invariants (the module doc of `table` lists them), checked after every
//! operation in debug builds and by the tests.

use super::{census, Census, Place, Table, Tree, SWEEP_AT};
use crate::sync::atomic::AtomicU32;
use std::ops::Deref;

impl<R: Clone, W: Deref<Target = AtomicU32> + std::fmt::Debug> Table<R, W> {
    /// Checks the module's invariants (debug builds; tests call it directly).
    pub(crate) fn check(&self) {
        if !cfg!(debug_assertions) && !cfg!(test) {
            return;
        }
        assert!(
            self.ended.is_empty(),
            "an operation ended waits and did not settle"
        );
        let mut seen = vec![0u32; self.waiters.capacity()];
        assert!(
            self.queues.len() <= SWEEP_AT,
            "{} queue entries",
            self.queues.len()
        );
        let mut condvar_waits = [0u32; census::BUCKETS];
        for ((tree, addr), q) in &self.queues {
            if *tree == Tree::CondVar {
                condvar_waits[Census::bucket_of(*addr)] += q.len() as u32;
            }
            for pair in q.windows(2) {
                assert!(
                    self.rank(pair[0]) < self.rank(pair[1]),
                    "queue out of order"
                );
            }
            for &k in q {
                seen[k] += 1;
                let here = match &self.waiters[k].place {
                    Place::Address(a) => (Tree::Address, *a),
                    Place::Drain(a) => (Tree::Drain, *a),
                    Place::CondVar { key, .. } => (Tree::CondVar, *key),
                    p @ Place::Lock { .. } => panic!("waiter {k} in queue {tree:?} is {p:?}"),
                };
                assert_eq!(here, (*tree, *addr), "waiter {k} in the wrong queue");
            }
        }
        assert_eq!(
            self.census.counts(),
            condvar_waits,
            "the census of condvar waits"
        );
        let idle = self
            .threads
            .iter()
            .filter(|(&id, i)| !i.busy(id, &self.waiters))
            .count();
        assert!(idle <= SWEEP_AT, "{idle} idle thread entries");
        for (id, info) in &self.threads {
            let best = info.held.iter().map(|&k| self.waiters[k].priority).min();
            let want = best.map_or(info.base, |b| b.min(info.base));
            assert_eq!(info.effective, want, "thread {id:#x}'s effective priority");
            for &k in &info.held {
                seen[k] += 1;
                assert!(
                    matches!(self.waiters[k].place, Place::Lock { owner, .. } if owner == *id),
                    "waiter {k} held by {id:#x} is {:?}",
                    self.waiters[k].place
                );
            }
            if let Some(k) = info.wait(*id, &self.waiters) {
                let w = &self.waiters[k];
                assert_eq!(w.priority, info.effective, "waiter {k}'s priority");
            }
        }
        for (k, w) in &self.waiters {
            assert_eq!(
                seen[k], 1,
                "waiter {k} ({:?}) linked {} times",
                w.place, seen[k]
            );
            let info = self
                .threads
                .get(&w.thread)
                .expect("a waiter's thread is known");
            assert_eq!(info.waiting, Some(k), "waiter {k} not its thread's wait");
        }
    }
}
