//! Idle pollers side by side: N job workers that poll for work and sleep 20 us when they find
//! none, while a producer posts one job every `every`, for each contender. The work is polled
//! three ways: an hos `MessageQueue` (`try_receive`, which hos sees), a guest word
//! (a zero-timeout WaitForAddress, which the producer signals), or a plain atomic mailbox
//! (which hos cannot see). Each run reports the process's CPU s/s, polls a second per poller, the
//! pickup latency (the post to the worker taking the job) p50 and p99, the reactor's CPU s/s,
//! and hos's sleep paths and idle-poll counters.

use crate::sleepers::{self, now, process_cpu_ns, sleep_once, HosRun, Sleeper};
use hdrhistogram::Histogram;
use hos::internal::nanos;
use hos::os::MessageQueue;
use hos::svc::{self, ArbitrationType, SignalType};
use hos::{ResultCode, ShortSleep};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where the workers find their jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// An hos message queue, polled with `try_receive`.
    Queue,
    /// A guest word polled with a zero-timeout WaitForAddress (WaitIfEqual 0); the producer
    /// sets it and signals it with SignalToAddress, as a LightEvent does.
    Word,
    /// A plain atomic mailbox, polled with a swap: invisible to hos.
    Atomic,
}

/// hos switches of one arm (ignored by the other sleepers).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tune {
    /// HOS_IDLE_POLL.
    pub(crate) idle: bool,
    /// HOS_IDLE_POLL_STRETCH_US (`None`: the default).
    pub(crate) stretch_us: Option<u64>,
    /// HOS_IDLE_POLL_COALESCE.
    pub(crate) coalesce: bool,
    /// HOS_IDLE_POLL_BLIND.
    pub(crate) blind: u32,
}

impl Tune {
    /// hos's defaults.
    pub(crate) const DEFAULT: Tune = Tune {
        idle: true,
        stretch_us: None,
        coalesce: false,
        blind: 0,
    };
}

/// One contender of the poller runs.
#[derive(Clone, Debug)]
pub(crate) struct Arm {
    /// The row's name.
    pub(crate) label: String,
    /// Who sleeps.
    pub(crate) who: Sleeper,
    /// hos's switches, for hos sleepers.
    pub(crate) tune: Tune,
}

impl Arm {
    /// `who` with hos's defaults, named as it is.
    pub(crate) fn plain(who: Sleeper) -> Arm {
        Arm {
            label: who.name().to_string(),
            who,
            tune: Tune::DEFAULT,
        }
    }

    /// hos in reactor mode with `tune`, named `label`.
    pub(crate) fn reactor(label: String, tune: Tune) -> Arm {
        Arm {
            label,
            who: Sleeper::Hos(ShortSleep::Reactor),
            tune,
        }
    }

    fn runtime(&self) -> Option<hos::Runtime> {
        let Sleeper::Hos(mode) = self.who else {
            return None;
        };
        let t = self.tune;
        let b = sleepers::builder(mode)
            .idle_poll(t.idle)
            .idle_poll_coalesce(t.coalesce)
            .idle_poll_blind(t.blind);
        let b = match t.stretch_us {
            Some(us) => b.idle_poll_stretch_us(us),
            None => b,
        };
        Some(b.build().expect("valid switches"))
    }
}

/// What a poller run measured.
pub(crate) struct Pollers {
    /// Process CPU seconds a wall second.
    pub(crate) cpu_per_s: f64,
    /// Polls a second, per poller.
    pub(crate) polls_per_s: f64,
    /// The reactor thread's CPU seconds a wall second (hos only).
    pub(crate) reactor_cpu_per_s: f64,
    /// Pickup latency of every job taken, ns.
    pub(crate) pickup: Histogram<u64>,
    /// Jobs posted and jobs taken.
    pub(crate) jobs: (u64, u64),
    /// hos's own account of the run (hos only).
    pub(crate) hos: Option<HosRun>,
}

/// The jobs the producer posts: a post time, `now()`, in ns.
struct Work {
    source: Source,
    queue: MessageQueue<u64>,
    mailbox: AtomicU64,
    /// 1 while a job waits in `mailbox` (the word source).
    word: AtomicU32,
}

impl Work {
    /// Posts a job stamped now; `false` if the last one was not taken yet (it is dropped).
    fn post(&self) -> bool {
        match self.source {
            Source::Queue => self.queue.try_send(now().max(1)).is_ok(),
            Source::Atomic => self.mailbox.swap(now().max(1), Ordering::Release) == 0,
            Source::Word => {
                if self.mailbox.swap(now().max(1), Ordering::Release) != 0 {
                    return false;
                }
                self.word.store(1, Ordering::Release);
                let _ = svc::signal_to_address(&self.word, SignalType::Signal, 0, 1);
                true
            }
        }
    }

    /// A job's post time, if one is there.
    fn poll(&self) -> Option<u64> {
        match self.source {
            Source::Queue => self.queue.try_receive(),
            Source::Atomic => match self.mailbox.swap(0, Ordering::Acquire) {
                0 => None,
                t => Some(t),
            },
            Source::Word => {
                let r = svc::wait_for_address(&self.word, ArbitrationType::WaitIfEqual, 0, 0);
                if r != Err(ResultCode::INVALID_STATE) || self.word.swap(0, Ordering::AcqRel) != 1 {
                    return None;
                }
                Some(self.mailbox.swap(0, Ordering::Acquire)).filter(|&t| t != 0)
            }
        }
    }
}

/// `pollers` workers of `arm` polling `source` for `run`, a job posted every `every`.
pub(crate) fn run(
    arm: &Arm,
    source: Source,
    pollers: usize,
    run: Duration,
    every: Duration,
) -> Pollers {
    let rt = arm.runtime();
    let who = arm.who;
    let work = Arc::new(Work {
        source,
        queue: MessageQueue::new(64),
        mailbox: AtomicU64::new(0),
        word: AtomicU32::new(0),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let polls = Arc::new(AtomicU64::new(0));
    let pickup = Arc::new(Mutex::new(
        Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).expect("bounds"),
    ));
    let mut joins = Vec::new();
    for i in 0..pollers {
        let (work, stop, polls, pickup) =
            (work.clone(), stop.clone(), polls.clone(), pickup.clone());
        let body = move || {
            let tokio = sleepers::ready_thread(who);
            let mut mine = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).expect("bounds");
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                match work.poll() {
                    Some(posted) => mine.saturating_record(now().saturating_sub(posted).max(1)),
                    None => sleep_once(who, Duration::from_micros(20), tokio.as_ref()),
                }
            }
            polls.fetch_add(n, Ordering::Relaxed);
            let _ = pickup.lock().map(|mut h| h.add(&mine));
        };
        joins.push(sleepers::spawn(
            rt.as_ref(),
            &format!("ModuleSystemWorker{i}"),
            body,
        ));
    }
    let posted = Arc::new(AtomicU64::new(0));
    let producer = {
        let (work, stop, posted) = (work.clone(), stop.clone(), posted.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(every);
                if work.post() {
                    posted.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let reactor_ns = |rt: &Option<hos::Runtime>| {
        rt.as_ref()
            .map_or(0, |rt| nanos(rt.stats().reactor_cpu.total()))
    };
    let start = rt.as_ref().map(|rt| rt.stats().calibration);
    let (t0, p0, r0) = (now(), process_cpu_ns(), reactor_ns(&rt));
    std::thread::sleep(run);
    let (t1, p1, r1) = (now(), process_cpu_ns(), reactor_ns(&rt));
    stop.store(true, Ordering::Relaxed);
    let _ = producer.join();
    for j in joins {
        j();
    }
    let hos = rt.map(|rt| {
        let run = HosRun::read(&rt, start.expect("read at build"));
        rt.shutdown();
        run
    });
    let wall = (t1 - t0) as f64 / 1e9;
    let pickup = std::mem::replace(
        &mut *pickup.lock().expect("pickup"),
        Histogram::new(3).expect("histogram"),
    );
    let taken = pickup.len();
    Pollers {
        cpu_per_s: (p1 - p0) as f64 / 1e9 / wall,
        polls_per_s: polls.load(Ordering::Relaxed) as f64 / wall / pollers as f64,
        reactor_cpu_per_s: (r1 - r0) as f64 / 1e9 / wall,
        pickup,
        jobs: (posted.load(Ordering::Relaxed), taken),
        hos,
    }
}
