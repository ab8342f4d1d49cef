//! The bug zoo: six guest programs, each with one planted concurrency bug of the kinds that
//! softlock games (docs/determinism.md section 9), written only against hos's public API
//! (guest threads, `hos::os` objects, svcs, checkpoints). Shared by `tests/det_zoo.rs` and the
//! `det_search` example (`#[path]`), so both run the very same programs.
//!
//! Invariant: a program's result depends only on the order in which its guest threads pass
//! their checkpoints, waits and yields: it reads no clock, no address and no OS timing, so in
//! the deterministic mode one selector and seed give one result. Every wait ends Cancelled
//! once the runtime shuts down, and every loop is bounded, so a program ends after a
//! shutdown whatever state its bug left it in.
//!
//! Each program runs on a main guest thread (logical core 2) that starts its workers on
//! cores 0 and 1, waits for their thread handles, and then checks what they left. A bug that
//! leaves a thread waiting for ever is not reported by the program: it hangs, and the trial
//! that runs it sees the hang (`trial.rs`).

use hos::os::{ClearMode, ConditionVariable, Event, Mutex};
use hos::svc;
use hos::thread::JoinHandle;
use hos::Runtime;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// A planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bug {
    /// Check then wait: the waiter reads the flag outside the lock, the setter sets it and
    /// signals between that read and the wait, and the waiter waits for ever.
    LostWakeup,
    /// A condition variable signalled before anyone waits, and a waiter with no predicate.
    SignalBeforeWait,
    /// The ready flag written before the data it publishes, with a checkpoint between.
    UseBeforePublish,
    /// A counter's increment split by a checkpoint (read, checkpoint, write): lost updates.
    SplitCounter,
    /// Two mutexes taken in opposite orders by two threads.
    LockOrder,
    /// A high-priority thread yield-loops for a flag that only a lower-priority thread of its
    /// core sets: a yield of kind 0 (or -1) goes only to equals, so the setter never runs
    /// again (a yield of kind -2 would let it run: `tests/det_yield.rs`).
    YieldLivelock,
}

/// A program's own verdict: `Err` names what it saw go wrong.
pub(crate) type Verdict = Result<(), String>;

/// Yields the livelock's spinner makes before it gives up and reports the livelock.
pub(crate) const SPINS: u32 = 200;

/// A bound on every zoo program's PCT steps (decisions with two candidates or more, PCT's
/// k) at a quantum of one checkpoint, up to the point its bug shows: its decisions in a run
/// where the bug does not show, which `det_zoo` holds under `stable` and every pct seed it
/// tries (the most seen is 20). A program's pct selector draws its change points over it
/// (`pct:DEPTH:SEED:24`).
pub(crate) const STEPS: u64 = 24;

/// The seeds PCT needs to show a bug of depth `depth` among `threads` threads with
/// probability `p` (0 < p < 1) by its bound: each run finds it with probability at least
/// 1 / (n k^(d-1)) (ASPLOS 2010), k being [`STEPS`], so ceil(ln(1 - p) / ln(1 - 1 / (n
/// k^(d-1)))) runs.
pub(crate) fn pct_seeds(threads: u32, depth: u32, p: f64) -> u64 {
    let each = 1.0 / (f64::from(threads) * (STEPS as f64).powi(depth as i32 - 1));
    ((1.0 - p).ln() / (1.0 - each).ln()).ceil() as u64
}

/// Increments each of the split counter's two threads makes.
const INCREMENTS: u32 = 3;

/// What use-before-publish's writer publishes.
const PUBLISHED: u32 = 42;

impl Bug {
    /// Every bug, in the order the docs list them.
    pub(crate) const ALL: [Bug; 6] = [
        Bug::LostWakeup,
        Bug::SignalBeforeWait,
        Bug::UseBeforePublish,
        Bug::SplitCounter,
        Bug::LockOrder,
        Bug::YieldLivelock,
    ];

    /// Its name on the command line (`--bug NAME`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Bug::LostWakeup => "lost-wakeup",
            Bug::SignalBeforeWait => "signal-before-wait",
            Bug::UseBeforePublish => "use-before-publish",
            Bug::SplitCounter => "split-counter",
            Bug::LockOrder => "lock-order",
            Bug::YieldLivelock => "yield-livelock",
        }
    }

    /// The bug a name names.
    pub(crate) fn named(name: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Its depth in PCT's sense: the ordering constraints a schedule must meet to show it
    /// (1: one thread before another; 2: and one preemption at the right step).
    pub(crate) fn depth(self) -> u32 {
        match self {
            Bug::SignalBeforeWait | Bug::YieldLivelock => 1,
            Bug::LostWakeup | Bug::UseBeforePublish | Bug::SplitCounter | Bug::LockOrder => 2,
        }
    }

    /// Its pct selector for `seed`: its depth, change points over the zoo's [`STEPS`] (the
    /// tests' search; the tool's own depth comes from its flags).
    #[cfg(test)]
    pub(crate) fn pct(self, seed: u64) -> hos::det::selector::Spec {
        hos::det::selector::Spec::Pct {
            depth: self.depth(),
            seed,
            steps: STEPS,
        }
    }

    /// Its guest threads, the main one included (PCT's n).
    pub(crate) fn threads(self) -> u32 {
        match self {
            Bug::YieldLivelock => 4,
            _ => 3,
        }
    }

    /// Runs the program; called on its main guest thread, in a runtime with three logical
    /// cores or more.
    pub(crate) fn run(self, rt: &Runtime) -> Verdict {
        let mut crew = Crew {
            rt: rt.clone(),
            threads: Vec::new(),
        };
        match self {
            Bug::LostWakeup => lost_wakeup(&mut crew),
            Bug::SignalBeforeWait => signal_before_wait(&mut crew),
            Bug::UseBeforePublish => use_before_publish(&mut crew),
            Bug::SplitCounter => split_counter(&mut crew),
            Bug::LockOrder => lock_order(&mut crew),
            Bug::YieldLivelock => yield_livelock(&mut crew),
        }
    }
}

/// A program's worker threads.
struct Crew {
    rt: Runtime,
    threads: Vec<JoinHandle<()>>,
}

impl Crew {
    /// Starts a worker on logical core `core` at `priority`.
    fn spawn(
        &mut self,
        name: &str,
        core: i32,
        priority: i32,
        body: impl FnOnce() + Send + 'static,
    ) {
        let t = self
            .rt
            .thread()
            .name(name)
            .ideal_core(core)
            .priority(priority)
            .spawn(body)
            .expect("a zoo worker");
        self.threads.push(t);
    }

    /// Waits for every worker to end (on its thread handle: a guest that joined an OS thread
    /// would block holding the token), and passes a worker's panic on.
    ///
    /// # Errors
    /// Cancelled: the runtime shut down while a worker was still running.
    fn finish(&mut self) -> Result<(), String> {
        for t in self.threads.drain(..) {
            svc::wait_synchronization(&[t.thread().handle()], -1)
                .map_err(|code| format!("waiting for {}: {code:?}", t.thread().name()))?;
            if let Err(panic) = t.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Ok(())
    }
}

fn lost_wakeup(crew: &mut Crew) -> Verdict {
    let flag = Arc::new(AtomicBool::new(false));
    let (m, cv) = (Mutex::new(false), ConditionVariable::new());
    crew.spawn("Waiter", 0, 44, {
        let (flag, m, cv) = (flag.clone(), m.clone(), cv.clone());
        move || {
            // Acquire: pairs with the setter's store. The bug: the check is outside the lock.
            if !flag.load(Ordering::Acquire) {
                if let Ok(g) = m.lock() {
                    let _ = cv.wait(g);
                }
            }
        }
    });
    crew.spawn("Setter", 1, 44, move || {
        if let Ok(_g) = m.lock() {
            // Release: publishes the flag to the waiter's check.
            flag.store(true, Ordering::Release);
        }
        cv.signal();
    });
    crew.finish()
}

fn signal_before_wait(crew: &mut Crew) -> Verdict {
    let (m, cv) = (Mutex::new(false), ConditionVariable::new());
    crew.spawn("Waiter", 0, 44, {
        let (m, cv) = (m.clone(), cv.clone());
        move || {
            // The bug: no predicate, so a signal given before this wait is lost.
            if let Ok(g) = m.lock() {
                let _ = cv.wait(g);
            }
        }
    });
    crew.spawn("Signaller", 1, 44, move || {
        if let Ok(_g) = m.lock() {
            cv.signal();
        }
    });
    crew.finish()
}

fn use_before_publish(crew: &mut Crew) -> Verdict {
    let ready = Arc::new(AtomicBool::new(false));
    let data = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(AtomicU32::new(u32::MAX));
    crew.spawn("Writer", 0, 44, {
        let (ready, data) = (ready.clone(), data.clone());
        move || {
            // The bug: the flag goes out before the data (Release keeps the hardware's order,
            // the program's order is what is wrong).
            ready.store(true, Ordering::Release);
            svc::checkpoint();
            data.store(PUBLISHED, Ordering::Release);
        }
    });
    crew.spawn("Reader", 1, 44, {
        let seen = seen.clone();
        move || {
            // Acquire: pairs with the writer's stores. A yield a turn, so the writer runs.
            for _ in 0..SPINS {
                if ready.load(Ordering::Acquire) {
                    // Relaxed: read back by the main thread after the reader's exit.
                    seen.store(data.load(Ordering::Acquire), Ordering::Relaxed);
                    return;
                }
                svc::sleep_thread(0);
            }
        }
    });
    crew.finish()?;
    match seen.load(Ordering::Relaxed) {
        PUBLISHED => Ok(()),
        u32::MAX => Err("the reader never saw the flag".into()),
        v => Err(format!(
            "the reader saw the flag with data {v}, not {PUBLISHED}"
        )),
    }
}

fn split_counter(crew: &mut Crew) -> Verdict {
    let counter = Arc::new(AtomicU32::new(0));
    for (name, core) in [("AddA", 0), ("AddB", 1)] {
        let counter = counter.clone();
        crew.spawn(name, core, 44, move || {
            for _ in 0..INCREMENTS {
                // Relaxed: one guest thread runs at a time in the mode; outside it the split
                // is the bug either way.
                let v = counter.load(Ordering::Relaxed);
                svc::checkpoint();
                counter.store(v + 1, Ordering::Relaxed);
            }
        });
    }
    crew.finish()?;
    match counter.load(Ordering::Relaxed) {
        n if n == 2 * INCREMENTS => Ok(()),
        n => Err(format!(
            "the counter is {n}, not {}: lost updates",
            2 * INCREMENTS
        )),
    }
}

fn lock_order(crew: &mut Crew) -> Verdict {
    let (a, b) = (Mutex::new(false), Mutex::new(false));
    for (name, core, first, second) in [("TakeAB", 0, a.clone(), b.clone()), ("TakeBA", 1, b, a)] {
        crew.spawn(name, core, 44, move || {
            if let Ok(_one) = first.lock() {
                svc::checkpoint();
                let _two = second.lock();
            }
        });
    }
    crew.finish()
}

fn yield_livelock(crew: &mut Crew) -> Verdict {
    let flag = Arc::new(AtomicBool::new(false));
    let spun_out = Arc::new(AtomicBool::new(false));
    let go = Event::new(ClearMode::Auto);
    crew.spawn("Setter", 0, 50, {
        let flag = flag.clone();
        move || {
            svc::checkpoint();
            // Release: pairs with the spinner's load.
            flag.store(true, Ordering::Release);
        }
    });
    crew.spawn("Spinner", 0, 40, {
        let (go, spun_out) = (go.clone(), spun_out.clone());
        move || {
            if go.wait().is_err() {
                return;
            }
            // The bug: a yield of kind 0 goes only to threads of the same priority, never to
            // the setter (-2, a yield to any thread, would let it run).
            for _ in 0..SPINS {
                if flag.load(Ordering::Acquire) {
                    return;
                }
                svc::sleep_thread(0);
            }
            // Relaxed: read back by the main thread after the spinner's exit.
            spun_out.store(true, Ordering::Relaxed);
        }
    });
    crew.spawn("Kicker", 1, 44, move || go.signal());
    crew.finish()?;
    if spun_out.load(Ordering::Relaxed) {
        return Err(format!(
            "the spinner yielded {SPINS} times and its core's lower-priority setter never ran"
        ));
    }
    Ok(())
}
