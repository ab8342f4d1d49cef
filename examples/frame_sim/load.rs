//! The game-shaped load: the threads of one run and the frame they make together.
//!
//! Invariant: every thread of the load ends once [`Running::stop`] has been called (a stop
//! flag, then the runtime's shutdown, which ends every wait with Cancelled), so a run always
//! joins; with `--det`, once the window is over, the load ends itself first (the
//! Presentation Thread marks the window done, the game thread sends each helper an end), so
//! the run's last decision is a point of the run, not of the host's stop; and a frame's work is CPU time spent on each thread's own clock (`burst.rs`), the
//! same on any machine, whatever the runtime or the neighbours cost. With `--det` the load
//! reads only the virtual clock (`vclock.rs`), a guest thread starts it, and the game thread
//! reads a pad that a posted device feeds (`input.rs`, the `HidPump` thread), so one selector
//! gives one run.
//!
//! One frame, as in the measured game (docs/design.md, the introduction):
//!
//! | thread | priority | cores | each frame |
//! | --- | --- | --- | --- |
//! | `MainThread` | 44 | all | burst `main_us`; post `jobs` jobs and one message to each executor; wait for the last of them (an auto-clear Event); hand the frame on (a queue of 1: at most one frame ahead) |
//! | `BaseProcExecutor{i}` | 44 | `1 << i` | receive from its own LightMessageQueue, burst `exec_us`, count down |
//! | `ModuleSystemWorker{i}` | 45 | all | `try_receive` the shared job queue: a job is a burst of `job_us` and a count down; nothing there is a `sleep_thread(poll_us)`; with `linger_us`, once the queue has been empty that long the worker blocks in `receive` until the next job, or with `repoll_us` for at most that long, then polls for its linger again |
//! | `HidPump` (`--det` only) | 40 | all | take each posted pad sample (`next_post`) and publish it; the game thread reads the newest at its frame's start (`input.rs`) |
//! | `Presentation Thread` | 44 | all | receive the frame, burst `present_us` (submit), hand it to the host's renderer if there is one (`host.rs`), sleep to the next frame boundary with `host_sleep` (the frame limiter; on the virtual clock with `--det`, `vclock.rs`), present |
//!
//! The workers rank one step below the frame's chain (45): when virtual cores are short, a
//! polling worker gives way to the frame, as a background job system does on the console.
//! Every job and executor message carries its post time; the thread that starts it records
//! the wait (`pickup.rs`).

use crate::burst::burst;
use crate::group::Group;
use crate::host::{self, Host, HostLoad, RenderLink};
use crate::input::{self, Inputs};
use crate::pickup::{Kind, Pickups, Post};
use crate::vclock;
use hos::os::{ClearMode, Event, LightMessageQueue, MessageQueue};
use hos::thread::JoinHandle;
use hos::CpuTime;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Priority of the game thread, the executors and the presentation thread (0x2C).
pub(crate) const PRIORITY_FRAME: i32 = 0x2C;
/// Priority of the job workers: one step below the frame's chain.
pub(crate) const PRIORITY_WORKER: i32 = 0x2D;

/// What one frame is made of. Every burst is CPU time in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Load {
    /// BaseProcExecutor threads (1..=6), executor `i` pinned to virtual core `i`.
    pub(crate) executors: usize,
    /// ModuleSystemWorker threads.
    pub(crate) workers: usize,
    /// The game thread's burst.
    pub(crate) main_us: u64,
    /// Each executor's burst.
    pub(crate) exec_us: u64,
    /// The presentation thread's burst (the submit).
    pub(crate) present_us: u64,
    /// Jobs posted each frame.
    pub(crate) jobs: usize,
    /// Each job's burst.
    pub(crate) job_us: u64,
    /// A worker's sleep between two empty polls.
    pub(crate) poll_us: u64,
    /// How long a worker polls an empty queue before it blocks until the next job; `None`:
    /// it polls for ever (the `field` and `forest` workers).
    pub(crate) linger_us: Option<u64>,
    /// With a linger: how long a blocked worker waits for a job before it polls for its
    /// linger again (a job system's wait with a timeout); `None`: until the next job.
    pub(crate) repoll_us: Option<u64>,
    /// Frame cap (0: none).
    pub(crate) fps: u32,
    /// The host's own threads.
    pub(crate) host: HostLoad,
}

impl Load {
    /// CPU time of one frame's bursts (the audio renderer's, which runs on its own period,
    /// not counted).
    pub(crate) fn cpu_per_frame(&self) -> Duration {
        Duration::from_micros(
            self.main_us
                + self.executors as u64 * self.exec_us
                + self.present_us
                + self.jobs as u64 * self.job_us
                + self.host.render_us
                + self.host.gpu_us,
        )
    }

    /// The load's bursts a frame over a window of `frames` frames and `window` of wall time,
    /// ms: a frame's bursts ([`Load::cpu_per_frame`]) and the audio renderer's bursts of the
    /// window shared among its frames. What the process spent beyond them is the arm's own
    /// cost.
    pub(crate) fn bursts_ms(&self, window: Duration, frames: u64) -> f64 {
        let periods = window.as_secs_f64() * 1e6 / self.host.audio_period_us.max(1) as f64;
        let audio_us = self.host.audio_us as f64 * periods / frames.max(1) as f64;
        self.cpu_per_frame().as_secs_f64() * 1e3 + audio_us / 1e3
    }

    /// Every burst multiplied by `s` (rounded to the microsecond): the same shape, heavier
    /// or lighter.
    pub(crate) fn scaled(&self, s: f64) -> Load {
        let f = |us: u64| (us as f64 * s).round() as u64;
        Load {
            main_us: f(self.main_us),
            exec_us: f(self.exec_us),
            present_us: f(self.present_us),
            job_us: f(self.job_us),
            host: HostLoad {
                render_us: f(self.host.render_us),
                gpu_us: f(self.host.gpu_us),
                audio_us: f(self.host.audio_us),
                ..self.host
            },
            ..*self
        }
    }

    /// One line for the report's header.
    pub(crate) fn describe(&self) -> String {
        format!(
            "main {} us, {} executors x {} us, {} jobs x {} us on {} workers (poll {} us{}), \
             present {} us, cap {}; {}",
            self.main_us,
            self.executors,
            self.exec_us,
            self.jobs,
            self.job_us,
            self.workers,
            self.poll_us,
            match (self.linger_us, self.repoll_us) {
                (None, _) => String::new(),
                (Some(l), None) => format!(", block after {l} us idle"),
                (Some(l), Some(r)) => format!(", block after {l} us idle, poll again after {r} us"),
            },
            self.present_us,
            if self.fps == 0 {
                "none".to_string()
            } else {
                format!("{} fps", self.fps)
            },
            self.host.describe(),
        )
    }
}

/// A mark the presentation thread sends the controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// The last warm-up frame was presented: the window opens.
    WindowStart,
    /// The last measured frame was presented: the window closes.
    WindowEnd,
}

/// What the threads of one run share.
struct Shared {
    /// One LightMessageQueue an executor.
    exec_queues: Vec<LightMessageQueue<Post>>,
    /// The job queue the workers poll.
    jobs: MessageQueue<Post>,
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
    /// Set by the Presentation Thread at the window's end with `--det`: the game thread ends
    /// the load ([`Shared::wind_down`]).
    window_done: AtomicBool,
    /// Frames presented so far (the progress bar reads it).
    presented: AtomicU64,
    /// Pickup latencies of the measured frames' posts.
    pickups: Pickups,
    /// The pad the game thread reads with `--det` (`input.rs`).
    inputs: Inputs,
    /// The deterministic mode's figures as the last measured frame was presented (`--det`).
    det_at_end: std::sync::Mutex<Option<crate::det::AtEnd>>,
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

    fn window_done(&self) -> bool {
        // Relaxed: set and read by guest threads of a deterministic run, one at a time.
        self.window_done.load(Ordering::Relaxed)
    }

    /// With `--det`, the game thread ends the load once the window is done: an end to each
    /// executor, worker and the Presentation Thread, each of which then returns (a helper
    /// takes every job posted before its end, so every frame begun completes).
    fn wind_down(&self, workers: usize) {
        // An Err: the runtime shut down (a stall's stop), which ends the threads itself.
        for q in &self.exec_queues {
            let _ = q.send(Post::now(END));
        }
        for _ in 0..workers {
            let _ = self.jobs.send(Post::now(END));
        }
        let _ = self.present.send(END);
    }
}

/// The frame number that ends a helper or the Presentation Thread (`Shared::wind_down`).
const END: u64 = u64::MAX;

/// The threads of one run, spawned.
pub(crate) struct Running {
    shared: Arc<Shared>,
    threads: Vec<(String, JoinHandle<()>)>,
    presenter: Option<JoinHandle<Vec<Instant>>>,
    host: Host,
    /// Window marks from the presentation thread.
    pub(crate) marks: mpsc::Receiver<Mark>,
}

/// Pickup latency quantiles of a run, microseconds: p50 and p99 (NaN where nothing was
/// picked up).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PickupFigures {
    /// Jobs, post to a worker's start.
    pub(crate) job: [f64; 2],
    /// Executor messages, post to the executor's start.
    pub(crate) exec: [f64; 2],
}

/// What a stopped run leaves.
pub(crate) struct Ended {
    /// The present times the presentation thread kept (the first `warmup + frames`).
    pub(crate) times: Vec<Instant>,
    /// Pickup latencies of the measured frames.
    pub(crate) pickup: PickupFigures,
}

impl Running {
    /// Frames presented so far.
    pub(crate) fn presented(&self) -> u64 {
        // Relaxed: a progress figure.
        self.shared.presented.load(Ordering::Relaxed)
    }

    /// The host threads' CPU so far, by group.
    pub(crate) fn host_cpu(&self) -> Vec<(Group, CpuTime)> {
        self.host.cpu()
    }

    /// The deterministic mode's figures the presentation thread took as it presented the
    /// last measured frame (`None` before, or with the mode off).
    pub(crate) fn det_at_end(&self) -> Option<crate::det::AtEnd> {
        *hos::internal::lock(&self.shared.det_at_end)
    }

    /// The stop flag, the host threads' stop and the runtime's shutdown, which ends every
    /// wait.
    fn halt(&self, rt: &hos::Runtime) {
        // Relaxed: the shutdown below ends every wait; the flag only ends the pollers' loop.
        self.shared.stop.store(true, Ordering::Relaxed);
        self.host.stop();
        rt.shutdown();
    }

    /// Stops the load and shuts the runtime down; returns what the run leaves, or why it
    /// has nothing. `window` says whether the window ended: then with `--det` the load ends
    /// itself (module invariant) and is joined before the shutdown.
    pub(crate) fn stop(mut self, rt: &hos::Runtime, window: bool) -> Result<Ended, String> {
        let ends_itself = window && vclock::is_virtual();
        if !ends_itself {
            self.halt(rt);
        }
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
        if ends_itself {
            self.halt(rt);
        }
        failed.extend(self.host.join());
        if !failed.is_empty() {
            return Err(format!("threads panicked: {}", failed.join(", ")));
        }
        let p = &self.shared.pickups;
        let q = [0.5, 0.99];
        Ok(Ended {
            times,
            pickup: PickupFigures {
                job: p.quantiles_us(Kind::Job, q),
                exec: p.quantiles_us(Kind::Exec, q),
            },
        })
    }
}

/// Spawns the load's threads on `rt`. The presentation thread keeps the first
/// `warmup + frames` present times and sends [`Mark`]s after presents `warmup` and
/// `warmup + frames`.
///
/// # Errors
/// The spawn's result code, with the thread's name.
pub(crate) fn spawn(
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
        window_done: AtomicBool::new(false),
        presented: AtomicU64::new(0),
        // Present n (from 1) is main frame n - 1: the measured presents are main frames
        // warmup..warmup + frames.
        pickups: Pickups::new(warmup as u64, (warmup + frames) as u64),
        inputs: Inputs::default(),
        det_at_end: std::sync::Mutex::new(None),
    });
    let (host, link) = host::spawn(rt, load.host)?;
    let (mark_tx, marks) = mpsc::channel();
    let marks_at = [warmup, warmup + frames];
    let spawned = if vclock::is_virtual() {
        // In the mode, the device's samples wait for the first guest thread, and a guest
        // thread starts the load, so each start is a point of the run.
        let s = shared.clone();
        let boot = rt.clone();
        input::post_all(rt, input::samples(load.fps, warmup + frames)).and_then(|()| {
            rt.thread()
                .name("Boot")
                .priority(PRIORITY_FRAME)
                .spawn(move || spawn_threads(&boot, &s, load, marks_at, mark_tx, link))
                .map_err(|code| format!("spawning Boot: {code:?}"))
                .and_then(|t| t.join().map_err(|_| "Boot panicked".to_string())?)
        })
    } else {
        spawn_threads(rt, &shared, load, marks_at, mark_tx, link)
    };
    match spawned {
        Ok((threads, presenter)) => Ok(Running {
            shared,
            threads,
            presenter: Some(presenter),
            host,
            marks,
        }),
        Err(e) => {
            // Relaxed: as in `stop`; the caller shuts the runtime down, which ends the rest.
            shared.stop.store(true, Ordering::Relaxed);
            host.stop();
            host.join();
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
    link: Option<RenderLink>,
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
            .spawn(move || worker(&s, load))
            .map_err(err(&name))?;
        threads.push((name, t));
    }
    if vclock::is_virtual() {
        let s = shared.clone();
        let pump_rt = rt.clone();
        let t = rt
            .thread()
            .name("HidPump")
            .priority(input::PRIORITY_PUMP)
            .spawn(move || input::pump(&pump_rt, &s.inputs, || s.window_done()))
            .map_err(err("HidPump"))?;
        threads.push(("HidPump".into(), t));
    }
    let s = shared.clone();
    let prt = rt.clone();
    let presenter = rt
        .thread()
        .name("Presentation Thread")
        .priority(PRIORITY_FRAME)
        .spawn(move || presenter(&s, &prt, load, marks, mark_tx, link))
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
        if s.window_done() {
            s.wind_down(load.workers);
            return;
        }
        if vclock::is_virtual() {
            s.inputs.read();
        }
        burst(load.main_us);
        // Relaxed: `pending` is 0 here (module invariant); the sends below publish it.
        s.pending.store(helpers, Ordering::Relaxed);
        for _ in 0..load.jobs {
            if s.jobs.send(Post::now(frame)).is_err() {
                return;
            }
        }
        for q in &s.exec_queues {
            if q.send(Post::now(frame)).is_err() {
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
    let mut pickups = s.pickups.recorder(Kind::Exec);
    while let Ok(post) = s.exec_queues[i].receive() {
        if post.frame == END {
            return;
        }
        pickups.started(post);
        burst(exec_us);
        s.count_down();
    }
}

/// A ModuleSystemWorker: poll the job queue, sleep `poll_us` between empty polls; with a
/// linger, block in `receive` once the queue has been empty that long, and with a repoll,
/// for at most that long, then poll for the linger again.
fn worker(s: &Shared, load: Load) {
    let poll_ns = (load.poll_us * 1000) as i64;
    let linger = load.linger_us.map(|us| us * 1000);
    let repoll = load.repoll_us.map(Duration::from_micros);
    let mut pickups = s.pickups.recorder(Kind::Job);
    // Since when the queue has been found empty (read only with a linger).
    let mut idle_since: Option<u64> = None;
    while !s.stopped() {
        hos::svc::checkpoint();
        let post = match s.jobs.try_receive() {
            Some(post) => post,
            None => {
                let lingered = linger.is_some_and(|l| {
                    let now = vclock::now_ns();
                    now - *idle_since.get_or_insert(now) >= l
                });
                if !lingered {
                    hos::svc::sleep_thread(poll_ns);
                    continue;
                }
                let got = match repoll {
                    // None: the repoll's time passed, or the runtime shut down (the loop's
                    // head sees the stop flag, set before the shutdown).
                    Some(r) => s.jobs.receive_timeout(r).ok(),
                    None => s.jobs.receive().ok(),
                };
                match got {
                    Some(post) => post,
                    None if repoll.is_some() => {
                        idle_since = None;
                        continue;
                    }
                    None => return,
                }
            }
        };
        if post.frame == END {
            return;
        }
        idle_since = None;
        pickups.started(post);
        burst(load.job_us);
        s.count_down();
    }
}

/// The Presentation Thread: submit, pace to the cap, present, mark the window.
fn presenter(
    s: &Shared,
    rt: &hos::Runtime,
    load: Load,
    [warmup, keep]: [usize; 2],
    marks: mpsc::Sender<Mark>,
    renderer: Option<RenderLink>,
) -> Vec<Instant> {
    let period = (load.fps > 0).then(|| 1_000_000_000 / u64::from(load.fps));
    let mut next: Option<u64> = None;
    let mut times = Vec::with_capacity(keep);
    while let Ok(frame) = s.present.receive() {
        if frame == END {
            break;
        }
        if s.window_done() {
            continue;
        }
        burst(load.present_us);
        if let Some(r) = &renderer {
            // One frame in the renderer: wait (as a guest) until it took the last one.
            if r.slot.acquire().is_err() || r.frames.send(frame).is_err() {
                break;
            }
        }
        if let Some(p) = period {
            // The frame limiter: sleep to the next boundary; a late frame starts a new grid.
            let now = vclock::now_ns();
            next = Some(match next {
                Some(t) if t > now => {
                    vclock::sleep_ns(rt, t - now);
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
        if mark == Some(Mark::WindowEnd) {
            // Here, on the load's own thread, the mode's figures are a point of the run.
            *hos::internal::lock(&s.det_at_end) = rt.det_stats().map(|stats| crate::det::AtEnd {
                stats,
                inputs: s.inputs.figures(),
            });
            if vclock::is_virtual() {
                // Relaxed: read by guest threads of the deterministic run, one at a time.
                s.window_done.store(true, Ordering::Relaxed);
            }
        }
        if let Some(m) = mark {
            // An unbounded channel: never blocks; a gone controller is no error here.
            let _ = marks.send(m);
        }
    }
    times
}
