//! A thread's card: who it is (id and traits) and since when it holds its slot, kept beside its
//! kick word on the word's cache line (`kick.rs`), so that the semaphore can learn who holds a
//! slot taken on the fast path, without the lock, once it needs to (`cells.rs`).
//!
//! # Invariant
//!
//! A card is written by its owner only while it holds no slot (at a fast take, before the
//! compare-and-swap that publishes it), by a waker that claims a slot for the owner without
//! the lock, while the owner's seat is marked claiming, which keeps the owner from taking one
//! itself (`claim.rs`), and by the semaphore only under its lock as it lends the owner's slot
//! with it (`fast.rs`); the owner's own steps write its stamp after a step the
//! table told it of, the same value the lend writes. So no two writers disagree, and a reader
//! reads what the cell's ordering published. The card is made of
//! std atomics, as the kick word: it outlives any loom model, and the cell that publishes it is
//! a model's atomic.

use super::step::{Traits, Who, MAX_CORES};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bits of the packed traits: the mask's low [`MAX_CORES`] bits (all a table reads), then
/// the priority, the first flag, and the ideal core plus one (0: none).
const PRIORITY_SHIFT: u32 = 8;
const FIRST_BIT: u64 = 1 << 16;
const IDEAL_SHIFT: u32 = 17;

/// A thread's card (module invariant).
#[derive(Debug)]
pub(crate) struct Card {
    id: AtomicU64,
    /// [`pack`]ed traits.
    traits: AtomicU64,
    /// The stamp of its slot ([`super::step::Clock::stamp`]).
    since: AtomicU64,
}

impl Card {
    pub(crate) const fn new() -> Self {
        Card {
            id: AtomicU64::new(0),
            traits: AtomicU64::new(0),
            since: AtomicU64::new(0),
        }
    }

    /// Writes `who` and the stamp `since`: the owner before it takes a slot on the fast path
    /// (the cell's compare-and-swap that follows publishes them), or the semaphore as it lends
    /// a held slot (the cell's store that follows does).
    #[inline]
    pub(crate) fn publish(&self, who: Who, since: u64) {
        // Relaxed: the cell's Release write that follows publishes them (above).
        self.id.store(who.id, Ordering::Relaxed);
        self.traits.store(pack(who.traits), Ordering::Relaxed);
        self.since.store(since, Ordering::Relaxed);
    }

    /// Who the card names.
    pub(crate) fn who(&self) -> Who {
        // Relaxed: read after the cell's Acquire swap, which ordered the writes before it.
        Who {
            id: self.id.load(Ordering::Relaxed),
            traits: unpack(self.traits.load(Ordering::Relaxed)),
        }
    }

    /// The stamp of the owner's slot.
    #[inline]
    pub(crate) fn since(&self) -> u64 {
        // Relaxed: as `who`; the owner reads its own stamp as a hint (its checkpoint).
        self.since.load(Ordering::Relaxed)
    }

    /// Sets the stamp of the owner's slot (the owner after a step the table told it of).
    pub(crate) fn stamp(&self, since: u64) {
        // Relaxed: a hint for the owner's checkpoint; the table keeps the truth.
        self.since.store(since, Ordering::Relaxed);
    }
}

/// `traits` in one word: the mask cut to its low [`MAX_CORES`] bits, which are all a table
/// reads of it.
#[inline]
fn pack(t: Traits) -> u64 {
    let ideal = t.ideal.map_or(0, |i| i as u64 + 1);
    (t.mask & ((1 << MAX_CORES) - 1))
        | u64::from(t.priority) << PRIORITY_SHIFT
        | if t.first { FIRST_BIT } else { 0 }
        | ideal << IDEAL_SHIFT
}

fn unpack(v: u64) -> Traits {
    let ideal = (v >> IDEAL_SHIFT) & 0xF;
    Traits {
        priority: (v >> PRIORITY_SHIFT) as u8,
        first: v & FIRST_BIT != 0,
        mask: v & ((1 << MAX_CORES) - 1),
        ideal: (ideal != 0).then(|| ideal as usize - 1),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Every priority, first flag, ideal core and 8-bit mask comes back as it went in; bits
    /// past the most cores are dropped.
    #[test]
    fn traits_pack_and_unpack_exhaustively() {
        for priority in 0..=u8::MAX {
            for first in [false, true] {
                for ideal in (0..MAX_CORES).map(Some).chain([None]) {
                    for mask in 0..1u64 << MAX_CORES {
                        let t = Traits {
                            priority,
                            first,
                            mask,
                            ideal,
                        };
                        assert_eq!(unpack(pack(t)), t);
                        let wide = Traits {
                            mask: mask | 1 << 40,
                            ..t
                        };
                        assert_eq!(unpack(pack(wide)), t);
                    }
                }
            }
        }
    }

    #[test]
    fn a_card_keeps_who_and_its_stamp() {
        let card = Card::new();
        let who = Who {
            id: 7,
            traits: Traits::new(44, true, 0b101, 2),
        };
        card.publish(who, 5);
        assert_eq!((card.who(), card.since()), (who, 5));
        card.stamp(9);
        assert_eq!(card.since(), 9);
    }
}
