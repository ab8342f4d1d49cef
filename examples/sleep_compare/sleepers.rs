//! The sleepers a host could use, measured the same way: hos in each short-sleep mode,
//! `std::thread::sleep`, `spin_sleep`, `tokio::time::sleep`, a yield loop, and the floor: a
//! bare `clock_nanosleep` at 1 ns of timer slack (what one OS timer sleep costs this machine,
//! the least any sleeper that does not spin can pay).
//! Shared by `examples/sleep_compare` and `benches/sleep.rs`; it uses only hos's public API.

use hdrhistogram::Histogram;
use hos::internal::nanos;
use hos::ShortSleep;
use std::sync::LazyLock;
use std::time::Duration;
use std::time::Instant;

/// One contender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sleeper {
    /// hos, a non-serial guest thread, in this short-sleep mode.
    Hos(ShortSleep),
    /// `std::thread::sleep`.
    Std,
    /// `spin_sleep::sleep` (native sleep minus its accuracy, then spin).
    SpinSleep,
    /// `tokio::time::sleep` on a current-thread runtime.
    Tokio,
    /// `std::thread::yield_now` until the deadline.
    YieldLoop,
    /// A bare relative `clock_nanosleep` on a thread at 1 ns of timer slack: the floor.
    Floor,
}

impl Sleeper {
    /// Every contender, in table order.
    pub(crate) const ALL: [Sleeper; 9] = [
        Sleeper::Hos(ShortSleep::Reactor),
        Sleeper::Hos(ShortSleep::Timer),
        Sleeper::Hos(ShortSleep::Yield),
        Sleeper::Hos(ShortSleep::Auto),
        Sleeper::Std,
        Sleeper::SpinSleep,
        Sleeper::Tokio,
        Sleeper::YieldLoop,
        Sleeper::Floor,
    ];

    /// A short name for tables.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Sleeper::Hos(ShortSleep::Reactor) => "hos reactor",
            Sleeper::Hos(ShortSleep::Timer) => "hos timer",
            Sleeper::Hos(ShortSleep::Yield) => "hos yield",
            Sleeper::Hos(ShortSleep::Auto) => "hos auto",
            Sleeper::Std => "std::thread::sleep",
            Sleeper::SpinSleep => "spin_sleep",
            Sleeper::Tokio => "tokio::time::sleep",
            Sleeper::YieldLoop => "yield loop",
            Sleeper::Floor => "floor (nanosleep)",
        }
    }
}

/// The sleep lengths compared.
pub(crate) const ALL_TARGETS: [Duration; 3] = [
    Duration::from_micros(20),
    Duration::from_micros(100),
    Duration::from_millis(1),
];

/// Monotonic nanoseconds since the first call.
pub(crate) fn now() -> u64 {
    static ORIGIN: LazyLock<Instant> = LazyLock::new(Instant::now);
    nanos(ORIGIN.elapsed())
}

/// This thread's CPU time, in ns (one system call).
fn thread_cpu_ns() -> u64 {
    nanos(hos::thread::cpu_time().total())
}

/// The process's CPU time, in ns.
pub(crate) fn process_cpu_ns() -> u64 {
    nanos(hos::machine::process_cpu_time().total())
}

/// What one cell measured.
pub(crate) struct Cell {
    /// Overshoot of each sleep past its deadline, ns.
    pub(crate) overshoot: Histogram<u64>,
    /// The sleeper's own CPU a sleep, ns.
    pub(crate) sleeper_cpu_ns: f64,
    /// The sleeper's CPU and its runtime's reactor's a sleep, ns (the sleeper's alone for
    /// any other contender; the other contenders' idle threads and runtimes left out).
    pub(crate) with_reactor_ns: f64,
    /// hos's own account of the cell (hos only).
    pub(crate) hos: Option<HosRun>,
}

/// What an hos runtime said of one run: where its estimates started and ended, and the
/// paths its sleeps took (a tail is read against these).
pub(crate) struct HosRun {
    /// The calibration measured at build.
    pub(crate) start: hos::Calibration,
    /// The estimates at the end of the run.
    pub(crate) end: hos::Calibration,
    /// Sleeps by path and the idle-poll counters.
    pub(crate) paths: String,
}

impl HosRun {
    /// Reads `rt` at the end of a run that started from `start`.
    pub(crate) fn read(rt: &hos::Runtime, start: hos::Calibration) -> HosRun {
        let s = rt.stats();
        let mut paths = String::new();
        for (path, l) in &s.sleeps {
            if l.count > 0 {
                paths += &format!("{}={} ", path.name(), l.count);
            }
        }
        if s.idle_polls > 0 {
            paths += &format!(
                "| idle {} relaxed {} promoted {} coalesced {}",
                s.idle_polls, s.idle_relaxed, s.idle_promoted, s.idle_coalesced
            );
        }
        HosRun {
            start,
            end: s.calibration,
            paths,
        }
    }

    /// The estimates, start -> end, in us: margin, timer lateness, wake latency, and the
    /// precise path.
    pub(crate) fn estimates(&self) -> String {
        let us = |ns: u64| ns as f64 / 1000.0;
        let (a, b) = (&self.start, &self.end);
        format!(
            "margin {:.1}->{:.1}us, timer late {:.1}->{:.1}us, wake {:.1}->{:.1}us, {:?}",
            us(a.timer_margin_ns),
            us(b.timer_margin_ns),
            us(a.timer_lateness_ns),
            us(b.timer_lateness_ns),
            us(a.wake_latency_ns),
            us(b.wake_latency_ns),
            b.precise
        )
    }
}

fn yield_until(deadline: u64) {
    while now() < deadline {
        std::thread::yield_now();
    }
}

/// A runtime for `mode` (pinned to the processors it has; calibrated at build).
pub(crate) fn runtime(mode: ShortSleep) -> hos::Runtime {
    builder(mode).build().expect("default switches build")
}

/// The builder of [`runtime`], for runs that set more switches.
pub(crate) fn builder(mode: ShortSleep) -> hos::RuntimeBuilder {
    hos::Runtime::builder().short_sleep(mode)
}

/// Starts `f` on a fresh thread of the contender's kind (a guest thread of `rt` for hos, else
/// a plain one); the closure returned joins it.
pub(crate) fn spawn<T: Send + 'static>(
    rt: Option<&hos::Runtime>,
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Box<dyn FnOnce() -> T> {
    match rt {
        Some(rt) => {
            let h = rt
                .thread()
                .name(name)
                .priority(44)
                .spawn(f)
                .expect("valid thread");
            Box::new(move || h.join().expect("sleeper ran"))
        }
        None => {
            let h = std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .expect("thread starts");
            Box::new(move || h.join().expect("sleeper ran"))
        }
    }
}

/// Readies the calling thread to sleep as `who`: the floor's 1 ns timer slack; a
/// current-thread tokio runtime where `who` needs one.
pub(crate) fn ready_thread(who: Sleeper) -> Option<tokio::runtime::Runtime> {
    if who == Sleeper::Floor {
        // SAFETY: PR_SET_TIMERSLACK takes one unsigned long and touches no memory.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    }
    (who == Sleeper::Tokio).then(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("tokio runtime")
    })
}

/// One sleep of `d` by `who` (on the current thread).
pub(crate) fn sleep_once(who: Sleeper, d: Duration, tokio: Option<&tokio::runtime::Runtime>) {
    match who {
        Sleeper::Hos(_) => hos::svc::sleep_thread(d.as_nanos() as i64),
        Sleeper::Std => std::thread::sleep(d),
        Sleeper::SpinSleep => spin_sleep::sleep(d),
        Sleeper::Tokio => tokio
            .expect("tokio runtime")
            .block_on(async { tokio::time::sleep(d).await }),
        Sleeper::YieldLoop => yield_until(now() + nanos(d)),
        Sleeper::Floor => floor_sleep(d),
    }
}

/// One relative `clock_nanosleep` of `d` (the floor), EINTR ignored: a probe, not a sleeper.
fn floor_sleep(d: Duration) {
    let ts = libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(d.subsec_nanos()),
    };
    // SAFETY: `ts` is a valid timespec; a null remainder pointer is allowed.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) };
}

/// `n` sleeps of `d` by every contender, alternated: each makes its sleeps in `turns` turns,
/// one contender after the other (A B C ... A B C ...), each on a thread of its own (for hos,
/// a guest thread of its own fresh runtime), so that a burst of the host's noise falls on
/// every contender alike rather than on whichever ran at the time.
pub(crate) fn alternated(d: Duration, n: usize, turns: usize) -> Vec<(Sleeper, Cell)> {
    let mut lanes = Sleeper::ALL.map(|who| Lane::start(who, d));
    let turns = turns.clamp(1, n.max(1));
    for t in 0..turns {
        for lane in &mut lanes {
            lane.turn(n * (t + 1) / turns - n * t / turns);
        }
    }
    lanes.into_iter().map(|l| (l.who, l.end())).collect()
}

/// One contender's sleeper thread, which sleeps when told how many times, recording each
/// sleep's lateness and its own CPU time, and ends when the lane does.
pub(crate) struct Lane {
    who: Sleeper,
    rt: Option<hos::Runtime>,
    start: Option<hos::Calibration>,
    go: std::sync::mpsc::Sender<usize>,
    done: std::sync::mpsc::Receiver<()>,
    join: Box<dyn FnOnce() -> (Histogram<u64>, u64)>,
    /// The reactor's CPU time during this lane's turns (hos only).
    reactor_ns: u64,
}

impl Lane {
    /// Starts `who`'s thread for sleeps of `d` (an hos contender on a fresh runtime).
    pub(crate) fn start(who: Sleeper, d: Duration) -> Lane {
        let rt = match who {
            Sleeper::Hos(mode) => Some(runtime(mode)),
            _ => None,
        };
        let start = rt.as_ref().map(|rt| rt.stats().calibration);
        let (go, turns) = std::sync::mpsc::channel::<usize>();
        let (done_tx, done) = std::sync::mpsc::channel();
        let join = spawn(rt.as_ref(), "SleepBenchWorker", move || {
            let tokio = ready_thread(who);
            let mut h = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).expect("bounds");
            let mut cpu = 0;
            for k in turns {
                let c0 = thread_cpu_ns();
                for _ in 0..k {
                    let deadline = now() + nanos(d);
                    sleep_once(who, d, tokio.as_ref());
                    let late = now().saturating_sub(deadline);
                    h.saturating_record(late.max(1));
                }
                cpu += thread_cpu_ns() - c0;
                done_tx.send(()).expect("the lane waits");
            }
            (h, cpu)
        });
        Lane {
            who,
            rt,
            start,
            go,
            done,
            join,
            reactor_ns: 0,
        }
    }

    /// Has the thread make `k` sleeps, and waits for them.
    pub(crate) fn turn(&mut self, k: usize) {
        let reactor = |rt: &Option<hos::Runtime>| {
            rt.as_ref()
                .map_or(0, |rt| nanos(rt.stats().reactor_cpu.total()))
        };
        let r0 = reactor(&self.rt);
        self.go.send(k).expect("the sleeper runs");
        self.done.recv().expect("the sleeper runs");
        self.reactor_ns += reactor(&self.rt) - r0;
    }

    /// Ends the thread; what its sleeps measured, a sleep.
    pub(crate) fn end(self) -> Cell {
        drop(self.go);
        let (overshoot, cpu) = (self.join)();
        let n = overshoot.len().max(1);
        let hos = self.rt.map(|rt| {
            let run = HosRun::read(&rt, self.start.expect("read at build"));
            rt.shutdown();
            run
        });
        Cell {
            overshoot,
            sleeper_cpu_ns: cpu as f64 / n as f64,
            with_reactor_ns: (cpu + self.reactor_ns) as f64 / n as f64,
            hos,
        }
    }
}
