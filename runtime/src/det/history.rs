//! A thread's last turns in the deterministic mode: which decisions gave it the token and
//! why each turn ended, what a softlock's report shows of each thread (`det::softlock`).
//!
//! Invariant: a ring of the thread's [`LEN`] latest turns, oldest first, each filled in only
//! from the decisions themselves (index, virtual time, reasons, candidate count), so two runs
//! that decide the same keep the same history.

use super::witness::Reason;

/// How many turns a thread keeps.
pub const LEN: usize = 4;

/// One turn of a thread: the decision that gave it the token, and why the turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    /// The decision's index.
    pub decision: u64,
    /// The virtual time of the decision, in ns.
    pub vt: u64,
    /// Why that decision was taken (what the token's previous holder did, or a timer).
    pub given: Reason,
    /// How many candidates it had.
    pub candidates: u32,
    /// Why the turn ended: the reason of the next decision, which this thread's stop
    /// caused (`None` while the turn goes on).
    pub ended: Option<Reason>,
}

/// A thread's last [`LEN`] turns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct History {
    turns: [Option<Turn>; LEN],
    /// Turns kept so far (the next goes at `kept % LEN`).
    kept: usize,
}

impl History {
    /// Notes a new turn, the oldest making room.
    pub fn push(&mut self, turn: Turn) {
        self.turns[self.kept % LEN] = Some(turn);
        self.kept += 1;
    }

    /// The latest turn ended for `reason`.
    pub fn end(&mut self, reason: Reason) {
        if let Some(Some(t)) = self.kept.checked_sub(1).map(|i| &mut self.turns[i % LEN]) {
            t.ended = Some(reason);
        }
    }

    /// The latest turn, if any.
    pub fn last(&self) -> Option<Turn> {
        self.turns[self.kept.checked_sub(1)? % LEN]
    }

    /// The turns kept, oldest first.
    pub fn turns(&self) -> Vec<Turn> {
        let start = self.kept.saturating_sub(LEN);
        (start..self.kept)
            .filter_map(|i| self.turns[i % LEN])
            .collect()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn turn(decision: u64) -> Turn {
        Turn {
            decision,
            vt: decision * 10,
            given: Reason::Wait,
            candidates: 1,
            ended: None,
        }
    }

    #[test]
    fn keeps_the_latest_turns_oldest_first_and_ends_the_last() {
        let mut h = History::default();
        assert!(h.turns().is_empty());
        assert_eq!(h.last(), None);
        h.end(Reason::Exit);
        assert!(h.turns().is_empty(), "nothing to end");
        for d in 0..LEN as u64 + 2 {
            h.push(turn(d));
            h.end(Reason::Yield);
        }
        h.push(turn(99));
        let kept: Vec<u64> = h.turns().iter().map(|t| t.decision).collect();
        assert_eq!(kept, [3, 4, 5, 99]);
        assert_eq!(h.turns()[2].ended, Some(Reason::Yield));
        assert_eq!(h.turns()[3].ended, None);
        h.end(Reason::Wait);
        assert_eq!(h.turns()[3].ended, Some(Reason::Wait));
        assert_eq!(
            h.last(),
            h.turns().last().copied(),
            "the last wraps with the ring"
        );
    }
}
