//! The host's own threads: a renderer worker pool, a GPU-submit thread and an audio renderer.
//! They compete with the guest threads for the processors and are untouched by every arm.
//!
//! Invariant: these are plain host threads (std threads, never guest threads): they hold no
//! virtual core, wait only on std primitives among themselves, and sleep only with the
//! runtime's host sleep (always precise); the only hos calls they make are that sleep and a
//! release of the renderer's frame slot (a signal, which never waits). Every one of them ends
//! once [`Host::stop`] has been called, whatever it was waiting for.
//!
//! Per frame the Presentation Thread takes the renderer's one frame slot (an hos Semaphore:
//! a guest wait, so a renderer that falls behind holds the frame back through the queue of
//! frames, as a GPU does) and hands the frame over; the GPU-submit thread splits the frame's
//! `render_us` evenly over the pool, waits for the pool, spends `gpu_us` submitting, and gives
//! the slot back. The audio renderer spends `audio_us` every `audio_period_us`, on its own
//! clock, frames or not.

use crate::burst::burst;
use crate::group::Group;
use hos::internal::{lock, wait};
use hos::os::Semaphore;
use hos::CpuTime;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the host's threads do. Every burst is CPU time in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HostLoad {
    /// Renderer worker threads; `None`: the machine's online processors, counted as a
    /// renderer sizes its pool (all of the machine's processors, whatever the affinity mask).
    pub(crate) render_threads: Option<usize>,
    /// The renderer pool's CPU a frame, split evenly over its threads (0: no pool).
    pub(crate) render_us: u64,
    /// The GPU-submit thread's burst a frame.
    pub(crate) gpu_us: u64,
    /// The audio renderer's burst a period (0: no audio renderer).
    pub(crate) audio_us: u64,
    /// The audio renderer's period.
    pub(crate) audio_period_us: u64,
}

impl HostLoad {
    /// No host threads (the `field`, `forest` and `heavy` scenes).
    pub(crate) const NONE: HostLoad = HostLoad {
        render_threads: None,
        render_us: 0,
        gpu_us: 0,
        audio_us: 0,
        audio_period_us: 5000,
    };

    /// Whether frames go through a renderer stage (a GPU-submit thread, and a pool if
    /// `render_us` is not 0).
    pub(crate) fn renders(&self) -> bool {
        self.render_us > 0 || self.gpu_us > 0
    }

    /// The renderer pool's threads.
    pub(crate) fn pool_threads(&self) -> usize {
        if self.render_us == 0 {
            0
        } else {
            self.render_threads
                .unwrap_or_else(machine_processors)
                .max(1)
        }
    }

    /// One line for the report's header.
    pub(crate) fn describe(&self) -> String {
        if !self.renders() && self.audio_us == 0 {
            return "no host threads".into();
        }
        format!(
            "host: renderer {} us a frame on {} threads{}, GPU submit {} us, audio {} us every {} us",
            self.render_us,
            self.pool_threads(),
            if self.render_threads.is_none() && self.render_us > 0 {
                " (the machine's)"
            } else {
                ""
            },
            self.gpu_us,
            self.audio_us,
            self.audio_period_us
        )
    }
}

/// The machine's online processors, whatever this process's affinity mask (what
/// `std::thread::hardware_concurrency` and a renderer's pool sizing count); 1 if unknown.
pub(crate) fn machine_processors() -> usize {
    // SAFETY: sysconf takes a constant and touches no memory.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as usize
}

/// The Presentation Thread's end of the renderer: the frame slot and the frame channel.
pub(crate) struct RenderLink {
    /// One frame in the renderer at a time: taken by the Presentation Thread, given back by
    /// the GPU-submit thread.
    pub(crate) slot: Arc<Semaphore>,
    /// Frames to the GPU-submit thread; dropped when the Presentation Thread ends.
    pub(crate) frames: mpsc::Sender<u64>,
}

/// The pool's shared state: tasks of the current frame not yet taken and not yet done.
#[derive(Default)]
struct PoolState {
    queued: usize,
    unfinished: usize,
    stop: bool,
}

#[derive(Default)]
struct Pool {
    state: Mutex<PoolState>,
    work: Condvar,
    done: Condvar,
}

impl Pool {
    /// Posts `n` tasks and waits until they are done (or the pool stops).
    fn run_frame(&self, n: usize) {
        let mut s = lock(&self.state);
        debug_assert_eq!(s.unfinished, 0, "a frame posted while the last one runs");
        s.queued = n;
        s.unfinished = n;
        self.work.notify_all();
        while s.unfinished > 0 && !s.stop {
            s = wait(&self.done, s, None);
        }
    }

    /// Takes a task; `false` once the pool stops.
    fn take(&self) -> bool {
        let mut s = lock(&self.state);
        loop {
            if s.stop {
                return false;
            }
            if s.queued > 0 {
                s.queued -= 1;
                return true;
            }
            s = wait(&self.work, s, None);
        }
    }

    /// A task is done; the last one wakes the GPU-submit thread.
    fn finish(&self) {
        let mut s = lock(&self.state);
        s.unfinished -= 1;
        if s.unfinished == 0 {
            self.done.notify_one();
        }
    }

    fn stop(&self) {
        lock(&self.state).stop = true;
        self.work.notify_all();
        self.done.notify_all();
    }
}

/// The host threads of one run.
pub(crate) struct Host {
    stop: Arc<AtomicBool>,
    pool: Arc<Pool>,
    /// Each thread's group and its CPU time as of its last burst.
    cpu: Arc<Vec<(Group, Mutex<CpuTime>)>>,
    threads: Vec<(String, JoinHandle<()>)>,
}

impl Host {
    /// The host threads' CPU so far, by group (each thread's as of the end of its last burst:
    /// a waiting thread's is current).
    pub(crate) fn cpu(&self) -> Vec<(Group, CpuTime)> {
        self.cpu.iter().map(|(g, c)| (*g, *lock(c))).collect()
    }

    /// Asks every host thread to end (the caller then shuts the runtime down, which ends
    /// the Presentation Thread and with it the frames, and joins with [`Host::join`]).
    pub(crate) fn stop(&self) {
        // Relaxed: a flag polled in the audio loop and the GPU thread's receive loop; the
        // pool's own flag is under its lock.
        self.stop.store(true, Ordering::Relaxed);
        self.pool.stop();
    }

    /// Joins every host thread; the names of those that panicked.
    pub(crate) fn join(self) -> Vec<String> {
        self.threads
            .into_iter()
            .filter_map(|(name, t)| t.join().is_err().then_some(name))
            .collect()
    }
}

/// Spawns the host threads of `load` and, if it renders, the link the Presentation Thread
/// hands frames over with.
///
/// # Errors
/// A thread would not spawn (its name and the OS's error); the threads already spawned are
/// stopped and joined.
pub(crate) fn spawn(
    rt: &hos::Runtime,
    load: HostLoad,
) -> Result<(Host, Option<RenderLink>), String> {
    let pool_threads = load.pool_threads();
    let mut groups = vec![Group::Renderer; pool_threads];
    if load.renders() {
        groups.push(Group::GpuSubmit);
    }
    if load.audio_us > 0 {
        groups.push(Group::Audio);
    }
    let mut host = Host {
        stop: Arc::new(AtomicBool::new(false)),
        pool: Arc::new(Pool::default()),
        cpu: Arc::new(
            groups
                .into_iter()
                .map(|g| (g, Mutex::new(CpuTime::default())))
                .collect(),
        ),
        threads: Vec::new(),
    };
    match spawn_threads(&mut host, rt, load, pool_threads) {
        Ok(link) => Ok((host, link)),
        Err(e) => {
            host.stop();
            host.join();
            Err(e)
        }
    }
}

fn spawn_threads(
    host: &mut Host,
    rt: &hos::Runtime,
    load: HostLoad,
    pool_threads: usize,
) -> Result<Option<RenderLink>, String> {
    let spawn = |host: &mut Host, name: String, f: Box<dyn FnOnce() + Send>| {
        let t = std::thread::Builder::new()
            .name(name.clone())
            .spawn(f)
            .map_err(|e| format!("spawning host thread {name}: {e}"))?;
        host.threads.push((name, t));
        Ok::<(), String>(())
    };
    let publish = |cpu: &Arc<Vec<(Group, Mutex<CpuTime>)>>, i: usize| {
        *lock(&cpu[i].1) = hos::thread::cpu_time();
    };
    let task_us = load.render_us / pool_threads.max(1) as u64;
    for i in 0..pool_threads {
        let (pool, cpu) = (host.pool.clone(), host.cpu.clone());
        spawn(
            host,
            format!("RenderWorker{i}"),
            Box::new(move || {
                while pool.take() {
                    burst(task_us);
                    publish(&cpu, i);
                    pool.finish();
                }
            }),
        )?;
    }
    let mut slot_index = pool_threads;
    let link = if load.renders() {
        let slot = Arc::new(Semaphore::new(1, 1));
        let (frames, rx) = mpsc::channel::<u64>();
        let (pool, cpu, stop, gpu_slot) = (
            host.pool.clone(),
            host.cpu.clone(),
            host.stop.clone(),
            slot.clone(),
        );
        let me = slot_index;
        spawn(
            host,
            "GpuSubmit".into(),
            Box::new(move || loop {
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(_frame) => {
                        pool.run_frame(pool_threads);
                        burst(load.gpu_us);
                        publish(&cpu, me);
                        // The slot was taken for this frame, so giving it back cannot
                        // overflow; a shut-down runtime's answer does not matter here.
                        let _ = gpu_slot.release(1);
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                // Relaxed: see `Host::stop`.
                if stop.load(Ordering::Relaxed) {
                    return;
                }
            }),
        )?;
        slot_index += 1;
        Some(RenderLink { slot, frames })
    } else {
        None
    };
    if load.audio_us > 0 {
        let (cpu, stop, rt) = (host.cpu.clone(), host.stop.clone(), rt.clone());
        let me = slot_index;
        let period = Duration::from_micros(load.audio_period_us.max(1));
        spawn(
            host,
            "AudioRenderer".into(),
            Box::new(move || {
                let mut next = Instant::now() + period;
                // Relaxed: see `Host::stop`.
                while !stop.load(Ordering::Relaxed) {
                    burst(load.audio_us);
                    publish(&cpu, me);
                    let now = Instant::now();
                    if next > now {
                        rt.host_sleep(next - now);
                        next += period;
                    } else {
                        // Late: a new grid from now, as an audio renderer that underran does.
                        next = now + period;
                    }
                }
            }),
        )?;
    }
    Ok(link)
}
