//! The game-shaped load: the threads of one run and the frame they make together.
//!
//! Invariant: every thread of the load ends once [`Running::stop`] has been called (a stop
//! flag, then the runtime's shutdown, which ends every wait with Cancelled), so a run always
//! joins; and a frame's work is CPU time spent on each thread's own clock, the same on any
//! machine, whatever the runtime or the neighbours cost.
//!
//! One frame, as in the measured game (docs/design.md, the introduction):
//!
//! | thread | priority | cores | each frame |
//! | --- | --- | --- | --- |
//! | `MainThread` | 44 | all | burst `main_us`; post `jobs` jobs and one message to each executor; wait for the last of them (an auto-clear Event); hand the frame on (a queue of 1: at most one frame ahead) |
//! | `BaseProcExecutor{i}` | 44 | `1 << i` | receive from its own LightMessageQueue, burst `exec_us`, count down |
//! | `ModuleSystemWorker{i}` | 45 | all | `try_receive` the shared job queue: a job is a burst of `job_us` and a count down; nothing there is a `sleep_thread(poll_us)` |
//! | `Presentation Thread` | 44 | all | receive the frame, burst `present_us` (submit), sleep to the next frame boundary with `host_sleep` (the frame limiter), present |
//!
//! The workers rank one step below the frame's chain (45): when virtual cores are short, a
//! polling worker gives way to the frame, as a background job system does on the console.

use hos::os::{ClearMode, Event, LightMessageQueue, MessageQueue};
use hos::thread::JoinHandle;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Priority of the game thread, the executors and the presentation thread (0x2C).
pub const PRIORITY_FRAME: i32 = 0x2C;
/// Priority of the job workers: one step below the frame's chain.
pub const PRIORITY_WORKER: i32 = 0x2D;

/// What one frame is made of. Every burst is CPU time in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Load {
    /// BaseProcExecutor threads (1..=6), executor `i` pinned to virtual core `i`.
    pub executors: usize,
    /// ModuleSystemWorker threads.
    pub workers: usize,
    /// The game thread's burst.
    pub main_us: u64,
    /// Each executor's burst.
    pub exec_us: u64,
    /// The presentation thread's burst (the submit).
    pub present_us: u64,
    /// Jobs posted each frame.
    pub jobs: usize,
    /// Each job's burst.
    pub job_us: u64,
    /// A worker's sleep between two empty polls.
    pub poll_us: u64,
    /// Frame cap (0: none).
    pub fps: u32,
}

impl Load {
    /// CPU time of one frame's bursts.
    pub fn cpu_per_frame(&self) -> Duration {
        Duration::from_micros(
            self.main_us
                + self.executors as u64 * self.exec_us
                + self.present_us
                + self.jobs as u64 * self.job_us,
        )
    }

    /// One line for the report's header.
    pub fn describe(&self) -> String {
        format!(
            "main {} us, {} executors x {} us, {} jobs x {} us on {} workers (poll {} us), \
             present {} us, cap {}",
            self.main_us,
            self.executors,
            self.exec_us,
            self.jobs,
            self.job_us,
            self.workers,
            self.poll_us,
            self.present_us,
            if self.fps == 0 {
                "none".to_string()
            } else {
                format!("{} fps", self.fps)
            },
        )
    }
}

/// A mark the presentation thread sends the controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// The last warm-up frame was presented: the window opens.
    WindowStart,
    /// The last measured frame was presented: the window closes.
    WindowEnd,
}

/// What the threads of one run share.
struct Shared {
    /// One LightMessageQueue an executor; a message is a frame number.
    exec_queues: Vec<LightMessageQueue<u64>>,
    /// The job queue the workers poll.
    jobs: MessageQueue<u64>,
    /// Main thread -> presentation thread; capacity 1 is the back-pressure.
    present: MessageQueue<u64>,
    /// Executor messages and jobs of this frame not yet done.
    /// # Invariant: set by the main thread only while it is 0 (every helper of the last frame
    /// is done), so a helper's count down always belongs to the current frame.
    pending: AtomicUsize,
    /// Signalled by whoever brings `pending` to 0.
    done: Event,
    /// Set once by `stop`: the pollers' loop ends.
    stop: AtomicBool,
    /// Frames presented so far (the progress bar reads it).
    presented: AtomicU64,
}

impl Shared {
    /// One helper's work of this frame is done; the last one signals the main thread.
    fn count_down(&self) {
        // AcqRel: the last one (which signals) sees every other helper's work, and the main
        // thread sees it through the event's Release/Acquire.
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.signal();
        }
    }

    fn stopped(&self) -> bool {
        // Relaxed: a flag polled in a loop; the shutdown that follows it is what ends waits.
        self.stop.load(Ordering::Relaxed)
    }
}

/// The threads of one run, spawned.
pub struct Running {
    shared: Arc<Shared>,
    threads: Vec<(String, JoinHandle<()>)>,
    presenter: Option<JoinHandle<Vec<Instant>>>,
    /// Window marks from the presentation thread.
    pub marks: mpsc::Receiver<Mark>,
}

impl Running {
    /// Frames presented so far.
    pub fn presented(&self) -> u64 {
        // Relaxed: a progress figure.
        self.shared.presented.load(Ordering::Relaxed)
    }

    /// Stops the load and shuts the runtime down; returns the present times the
    /// presentation thread kept (the first `warmup + frames`), or why it has none.
    pub fn stop(mut self, rt: &hos::Runtime) -> Result<Vec<Instant>, String> {
        // Relaxed: the shutdown below ends every wait; the flag only ends the pollers' loop.
        self.shared.stop.store(true, Ordering::Relaxed);
        rt.shutdown();
        let mut failed = Vec::new();
        for (name, t) in self.threads.drain(..) {
            if t.join().is_err() {
                failed.push(name);
            }
        }
        let times = match self.presenter.take().map(JoinHandle::join) {
            Some(Ok(times)) => times,
            _ => {
                failed.push("Presentation Thread".into());
                Vec::new()
            }
        };
        if failed.is_empty() {
            Ok(times)
        } else {
            Err(format!("guest threads panicked: {}", failed.join(", ")))
        }
    }
}

/// Spawns the load's threads on `rt`. The presentation thread keeps the first
/// `warmup + frames` present times and sends [`Mark`]s after presents `warmup` and
/// `warmup + frames`.
///
/// # Errors
/// The spawn's result code, with the thread's name.
pub fn spawn(
    rt: &hos::Runtime,
    load: Load,
    warmup: usize,
    frames: usize,
) -> Result<Running, String> {
    let shared = Arc::new(Shared {
        exec_queues: (0..load.executors)
            .map(|_| LightMessageQueue::new(2))
            .collect(),
        jobs: MessageQueue::new(load.jobs.max(1)),
        present: MessageQueue::new(1),
        pending: AtomicUsize::new(0),
        done: Event::new(ClearMode::Auto),
        stop: AtomicBool::new(false),
        presented: AtomicU64::new(0),
    });
    let (mark_tx, marks) = mpsc::channel();
    match spawn_threads(rt, &shared, load, [warmup, warmup + frames], mark_tx) {
        Ok((threads, presenter)) => Ok(Running {
            shared,
            threads,
            presenter: Some(presenter),
            marks,
        }),
        Err(e) => {
            // Relaxed: as in `stop`; the caller shuts the runtime down, which ends the rest.
            shared.stop.store(true, Ordering::Relaxed);
            Err(e)
        }
    }
}

type Spawned = (Vec<(String, JoinHandle<()>)>, JoinHandle<Vec<Instant>>);

fn spawn_threads(
    rt: &hos::Runtime,
    shared: &Arc<Shared>,
    load: Load,
    marks: [usize; 2],
    mark_tx: mpsc::Sender<Mark>,
) -> Result<Spawned, String> {
    let err = |name: &str| {
        let name = name.to_string();
        move |code| format!("spawning {name}: {code:?}")
    };
    let mut threads = Vec::new();
    for i in 0..load.executors {
        let name = format!("BaseProcExecutor{i}");
        let s = shared.clone();
        let t = rt
            .thread()
            .name(name.clone())
            .priority(PRIORITY_FRAME)
            .core_mask(1 << i)
            .ideal_core(i as i32)
            .spawn(move || executor(&s, i, load.exec_us))
            .map_err(err(&name))?;
        threads.push((name, t));
    }
    for i in 0..load.workers {
        let name = format!("ModuleSystemWorker{i}");
        let s = shared.clone();
        let t = rt
            .thread()
            .name(name.clone())
            .priority(PRIORITY_WORKER)
            .spawn(move || worker(&s, load.job_us, load.poll_us))
            .map_err(err(&name))?;
        threads.push((name, t));
    }
    let s = shared.clone();
    let prt = rt.clone();
    let presenter = rt
        .thread()
        .name("Presentation Thread")
        .priority(PRIORITY_FRAME)
        .spawn(move || presenter(&s, &prt, load, marks, mark_tx))
        .map_err(err("Presentation Thread"))?;
    let s = shared.clone();
    let t = rt
        .thread()
        .name("MainThread")
        .priority(PRIORITY_FRAME)
        .ideal_core(0)
        .spawn(move || main_thread(&s, load))
        .map_err(err("MainThread"))?;
    threads.push(("MainThread".into(), t));
    Ok((threads, presenter))
}

/// The game thread: burst, fan out, wait for the last helper, hand the frame on.
fn main_thread(s: &Shared, load: Load) {
    let helpers = load.executors + load.jobs;
    for frame in 0u64.. {
        if s.stopped() {
            return;
        }
        burst(load.main_us);
        // Relaxed: `pending` is 0 here (module invariant); the sends below publish it.
        s.pending.store(helpers, Ordering::Relaxed);
        for _ in 0..load.jobs {
            if s.jobs.send(frame).is_err() {
                return;
            }
        }
        for q in &s.exec_queues {
            if q.send(frame).is_err() {
                return;
            }
        }
        if s.done.wait().is_err() || s.present.send(frame).is_err() {
            return;
        }
    }
}

/// A BaseProcExecutor: one message, one burst, a count down.
fn executor(s: &Shared, i: usize, exec_us: u64) {
    while let Ok(_frame) = s.exec_queues[i].receive() {
        burst(exec_us);
        s.count_down();
    }
}

/// A ModuleSystemWorker: poll the job queue, sleep `poll_us` between empty polls.
fn worker(s: &Shared, job_us: u64, poll_us: u64) {
    let poll_ns = (poll_us * 1000) as i64;
    while !s.stopped() {
        hos::svc::checkpoint();
        match s.jobs.try_receive() {
            Some(_frame) => {
                burst(job_us);
                s.count_down();
            }
            None => hos::svc::sleep_thread(poll_ns),
        }
    }
}

/// The Presentation Thread: submit, pace to the cap, present, mark the window.
fn presenter(
    s: &Shared,
    rt: &hos::Runtime,
    load: Load,
    [warmup, keep]: [usize; 2],
    marks: mpsc::Sender<Mark>,
) -> Vec<Instant> {
    let period = (load.fps > 0).then(|| Duration::from_secs(1) / load.fps);
    let mut next: Option<Instant> = None;
    let mut times = Vec::with_capacity(keep);
    while let Ok(_frame) = s.present.receive() {
        burst(load.present_us);
        if let Some(p) = period {
            // The frame limiter: sleep to the next boundary; a late frame starts a new grid.
            let now = Instant::now();
            next = Some(match next {
                Some(t) if t > now => {
                    rt.host_sleep(t - now);
                    t + p
                }
                _ => now + p,
            });
        }
        let t = Instant::now();
        rt.frame_mark();
        if times.len() < keep {
            times.push(t);
        }
        // Relaxed: a progress figure; the marks go through the channel.
        let n = s.presented.fetch_add(1, Ordering::Relaxed) as usize + 1;
        let mark = if n == warmup {
            Some(Mark::WindowStart)
        } else if n == keep {
            Some(Mark::WindowEnd)
        } else {
            None
        };
        if let Some(m) = mark {
            // An unbounded channel: never blocks; a gone controller is no error here.
            let _ = marks.send(m);
        }
    }
    times
}

/// This thread's CPU time in nanoseconds (one system call: CLOCK_THREAD_CPUTIME_ID is not
/// in the vDSO).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; the clock id is a constant Linux knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A chunk of work between two readings of the CPU clock (and two checkpoints): long enough
/// that the clock's system call costs about 1 %, short enough that a kicked thread answers
/// within 20 us, as game code that enters the kernel now and then would.
const CHUNK_NS: u64 = 20_000;

thread_local! {
    /// This thread's estimate of one work step's CPU time, in ns (adapted chunk by chunk).
    static STEP_NS: std::cell::Cell<f64> = const { std::cell::Cell::new(1.0) };
}

/// Spends `us` microseconds of this thread's CPU time on work, calling
/// `hos::svc::checkpoint` between chunks. Preemption does not lengthen the work: the clock
/// is the thread's own, so the burst is the same CPU on a loaded machine, only later.
pub fn burst(us: u64) {
    if us == 0 {
        return;
    }
    let start = thread_cpu_ns();
    let end = start + us * 1000;
    let mut now = start;
    let mut x = start | 1;
    let mut step = STEP_NS.get();
    while now < end {
        let chunk = (end - now).min(CHUNK_NS);
        let steps = ((chunk as f64 / step) as u64).max(8);
        for _ in 0..steps {
            // A dependent multiply-add chain: no vectorizing, no closed form.
            x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
        let t = thread_cpu_ns();
        let measured = (t - now) as f64 / steps as f64;
        step = (0.5 * step + 0.5 * measured).clamp(0.05, 1000.0);
        now = t;
        hos::svc::checkpoint();
    }
    STEP_NS.set(step);
    black_box(x);
}
