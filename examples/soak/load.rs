//! The soak's load: guest threads hand tokens to each other through stations of every object
//! kind (queues, mutex and condition variable, semaphore, event, wait_any), with random
//! timeouts, yields, sleeps, priority and core-mask changes, while async host tasks take tokens
//! from the queues and drop their waits half-way (cancellation). Then it stops: each station
//! gets one pill per home receiver, and every token is accounted for.
//!
//! What it checks: every token is held by one thread at a time and ends up exactly once in
//! the final count (no loss, no duplicate); hand-offs add up; no timed wait or sleep ends
//! before its time; no semaphore count without its token; no lock held twice; no virtual core
//! held once every thread has ended. A watchdog fails the run, naming the threads that wait
//! longest (what on, for how long), and shuts the runtime down so nothing stays stuck: when
//! nothing progresses for `stall`, and when a *strict* station (every second group of four,
//! whose receivers wait without a timeout, so that no re-poll hides a lost wake) holds tokens
//! while receivers wait on it and none of their waits ends, for a tenth of `stall`: a lost
//! wakeup, caught even while the rest of the load flows around it. (A station that stays busy,
//! tokens and waiting receivers at every look while its waits keep ending, is congested, not
//! lost: on 2 processors 96 threads make that.)
//!
//! Shared by `examples/soak` (full counts, chaos seeds by the thousand) and `tests/soak.rs`,
//! `tests/chaos.rs` (bounded).

use crate::stations::{Limit, Rng, Station, Tally, PILL};
use hos::internal::lock;
use hos::os::MessageQueue;
use hos::{Calibration, Doing, Runtime};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The size of one run.
#[derive(Clone, Debug)]
pub(crate) struct Params {
    /// Guest threads.
    pub workers: usize,
    /// Stations (one kind each, in turn); each has `workers / stations` home receivers or one more.
    pub stations: usize,
    /// Tokens in flight.
    pub tokens: usize,
    /// Queue stations' capacity (small: senders meet full queues).
    pub capacity: usize,
    /// Hand-offs before the run stops.
    pub handoffs: u64,
    /// Async host tasks (one host thread, a tokio current-thread executor).
    pub host_tasks: usize,
    /// Virtual cores.
    pub cores: usize,
    /// HOS_VCORE_ESCAPE_MS. The load keeps more threads runnable than there are cores, and
    /// strict priorities starve the worst of them: a short escape keeps their tokens moving
    /// (escapes are counted, and are no failure here).
    pub escape_ms: u64,
    /// The workload's seed (each thread draws from its own stream of it).
    pub seed: u64,
    /// No progress for this long is a failure.
    pub stall: Duration,
}

impl Params {
    /// The bounded run CI makes: about a second on 2 cores.
    pub(crate) fn ci(seed: u64) -> Params {
        Params {
            workers: 96,
            stations: 16,
            tokens: 32,
            capacity: 2,
            handoffs: 60_000,
            host_tasks: 8,
            cores: 6,
            escape_ms: 50,
            seed,
            stall: Duration::from_secs(20),
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub(crate) struct Figures {
    pub handoffs: u64,
    pub elapsed: Duration,
    /// Waits that timed out (none of them early).
    pub timeouts: u64,
    /// Async waits dropped half-way.
    pub cancels: u64,
    pub yields: u64,
    pub vcore_waits: u64,
    pub vcore_kicks: u64,
    pub vcore_escapes: u64,
    pub shutdown: Duration,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rate = self.handoffs as f64 / self.elapsed.as_secs_f64().max(1e-9);
        write!(
            f,
            "{} hand-offs in {:.2?} ({rate:.0}/s): 0 lost, 0 duplicated, 0 early; {} timeouts, \
             {} async waits dropped, {} yields, {} vcore waits, {} kicks, {} escapes; \
             shutdown {:.2?}",
            self.handoffs,
            self.elapsed,
            self.timeouts,
            self.cancels,
            self.yields,
            self.vcore_waits,
            self.vcore_kicks,
            self.vcore_escapes,
            self.shutdown
        )
    }
}

struct Shared {
    stations: Vec<Station>,
    /// Who holds each token: 0 nobody (it is in a station), else the holder's number.
    holders: Vec<AtomicU64>,
    hops: Vec<AtomicU64>,
    handoffs: AtomicU64,
    /// Any progress: hand-offs, threads that ended. The watchdog's pulse.
    beat: AtomicU64,
    stop: AtomicBool,
    /// Set by the watchdog when it fails the run: every thread ends at its next turn.
    abort: AtomicBool,
    collected: std::sync::Mutex<Vec<u64>>,
    tally: Tally,
    cancels: AtomicU64,
    cores: usize,
    /// Per station, home receivers inside a wait without a timeout (strict stations only).
    blocked: Vec<AtomicU64>,
    /// Per station, those waits that ended (strict stations only): while it moves, the
    /// receivers are served, however congested the station is.
    served: Vec<AtomicU64>,
}

/// Whether station `s`'s receivers always wait without a timeout.
fn strict(s: usize) -> bool {
    (s / 4) % 2 == 1
}

impl Shared {
    fn station(&self, rng: &mut Rng) -> &Station {
        &self.stations[rng.below(self.stations.len() as u64) as usize]
    }

    /// `who` now holds `token`: nobody else may.
    fn hold(&self, token: u64, who: u64) -> bool {
        let Some(h) = self.holders.get(token as usize) else {
            self.tally.fault(format!("token {token} was never made"));
            return false;
        };
        let before = h.swap(who, Ordering::AcqRel);
        if before != 0 {
            self.tally
                .fault(format!("token {token} held by {before} and {who} at once"));
        }
        true
    }

    /// A hand-off: `who` received `token`.
    fn take(&self, token: u64, who: u64) -> bool {
        if !self.hold(token, who) {
            return false;
        }
        self.hops[token as usize].fetch_add(1, Ordering::Relaxed);
        self.handoffs.fetch_add(1, Ordering::Relaxed);
        self.beat.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn put_down(&self, token: u64) {
        self.holders[token as usize].store(0, Ordering::Release);
    }

    fn collect(&self, token: u64) {
        self.put_down(token);
        lock(&self.collected).push(token);
    }

    /// Passes `token` (held by `who`) to a random station; keeps it once the run stops.
    fn pass(&self, token: u64, who: u64, rng: &mut Rng) {
        loop {
            if self.stop.load(Ordering::Acquire) || self.abort.load(Ordering::Relaxed) {
                return self.collect(token);
            }
            let to = self.station(rng);
            // A sender never waits without a limit: a cycle of full queues would be a
            // deadlock of the load, not of the runtime.
            let limit = match rng.limit() {
                Limit::Never => Limit::After(Duration::from_micros(1 + rng.below(2_000))),
                l => l,
            };
            self.put_down(token);
            match to.send(token, limit, rng, &self.tally) {
                Ok(()) => return,
                Err(back) => {
                    self.hold(back, who);
                }
            }
        }
    }

    /// A guest thread's turn on the virtual cores: yields, a short sleep, a new priority or
    /// core mask.
    fn shake(&self, rng: &mut Rng) {
        match rng.below(6) {
            0 => hos::svc::sleep_thread(0),
            1 => hos::svc::sleep_thread(-1),
            2 => hos::svc::sleep_thread(-2),
            3 => {
                let ns = 1 + rng.below(50_000);
                let start = Instant::now();
                hos::svc::sleep_thread(ns as i64);
                if start.elapsed() < Duration::from_nanos(ns) && !self.abort.load(Ordering::Relaxed)
                {
                    self.tally.early.fetch_add(1, Ordering::Relaxed);
                }
            }
            4 => {
                let p = 20 + rng.below(21) as i32;
                let me = hos::svc::Handle::CURRENT_THREAD;
                if let Err(code) = hos::svc::set_thread_priority(me, p) {
                    self.tally.fault(format!("priority {p}: {code}"));
                }
            }
            _ => {
                let all = (1u64 << self.cores) - 1;
                let mask = (rng.next() & all).max(1);
                let me = hos::svc::Handle::CURRENT_THREAD;
                if let Err(code) = hos::svc::set_thread_core_mask(me, -1, mask) {
                    self.tally.fault(format!("core mask {mask:#x}: {code}"));
                }
            }
        }
    }

    /// Guest thread `i`: receives at its home station until a pill.
    fn work(&self, i: usize, seed: u64) {
        let mut rng = Rng::new(seed, i as u64);
        let who = i as u64 + 1;
        let s = i % self.stations.len();
        let home = &self.stations[s];
        while !self.abort.load(Ordering::Relaxed) {
            if rng.below(8) == 0 {
                self.shake(&mut rng);
            }
            let got = if strict(s) {
                self.blocked[s].fetch_add(1, Ordering::Relaxed);
                let got = home.receive(Limit::Never, &mut rng, &self.tally);
                self.blocked[s].fetch_sub(1, Ordering::Relaxed);
                // Relaxed: a count the watchdog samples; nothing is published through it.
                self.served[s].fetch_add(1, Ordering::Relaxed);
                got
            } else {
                home.receive(rng.limit(), &mut rng, &self.tally)
            };
            let Some(token) = got else {
                continue;
            };
            if token == PILL {
                break;
            }
            if self.take(token, who) {
                self.pass(token, who, &mut rng);
            }
        }
        self.beat.fetch_add(1, Ordering::Relaxed);
    }

    /// Async host task `k`: takes tokens from queue stations, dropping its wait when a random
    /// timer wins the race, and passes them on through async sends.
    async fn host_task(self: Arc<Self>, k: usize, seed: u64) {
        let mut rng = Rng::new(seed, 1 << 32 | k as u64);
        let who = 1 << 40 | k as u64;
        let queues: Vec<&MessageQueue<u64>> =
            self.stations.iter().filter_map(Station::queue).collect();
        while !self.stop.load(Ordering::Acquire) && !self.abort.load(Ordering::Relaxed) {
            let q = queues[rng.below(queues.len() as u64) as usize];
            let patience = Duration::from_micros(1 + rng.below(500));
            let got = tokio::select! {
                r = q.receive_async() => r.ok(),
                () = tokio::time::sleep(patience) => {
                    self.cancels.fetch_add(1, Ordering::Relaxed);
                    None
                }
            };
            let Some(token) = got else { continue };
            if !self.take(token, who) {
                continue;
            }
            let mut token = token;
            loop {
                if self.stop.load(Ordering::Acquire) || self.abort.load(Ordering::Relaxed) {
                    self.collect(token);
                    break;
                }
                let to = queues[rng.below(queues.len() as u64) as usize];
                self.put_down(token);
                let d = Duration::from_micros(1 + rng.below(2_000));
                match to.send_async(token).timeout(d).await {
                    Ok(()) => break,
                    Err(e) => {
                        token = e.value;
                        self.hold(token, who);
                    }
                }
            }
        }
        self.beat.fetch_add(1, Ordering::Relaxed);
    }
}

/// The threads that wait longest, for a failure's message.
fn stalled(rt: &Runtime) -> String {
    let mut states = rt.guest_states();
    states.sort_by_key(|s| match s.doing {
        Doing::Waiting { waited, .. } => std::cmp::Reverse(waited),
        _ => std::cmp::Reverse(Duration::ZERO),
    });
    let lines: Vec<String> = states.iter().take(8).map(|s| format!("  {s}")).collect();
    format!(
        "{} guest threads live; longest waits:\n{}",
        states.len(),
        lines.join("\n")
    )
}

/// What the watchdog found, if anything.
type Verdict = Arc<std::sync::Mutex<Option<String>>>;

/// Watches until `done`: no beat for `stall`, or a strict station that holds tokens while
/// its receivers wait and none of their waits ends for `stall / 10`, fails the run (naming
/// the threads that wait longest) and shuts the runtime down, so that every blocked call
/// returns.
fn watchdog(
    rt: Runtime,
    sh: Arc<Shared>,
    stall: Duration,
    done: Arc<AtomicBool>,
    verdict: Verdict,
) {
    let (mut last, mut since) = (sh.beat.load(Ordering::Relaxed), Instant::now());
    // Per strict station: since when it has held tokens while receivers waited and none of
    // their waits ended, and how many had ended then.
    let mut suspect: Vec<Option<(Instant, u64)>> = vec![None; sh.stations.len()];
    while !done.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(20));
        let phase = if sh.stop.load(Ordering::Relaxed) {
            "stopping"
        } else {
            "running"
        };
        let mut why = None;
        for (s, st) in sh.stations.iter().enumerate().filter(|(s, _)| strict(*s)) {
            let blocked = sh.blocked[s].load(Ordering::Relaxed);
            // Relaxed: as `blocked`, a sample.
            let served = sh.served[s].load(Ordering::Relaxed);
            let len = st.len();
            if blocked == 0 || len == 0 || suspect[s].is_some_and(|(_, n)| n != served) {
                // Empty, nobody waiting, or a wait ended: a congested station is no lost wake.
                suspect[s] = None;
                continue;
            }
            let (from, _) = *suspect[s].get_or_insert_with(|| (Instant::now(), served));
            if from.elapsed() >= stall / 10 {
                why = Some(format!(
                    "lost wakeup: strict station {s} ({}) held {len} tokens while {blocked} \
                     receivers waited on it and none was served, for {:.1?} ({phase})",
                    st.kind(),
                    from.elapsed()
                ));
            }
        }
        let beat = sh.beat.load(Ordering::Relaxed);
        if beat != last {
            (last, since) = (beat, Instant::now());
        } else if since.elapsed() >= stall {
            why = Some(format!(
                "no progress for {stall:?} while {phase} ({} hand-offs)",
                sh.handoffs.load(Ordering::Relaxed)
            ));
        }
        let Some(why) = why else { continue };
        let why = format!("{why}; {}", stalled(&rt));
        *lock(&verdict) = Some(why);
        sh.abort.store(true, Ordering::Relaxed);
        let _ = rt.shutdown_timeout(Duration::from_secs(5));
        return;
    }
}

/// Runs the soak once; `Err` says what broke (with the seeds to replay it).
pub(crate) fn run(p: &Params) -> Result<Figures, String> {
    let seeds = format!(
        "workload seed {}, chaos {:?}",
        p.seed,
        hos_runtime::internal::chaos::seed()
    );
    run_inner(p).map_err(|e| format!("{seeds}: {e}"))
}

fn run_inner(p: &Params) -> Result<Figures, String> {
    assert!(p.stations >= 4 && p.workers >= p.stations, "{p:?}");
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .vcores(p.cores)
        .vcore_escape_ms(p.escape_ms)
        // Escapes are part of this load, no failure: no flight recorder dumps for them.
        .flight(false)
        .build()
        .map_err(|e| e.to_string())?;
    let sh = Arc::new(Shared {
        stations: (0..p.stations)
            .map(|i| Station::new(i, p.capacity))
            .collect(),
        holders: (0..p.tokens).map(|_| AtomicU64::new(0)).collect(),
        hops: (0..p.tokens).map(|_| AtomicU64::new(0)).collect(),
        handoffs: AtomicU64::new(0),
        beat: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        abort: AtomicBool::new(false),
        collected: std::sync::Mutex::new(Vec::new()),
        tally: Tally::default(),
        cancels: AtomicU64::new(0),
        cores: p.cores,
        blocked: (0..p.stations).map(|_| AtomicU64::new(0)).collect(),
        served: (0..p.stations).map(|_| AtomicU64::new(0)).collect(),
    });
    let start = Instant::now();
    let (done, verdict): (Arc<AtomicBool>, Verdict) = Default::default();
    let dog = std::thread::spawn({
        let (rt, sh, done, verdict) = (rt.clone(), sh.clone(), done.clone(), verdict.clone());
        let stall = p.stall;
        move || watchdog(rt, sh, stall, done, verdict)
    });
    let mut seed_rng = Rng::new(p.seed, u64::MAX);
    let workers: Vec<_> = (0..p.workers)
        .map(|i| {
            let sh = sh.clone();
            let seed = p.seed;
            rt.thread()
                .name(format!("Worker{i}"))
                .priority(20 + seed_rng.below(21) as i32)
                .spawn(move || sh.work(i, seed))
                .map_err(|code| format!("worker {i}: {code}"))
        })
        .collect::<Result<_, _>>()?;
    // Tokens start in the stations, spread over every kind.
    let mut rng = Rng::new(p.seed, u64::MAX - 1);
    for t in 0..p.tokens as u64 {
        let st = &sh.stations[t as usize % p.stations];
        if st.send(t, Limit::Never, &mut rng, &sh.tally).is_err() {
            return Err(format!("token {t} found its first station full"));
        }
    }
    let host = std::thread::spawn({
        let sh = sh.clone();
        let (tasks, seed) = (p.host_tasks, p.seed);
        move || {
            let exec = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("tokio");
            exec.block_on(async move {
                let all: Vec<_> = (0..tasks)
                    .map(|k| tokio::spawn(sh.clone().host_task(k, seed)))
                    .collect();
                for t in all {
                    let _ = t.await;
                }
            });
        }
    });
    while sh.handoffs.load(Ordering::Relaxed) < p.handoffs && !sh.abort.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(5));
    }
    sh.stop.store(true, Ordering::Release);
    let _ = host.join();
    // One pill per home receiver; blocking sends (a queue's receivers drain it).
    for (s, st) in sh.stations.iter().enumerate() {
        let receivers = (s..p.workers).step_by(p.stations).count();
        for _ in 0..receivers {
            let sent = match st {
                Station::Queue(q) => q.send(PILL).map_err(|e| e.value),
                st => st.send(PILL, Limit::Never, &mut rng, &sh.tally),
            };
            if sent.is_err() {
                break; // the watchdog shut the runtime down
            }
        }
    }
    let mut panicked = 0;
    for w in workers {
        panicked += usize::from(w.join().is_err());
    }
    let elapsed = start.elapsed();
    done.store(true, Ordering::Release);
    let _ = dog.join();
    if let Some(why) = lock(&verdict).take() {
        return Err(why);
    }
    if panicked > 0 {
        return Err(format!("{panicked} workers panicked"));
    }
    let stats = rt.stats();
    check(p, &sh, stats.vcores_held)?;
    let report = rt.shutdown_timeout(Duration::from_secs(10));
    if !report.is_clean() {
        return Err(report.to_string());
    }
    Ok(Figures {
        handoffs: sh.handoffs.load(Ordering::Relaxed),
        elapsed,
        timeouts: sh.tally.timeouts.load(Ordering::Relaxed),
        cancels: sh.cancels.load(Ordering::Relaxed),
        yields: stats.yields,
        vcore_waits: stats.vcore_waits,
        vcore_kicks: stats.vcore_kicks_priority + stats.vcore_kicks_slice + stats.vcore_kicks_first,
        vcore_escapes: stats.vcore_escapes,
        shutdown: report.elapsed,
    })
}

/// Every promise of a finished run (every thread has ended).
fn check(p: &Params, sh: &Shared, vcores_held: usize) -> Result<(), String> {
    let tally = &sh.tally;
    let mut seen = vec![0u32; p.tokens];
    let leftovers: Vec<u64> = sh.stations.iter().flat_map(|s| s.drain(tally)).collect();
    let collected = lock(&sh.collected).clone();
    for t in collected.iter().chain(leftovers.iter()) {
        match seen.get_mut(*t as usize) {
            Some(n) => *n += 1,
            None if *t == PILL => {}
            None => tally.fault(format!("token {t} was never made")),
        }
    }
    let mut faults = Vec::new();
    let lost: Vec<usize> = (0..p.tokens).filter(|t| seen[*t] == 0).collect();
    let twice: Vec<usize> = (0..p.tokens).filter(|t| seen[*t] > 1).collect();
    if !lost.is_empty() {
        faults.push(format!("tokens lost: {lost:?}"));
    }
    if !twice.is_empty() {
        faults.push(format!("tokens counted twice: {twice:?}"));
    }
    let held: Vec<usize> = (0..p.tokens)
        .filter(|t| sh.holders[*t].load(Ordering::Acquire) != 0)
        .collect();
    if !held.is_empty() {
        faults.push(format!(
            "tokens still held after every thread ended: {held:?}"
        ));
    }
    let hops: u64 = sh.hops.iter().map(|h| h.load(Ordering::Relaxed)).sum();
    let handoffs = sh.handoffs.load(Ordering::Relaxed);
    if hops != handoffs {
        faults.push(format!("{hops} hops against {handoffs} hand-offs"));
    }
    let early = tally.early.load(Ordering::Relaxed);
    if early > 0 {
        faults.push(format!("{early} timed waits or sleeps ended early"));
    }
    if vcores_held != 0 {
        faults.push(format!(
            "{vcores_held} virtual cores held after every thread ended"
        ));
    }
    if tally.broken.load(Ordering::Relaxed) > 0 {
        let f = lock(&tally.faults);
        faults.push(format!("broken: {}", f.join("; ")));
    }
    if faults.is_empty() {
        Ok(())
    } else {
        Err(faults.join("\n"))
    }
}
