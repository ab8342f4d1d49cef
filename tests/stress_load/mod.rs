//! The stress suite's load, shared by `stress.rs` (normal mode) and `det_stress.rs` (the
//! deterministic mode): 32 guest threads pass 4 tokens through message queues (send and
//! jam, the next inbox drawn by each thread's fixed-seed generator), and each pass takes a
//! shared mutex and counts under it.
//!
//! Invariant: every token is always in exactly one inbox or one thread's hands, and each
//! inbox has room for every token and the stop, so a send never blocks forever; the run
//! ends when the pass count reaches the goal (`done`), and the last worker to take its
//! stop signals `ended`.

use hos::os::{ClearMode, Event, MessageQueue, Mutex};
use hos::thread::JoinHandle;
use hos::Runtime;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub(crate) const THREADS: usize = 32;
const TOKENS: u64 = 4;
const STOP: u64 = u64::MAX;

/// xorshift64*: a fixed-seed generator, no dependency.
fn next(x: &mut u64) -> u64 {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// One run's shared state.
pub(crate) struct Load {
    inboxes: Vec<MessageQueue<u64>>,
    lock: Mutex,
    goal: u64,
    /// Passes so far.
    pub(crate) hops: AtomicU64,
    /// Passes counted under the mutex (a plain read and write, so two holders lose one).
    pub(crate) guarded: AtomicU64,
    /// Signalled when the passes reach the goal.
    pub(crate) done: Event,
    /// Signalled by the last worker to take its stop.
    pub(crate) ended: Event,
    stopped: AtomicU64,
}

impl Load {
    /// A load of `goal` passes.
    pub(crate) fn new(goal: u64) -> Arc<Load> {
        Arc::new(Load {
            // Room for every token and the stop.
            inboxes: (0..THREADS)
                .map(|_| MessageQueue::new(TOKENS as usize + 1))
                .collect(),
            lock: Mutex::new(false),
            goal,
            hops: AtomicU64::new(0),
            guarded: AtomicU64::new(0),
            done: Event::new(ClearMode::Manual),
            ended: Event::new(ClearMode::Manual),
            stopped: AtomicU64::new(0),
        })
    }

    /// Spawns the workers on `rt` (priorities 20 to 27) and hands out the tokens.
    pub(crate) fn start(self: &Arc<Self>, rt: &Runtime) -> Vec<JoinHandle<()>> {
        let workers = (0..THREADS)
            .map(|me| {
                let load = self.clone();
                rt.thread()
                    .name(format!("StressWorker{me}"))
                    .priority(20 + (me % 8) as i32)
                    .spawn(move || load.work(me))
                    .expect("a worker")
            })
            .collect();
        for t in 0..TOKENS {
            self.inboxes[t as usize].send(t).expect("an empty inbox");
        }
        workers
    }

    /// Sends every worker its stop.
    pub(crate) fn stop(&self) {
        for inbox in &self.inboxes {
            inbox.jam(STOP).expect("room for the stop");
        }
    }

    /// Worker `me`: takes a token, counts under the mutex, passes it on, until its stop.
    fn work(&self, me: usize) {
        let mut seed = 0x9E37_79B9_7F4A_7C15 ^ (me as u64 + 1);
        loop {
            let token = self.inboxes[me].receive().expect("not cancelled");
            if token == STOP {
                if self.stopped.fetch_add(1, Ordering::AcqRel) + 1 == THREADS as u64 {
                    self.ended.signal();
                }
                return;
            }
            {
                let _g = self
                    .lock
                    .lock()
                    .map_err(|e| e.code())
                    .expect("never abandoned");
                let v = self.guarded.load(Ordering::Relaxed);
                self.guarded.store(v + 1, Ordering::Relaxed);
            }
            let n = self.hops.fetch_add(1, Ordering::AcqRel) + 1;
            if n == self.goal {
                self.done.signal();
            }
            if n >= self.goal {
                continue;
            }
            let r = next(&mut seed);
            let mut to = (r % THREADS as u64) as usize;
            if to == me {
                to = (to + 1) % THREADS;
            }
            let sent = if r & (1 << 40) == 0 {
                self.inboxes[to].send(token)
            } else {
                self.inboxes[to].jam(token)
            };
            sent.expect("room for every token");
        }
    }

    /// Asserts the run's counts: the goal reached, and no pass counted twice or lost.
    pub(crate) fn check(&self) {
        let n = self.hops.load(Ordering::Relaxed);
        assert!(n >= self.goal, "{n} passes of {}", self.goal);
        assert_eq!(
            self.guarded.load(Ordering::Relaxed),
            n,
            "the mutex let two holders in"
        );
    }
}
