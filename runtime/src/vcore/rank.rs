//! Who outranks whom on the virtual cores (docs/design.md section 8).
//!
//! A thread's [`Rank`] is its Horizon priority (0 best ..= 63) and whether it ranks first
//! (HOS_VCORE_FIRST). Keys order lexicographically, priority before the first flag:
//!
//! | a | b | a outranks b when |
//! | --- | --- | --- |
//! | first | first | a's priority is strictly better (then the longer waiter, outside the rank) |
//! | first | other | a's priority is equal or better: a first thread outranks only threads of equal or worse priority |
//! | other | first | a's priority is strictly better: such a thread still preempts a first thread, as on the console |
//! | other | other | a's priority is strictly better |
//!
//! Among equal ranks the longer waiter goes first (the queue's ticket, [`super::table`]).
//! Turns (time slices and yields) compare guest priority alone, whatever the first flag says.

use crate::stats::KickReason;

/// How a thread ranks: Horizon priority, then the HOS_VCORE_FIRST flag. `Ord` is the rank
/// (smaller is better).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Rank {
    priority: u8,
    /// `!first`, so that a first thread sorts before others of its priority.
    later: bool,
}

impl Rank {
    /// The rank of a thread of Horizon `priority` that ranks first or not: a first thread
    /// before others of its priority, any better priority before both.
    pub(crate) const fn new(priority: u8, first: bool) -> Rank {
        Rank {
            priority,
            later: !first,
        }
    }

    /// Horizon priority, 0 (best) ..= 63.
    pub(crate) const fn priority(self) -> u8 {
        self.priority
    }

    #[cfg(all(test, not(loom)))]
    /// Whether the rank is first (HOS_VCORE_FIRST).
    pub(crate) const fn is_first(self) -> bool {
        !self.later
    }

    /// The rank with the first flag dropped: how a first thread ranks after it gave its core
    /// up by turn (otherwise it takes the core straight back, a livelock).
    pub(crate) const fn by_priority(self) -> Rank {
        Rank::new(self.priority, false)
    }

    /// Whether a waiter of this rank may kick a holder of `holder`'s rank: it is strictly better.
    pub(crate) fn outranks(self, holder: Rank) -> bool {
        self < holder
    }

    /// Why a waiter of this rank kicks `holder` (it must outrank it): a better priority, or the
    /// first flag at equal priority.
    pub(crate) fn kick_reason(self, holder: Rank) -> KickReason {
        debug_assert!(
            self.outranks(holder),
            "{self:?} does not outrank {holder:?}"
        );
        if self.priority < holder.priority {
            KickReason::Priority
        } else {
            KickReason::First
        }
    }

    /// Whether a waiter of this rank may take a turn from `holder` (time slice): it is as good
    /// by guest priority. First flags do not count: a first holder's slices follow priority.
    pub(crate) fn may_take_turn(self, holder: Rank) -> bool {
        self.priority <= holder.priority
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Every rank of the 64 priorities, first and not.
    fn all() -> impl Iterator<Item = Rank> + Clone {
        (0..64u8).flat_map(|p| [Rank::new(p, true), Rank::new(p, false)])
    }

    /// The rule of docs/design.md section 8, read literally, for one pair.
    fn spec_outranks(a: Rank, b: Rank) -> bool {
        let (pa, pb) = (a.priority(), b.priority());
        match (a.is_first(), b.is_first()) {
            (true, true) => pa < pb,
            (true, false) => pa <= pb,
            (false, true) => pa < pb,
            (false, false) => pa < pb,
        }
    }

    #[test]
    fn outranks_is_the_spec_for_every_pair() {
        for a in all() {
            for b in all() {
                assert_eq!(a.outranks(b), spec_outranks(a, b), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn outranks_is_a_strict_total_order() {
        for a in all() {
            assert!(!a.outranks(a), "{a:?} outranks itself");
            for b in all() {
                if a != b {
                    assert!(a.outranks(b) ^ b.outranks(a), "{a:?} vs {b:?}");
                }
                for c in all() {
                    if a.outranks(b) && b.outranks(c) {
                        assert!(a.outranks(c), "{a:?} {b:?} {c:?} not transitive");
                    }
                }
            }
        }
    }

    #[test]
    fn kick_reasons_and_turns_for_every_pair() {
        for a in all() {
            for b in all() {
                if a.outranks(b) {
                    let want = if a.priority() < b.priority() {
                        KickReason::Priority
                    } else {
                        assert!(a.is_first() && !b.is_first(), "{a:?} vs {b:?}");
                        KickReason::First
                    };
                    assert_eq!(a.kick_reason(b), want, "{a:?} vs {b:?}");
                }
                assert_eq!(
                    a.may_take_turn(b),
                    a.priority() <= b.priority(),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }

    #[test]
    fn by_priority_drops_only_the_first_flag() {
        for a in all() {
            let b = a.by_priority();
            assert_eq!(b.priority(), a.priority());
            assert!(!b.is_first());
            assert_eq!(a.is_first(), a.outranks(b), "{a:?}");
        }
    }
}
