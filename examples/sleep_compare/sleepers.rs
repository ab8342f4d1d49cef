//! The sleepers a host could use, measured the same way: hos in each short-sleep mode,
//! `std::thread::sleep`, `spin_sleep`, `tokio::time::sleep`, and a yield loop.
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
}

impl Sleeper {
    /// Every contender, in table order.
    pub(crate) const ALL: [Sleeper; 8] = [
        Sleeper::Hos(ShortSleep::Reactor),
        Sleeper::Hos(ShortSleep::Timer),
        Sleeper::Hos(ShortSleep::Yield),
        Sleeper::Hos(ShortSleep::Auto),
        Sleeper::Std,
        Sleeper::SpinSleep,
        Sleeper::Tokio,
        Sleeper::YieldLoop,
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
    /// The whole process's CPU a sleep (reactor included), ns.
    pub(crate) process_cpu_ns: f64,
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

/// Runs `f` on a fresh thread of the contender's kind: a guest thread for hos, else a plain one.
fn on_thread<T: Send + 'static>(
    rt: Option<&hos::Runtime>,
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    match rt {
        Some(rt) => rt
            .thread()
            .name(name)
            .priority(44)
            .spawn(f)
            .expect("valid thread")
            .join()
            .expect("sleeper ran"),
        None => std::thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .expect("thread starts")
            .join()
            .expect("sleeper ran"),
    }
}

/// A current-thread tokio runtime where `who` needs one.
pub(crate) fn tokio_for(who: Sleeper) -> Option<tokio::runtime::Runtime> {
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
    }
}

/// `n` sleeps of `d` by `who`, measured.
pub(crate) fn cell(who: Sleeper, d: Duration, n: usize) -> Cell {
    let rt = match who {
        Sleeper::Hos(mode) => Some(runtime(mode)),
        _ => None,
    };
    let p0 = process_cpu_ns();
    let (overshoot, cpu) = on_thread(rt.as_ref(), "SleepBenchWorker", move || {
        let tokio = tokio_for(who);
        let mut h = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).expect("bounds");
        let c0 = thread_cpu_ns();
        for _ in 0..n {
            let deadline = now() + nanos(d);
            sleep_once(who, d, tokio.as_ref());
            let late = now().saturating_sub(deadline);
            h.saturating_record(late.max(1));
        }
        (h, thread_cpu_ns() - c0)
    });
    let process = process_cpu_ns() - p0;
    if let Some(rt) = rt {
        rt.shutdown();
    }
    Cell {
        overshoot,
        sleeper_cpu_ns: cpu as f64 / n as f64,
        process_cpu_ns: process as f64 / n as f64,
    }
}
