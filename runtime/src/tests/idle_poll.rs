//! The idle-poll rules (docs/design.md section 4): which sleeps are idle polls, by mode, switch,
//! role, length and what came before; when one is promoted; that none ends early; that host
//! and serial threads are never relaxed. Then the same through a running runtime.

use crate::context;
use crate::policy::{
    idle_step, polled, promotions, IdlePoll, IdleStep, Marked, Policy, Polled, Waiter,
    SHORT_SLEEP_NS,
};
use crate::poll;
use crate::pollers::PollSite;
use crate::runtime::Runtime;
use crate::thread::{Activity, ThreadRecord};
use crate::{sys, Builder, Calibration, SleepPath};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::common::{guest, resolve, spawn_guest, spawn_guest_on};
use super::vcore_runtime::until;

fn policy(vars: &[(&str, &str)]) -> Policy {
    let config = resolve(vars).unwrap_or_else(|e| panic!("{vars:?}: {e}"));
    Policy::new(&config, Some(8))
}

const ROLES: [Waiter; 3] = [Waiter::Serial, Waiter::Worker, Waiter::Host];
const LENGTHS: [u64; 5] = [1, 20_000, SHORT_SLEEP_NS - 1, SHORT_SLEEP_NS, u64::MAX];
const POLLED: [Polled; 7] = [
    Polled::Objects,
    Polled::Words,
    Polled::Nothing,
    Polled::Quiet(0),
    Polled::Quiet(1),
    Polled::Quiet(3),
    Polled::Quiet(u32::MAX),
];

/// (switches, whether the idle-poll rule is on, stretch us, coalesced, blind threshold).
type Row = (
    &'static [(&'static str, &'static str)],
    bool,
    u64,
    bool,
    u32,
);

const SWITCHES: [Row; 12] = [
    (&[], true, 1000, false, 0),
    (&[("HOS_SHORT_SLEEP", "reactor")], true, 1000, false, 0),
    (&[("HOS_SHORT_SLEEP", "timer")], false, 0, false, 0),
    (&[("HOS_SHORT_SLEEP", "yield")], false, 0, false, 0),
    (&[("HOS_SHORT_SLEEP", "auto")], false, 0, false, 0),
    (&[("HOS_SHORT_SLEEP_TIMER", "1")], false, 0, false, 0),
    (&[("HOS_SHORT_SLEEP_TIMER", "0")], false, 0, false, 0),
    (&[("HOS_IDLE_POLL", "off")], false, 0, false, 0),
    (&[("HOS_IDLE_POLL_STRETCH_US", "0")], true, 0, false, 0),
    (&[("HOS_IDLE_POLL_COALESCE", "1")], true, 1000, true, 0),
    (&[("HOS_IDLE_POLL_BLIND", "3")], true, 1000, false, 3),
    (
        &[("HOS_IDLE_POLL_BLIND", "1"), ("HOS_IDLE_POLL", "0")],
        false,
        0,
        false,
        1,
    ),
];

#[test]
fn which_sleeps_are_idle_polls() {
    let mut rows = 0;
    for (vars, on, stretch_us, coalesce, blind) in SWITCHES {
        let p = policy(vars);
        for role in ROLES {
            for ns in LENGTHS {
                for polled in POLLED {
                    let eligible = on && role == Waiter::Worker && ns < SHORT_SLEEP_NS;
                    let want = match polled {
                        _ if !eligible => None,
                        Polled::Objects => Some(IdlePoll {
                            stretch_ns: stretch_us * 1000,
                            coalesce,
                        }),
                        // A guest word can be readied unseen: never stretched.
                        Polled::Words => Some(IdlePoll {
                            stretch_ns: 0,
                            coalesce: false,
                        }),
                        Polled::Quiet(n) if blind > 0 && n >= blind => Some(IdlePoll {
                            stretch_ns: 0,
                            coalesce: false,
                        }),
                        Polled::Quiet(_) | Polled::Nothing => None,
                    };
                    let what = format!("{vars:?} {role:?} {ns} ns after {polled:?}");
                    assert_eq!(p.idle_poll(role, ns, polled), want, "{what}");
                    rows += 1;
                }
            }
        }
    }
    assert_eq!(rows, 12 * 3 * 5 * 7);
}

#[test]
fn which_sleeps_count_as_polls() {
    // (lists polled empty, one a word, overflow, calls since the last sleep, short, quiet
    // run before) -> (what the sleep follows, quiet run after).
    type Case = ((usize, bool, bool, u64, bool, u32), (Polled, u32));
    let cases: [Case; 14] = [
        // A poll that found nothing, then the sleep: whatever the calls and length.
        ((1, false, false, 1, true, 0), (Polled::Objects, 0)),
        ((3, false, false, 9, true, 5), (Polled::Objects, 0)),
        ((1, false, false, 1, false, 2), (Polled::Objects, 0)),
        // One of them a guest word.
        ((1, true, false, 1, true, 0), (Polled::Words, 0)),
        ((4, true, false, 2, true, 7), (Polled::Words, 0)),
        // More than one sleep links: nothing.
        ((0, false, true, 1, true, 3), (Polled::Nothing, 0)),
        ((64, true, true, 1, true, 3), (Polled::Nothing, 0)),
        // No poll: a short sleep with at most its own svc since the last one extends the run.
        ((0, false, false, 0, true, 0), (Polled::Quiet(1), 1)),
        ((0, false, false, 1, true, 0), (Polled::Quiet(1), 1)),
        ((0, false, false, 1, true, 3), (Polled::Quiet(4), 4)),
        (
            (0, false, false, 1, true, u32::MAX),
            (Polled::Quiet(u32::MAX), u32::MAX),
        ),
        // Another call between, or a long sleep, breaks it.
        ((0, false, false, 2, true, 3), (Polled::Quiet(0), 0)),
        ((0, false, false, 1, false, 3), (Polled::Quiet(0), 0)),
        ((0, false, false, u64::MAX, true, 3), (Polled::Quiet(0), 0)),
    ];
    for ((lists, words, overflow, calls, short, quiet), want) in cases {
        let marked = Marked {
            lists,
            words,
            overflow,
            calls,
        };
        assert_eq!(
            polled(marked, short, quiet),
            want,
            "{marked:?} short {short} quiet {quiet}"
        );
    }
}

#[test]
fn a_readiness_promotes_only_what_no_blocked_waiter_took() {
    // (told, woken by it) -> pollers promoted.
    for (told, woken, want) in [
        (1, 0, 1),
        (1, 1, 0),
        (3, 1, 2),
        (3, 3, 0),
        (0, 0, 0),
        (usize::MAX, 5, usize::MAX - 5),
        (2, 5, 0),
    ] {
        assert_eq!(promotions(told, woken), want, "told {told}, woken {woken}");
    }
}

#[test]
fn host_and_serial_sleeps_are_never_relaxed() {
    for (vars, ..) in SWITCHES {
        let p = policy(vars);
        for role in [Waiter::Serial, Waiter::Host] {
            for ns in LENGTHS {
                for polled in POLLED {
                    assert_eq!(p.idle_poll(role, ns, polled), None, "{vars:?} {role:?}");
                }
            }
        }
    }
}

/// Times around a deadline of 1000 and a wake time of 3000.
const TIMES: [u64; 7] = [0, 999, 1000, 1001, 2999, 3000, u64::MAX];

#[test]
fn the_step_is_never_early_and_a_promotion_ends_or_goes_precise() {
    let (deadline, wake_at) = (1000, 3000);
    for now in TIMES {
        for promoted in [false, true] {
            for shut in [false, true] {
                let step = idle_step(now, deadline, wake_at, promoted, shut);
                let want = match (shut, promoted, now >= deadline, now >= wake_at) {
                    (true, ..) => IdleStep::End,
                    (false, true, false, _) => IdleStep::Precise,
                    (false, true, true, _) => IdleStep::End,
                    (false, false, _, true) => IdleStep::End,
                    (false, false, _, false) => IdleStep::Park,
                };
                assert_eq!(step, want, "now {now} promoted {promoted} shut {shut}");
                if step == IdleStep::End && !shut {
                    assert!(now >= deadline, "ended {} ns early", deadline - now);
                }
            }
        }
    }
    // A wake time before the deadline (never made, but the rule holds): not before it.
    assert_eq!(idle_step(500, 1000, 100, false, false), IdleStep::Park);
}

#[test]
fn wake_times_are_never_before_the_deadline() {
    let plain = |stretch_ns| IdlePoll {
        stretch_ns,
        coalesce: false,
    };
    let ticks = |stretch_ns| IdlePoll {
        stretch_ns,
        coalesce: true,
    };
    assert_eq!(plain(0).wake_at(12_345), 12_345);
    assert_eq!(ticks(0).wake_at(12_345), 12_345);
    assert_eq!(plain(1000).wake_at(12_345), 13_345);
    assert_eq!(ticks(1000).wake_at(12_345), 13_000);
    assert_eq!(ticks(1000).wake_at(13_000), 13_000, "on a tick: that tick");
    assert_eq!(plain(1000).wake_at(u64::MAX - 1), u64::MAX);
    assert_eq!(ticks(1000).wake_at(u64::MAX - 1), u64::MAX);
    assert!(!plain(1000).on_ticks() && !ticks(0).on_ticks() && ticks(1).on_ticks());
    for d in [1, 999, 1000, 1001, 7_777_777] {
        for t in [plain(1), plain(1000), ticks(1), ticks(3), ticks(1000)] {
            let w = t.wake_at(d);
            assert!(w >= d && w - d <= t.stretch_ns, "{t:?} {d} -> {w}");
        }
    }
}

fn runtime(vars: &[(&str, &str)]) -> Runtime {
    super::common::with_env(vars)
        .calibration(Calibration::default())
        .vcores_enabled(false)
        .build()
        .expect("valid switches")
}

/// A sleep of `ns` after a poll of `site` that found nothing; returns how late it ended.
fn poll_then_sleep(site: &Arc<PollSite>, ns: u64) -> u64 {
    poll::missed(site);
    let deadline = sys::now() + ns;
    crate::sleep::sleep_current(ns);
    let now = sys::now();
    assert!(
        now >= deadline,
        "an idle poll ended {} ns early",
        deadline - now
    );
    now - deadline
}

#[test]
fn a_poll_then_a_short_sleep_is_an_idle_poll_of_other_threads_only() {
    let rt = runtime(&[("HOS_IDLE_POLL_STRETCH_US", "100")]);
    let site = Arc::new(PollSite::new());
    for name in ["ModuleSystemWorker0", "MainThread"] {
        let s = site.clone();
        guest(&rt, name, move || {
            poll_then_sleep(&s, 20_000);
            // No poll before it: an ordinary sleep.
            crate::sleep::sleep_current(20_000);
            // A wait between the poll and the sleep: no idle poll either.
            poll::missed(&s);
            context::block_on(std::future::ready(()), crate::block_on::Wait::sleep());
            crate::sleep::sleep_current(20_000);
            // A poll that found something, after one that did not: neither.
            poll::missed(&s);
            poll::clear();
            crate::sleep::sleep_current(20_000);
            // A long sleep after a poll: no idle poll.
            poll::missed(&s);
            crate::sleep::sleep_current(SHORT_SLEEP_NS);
        });
    }
    // A host thread's poll makes its sleep no idle poll.
    poll::missed(&site);
    crate::sleep::host_sleep(&rt, Duration::from_micros(20));
    let s = rt.stats();
    assert_eq!(s.idle_polls, 1, "only the worker's first sleep");
    assert_eq!(s.path(SleepPath::IdlePoll).count, 1);
    assert_eq!((s.idle_relaxed, s.idle_promoted), (1, 0));
    assert_eq!(site.linked(), 0, "the sleeper unlinked itself");
    rt.shutdown();
}

#[test]
fn a_guest_word_poll_ends_at_its_deadline_not_stretched() {
    // Stretched by a second for hos objects: a sleep that also polled a guest word (which a
    // plain store readies unseen) must not last that long.
    let rt = runtime(&[("HOS_IDLE_POLL_STRETCH_US", "1000000")]);
    let (object, word) = (Arc::new(PollSite::new()), Arc::new(PollSite::word()));
    let late = guest(&rt, "ModuleSystemWorker0", move || {
        poll::missed(&object);
        poll_then_sleep(&word, 20_000)
    });
    assert!(late < 500_000_000, "stretched: {late} ns late");
    let s = rt.stats();
    assert_eq!((s.idle_polls, s.idle_relaxed, s.idle_promoted), (1, 1, 0));
    rt.shutdown();
}

/// Waits until a sleeper is linked to `site` (10 s at most: then the caller's next step fails).
fn until_linked(site: &PollSite) {
    let limit = Instant::now() + Duration::from_secs(10);
    while site.linked() == 0 && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Readies `site` once its sleeper is linked, and promotes that one, as a caller of priority
/// `by` (`PollSite::promote`).
fn promote_when_linked(site: &PollSite, by: Option<u8>) {
    until_linked(site);
    assert!(site.ready(1), "the sleeper linked itself");
    assert_eq!(site.promote(1, by), 1);
}

#[test]
fn a_ready_object_promotes_its_sleeping_poller() {
    // Stretched by a second: without the promotion the sleep would last that long.
    let rt = runtime(&[("HOS_IDLE_POLL_STRETCH_US", "1000000")]);
    let site = Arc::new(PollSite::new());
    let s = site.clone();
    let r = rt.clone();
    let promoter = std::thread::spawn(move || {
        promote_when_linked(&s, None);
        r.stats()
    });
    let s = site.clone();
    let slept = guest(&rt, "ModuleSystemWorker0", move || {
        let t = Instant::now();
        poll_then_sleep(&s, 20_000);
        t.elapsed()
    });
    promoter.join().expect("promoter");
    assert!(slept < Duration::from_millis(500), "slept {slept:?}");
    let stats = rt.stats();
    assert_eq!((stats.idle_polls, stats.idle_promoted), (1, 1));
    assert_eq!(stats.idle_relaxed, 0);
    assert_eq!(site.linked(), 0);
    rt.shutdown();
}

#[test]
fn blind_pollers_are_relaxed_after_quiet_sleeps_only_when_asked() {
    for (blind, want) in [("0", 0), ("3", 2)] {
        let rt = runtime(&[("HOS_IDLE_POLL_BLIND", blind)]);
        guest(&rt, "ModuleSystemWorker0", move || {
            for _ in 0..4 {
                crate::sleep::sleep_current(20_000);
            }
            // A call between sleeps breaks the run.
            crate::poll::note_call();
            crate::poll::note_call();
            crate::sleep::sleep_current(20_000);
        });
        let s = rt.stats();
        assert_eq!(s.idle_polls, want, "blind {blind}");
        assert_eq!(s.idle_relaxed, want, "blind {blind}");
        rt.shutdown();
    }
}

#[test]
fn shutdown_ends_an_idle_poll() {
    let rt = runtime(&[("HOS_IDLE_POLL_STRETCH_US", "1000000")]);
    let site = Arc::new(PollSite::new());
    let (s, r) = (site.clone(), rt.clone());
    let stopper = std::thread::spawn(move || {
        until_linked(&s);
        r.shutdown();
    });
    let s = site.clone();
    let slept = guest(&rt, "ModuleSystemWorker0", move || {
        let t = Instant::now();
        poll::missed(&s);
        crate::sleep::sleep_current(SHORT_SLEEP_NS - 1);
        t.elapsed()
    });
    stopper.join().expect("stopper");
    assert!(slept < Duration::from_millis(500), "slept {slept:?}");
    assert_eq!(site.linked(), 0);
    let s = rt.stats();
    assert_eq!(
        (s.idle_polls, s.idle_relaxed, s.idle_promoted),
        (1, 0, 0),
        "a sleep that shutdown ended is neither relaxed nor promoted"
    );
}

#[test]
fn coalesced_wakes_are_counted() {
    let rt = Builder::<Runtime>::new()
        .calibration(Calibration::default())
        .vcores_enabled(false)
        .idle_poll_coalesce(true)
        .idle_poll_stretch_us(2000)
        .build()
        .unwrap();
    let site = Arc::new(PollSite::new());
    let workers: Vec<_> = (0..3)
        .map(|i| {
            let s = site.clone();
            spawn_guest_on(&rt, &format!("ModuleSystemWorker{i}"), 44, 1, move || {
                for _ in 0..20 {
                    poll_then_sleep(&s, 20_000);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let s = rt.stats();
    assert_eq!((s.idle_polls, s.idle_relaxed), (60, 60));
    assert!(
        s.idle_coalesced > 0,
        "three pollers on 2 ms ticks never shared one"
    );
    assert!(
        s.idle_coalesced < s.idle_relaxed,
        "the first wake on a tick shares it with nobody"
    );
    rt.shutdown();
}

/// How the promoter ends after its promotion, in `promotions_of_worse_pollers_wait_for_the_core`.
#[derive(Clone, Copy, Debug)]
enum Then {
    /// It gives its core up: an hos sleep.
    Sleeps,
    /// It offers its core: a yield (svcSleepThread(0)'s).
    Yields,
    /// Its thread ends, no wait made.
    Exits,
}

#[test]
fn promotions_of_worse_pollers_wait_for_the_promoter_to_give_its_core_up() {
    // (HOS_IDLE_POLL_DEFER, the promoter's priority, deferred?) against a poller at 45,
    // stretched by a second: only a promotion ends its sleep sooner.
    let rows = [
        ("1", 44, true),
        ("1", 45, false),
        ("1", 46, false),
        ("0", 44, false),
    ];
    for (defer, priority, deferred) in rows {
        for then in [Then::Sleeps, Then::Yields, Then::Exits] {
            let rt = runtime(&[
                ("HOS_IDLE_POLL_STRETCH_US", "1000000"),
                ("HOS_IDLE_POLL_DEFER", defer),
            ]);
            let case = format!("defer {defer}, promoter at {priority}, {then:?}");
            let site = Arc::new(PollSite::new());
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (s, d) = (site.clone(), done.clone());
            let poller = spawn_guest(&rt, "ModuleSystemWorker0", 45, move || {
                poll_then_sleep(&s, 20_000);
                d.store(true, std::sync::atomic::Ordering::SeqCst);
                Instant::now()
            });
            let (s, d) = (site.clone(), done.clone());
            let promoter = spawn_guest(&rt, "Promoter", priority, move || {
                promote_when_linked(&s, context::with_current(|c| c.promoter()));
                // A deferred promotion waits while the promoter keeps its core (a host sleep
                // gives nothing up); one made at once has ended the poll meanwhile.
                std::thread::sleep(Duration::from_millis(100));
                let woke_meanwhile = d.load(std::sync::atomic::Ordering::SeqCst);
                let released = match then {
                    Then::Sleeps | Then::Yields => {
                        if let Then::Sleeps = then {
                            crate::sleep::sleep_current(20_000);
                        } else {
                            context::with_guest(|rt, t| {
                                rt.yield_core(t, crate::vcore::YieldKind::Any)
                            });
                        }
                        let released = Instant::now();
                        // Ends well after: the sleep or the yield, not the end, must have
                        // promoted.
                        std::thread::sleep(Duration::from_millis(400));
                        released
                    }
                    Then::Exits => Instant::now(),
                };
                (woke_meanwhile, released)
            });
            let (woke_meanwhile, released) = promoter.join().expect("promoter");
            let woke = poller.join().expect("poller");
            assert_eq!(woke_meanwhile, !deferred, "{case}: woken within 100 ms");
            assert!(
                woke < released + Duration::from_millis(250),
                "{case}: slept on {:?} after its promoter let it",
                woke.saturating_duration_since(released)
            );
            let stats = rt.stats();
            assert_eq!((stats.idle_polls, stats.idle_promoted), (1, 1), "{case}");
            assert_eq!(stats.idle_deferred, u64::from(deferred), "{case}");
            rt.shutdown();
        }
    }
}

#[test]
fn a_kicked_promoter_promotes_when_it_waits_for_a_core_not_when_it_moves() {
    // Core 0 only: the kicked promoter waits for it, which wakes the poller; cores 0 and 1:
    // it moves to core 1 and runs on, and the promotion waits for its end.
    for (promoter_mask, waits) in [(0b01, true), (0b11, false)] {
        kicked_promoter(promoter_mask, waits);
    }
}

/// A promoter (44, `promoter_mask`) holding core 0 defers a poller's (45, core 1)
/// promotion, runs guest code for 800 ms, and is kicked off core 0 by a better thread (40)
/// 100 ms in, who holds it 100 ms: the poller wakes within 400 ms of the kick if `waits`,
/// else after.
fn kicked_promoter(promoter_mask: u64, waits: bool) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let rt = crate::Builder::<Runtime>::new()
        .calibration(Calibration::default())
        .vcores(2)
        .idle_poll_stretch_us(1_000_000)
        .build()
        .expect("two virtual cores");
    let site = Arc::new(PollSite::new());
    let (promoted, woke) = (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(None)));
    let (s, w) = (site.clone(), woke.clone());
    let poller = spawn_guest_on(&rt, "ModuleSystemWorker0", 45, 0b10, move || {
        poll_then_sleep(&s, 20_000);
        *w.lock().unwrap() = Some(Instant::now());
    });
    let (s, p) = (site.clone(), promoted.clone());
    let promoter = spawn_guest_on(&rt, "Promoter", 44, promoter_mask, move || {
        context::with_guest(|rt, t| rt.acquire_core(t));
        promote_when_linked(&s, context::with_current(|c| c.promoter()));
        // SeqCst: a test's flag.
        p.store(true, Ordering::SeqCst);
        // Guest code that passes checkpoints and makes no wait, long after the kick.
        let until = Instant::now() + Duration::from_millis(800);
        while Instant::now() < until {
            context::checkpoint();
            std::thread::sleep(Duration::from_millis(1));
        }
        context::with_guest(|rt, t| rt.release_core(t));
    });
    let limit = Instant::now() + Duration::from_secs(10);
    while !promoted.load(Ordering::SeqCst) && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert!(woke.lock().unwrap().is_none(), "woken before the kick");
    let kicked = Instant::now();
    let kicker = spawn_guest_on(&rt, "Kicker", 40, 0b01, || {
        context::with_guest(|rt, t| rt.acquire_core(t));
        // Held a while, so that a promoter that needs core 0 back waits for it.
        std::thread::sleep(Duration::from_millis(100));
        context::with_guest(|rt, t| rt.release_core(t));
    });
    kicker.join().expect("kicker");
    poller.join().expect("poller");
    let woke = woke.lock().unwrap().expect("the poller woke");
    let after = woke - kicked;
    assert_eq!(
        after < Duration::from_millis(400),
        waits,
        "mask {promoter_mask:#b}: woke {after:?} after the kick"
    );
    promoter.join().expect("promoter");
    assert_eq!(rt.stats().idle_deferred, 1);
    rt.shutdown();
}

/// A runtime of one virtual core, wake claims on or off, no escape within a test, idle polls
/// stretched by a second (unpromoted, a 20 us one lasts that long).
fn one_core(claims: bool) -> Runtime {
    crate::Builder::<Runtime>::new()
        .calibration(Calibration::default())
        .vcores(1)
        .vcore_claim(claims)
        .vcore_escape_ms(60_000)
        .idle_poll_stretch_us(1_000_000)
        .build()
        .expect("one virtual core")
}

/// A job worker (45) that takes the core, then idle-polls a site of its own with a 20 us
/// sleep, giving the core back for it: its site, its record and its thread, once it is linked
/// to the site.
fn poller_on_its_core(
    rt: &Runtime,
) -> (
    Arc<PollSite>,
    Arc<ThreadRecord>,
    std::thread::JoinHandle<()>,
) {
    let site = Arc::new(PollSite::new());
    let s = site.clone();
    let poller = spawn_guest(rt, "ModuleSystemWorker0", 45, move || {
        context::with_guest(|rt, t| rt.acquire_core(t));
        poll_then_sleep(&s, 20_000);
        context::with_guest(|rt, t| rt.release_core(t));
    });
    until_linked(&site);
    let rec = rt
        .threads()
        .into_iter()
        .find(|t| &*t.name() == "ModuleSystemWorker0")
        .expect("the poller's record");
    (site, rec, poller)
}

/// A promotion claims the poller's core (`Wait::idle_poll`): with none free (a better holder
/// keeps the only one), the poller stays parked in its sleep until the holder hands the core
/// over, one wake where a promotion that woke it sent it to queue for the core; with wake
/// claims off, it queues.
#[test]
fn a_poller_promoted_behind_a_better_holder_is_woken_by_the_hand_off() {
    use std::sync::atomic::{AtomicBool, Ordering};
    for claims in [true, false] {
        let rt = one_core(claims);
        let (site, rec, poller) = poller_on_its_core(&rt);
        let (release, held) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (r, h) = (release.clone(), held.clone());
        let holder = spawn_guest(&rt, "Holder", 44, move || {
            context::with_guest(|rt, t| rt.acquire_core(t));
            // SeqCst, both flags: a test's.
            h.store(true, Ordering::SeqCst);
            while !r.load(Ordering::SeqCst) {
                context::checkpoint();
                std::thread::sleep(Duration::from_millis(1));
            }
            context::with_guest(|rt, t| rt.release_core(t));
        });
        until(|| u64::from(held.load(Ordering::SeqCst)), 1);
        // A host thread's promotion is made at once (never deferred).
        assert!(site.ready(1), "the poller is linked");
        assert_eq!(site.promote(1, None), 1);
        std::thread::sleep(Duration::from_millis(100));
        let activity = rec.activity();
        let Activity::Waiting { on, .. } = activity else {
            panic!("claims {claims}: the poller is {activity:?}");
        };
        let want = if claims { "sleep" } else { "virtual core" };
        assert_eq!(on, want, "claims {claims}: where the promoted poller waits");
        release.store(true, Ordering::SeqCst);
        holder.join().expect("holder");
        poller.join().expect("poller");
        let stats = rt.stats();
        assert_eq!(
            (stats.idle_polls, stats.idle_promoted),
            (1, 1),
            "claims {claims}"
        );
        rt.shutdown();
    }
}

/// A wake that does not end an idle poll (an unpark left from an earlier wait) claims the
/// poller's core all the same; the poller gives that claim back before it parks again, so
/// the core it never ran on is free for the next thread, not held for the rest of the sleep.
#[test]
fn a_wake_that_does_not_promote_leaves_no_claim_behind() {
    let rt = one_core(true);
    let (site, rec, poller) = poller_on_its_core(&rt);
    // Its wake hook claims the free core for it; nothing promoted it, so it parks again.
    rec.unpark();
    std::thread::sleep(Duration::from_millis(50));
    let took = spawn_guest(&rt, "Other", 45, || {
        let t = Instant::now();
        context::with_guest(|rt, t| rt.acquire_core(t));
        context::with_guest(|rt, t| rt.release_core(t));
        t.elapsed()
    })
    .join()
    .expect("other");
    assert!(
        took < Duration::from_millis(500),
        "the core was held {took:?}"
    );
    assert!(site.ready(1), "the poller is still linked");
    assert_eq!(site.promote(1, None), 1);
    poller.join().expect("poller");
    rt.shutdown();
}
