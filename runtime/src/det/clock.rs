//! The virtual clock: the deterministic mode's time, in nanoseconds, moved by what the guest
//! does rather than by the host's clock.
//!
//! Invariant: `vt` never goes back, and it moves only by the configured cost of each counted
//! operation (a checkpoint, an svc or wait) and by jumps to a deadline when nothing can run,
//! so it is a function of the operations counted and never of wall time. Pacing reads wall
//! time only to tell the caller how long to sleep; it never moves `vt`.

/// The console's tick rate (CNTFRQ_EL0): 19.2 MHz. The virtual clock's ticks are counted at
/// this rate, as svcGetSystemTick's are.
pub const TICKS_PER_SECOND: u64 = 19_200_000;

/// The ticks in `ns` nanoseconds, rounded down (`ns * 192 / 10_000`), saturating.
pub fn ticks_in(ns: u64) -> u64 {
    let ticks = u128::from(ns) * u128::from(TICKS_PER_SECOND) / 1_000_000_000;
    u64::try_from(ticks).unwrap_or(u64::MAX)
}

/// What each counted operation costs in virtual time (Hermit's logical time counts syscalls
/// and branches the same way). A recording stores them: a replay must use the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Costs {
    /// Nanoseconds a checkpoint adds (a loop back-edge, a system tick read).
    pub checkpoint_ns: u64,
    /// Nanoseconds an svc or a wait operation adds.
    pub op_ns: u64,
}

impl Default for Costs {
    /// 1 us a checkpoint and 2 us an operation: a polling loop that reads the tick sees it
    /// move, as yuzu's single-core mode adds 400 ticks (20.8 us) a read.
    fn default() -> Costs {
        Costs {
            checkpoint_ns: 1_000,
            op_ns: 2_000,
        }
    }
}

/// Whether the run keeps to wall time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pacing {
    /// `vt` never runs ahead of wall time: at a decision the caller sleeps what
    /// [`Clock::pace`] says. Playable, and still deterministic: pacing only delays.
    Paced,
    /// Never sleeps: idle time is skipped, so a run takes only its CPU time.
    Free,
}

/// The virtual clock of one run.
#[derive(Clone, Debug)]
pub struct Clock {
    vt: u64,
    costs: Costs,
    pacing: Pacing,
    /// The wall time at which `vt` was 0, set by the first [`Clock::pace`].
    origin: Option<u64>,
}

impl Clock {
    /// A clock at 0.
    pub fn new(costs: Costs, pacing: Pacing) -> Clock {
        Clock {
            vt: 0,
            costs,
            pacing,
            origin: None,
        }
    }

    /// The virtual time, in ns.
    pub fn now(&self) -> u64 {
        self.vt
    }

    /// Its costs.
    pub fn costs(&self) -> Costs {
        self.costs
    }

    /// Counts a checkpoint; the new time.
    pub fn checkpoint(&mut self) -> u64 {
        self.vt = self.vt.saturating_add(self.costs.checkpoint_ns);
        self.vt
    }

    /// Counts an svc or wait operation; the new time.
    pub fn op(&mut self) -> u64 {
        self.vt = self.vt.saturating_add(self.costs.op_ns);
        self.vt
    }

    /// A guest's system tick read: it counts as a checkpoint, so a loop that polls the tick
    /// sees time pass; the tick after it.
    pub fn tick(&mut self) -> u64 {
        ticks_in(self.checkpoint())
    }

    /// Nothing can run: time jumps to `deadline`, the earliest pending timer or posted event
    /// (never back, if it is already past); the new time.
    pub fn jump_to(&mut self, deadline: u64) -> u64 {
        self.vt = self.vt.max(deadline);
        self.vt
    }

    /// How long the caller sleeps, at wall time `wall_ns`, so that `vt` does not run ahead
    /// of wall time: 0 when free, or when wall time is already past. The first call anchors
    /// `vt` to wall time.
    pub fn pace(&mut self, wall_ns: u64) -> u64 {
        if self.pacing == Pacing::Free {
            return 0;
        }
        let origin = *self
            .origin
            .get_or_insert_with(|| wall_ns.saturating_sub(self.vt));
        origin.saturating_add(self.vt).saturating_sub(wall_ns)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ticks_are_192_per_10_us() {
        assert_eq!(ticks_in(0), 0);
        assert_eq!(ticks_in(10_000), 192);
        assert_eq!(ticks_in(1_000_000_000), TICKS_PER_SECOND);
        assert_eq!(ticks_in(52), 0, "rounded down: a tick is 52.08 ns");
        assert_eq!(ticks_in(53), 1);
        assert_eq!(ticks_in(u64::MAX), 354_177_486_215_223_391);
    }

    #[test]
    fn operations_cost_what_is_configured() {
        let costs = Costs {
            checkpoint_ns: 10,
            op_ns: 300,
        };
        let mut c = Clock::new(costs, Pacing::Free);
        assert_eq!(c.checkpoint(), 10);
        assert_eq!(c.op(), 310);
        assert_eq!(c.now(), 310);
        assert_eq!(c.costs(), costs);
        // A tick read is a checkpoint: 320 ns is 6 ticks.
        assert_eq!(c.tick(), 6);
        assert_eq!(c.now(), 320);
        assert_eq!(c.jump_to(1_000_000), 1_000_000);
        assert_eq!(c.jump_to(5), 1_000_000, "never back");
    }

    #[test]
    fn a_tick_polling_loop_sees_time_pass() {
        let mut c = Clock::new(Costs::default(), Pacing::Free);
        let start = c.tick();
        let mut reads = 0;
        while c.tick() - start < TICKS_PER_SECOND / 1_000 {
            reads += 1;
        }
        assert_eq!(reads, 999, "1 ms of 1 us checkpoints");
    }

    #[test]
    fn paced_sleeps_until_wall_time_catches_up() {
        let mut c = Clock::new(Costs::default(), Pacing::Paced);
        let wall = 7_000_000_000;
        assert_eq!(c.pace(wall), 0, "the first call anchors");
        c.jump_to(5_000_000);
        assert_eq!(c.pace(wall + 2_000_000), 3_000_000);
        assert_eq!(c.pace(wall + 9_000_000), 0, "behind wall time: no sleep");
        let mut free = Clock::new(Costs::default(), Pacing::Free);
        free.jump_to(5_000_000);
        assert_eq!(free.pace(0), 0);
    }

    proptest! {
        #[test]
        fn vt_never_goes_back_and_counts_only_operations(
            ops in proptest::collection::vec((0u8..4, any::<u64>()), 0..200),
        ) {
            let costs = Costs { checkpoint_ns: 7, op_ns: 1_000 };
            let mut c = Clock::new(costs, Pacing::Free);
            let mut model = 0u64;
            for (op, v) in ops {
                let before = c.now();
                match op {
                    0 => model = model.saturating_add(7),
                    1 => model = model.saturating_add(1_000),
                    2 => model = model.saturating_add(7),
                    _ => model = model.max(v),
                }
                match op {
                    0 => { c.checkpoint(); }
                    1 => { c.op(); }
                    2 => { prop_assert_eq!(c.tick(), ticks_in(model)); }
                    _ => { c.jump_to(v); }
                }
                prop_assert!(c.now() >= before);
                prop_assert_eq!(c.now(), model);
            }
        }
    }
}
