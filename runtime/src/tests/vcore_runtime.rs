//! The locked semaphore around the table, with real threads: seats, the checkpoint's and the
//! yield's fast paths, waits and their counters, escape, re-ranking, shutdown. Bounded by the
//! escape time where a bug would hang; no timing asserts.

use super::common::newer;
use crate::config::Config;
use crate::policy::Spin;
use crate::role::Role;
use crate::stats::Counters;
use crate::thread::{ThreadRecord, ThreadSpec};
use crate::vcore::{Occupant, Vcores, YieldKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub(super) struct Rig {
    pub(super) v: Arc<Vcores>,
    pub(super) stats: Arc<Counters>,
}

pub(super) fn rig(cores: usize, slice_us: u64, escape_ms: u64) -> Rig {
    rig_of(&Config {
        cores,
        vcore_slice_us: slice_us,
        vcore_escape_ms: escape_ms,
        // The semaphore's exact rules: a kicked holder keeps its core until its checkpoint,
        // however late (the grace, on by default, has its own tests in vcore_grace.rs).
        vcore_grace_us: 0,
        ..Config::default()
    })
}

/// The semaphore of `config`, with fresh counters.
pub(super) fn rig_of(config: &Config) -> Rig {
    let stats = Arc::new(Counters::default());
    Rig {
        v: Arc::new(Vcores::new(config, stats.clone())),
        stats,
    }
}

pub(super) fn thread(id: u64, priority: u8, mask: u64, first: bool) -> Arc<ThreadRecord> {
    let spec = ThreadSpec {
        name: format!("T{id}"),
        priority,
        core_mask: mask,
        ideal_core: mask.trailing_zeros() as i32,
        role: Role::Auto,
    };
    Arc::new(ThreadRecord::new(id, &spec, false, first))
}

impl Rig {
    /// Spawns a thread that acquires for `t`, records it ran, runs `body`, releases.
    fn spawn(
        &self,
        t: &Arc<ThreadRecord>,
        body: impl FnOnce(&Vcores, &Arc<ThreadRecord>) + Send + 'static,
    ) -> (JoinHandle<()>, Arc<AtomicBool>) {
        let ran = Arc::new(AtomicBool::new(false));
        let (v, t, r) = (self.v.clone(), t.clone(), ran.clone());
        let h = std::thread::spawn(move || {
            v.acquire(&*t, Spin::without_runtime());
            r.store(true, Ordering::SeqCst);
            body(&v, &t);
            v.release(&*t);
        });
        (h, ran)
    }

    /// Ends a test that must not escape: a lost wake makes the waiter escape (after the rig's
    /// escape time, at most 5 s here), which fails here instead of passing late.
    fn no_escape(&self) {
        assert_eq!(
            self.stats.snapshot().vcore_escapes,
            0,
            "a wait ended by escape"
        );
    }

    /// Waits until `n` waits have begun.
    fn until_waits(&self, n: u64) {
        until(|| self.stats.snapshot().vcore_waits, n);
    }
}

/// Waits until `read` gives `n` or more (counters are bumped after the lock is dropped); a
/// counter that never gets there fails the test instead of hanging it.
pub(super) fn until(read: impl Fn() -> u64, n: u64) {
    let start = std::time::Instant::now();
    while read() < n {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "counter stuck at {} < {n}",
            read()
        );
        std::thread::yield_now();
    }
}

#[test]
fn seats_follow_acquire_and_release() {
    let r = rig(2, 2_000, 5_000);
    let t = thread(1, 44, 0b10, false);
    assert!(!r.v.release(&*t), "held nothing");
    r.v.acquire(&*t, Spin::without_runtime());
    assert_eq!(t.seat().slot(), Some(1), "its mask's only core");
    assert!(t.seat().holds() && !t.seat().is_escaped());
    r.v.checkpoint(&*t, Spin::without_runtime());
    assert!(
        !r.v.yield_core(&*t, YieldKind::Any, Spin::without_runtime())
            .handed,
        "nobody to hand it to"
    );
    assert!(r.v.release(&*t));
    assert_eq!(t.seat().slot(), None);
    assert!(!t.seat().holds());
    assert!(!r.v.release(&*t));
    assert!(
        !r.v.yield_core(&*t, YieldKind::SamePriority, Spin::without_runtime())
            .handed,
        "holds none"
    );
    assert_eq!(r.stats.snapshot().vcore_waits, 0);
    assert_eq!(t.vcore_wait_ns(), 0);
    r.no_escape();
}

#[test]
fn with_the_semaphore_off_every_call_returns_at_once() {
    let stats = Arc::new(Counters::default());
    let config = Config {
        vcores: false,
        cores: 1,
        ..Config::default()
    };
    let v = Vcores::new(&config, stats.clone());
    let (a, b) = (thread(1, 44, 1, false), thread(2, 44, 1, false));
    v.acquire(&*a, Spin::without_runtime());
    v.acquire(&*b, Spin::without_runtime());
    assert_eq!(a.seat().slot(), None);
    v.checkpoint(&*a, Spin::without_runtime());
    assert!(
        !v.yield_core(&*a, YieldKind::Any, Spin::without_runtime())
            .handed
    );
    a.set_priority(10);
    v.refresh(&*a);
    assert_eq!(a.priority(), 10);
    a.set_affinity(0, 1);
    v.refresh(&*a);
    v.refresh(&*a);
    assert!(!v.release(&*a));
    v.shutdown();
    assert_eq!(stats.snapshot().vcore_waits, 0);
}

#[test]
fn a_kicked_holder_gives_up_at_its_checkpoint_and_comes_back() {
    let r = rig(1, 60_000_000, 5_000);
    let holder = thread(1, 44, 1, false);
    r.v.acquire(&*holder, Spin::without_runtime());
    let better = thread(2, 10, 1, false);
    let (h, ran) = r.spawn(&better, |_, _| {});
    until(|| r.stats.snapshot().vcore_kicks_priority, 1);
    assert_eq!(r.stats.snapshot().vcore_waits, 1);
    assert!(!ran.load(Ordering::SeqCst));
    r.v.checkpoint(&*holder, Spin::without_runtime());
    assert!(
        ran.load(Ordering::SeqCst),
        "the better thread ran in between"
    );
    assert_eq!(holder.seat().slot(), Some(0));
    h.join().unwrap();
    assert!(holder.vcore_wait_ns() > 0, "the holder waited to come back");
    assert!(better.vcore_wait_ns() > 0);
    assert_eq!(r.stats.snapshot().vcore_waits, 2);
    assert!(r.v.release(&*holder));
    r.no_escape();
}

#[test]
fn a_worse_waiter_is_no_reason_to_stop() {
    let r = rig(1, 1, 5_000);
    let holder = thread(1, 10, 1, false);
    r.v.acquire(&*holder, Spin::without_runtime());
    let worse = thread(2, 44, 1, false);
    let (h, ran) = r.spawn(&worse, |_, _| {});
    r.until_waits(1);
    for _ in 0..100 {
        r.v.checkpoint(&*holder, Spin::without_runtime());
    }
    assert!(
        !r.v.yield_core(&*holder, YieldKind::SamePriority, Spin::without_runtime())
            .handed
    );
    assert!(
        !r.v.yield_core(&*holder, YieldKind::Migrate, Spin::without_runtime())
            .handed
    );
    assert!(
        !ran.load(Ordering::SeqCst),
        "no kick, no turn for a worse waiter"
    );
    assert_eq!(r.stats.snapshot().vcore_kicks_slice, 0);
    // -2 hands the core to any waiter; the yielder waits by its rank and kicks it back.
    assert!(
        r.v.yield_core(&*holder, YieldKind::Any, Spin::without_runtime())
            .handed
    );
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(holder.seat().slot(), Some(0));
    h.join().unwrap();
    r.v.release(&*holder);
    r.no_escape();
}

#[test]
fn an_equal_waiter_gets_a_turn_after_the_slice_or_at_a_yield() {
    // A 1 us slice: over by the next checkpoint.
    let r = rig(1, 1, 5_000);
    let holder = thread(1, 44, 1, false);
    r.v.acquire(&*holder, Spin::without_runtime());
    let equal = thread(2, 44, 1, false);
    let (h, ran) = r.spawn(&equal, |_, _| {});
    r.until_waits(1);
    let start = std::time::Instant::now();
    while r.stats.snapshot().vcore_kicks_slice == 0 {
        assert!(start.elapsed().as_secs() < 10, "no slice turn");
        r.v.checkpoint(&*holder, Spin::without_runtime());
    }
    assert!(ran.load(Ordering::SeqCst));
    h.join().unwrap();
    assert!(r.v.release(&*holder));
    // A yield 0 hands over before any slice.
    let r = rig(1, 60_000_000, 5_000);
    r.v.acquire(&*holder, Spin::without_runtime());
    let (h, ran) = r.spawn(&equal, |_, _| {});
    r.until_waits(1);
    r.v.checkpoint(&*holder, Spin::without_runtime());
    assert!(!ran.load(Ordering::SeqCst), "the slice is far");
    assert!(
        r.v.yield_core(&*holder, YieldKind::SamePriority, Spin::without_runtime())
            .handed
    );
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(holder.seat().slot(), Some(0));
    h.join().unwrap();
    assert_eq!(
        r.stats.snapshot().vcore_kicks_slice,
        0,
        "a yield is no kick"
    );
    r.no_escape();
}

#[test]
fn a_slice_turn_never_comes_before_the_slice() {
    // The slots are stamped on the event clock (the TSC where it serves) and the slice is
    // converted to its ticks: a wrong conversion shows as a turn given early.
    let slice = std::time::Duration::from_millis(20);
    let r = rig(1, slice.as_micros() as u64, 5_000);
    let holder = thread(1, 44, 1, false);
    let before = std::time::Instant::now();
    r.v.acquire(&*holder, Spin::without_runtime());
    let equal = thread(2, 44, 1, false);
    let (h, ran) = r.spawn(&equal, |_, _| {});
    r.until_waits(1);
    while r.stats.snapshot().vcore_kicks_slice == 0 {
        assert!(before.elapsed().as_secs() < 10, "no slice turn");
        r.v.checkpoint(&*holder, Spin::without_runtime());
    }
    // The map's rate is good to a few parts in 10^5: 1 us of 20 ms, well inside this margin.
    let held = before.elapsed();
    assert!(
        held >= slice * 99 / 100,
        "a turn after {held:?} of a {slice:?} slice"
    );
    assert!(ran.load(Ordering::SeqCst));
    h.join().unwrap();
    assert!(r.v.release(&*holder));
    r.no_escape();
}

/// A subscriber that keeps every event's level and fields as a line.
mod logs {
    use std::fmt::Debug;
    use std::sync::Mutex;
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

    struct Capture;

    struct Line(String);

    impl Visit for Line {
        fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
            self.0.push_str(&format!(" {}={:?}", field.name(), value));
        }
    }

    impl Subscriber for Capture {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut line = Line(event.metadata().level().to_string());
            event.record(&mut line);
            LINES.lock().unwrap().push(line.0);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    /// Captures every event of the process from now on; the lines that hold `part`.
    pub(super) fn lines_with(part: &str) -> Vec<String> {
        let _ = tracing::subscriber::set_global_default(Capture);
        let lines = LINES.lock().unwrap();
        lines.iter().filter(|l| l.contains(part)).cloned().collect()
    }
}

#[test]
fn a_waiter_escapes_and_takes_a_free_core_at_a_checkpoint() {
    let r = rig(1, 2_000, 30);
    let hog = thread(10, 44, 1, false);
    r.v.acquire(&*hog, Spin::without_runtime());
    let waiter = thread(20, 44, 1, false);
    let go = Arc::new(AtomicBool::new(false));
    let h = {
        let (v, t, go) = (r.v.clone(), waiter.clone(), go.clone());
        std::thread::spawn(move || {
            let escape = v.acquire(&*t, Spin::without_runtime());
            let escaped = t.seat().is_escaped();
            while !go.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            // The hog left: the escaped thread takes the free core at its checkpoint.
            assert!(v.checkpoint(&*t, Spin::without_runtime()).is_none());
            assert_eq!(t.seat().slot(), Some(0));
            assert!(v.release(&*t));
            (escape, escaped)
        })
    };
    while r.stats.snapshot().vcore_escapes == 0 {
        std::thread::yield_now();
    }
    assert!(r.v.release(&*hog));
    go.store(true, Ordering::SeqCst);
    let (escape, escaped) = h.join().unwrap();
    assert!(escaped);
    assert!(waiter.vcore_wait_ns() >= 30_000_000);
    assert_eq!(r.stats.snapshot().vcore_escapes, 1);
    // The report names each core's holder (by the caller's names) and how long it held.
    let escape = escape.expect("an escape is reported to the caller");
    assert_eq!(escape.escape_ms(), 30);
    let holders = escape.holders(|id| format!("thread {id}"));
    let at = holders
        .find("0: thread 10 (priority 44, held ")
        .expect(&holders)
        + 32;
    let held: f64 = holders[at..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .expect(&holders);
    assert!(
        held >= 0.030,
        "held {held} s when the waiter escaped: {holders}"
    );
}

#[test]
fn an_escaped_thread_keeps_running_while_no_core_is_free() {
    let r = rig(1, 2_000, 1);
    let hog = thread(1, 44, 1, false);
    r.v.acquire(&*hog, Spin::without_runtime());
    let waiter = thread(2, 44, 1, false);
    let (h, _) = r.spawn(&waiter, |v, t| {
        assert!(t.seat().is_escaped());
        v.checkpoint(&**t, Spin::without_runtime());
        assert!(t.seat().is_escaped(), "no free core: keeps running");
        assert!(
            !v.yield_core(&**t, YieldKind::Any, Spin::without_runtime())
                .handed
        );
        assert!(v.release(&**t), "an escaped thread leaves");
        assert!(!t.seat().holds());
        v.acquire(&**t, Spin::without_runtime());
    });
    h.join().unwrap();
    assert_eq!(r.stats.snapshot().vcore_escapes, 2);
    assert!(r.v.release(&*hog));
}

#[test]
fn a_better_priority_set_while_waiting_kicks_and_a_new_mask_moves() {
    let r = rig(2, 60_000_000, 5_000);
    let (a, b) = (thread(1, 44, 0b11, false), thread(2, 44, 0b11, false));
    r.v.acquire(&*a, Spin::without_runtime());
    r.v.acquire(&*b, Spin::without_runtime());
    let w = thread(3, 50, 0b11, false);
    let (h, ran) = r.spawn(&w, |_, _| {});
    r.until_waits(1);
    assert_eq!(r.stats.snapshot().vcore_kicks_priority, 0);
    w.set_priority(20);
    r.v.refresh(&*w);
    assert_eq!(w.priority(), 20);
    assert_eq!(
        r.stats.snapshot().vcore_kicks_priority,
        1,
        "counted before set_priority returns"
    );
    // One of the two holders was kicked; each checkpoints, the kicked one hands over and
    // waits until the better thread is done.
    std::thread::scope(|s| {
        s.spawn(|| r.v.checkpoint(&*a, Spin::without_runtime()));
        s.spawn(|| r.v.checkpoint(&*b, Spin::without_runtime()));
        h.join().unwrap();
    });
    assert!(ran.load(Ordering::SeqCst));
    let waited = [&a, &b].map(|t| t.vcore_wait_ns() > 0);
    assert!(
        waited[0] ^ waited[1],
        "exactly one holder was kicked: {waited:?}"
    );
    // A holder whose mask no longer allows its core moves at its next checkpoint.
    let s = a.seat().slot().unwrap();
    let other = 1 - s;
    if b.seat().slot() == Some(other) {
        r.v.release(&*b);
    }
    a.set_affinity(other as i32, 1 << other);
    r.v.refresh(&*a);
    r.v.checkpoint(&*a, Spin::without_runtime());
    assert_eq!(a.seat().slot(), Some(other));
    assert_eq!(
        r.stats.snapshot().vcore_kicks_priority,
        1,
        "a move is no kick"
    );
    r.no_escape();
}

#[test]
fn shutdown_ends_a_wait_without_a_core() {
    let r = rig(1, 2_000, 5_000);
    let holder = thread(1, 44, 1, false);
    r.v.acquire(&*holder, Spin::without_runtime());
    let w = thread(2, 44, 1, false);
    let held = Arc::new(AtomicBool::new(true));
    let (h, _) = {
        let held = held.clone();
        r.spawn(&w, move |_, t| {
            held.store(t.seat().holds(), Ordering::SeqCst);
        })
    };
    r.until_waits(1);
    r.v.shutdown();
    h.join().unwrap();
    assert!(
        !held.load(Ordering::SeqCst),
        "cancelled: runs without a core"
    );
    let late = thread(3, 44, 1, false);
    r.v.acquire(&*late, Spin::without_runtime());
    assert!(!late.seat().holds(), "later acquires return at once");
    assert!(r.v.release(&*holder));
    r.no_escape();
}

#[test]
fn a_first_thread_ranks_before_equal_waiters() {
    let r = rig(1, 60_000_000, 5_000);
    let holder = thread(1, 44, 1, false);
    r.v.acquire(&*holder, Spin::without_runtime());
    let first = thread(2, 44, 1, true);
    let (h, ran) = r.spawn(&first, |_, _| {});
    until(|| r.stats.snapshot().vcore_kicks_first, 1);
    assert_eq!(
        r.stats.snapshot().vcore_kicks_priority,
        0,
        "a first kick, not a priority one"
    );
    r.v.checkpoint(&*holder, Spin::without_runtime());
    assert!(ran.load(Ordering::SeqCst));
    h.join().unwrap();
    r.v.release(&*holder);
    r.no_escape();
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "acquires a core it holds")]
fn a_second_acquire_is_a_bug() {
    let r = rig(1, 2_000, 5_000);
    let t = thread(1, 44, 1, false);
    r.v.acquire(&*t, Spin::without_runtime());
    r.v.acquire(&*t, Spin::without_runtime());
}

#[test]
fn the_ideal_core_comes_first() {
    let r = rig(3, 2_000, 5_000);
    let spec = |id, ideal| ThreadSpec {
        name: format!("I{id}"),
        priority: 44,
        core_mask: 0b111,
        ideal_core: ideal,
        role: Role::Auto,
    };
    let a = Arc::new(ThreadRecord::new(1, &spec(1, 2), false, false));
    let b = Arc::new(ThreadRecord::new(2, &spec(2, 2), false, false));
    r.v.acquire(&*a, Spin::without_runtime());
    r.v.acquire(&*b, Spin::without_runtime());
    assert_eq!(a.seat().slot(), Some(2), "its ideal core");
    assert_eq!(b.seat().slot(), Some(0), "ideal taken: the lowest free");
    assert!(r.v.release(&*a) && r.v.release(&*b));
}

#[test]
fn a_vcore_wait_spins_then_parks_under_the_runtime_policy() {
    use crate::runtime::Runtime;
    use crate::{context, Calibration};
    let rt = crate::Builder::<Runtime>::new()
        .config(Config {
            cores: 1,
            vcore_escape_ms: 5_000,
            calibration: Some(Calibration::default()),
            ..Config::default()
        })
        .build()
        .expect("a valid config");
    let _newer = newer();
    let spec = |name: &str| ThreadSpec {
        name: name.into(),
        priority: 44,
        core_mask: 1,
        ideal_core: 0,
        role: Role::Auto,
    };
    let holder = rt.register_thread(&spec("Holder"));
    let waiter = rt.register_thread(&spec("Waiter"));
    rt.acquire_core(&holder);
    let h = {
        let rt = rt.clone();
        std::thread::spawn(move || {
            let _guest = context::enter(&rt, waiter.clone());
            rt.acquire_core(&waiter);
            assert_eq!(waiter.seat().slot(), Some(0));
            rt.release_core(&waiter);
        })
    };
    // Parked: its spin ran out first.
    until(|| rt.stats().parks, 1);
    assert!(rt.release_core(&holder));
    h.join().unwrap();
    assert!(
        rt.stats().spins_missed >= 1,
        "the wait spun before it parked"
    );
    assert_eq!(rt.stats().vcore_escapes, 0);
    rt.shutdown();
}

#[test]
fn a_kick_reaches_the_holder_of_any_core() {
    let r = rig(2, 60_000_000, 5_000);
    let good = thread(1, 10, 0b01, false);
    let bad = thread(2, 44, 0b10, false);
    r.v.acquire(&*good, Spin::without_runtime());
    r.v.acquire(&*bad, Spin::without_runtime());
    let w = thread(3, 20, 0b11, false);
    let (h, ran) = r.spawn(&w, |_, _| {});
    until(|| r.stats.snapshot().vcore_kicks_priority, 1);
    r.v.checkpoint(&*good, Spin::without_runtime());
    assert!(
        !ran.load(Ordering::SeqCst),
        "the better holder keeps its core"
    );
    r.v.checkpoint(&*bad, Spin::without_runtime());
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(bad.seat().slot(), Some(1));
    h.join().unwrap();
    assert!(r.v.release(&*good) && r.v.release(&*bad));
    r.no_escape();
}

#[test]
fn the_escape_log_names_holders_from_the_runtime() {
    use crate::runtime::Runtime;
    use crate::{context, Calibration};
    logs::lines_with("");
    let rt = crate::Builder::<Runtime>::new()
        .config(Config {
            cores: 2,
            vcore_escape_ms: 20,
            calibration: Some(Calibration::default()),
            // No flight recorder dump from the escape forced here (tests/trace.rs tests it).
            flight: false,
            ..Config::default()
        })
        .build()
        .expect("a valid config");
    let spec = |name: &str, mask| ThreadSpec {
        name: name.into(),
        priority: 40,
        core_mask: mask,
        ideal_core: 0,
        role: Role::Auto,
    };
    let hog = rt.register_thread(&spec("LogHog", 0b01));
    let late = rt.register_thread(&spec("LogLate", 0b01));
    rt.acquire_core(&hog);
    let h = {
        let rt = rt.clone();
        std::thread::spawn(move || {
            let _guest = context::enter(&rt, late.clone());
            rt.acquire_core(&late);
            assert!(late.seat().is_escaped());
            rt.release_core(&late);
        })
    };
    h.join().unwrap();
    let lines = logs::lines_with("thread=LogLate");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    let at = line
        .find("holders=0: LogHog (priority 40, held ")
        .expect(line)
        + 38;
    let held: f64 = line[at..].split(' ').next().unwrap().parse().expect(line);
    assert!(held >= 0.020 && line.ends_with(" s); 1: free"), "{line}");
    assert!(rt.release_core(&hog));
    rt.shutdown();
}

/// The kick word of `t` now.
pub(super) fn word(t: &ThreadRecord) -> u32 {
    t.seat().kick_word().load(Ordering::Relaxed)
}

#[test]
fn the_kick_word_is_set_by_a_kick_and_cleared_when_the_core_is_given_up() {
    let r = rig(1, 60_000_000, 5_000);
    let holder = thread(1, 44, 1, false);
    let at = holder.seat().kick_word() as *const _;
    assert_eq!(word(&holder), 0, "no core yet");
    r.v.acquire(&*holder, Spin::without_runtime());
    assert_eq!(word(&holder), 0, "nobody waits");
    let better = thread(2, 10, 1, false);
    let (h, ran) = r.spawn(&better, |_, t| {
        assert_eq!(
            word(t),
            0,
            "the kicked holder waits, worse: nothing asked of the new one"
        );
    });
    until(|| r.stats.snapshot().vcore_kicks_priority, 1);
    assert_eq!(word(&holder), 1, "kicked: the word asks for a checkpoint");
    assert!(!ran.load(Ordering::SeqCst));
    r.v.checkpoint(&*holder, Spin::without_runtime());
    assert!(
        ran.load(Ordering::SeqCst),
        "the better thread ran in between"
    );
    h.join().unwrap();
    assert_eq!(word(&holder), 0, "back on its core, nobody waiting");
    assert_eq!(
        holder.seat().kick_word() as *const _,
        at,
        "one word for the thread's life"
    );
    assert!(r.v.release(&*holder));
    assert_eq!(word(&holder), 0);
    r.no_escape();
}

#[test]
fn the_kick_word_asks_for_a_turn_and_a_waiter_granted_a_claimed_core_sees_it() {
    // One core, a 1 us slice: an equal waiter asks the holder for a turn.
    let r = rig(1, 1, 5_000);
    let holder = thread(1, 44, 1, false);
    r.v.acquire(&*holder, Spin::without_runtime());
    let (equal, best) = (thread(2, 44, 1, false), thread(3, 10, 1, false));
    let (he, ran_equal) = r.spawn(&equal, |_, _| {});
    r.until_waits(1);
    assert_eq!(word(&holder), 1, "a turn is asked");
    // A better waiter queues behind: when the holder gives the core up, it goes to the
    // best, and the equal one, still waiting, asks the best for nothing.
    let (hb, ran_best) = r.spawn(&best, |_, t| {
        assert_eq!(word(t), 0, "granted the core with only worse waiters");
    });
    r.until_waits(2);
    assert!(r.v.release(&*holder));
    assert_eq!(word(&holder), 0, "no core, nothing to check");
    hb.join().unwrap();
    he.join().unwrap();
    assert!(ran_best.load(Ordering::SeqCst) && ran_equal.load(Ordering::SeqCst));
    r.no_escape();
}

#[test]
fn an_escaped_thread_has_its_word_set_until_it_takes_a_core() {
    let r = rig(1, 60_000_000, 1);
    let holder = thread(1, 10, 1, false);
    r.v.acquire(&*holder, Spin::without_runtime());
    let waiter = thread(2, 44, 1, false);
    let (tx, rx) = std::sync::mpsc::channel();
    let (v, w) = (r.v.clone(), waiter.clone());
    let h = std::thread::spawn(move || {
        let _ = v.acquire(&*w, Spin::without_runtime()); // escapes after 1 ms: the holder never gives up
        tx.send(word(&w)).unwrap();
        w.seat().is_escaped()
    });
    let escaped_word = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
    assert!(h.join().unwrap(), "it ran by escape");
    assert_eq!(
        escaped_word, 1,
        "an escaped thread's checkpoint looks for a free core"
    );
    assert!(r.v.release(&*holder));
    r.v.checkpoint(&*waiter, Spin::without_runtime());
    assert_eq!(
        waiter.seat().slot(),
        Some(0),
        "took the freed core at its checkpoint"
    );
    assert_eq!(word(&waiter), 0);
    assert!(r.v.release(&*waiter));
}

#[test]
fn a_waiter_granted_a_core_that_another_asks_a_turn_of_finds_its_word_set() {
    // The flag of the core does not change when it passes from the holder to the first of two
    // equal waiters (a turn is asked before and after): the new holder's word is set by its
    // own step, when it learns it holds the core.
    let r = rig(1, 1, 5_000);
    let holder = thread(1, 44, 1, false);
    r.v.acquire(&*holder, Spin::without_runtime());
    let (first, second) = (thread(2, 44, 1, false), thread(3, 44, 1, false));
    let (tx, rx) = std::sync::mpsc::channel();
    let (h1, _) = r.spawn(&first, move |_, t| tx.send(word(t)).unwrap());
    r.until_waits(1);
    let (h2, _) = r.spawn(&second, |_, _| {});
    r.until_waits(2);
    assert!(r.v.release(&*holder));
    let seen = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
    assert_eq!(seen, 1, "granted a core an equal waiter asks a turn of");
    h1.join().unwrap();
    h2.join().unwrap();
    r.no_escape();
}
