//! Barrier (nn::os `BarrierType`): `count` threads wait for each other, then all go on; the
//! barrier is ready for its next round at once.
//!
//! Invariant: `0 <= arrived < count` between calls, under the state lock. The last arrival of
//! a round starts the next one (`round += 1`, `arrived = 0`) and lets every waiter of its
//! round go: a waiter goes once the round it arrived in is over, whatever comes after. A
//! waiter that stops waiting before its round is over (timeout, shutdown) takes its arrival
//! back, so the round still needs `count` threads that stay.

use super::waiters::{WaitSlot, Waiters, WakeBatch};
use super::waiting::{Object, Op, Timeout};
use crate::entry::entry;
use crate::result::ResultCode;
use crate::sync::Arc;
use std::time::Duration;

/// The state behind the lock.
#[derive(Debug)]
pub(super) struct Rounds {
    count: u32,
    arrived: u32,
    /// The round now (nn::os's base counter).
    round: u64,
    waiters: Waiters,
}

/// A barrier for `count` threads, reusable round after round: a handle, a cheap `Clone`
/// (clones name one barrier).
///
/// ```
/// # let rt = hos::Runtime::builder().calibration(hos::Calibration::default()).build()?;
/// let b = hos::os::Barrier::new(3);
/// let threads: Vec<_> = (0..2)
///     .map(|_| {
///         let b = b.clone();
///         rt.thread().spawn(move || (b.wait(), b.wait()))
///     })
///     .collect::<Result<_, _>>()?;
/// assert_eq!(b.wait(), Ok(())); // the third thread ends round one
/// assert_eq!(b.wait(), Ok(())); // and round two
/// for t in threads {
///     assert_eq!(t.join().ok(), Some((Ok(()), Ok(()))));
/// }
/// # rt.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Barrier {
    obj: Arc<Object<Rounds>>,
}

impl Barrier {
    /// A barrier for `count` threads (nn::os InitializeBarrier).
    ///
    /// # Caveats
    /// A `count` of 0 is taken as 1 (nn::os asserts `count >= 1`).
    pub fn new(count: u32) -> Self {
        Barrier {
            obj: Arc::new(Object::new(Rounds {
                count: count.max(1),
                arrived: 0,
                round: 0,
                waiters: Waiters::new(),
            })),
        }
    }

    /// How many threads a round takes.
    pub fn count(&self) -> u32 {
        self.obj.with(|s, _| s.count)
    }

    /// Arrives and waits until `count` threads have arrived in this round (nn::os
    /// AwaitBarrier); the last one to arrive does not wait.
    ///
    /// # Errors
    /// Cancelled once the runtime shuts down (the arrival is taken back).
    ///
    /// # Blocking
    /// Through the runtime's wait policy until the round is over.
    pub fn wait(&self) -> Result<(), ResultCode> {
        self.obj.run(Arrive(None), Timeout::Never)
    }

    /// Arrives and waits at most `d` for the round to be over; a zero `d` only ends a round
    /// that this arrival completes.
    ///
    /// # Errors
    /// As [`Barrier::wait`], and TimedOut (the arrival is taken back).
    ///
    /// # Caveats
    /// A timeout that fires just as the last thread arrives may still say TimedOut: the
    /// round ended with this arrival counted (the others go on), only the answer is late.
    ///
    /// # Blocking
    /// As [`Barrier::wait`], at most `d`.
    pub fn wait_timeout(&self, d: Duration) -> Result<(), ResultCode> {
        match Timeout::from(Some(d)) {
            // One locked attempt: only an arrival that ends the round counts.
            Timeout::Poll => {
                entry();
                self.obj.with(|s, batch| {
                    if s.arrived + 1 != s.count {
                        return Err(ResultCode::TIMED_OUT);
                    }
                    s.end_round(batch);
                    Ok(())
                })
            }
            timeout => self.obj.run(Arrive(None), timeout),
        }
    }
}

impl Rounds {
    /// The last arrival: the next round starts and every waiter goes.
    fn end_round(&mut self, batch: &mut WakeBatch) {
        self.arrived = 0;
        self.round = self.round.wrapping_add(1);
        self.waiters.notify_all(batch);
    }
}

/// The wait at a barrier: the round it arrived in, once it has.
#[derive(Debug)]
struct Arrive(Option<u64>);

impl Op for Arrive {
    type State = Rounds;
    type Output = Result<(), ResultCode>;
    const ON: &'static str = "barrier";

    fn complete(
        &mut self,
        s: &mut Rounds,
        _: &WaitSlot,
        b: &mut WakeBatch,
    ) -> Option<Self::Output> {
        match self.0 {
            Some(round) => (s.round != round).then_some(Ok(())),
            None if s.arrived + 1 == s.count => {
                s.end_round(b);
                Some(Ok(()))
            }
            None => {
                s.arrived += 1;
                self.0 = Some(s.round);
                None
            }
        }
    }

    fn waiters<'s>(&self, s: &'s mut Rounds) -> &'s mut Waiters {
        &mut s.waiters
    }

    fn fail(&mut self, code: ResultCode) -> Self::Output {
        Err(code)
    }

    fn left(&self, s: &mut Rounds, _: &mut WakeBatch) {
        // Left before its round was over: the round needs another thread in its place.
        if self.0 == Some(s.round) {
            s.arrived -= 1;
        }
    }
}
