//! A thread's ring of its latest events: written by its thread alone, read by any thread
//! without a lock (the flight recorder's dump, the wait tree, a trace's tail).
//!
//! # Invariant
//! Only the owning thread writes. To write event `i` it first publishes `claimed = i + 1`
//! (then a release fence), writes the four words of slot `i % RING`, and publishes
//! `head = i + 1` (release). A reader copies the slots below `head` (acquire), then (after an
//! acquire fence) reads `claimed`: a slot it copied may have been overwritten only if its
//! index is below `claimed - RING`, and those copies are dropped (all of them when the
//! writer lapped the whole copy). Torn words are plain atomics read early, never undefined
//! behaviour; the check drops them.
//!
//! The ring keeps an event's words as recorded (its time in `sys::ticks()`); whoever reads
//! them makes events of them with the reading's tick scale (`Event::from_words`).
//!
//! The counters the owner writes at every event sit alone on their cache lines (with the
//! slots' pointer, which the owner reads at every event), so no other thread's writes near
//! them make the owner's writes miss.
//!
//! Std's atomics, not the loom shim's: the trace is bookkeeping outside the models.

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Events a ring keeps: the flight recorder's depth per thread (a power of two).
pub(crate) const RING: u64 = 2048;

/// An event's four words, as recorded.
pub(crate) type Words = [u64; 4];

/// One thread's ring (two cache lines of its own: see the module doc).
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Ring {
    /// A fixed array, so the masked index needs no bounds check.
    slots: Box<[[AtomicU64; 4]; RING as usize]>,
    /// One past the index being written (see the module's invariant).
    claimed: AtomicU64,
    /// Events written: the next index.
    head: AtomicU64,
}

impl Default for Ring {
    fn default() -> Self {
        let slots: Box<[[AtomicU64; 4]]> = (0..RING)
            .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
            .collect();
        Ring {
            slots: slots.try_into().expect("RING slots were made"),
            claimed: AtomicU64::new(0),
            head: AtomicU64::new(0),
        }
    }
}

impl Ring {
    /// Appends an event's words; returns the events written now. Only the owning thread may
    /// call it.
    #[inline]
    pub(crate) fn push(&self, words: Words) -> u64 {
        // Relaxed: only this thread writes `head`.
        let i = self.head.load(Ordering::Relaxed);
        // Relaxed, then the fence: readers that see any word below see this claim.
        self.claimed.store(i + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        let slot = &self.slots[(i % RING) as usize];
        for (w, v) in slot.iter().zip(words) {
            // Relaxed: published by the Release store of `head`.
            w.store(v, Ordering::Relaxed);
        }
        // Release: a reader that sees `head` sees the words.
        self.head.store(i + 1, Ordering::Release);
        i + 1
    }

    /// The words of the last event written, if any. Only the owning thread may call it.
    #[inline]
    pub(crate) fn last(&self) -> Option<Words> {
        // Relaxed: only this thread writes `head` and the slots.
        let i = self.head.load(Ordering::Relaxed).checked_sub(1)?;
        let slot = &self.slots[(i % RING) as usize];
        Some(std::array::from_fn(|k| slot[k].load(Ordering::Relaxed)))
    }

    /// Events written so far (the index of the next one).
    pub(crate) fn head(&self) -> u64 {
        // Acquire: pairs with `push`'s Release.
        self.head.load(Ordering::Acquire)
    }

    /// The words of the events of index `from` and later that the ring still holds, oldest
    /// first, with their first index (later than `from` when the ring overwrote some).
    pub(crate) fn read(&self, from: u64) -> (u64, Vec<Words>) {
        let head = self.head();
        let start = from.max(head.saturating_sub(RING));
        let words: Vec<Words> = (start..head)
            .map(|i| {
                let s = &self.slots[(i % RING) as usize];
                // Relaxed: checked against `claimed` below.
                std::array::from_fn(|k| s[k].load(Ordering::Relaxed))
            })
            .collect();
        // Acquire fence, then `claimed`: pairs with `push`'s Release fence.
        fence(Ordering::Acquire);
        let claimed = self.claimed.load(Ordering::Relaxed);
        let cut = stale(start, words.len(), claimed);
        let mut words = words;
        words.drain(..cut);
        (start + cut as u64, words)
    }
}

/// How many of `len` copies of the events from index `start` on the writer may have
/// overwritten while they were copied, `claimed` read after them: those below
/// `claimed - RING`, all of them when it lapped the whole copy.
fn stale(start: u64, len: usize, claimed: u64) -> usize {
    let below = claimed.saturating_sub(RING).saturating_sub(start);
    usize::try_from(below).map_or(len, |n| n.min(len))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// An event's words at time `t` (its second argument repeats it).
    fn ev(t: u64) -> Words {
        [t, 1, t, 0]
    }

    #[test]
    fn keeps_the_last_ring_of_events_in_order() {
        let r = Ring::default();
        assert_eq!(r.read(0), (0, vec![]));
        for t in 0..RING + 10 {
            assert_eq!(r.push(ev(t)), t + 1);
        }
        let (first, events) = r.read(0);
        assert_eq!(first, 10);
        assert_eq!(events.len() as u64, RING);
        assert!(events.iter().zip(10..).all(|(e, t)| e[0] == t));
        let (first, tail) = r.read(RING + 5);
        assert_eq!((first, tail.len()), (RING + 5, 5));
        assert_eq!(r.last(), Some(ev(RING + 9)));
        assert_eq!(Ring::default().last(), None);
    }

    #[test]
    fn copies_the_writer_overwrote_are_dropped_even_when_it_lapped_them() {
        assert_eq!(stale(10, 5, 15), 0);
        assert_eq!(stale(10, 5, 10 + RING + 2), 2);
        assert_eq!(stale(10, 5, 10 + 3 * RING), 5);
        assert_eq!(stale(0, 0, 5 * RING), 0);
    }

    #[test]
    fn a_reader_beside_the_writer_sees_only_whole_events_in_order() {
        let r = std::sync::Arc::new(Ring::default());
        let w = r.clone();
        let writer = std::thread::spawn(move || {
            for t in 1..=200_000u64 {
                let _ = w.push(ev(t));
            }
        });
        for _ in 0..200 {
            let (first, events) = r.read(0);
            for (i, e) in events.iter().enumerate() {
                assert_eq!(e[0], first + i as u64 + 1, "a torn or reordered event");
                assert_eq!(e[2], e[0]);
            }
        }
        writer.join().unwrap();
    }
}
