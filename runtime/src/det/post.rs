//! Posted host events: what the host's threads (input, GPU fences, file reads, service
//! replies) hand the guest in deterministic mode. A post waits in this queue and is applied
//! only at a decision point.
//!
//! Invariant: posts leave the queue in (virtual time, source, sequence) order, where a
//! source's sequence counts its own posts, so the order in which they are applied depends on
//! what was posted and never on which host thread posted first. A post is due once the
//! clock reaches its virtual time, and is taken exactly once.

use crate::sync::{lock, Mutex};
use std::collections::BTreeMap;

/// One posted event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Post {
    /// When it is due, in virtual ns.
    pub vt: u64,
    /// Who posted it (a device or service the host numbers).
    pub source: u32,
    /// Its place among its source's posts, from 0.
    pub seq: u64,
    /// What it carries.
    pub payload: Vec<u8>,
}

/// The queue of posts, shared by the host's threads and the token holder.
#[derive(Debug, Default)]
pub struct Posts {
    inner: Mutex<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    /// (vt, source, seq) to payload: a BTreeMap, so the first entry is the next due.
    waiting: BTreeMap<(u64, u32, u64), Vec<u8>>,
    /// Each source's next sequence number.
    next_seq: BTreeMap<u32, u64>,
    /// The virtual time of the last decision that took posts.
    now: u64,
}

impl Queue {
    fn push(&mut self, source: u32, vt: u64, payload: Vec<u8>) -> u64 {
        let seq = self.next_seq.entry(source).or_insert(0);
        let at = *seq;
        *seq += 1;
        self.waiting.insert((vt, source, at), payload);
        at
    }
}

impl Posts {
    /// An empty queue.
    pub fn new() -> Posts {
        Posts::default()
    }

    /// Posts `payload` from `source`, due at once: at the virtual time of the last decision,
    /// so the next decision applies it. Its sequence number.
    pub fn post(&self, source: u32, payload: Vec<u8>) -> u64 {
        let mut q = lock(&self.inner);
        let now = q.now;
        q.push(source, now, payload)
    }

    /// Posts `payload` from `source`, due at virtual time `vt` (a virtual device that knows
    /// when its event falls: a vsync, an audio period, a modelled GPU latency). Its sequence
    /// number.
    pub fn post_at(&self, source: u32, vt: u64, payload: Vec<u8>) -> u64 {
        lock(&self.inner).push(source, vt, payload)
    }

    /// At a decision at virtual time `vt`: the posts due by then, in (vt, source, sequence)
    /// order, taken out of the queue.
    pub fn take_due(&self, vt: u64) -> Vec<Post> {
        let mut q = lock(&self.inner);
        q.now = q.now.max(vt);
        let later = match vt.checked_add(1) {
            Some(after) => q.waiting.split_off(&(after, 0, 0)),
            None => BTreeMap::new(),
        };
        std::mem::replace(&mut q.waiting, later)
            .into_iter()
            .map(|((vt, source, seq), payload)| Post {
                vt,
                source,
                seq,
                payload,
            })
            .collect()
    }

    /// The virtual time of the earliest waiting post: where the clock jumps when nothing can
    /// run.
    pub fn next_due(&self) -> Option<u64> {
        lock(&self.inner).waiting.keys().next().map(|k| k.0)
    }

    /// Posts waiting.
    pub fn len(&self) -> usize {
        lock(&self.inner).waiting.len()
    }

    /// True if no post waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn keys(posts: &[Post]) -> Vec<(u64, u32, u64)> {
        posts.iter().map(|p| (p.vt, p.source, p.seq)).collect()
    }

    #[test]
    fn posts_leave_in_time_source_sequence_order() {
        let q = Posts::new();
        assert_eq!(q.post_at(2, 50, vec![1]), 0);
        assert_eq!(q.post_at(1, 50, vec![2]), 0);
        assert_eq!(q.post_at(2, 10, vec![3]), 1);
        assert_eq!(q.post_at(1, 50, vec![4]), 1);
        assert_eq!(q.post_at(3, 90, vec![5]), 0);
        assert_eq!(q.next_due(), Some(10));
        let due = q.take_due(50);
        assert_eq!(keys(&due), [(10, 2, 1), (50, 1, 0), (50, 1, 1), (50, 2, 0)]);
        assert_eq!(due[1].payload, [2]);
        assert_eq!(q.len(), 1);
        assert_eq!(q.next_due(), Some(90));
        assert!(q.take_due(89).is_empty());
        assert_eq!(keys(&q.take_due(u64::MAX)), [(90, 3, 0)]);
        assert!(q.is_empty());
        assert_eq!(q.next_due(), None);
    }

    #[test]
    fn a_plain_post_is_due_at_the_next_decision() {
        let q = Posts::new();
        q.take_due(1_000);
        assert_eq!(q.post(4, vec![9]), 0);
        assert_eq!(q.next_due(), Some(1_000));
        // The clock only moves forward; a decision at any later time applies it.
        assert_eq!(keys(&q.take_due(1_200)), [(1_000, 4, 0)]);
        q.take_due(5);
        assert_eq!(q.post(4, vec![]), 1);
        assert_eq!(q.next_due(), Some(1_200), "stamped at the latest decision");
    }

    #[test]
    fn the_order_does_not_depend_on_which_thread_posted_first() {
        let run = || {
            let q = Arc::new(Posts::new());
            let posters: Vec<_> = (0..4u32)
                .map(|source| {
                    let q = Arc::clone(&q);
                    std::thread::spawn(move || {
                        for i in 0..200u64 {
                            // Sources collide on the same virtual times.
                            q.post_at(source, (i / 3) * 16_666_667, vec![source as u8, i as u8]);
                            if i % 7 == 0 {
                                std::thread::yield_now();
                            }
                        }
                    })
                })
                .collect();
            for p in posters {
                p.join().unwrap();
            }
            let mut taken = Vec::new();
            for frame in 0..=70u64 {
                taken.extend(q.take_due(frame * 16_666_667));
            }
            taken
        };
        let first = run();
        assert_eq!(first.len(), 800);
        let mut sorted = keys(&first);
        sorted.sort_unstable();
        assert_eq!(keys(&first), sorted);
        for _ in 0..5 {
            assert_eq!(run(), first);
        }
    }
}
