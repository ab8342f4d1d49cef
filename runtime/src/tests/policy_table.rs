//! The policy table: every processor count of interest times every way a switch can be written,
//! with the expected short-sleep path by role, poller cap and spin by role (docs/design.md sections
//! 1 to 3 and 9); then the clamp, the spin gate, the poller slots and the decision log.
//! `switches.rs` tests how switches are read: numbers, errors, precedence, the process
//! environment.
//!
//! No test here sets a process variable (unsound while tests run in parallel): switches come
//! through `Builder::env_from`.

use crate::policy::{Policy, SleepRoute, Waiter};
use crate::runtime::Runtime;
use crate::spin_gate::SpinGate;
use crate::{Builder, Calibration, Config, ShortSleep};
use std::panic::{catch_unwind, AssertUnwindSafe};
use SleepRoute::{Precise, Timer, Yield};

use super::common::{alone, resolve, Messages};

fn policy(vars: &[(&str, &str)], processors: Option<usize>) -> Policy {
    let config = resolve(vars).unwrap_or_else(|e| panic!("{vars:?}: {e}"));
    Policy::new(&config, processors)
}

/// What one machine decides with default switches, written out from docs/design.md.
struct Machine {
    processors: Option<usize>,
    /// `auto`'s guest and host paths.
    auto: (SleepRoute, SleepRoute),
    /// The default poller cap where a cap applies.
    cap: usize,
    /// The default spin of other guest threads, in us (serial and host: 20).
    other_us: u64,
}

const fn m(
    processors: Option<usize>,
    auto: (SleepRoute, SleepRoute),
    cap: usize,
    other_us: u64,
) -> Machine {
    Machine {
        processors,
        auto,
        cap,
        other_us,
    }
}

const MACHINES: [Machine; 10] = [
    m(Some(1), (Timer, Yield), 1, 20),
    m(Some(2), (Timer, Yield), 1, 20),
    m(Some(4), (Timer, Yield), 1, 20),
    m(Some(6), (Timer, Yield), 1, 20),
    m(Some(7), (Yield, Yield), 1, 5),
    m(Some(8), (Yield, Yield), 2, 5),
    m(Some(12), (Yield, Yield), 3, 5),
    m(Some(16), (Yield, Yield), 4, 5),
    m(Some(24), (Yield, Yield), 6, 5),
    m(None, (Yield, Yield), 1, 20),
];

/// What a boolean switch's value means.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bool {
    Unset,
    On,
    Off,
}

/// Every way of writing a boolean switch that the table covers.
const BOOLS: [(Option<&str>, Bool); 14] = [
    (None, Bool::Unset),
    (Some("0"), Bool::Off),
    (Some("1"), Bool::On),
    (Some("on"), Bool::On),
    (Some("off"), Bool::Off),
    (Some("true"), Bool::On),
    (Some("no"), Bool::Off),
    (Some(""), Bool::Off),
    (Some(" Off "), Bool::Off),
    (Some("garbage"), Bool::On),
    (Some("FALSE"), Bool::Off),
    (Some(" \t"), Bool::Off),
    (Some("00"), Bool::On),
    (Some("yes"), Bool::On),
];

/// HOS_SHORT_SLEEP as written, and the mode it means.
const MODES: [(Option<&str>, ShortSleep); 5] = [
    (None, ShortSleep::Reactor),
    (Some("yield"), ShortSleep::Yield),
    (Some(" Timer "), ShortSleep::Timer),
    (Some("REACTOR"), ShortSleep::Reactor),
    (Some("auto"), ShortSleep::Auto),
];

/// The decisions as observed through the policy's public surface.
#[derive(Debug, PartialEq)]
struct Seen {
    paths: [SleepRoute; 3],
    cap: usize,
    spins_ns: [u64; 3],
}

const ROLES: [Waiter; 3] = [Waiter::Serial, Waiter::Worker, Waiter::Host];

fn seen(p: &Policy) -> Seen {
    Seen {
        paths: ROLES.map(|r| p.short_route(r)),
        cap: p.poller_cap(),
        spins_ns: ROLES.map(|r| p.spin(r).ns),
    }
}

/// More slots than any cap (1024 at most).
const MANY: usize = 1100;

/// Takes slots until refused (at most [`MANY`]) and checks that the cap counts only other guest
/// threads, and that every slot comes back.
fn check_slots(p: &Policy, what: &str) {
    let mut held = Vec::new();
    while held.len() < MANY {
        match p.poller_slot(Waiter::Worker) {
            Some(s) => held.push(s),
            None => break,
        }
    }
    let (want, counted) = match p.poller_cap() {
        0 => (MANY, 0),
        cap => (cap, cap),
    };
    assert_eq!(held.len(), want, "{what}: slots granted");
    assert_eq!(p.pollers(), counted, "{what}: counted");
    let uncapped: Vec<_> = (0..8)
        .flat_map(|_| [p.poller_slot(Waiter::Serial), p.poller_slot(Waiter::Host)])
        .collect();
    assert!(
        uncapped.iter().all(Option::is_some),
        "{what}: serial or host capped"
    );
    assert_eq!(p.pollers(), counted, "{what}: serial or host counted");
    drop(uncapped);
    drop(held);
    assert_eq!(p.pollers(), 0, "{what}: slots leaked");
}

#[test]
fn the_table() {
    let mut rows = 0;
    for machine in &MACHINES {
        for (mode_raw, mode) in MODES {
            for (timer_raw, timer) in BOOLS {
                let mut vars = Vec::new();
                if let Some(v) = mode_raw {
                    vars.push(("HOS_SHORT_SLEEP", v));
                }
                if let Some(v) = timer_raw {
                    vars.push(("HOS_SHORT_SLEEP_TIMER", v));
                }
                let (guest, host, capped) = match timer {
                    Bool::On => (Timer, Precise, false),
                    Bool::Off => (Yield, Yield, false),
                    Bool::Unset => match mode {
                        ShortSleep::Yield => (Yield, Yield, true),
                        ShortSleep::Timer => (Timer, Precise, false),
                        ShortSleep::Reactor => (Precise, Precise, true),
                        ShortSleep::Auto => {
                            (machine.auto.0, machine.auto.1, machine.auto.0 == Yield)
                        }
                    },
                };
                let want = Seen {
                    paths: [guest, guest, host],
                    cap: if capped { machine.cap } else { 0 },
                    spins_ns: [20_000, machine.other_us * 1000, 20_000],
                };
                let what = format!("{:?} processors, {vars:?}", machine.processors);
                let p = policy(&vars, machine.processors);
                assert_eq!(seen(&p), want, "{what}");
                assert_eq!(p.processors(), machine.processors, "{what}");
                check_slots(&p, &what);
                rows += 1;
            }
        }
    }
    assert_eq!(rows, 10 * 5 * 14);
}

#[test]
fn the_poller_switch() {
    let cases: [(Option<&str>, Option<usize>); 6] = [
        (None, None),
        (Some("0"), Some(0)),
        (Some("1"), Some(1)),
        (Some(" 3 "), Some(3)),
        (Some("+5"), Some(5)),
        (Some("1024"), Some(1024)),
    ];
    for machine in &MACHINES {
        for mode in ["yield", "reactor", "auto"] {
            for (raw, cap) in cases {
                let mut vars = vec![("HOS_SHORT_SLEEP", mode)];
                if let Some(v) = raw {
                    vars.push(("HOS_SHORT_SLEEP_POLLERS", v));
                }
                let p = policy(&vars, machine.processors);
                let applies = p.short_route(Waiter::Worker) != Timer;
                let want = match (applies, cap) {
                    (false, _) => 0,
                    (true, None) => machine.cap,
                    (true, Some(n)) => n,
                };
                let what = format!("{:?} processors, {vars:?}", machine.processors);
                assert_eq!(p.poller_cap(), want, "{what}");
                check_slots(&p, &what);
                // The timer switch, on or off, turns any cap off.
                for timer in ["1", "0"] {
                    vars.push(("HOS_SHORT_SLEEP_TIMER", timer));
                    assert_eq!(
                        policy(&vars, machine.processors).poller_cap(),
                        0,
                        "{what} {timer}"
                    );
                    vars.pop();
                }
            }
        }
    }
}

/// (HOS_SPIN_US, HOS_SPIN_OTHER_US) -> (serial and host, other with 6 processors or fewer or
/// unknown, other with more), in us.
type SpinRow = (Option<&'static str>, Option<&'static str>, u64, u64, u64);

#[test]
fn the_spin_table() {
    let cases: [SpinRow; 9] = [
        (None, None, 20, 20, 5),
        (None, Some("8"), 20, 8, 8),
        (None, Some("5"), 20, 5, 5),
        (None, Some("50"), 20, 20, 20),
        (None, Some("0"), 20, 0, 0),
        (Some("3"), None, 3, 3, 3),
        (Some("100"), None, 100, 100, 5),
        (Some("0"), None, 0, 0, 0),
        (
            Some("1000000"),
            Some("1000000"),
            1_000_000,
            1_000_000,
            1_000_000,
        ),
    ];
    for machine in &MACHINES {
        for (spin, other, serial_us, few_us, more_us) in cases {
            let mut vars = Vec::new();
            if let Some(v) = spin {
                vars.push(("HOS_SPIN_US", v));
            }
            if let Some(v) = other {
                vars.push(("HOS_SPIN_OTHER_US", v));
            }
            let few = machine.processors.is_none_or(|n| n <= 6);
            let other_us = if few { few_us } else { more_us };
            let p = policy(&vars, machine.processors);
            let what = format!("{:?} processors, {vars:?}", machine.processors);
            assert_eq!(p.spin(Waiter::Serial).ns, serial_us * 1000, "{what}");
            assert_eq!(p.spin(Waiter::Host).ns, serial_us * 1000, "{what}");
            assert_eq!(p.spin(Waiter::Worker).ns, other_us * 1000, "{what}");
            assert!(p.spin(Waiter::Serial).full, "{what}");
            assert!(p.spin(Waiter::Host).full, "{what}");
            assert_eq!(p.spin(Waiter::Worker).full, other_us == serial_us, "{what}");
        }
    }
}

/// (HOS_WAKE_SLICE_US, HOS_WAKE_SLICE_PRIORITY) -> the slice asked, in us, by (priority,
/// serial): the chain's bound itself and one step worse, serial or not, the best and the worst.
type SliceRow = (Option<&'static str>, Option<&'static str>, u8, u64);

#[test]
fn the_wake_slice_table() {
    let cases: [SliceRow; 7] = [
        (None, None, 44, 300),
        (Some("100"), None, 44, 100),
        (Some("100000"), None, 44, 100_000),
        (None, Some("10"), 10, 300),
        (None, Some("0"), 0, 300),
        (None, Some("63"), 63, 300),
        (Some("0"), None, 44, 0),
    ];
    for machine in &MACHINES {
        for (us, bound_var, bound, slice_us) in cases {
            let mut vars = Vec::new();
            if let Some(v) = us {
                vars.push(("HOS_WAKE_SLICE_US", v));
            }
            if let Some(v) = bound_var {
                vars.push(("HOS_WAKE_SLICE_PRIORITY", v));
            }
            let p = policy(&vars, machine.processors);
            let what = format!("{:?} processors, {vars:?}", machine.processors);
            let chain = slice_us * 1000;
            assert_eq!(p.wake_slice_ns(bound, false), chain, "{what}: the bound");
            assert_eq!(p.wake_slice_ns(0, false), chain, "{what}: priority 0");
            if bound < 63 {
                assert_eq!(p.wake_slice_ns(bound + 1, false), 0, "{what}: one worse");
                assert_eq!(p.wake_slice_ns(63, false), 0, "{what}: priority 63");
            }
            assert_eq!(p.wake_slice_ns(63, true), chain, "{what}: serial at 63");
        }
    }
}

#[test]
fn spin_arithmetic_never_overflows() {
    // Only a hand-made Config can hold these; the policy still saturates.
    let config = Config {
        spin_us: u64::MAX,
        spin_other_us: Some(u64::MAX / 999),
        ..Config::default()
    };
    let p = Policy::new(&config, Some(16));
    assert_eq!(
        (p.spin(Waiter::Serial).ns, p.spin(Waiter::Serial).full),
        (u64::MAX, true)
    );
    assert_eq!(
        (p.spin(Waiter::Worker).ns, p.spin(Waiter::Worker).full),
        (u64::MAX, true)
    );
}

#[test]
fn the_clamp_is_the_only_one() {
    for machine in &MACHINES {
        let p = policy(
            &[("HOS_SPIN_US", "10"), ("HOS_SPIN_OTHER_US", "11")],
            machine.processors,
        );
        assert_eq!(p.spin(Waiter::Worker).ns, 10_000);
        let p = policy(
            &[("HOS_SPIN_US", "10"), ("HOS_SPIN_OTHER_US", "9")],
            machine.processors,
        );
        assert_eq!(p.spin(Waiter::Worker).ns, 9_000);
    }
    let c = resolve(&[("HOS_SPIN_US", "10"), ("HOS_SPIN_OTHER_US", "11")]).unwrap();
    assert_eq!(
        (c.spin_us, c.spin_other_us),
        (10, Some(11)),
        "the config keeps what was asked"
    );
}

#[test]
fn boolean_switches_follow_one_rule() {
    type Get = fn(&Config) -> bool;
    let switches: [(&str, Get, bool); 8] = [
        ("HOS_VCORES", |c| c.vcores, true),
        ("HOS_VCORE_CLAIM", |c| c.vcore_claim, true),
        ("HOS_VCORE_CLAIM_DEFER", |c| c.vcore_claim_defer, true),
        ("HOS_IDLE_POLL", |c| c.idle_poll, true),
        ("HOS_IDLE_POLL_COALESCE", |c| c.idle_poll_coalesce, false),
        ("HOS_IDLE_POLL_DEFER", |c| c.idle_poll_defer, true),
        ("HOS_SLEEP_LOG", |c| c.sleep_log, false),
        ("HOS_TLS_TRACE", |c| c.tls_trace, false),
    ];
    for (name, get, default) in switches {
        for (raw, want) in BOOLS {
            let vars: Vec<_> = raw.map(|v| (name, v)).into_iter().collect();
            let c = resolve(&vars).unwrap();
            let want = match want {
                Bool::Unset => default,
                Bool::On => true,
                Bool::Off => false,
            };
            assert_eq!(get(&c), want, "{name}={raw:?}");
        }
    }
    for (raw, want) in BOOLS {
        let vars: Vec<_> = raw
            .map(|v| ("HOS_SHORT_SLEEP_TIMER", v))
            .into_iter()
            .collect();
        let want = match want {
            Bool::Unset => None,
            Bool::On => Some(true),
            Bool::Off => Some(false),
        };
        assert_eq!(resolve(&vars).unwrap().short_sleep_timer, want, "{raw:?}");
    }
}

#[test]
fn slots_come_back_on_unwinding() {
    let p = policy(&[("HOS_SHORT_SLEEP_POLLERS", "2")], Some(16));
    let r = catch_unwind(AssertUnwindSafe(|| {
        let _a = p.poller_slot(Waiter::Worker).unwrap();
        let _b = p.poller_slot(Waiter::Worker).unwrap();
        assert!(p.poller_slot(Waiter::Worker).is_none());
        assert_eq!(p.pollers(), 2);
        panic!("a guest thread unwinds while it polls");
    }));
    assert!(r.is_err());
    assert_eq!(p.pollers(), 0);
    assert!(p.poller_slot(Waiter::Worker).is_some());
}

#[test]
fn slots_never_exceed_the_cap_across_threads() {
    let p = policy(&[("HOS_SHORT_SLEEP_POLLERS", "3")], Some(16));
    std::thread::scope(|s| {
        for _ in 0..6 {
            s.spawn(|| {
                for _ in 0..5_000 {
                    if let Some(_slot) = p.poller_slot(Waiter::Worker) {
                        assert!(p.pollers() <= 3, "{} slots taken", p.pollers());
                        std::hint::spin_loop();
                    }
                }
            });
        }
    });
    assert_eq!(p.pollers(), 0);
}

#[test]
fn the_gate_closes_after_four_full_misses() {
    let gate = SpinGate::new();
    for i in 0..3 {
        assert!(gate.should_spin(), "closed after {i} misses");
        gate.record(false, true);
    }
    assert!(gate.should_spin(), "closed after 3 misses");
    gate.record(false, true);
    let spun: Vec<usize> = (0..320).filter(|_| gate.should_spin()).collect();
    assert_eq!(spun, (0..10).map(|k| 32 * k + 31).collect::<Vec<_>>());
}

#[test]
fn short_misses_neither_close_nor_break_a_run() {
    let gate = SpinGate::new();
    for _ in 0..100 {
        gate.record(false, false);
    }
    assert!(
        (0..64).all(|_| gate.should_spin()),
        "short misses closed the gate"
    );
    for _ in 0..3 {
        gate.record(false, true);
        gate.record(false, false);
    }
    assert!(gate.should_spin());
    gate.record(false, true);
    assert!(
        !gate.should_spin(),
        "a short miss broke the run of full misses"
    );
}

#[test]
fn a_catch_reopens_the_gate() {
    for full in [false, true] {
        let gate = SpinGate::default();
        for _ in 0..300 {
            gate.record(false, true);
        }
        assert_eq!(
            (0..64).filter(|_| gate.should_spin()).count(),
            2,
            "saturated misses"
        );
        gate.record(true, full);
        assert!(
            (0..64).all(|_| gate.should_spin()),
            "a catch (full {full}) did not reopen"
        );
        // And a fresh run of four closes it again, with the rhythm from the start.
        for _ in 0..4 {
            gate.record(false, true);
        }
        let spun: Vec<usize> = (0..64).filter(|_| gate.should_spin()).collect();
        assert_eq!(spun, [31, 63]);
        gate.record(true, true);
        gate.record(true, true);
        assert!(gate.should_spin());
    }
}

#[test]
fn build_counts_once_and_starts() {
    // Pinned calibrations: nothing here measures, so a mutant that lets a bad value through
    // fails at once instead of calibrating.
    let pinned = || Builder::<Runtime>::new().calibration(Calibration::default());
    assert!(pinned().vcores(9).resolve().is_err());
    assert!(pinned().vcores(9).build().is_err());
    let auto_on_four = || {
        pinned()
            .logical_processors(Some(4))
            .short_sleep(ShortSleep::Auto)
    };
    let config = auto_on_four().resolve().unwrap();
    assert_eq!(config.logical_processors, Some(Some(4)));
    assert_eq!(config.calibration, Some(Calibration::default()));
    let rt = auto_on_four().build().unwrap();
    assert_eq!(rt.policy().processors(), Some(4));
    assert_eq!(rt.policy().short_route(Waiter::Worker), Timer);
    assert_eq!(rt.config(), &config);
    rt.shutdown();
}

#[test]
fn each_decision_is_logged_once_with_the_count() {
    // Alone in a child process: a scoped subscriber misses events of a callsite that another
    // test thread registers while it is being set up (tracing caches "nobody listens").
    if !alone("tests::policy_table::each_decision_is_logged_once_with_the_count") {
        return;
    }
    let log = std::sync::Arc::new(Messages(Default::default()));
    let config = resolve(&[("HOS_SHORT_SLEEP", "auto")]).unwrap();
    let blind = resolve(&[
        ("HOS_IDLE_POLL_BLIND", "8"),
        ("HOS_IDLE_POLL_COALESCE", "1"),
        ("HOS_WAKE_SLICE_US", "0"),
    ])
    .unwrap();
    tracing::subscriber::with_default(log.clone(), || {
        Policy::new(&config, Some(4));
        Policy::new(&config, None);
        Policy::new(&Config::default(), Some(16));
        Policy::new(&blind, Some(2));
    });
    let lines = log.0.lock().unwrap().clone();
    assert_eq!(
        lines,
        [
            "guest short sleeps: timer, 4 logical processors",
            "host short sleeps: yield, 4 logical processors",
            "poller cap: none, 4 logical processors",
            "idle polls: served like other sleeps, 4 logical processors",
            "spin: serial and host 20000 ns, other 20000 ns, 4 logical processors",
            "lock heirs: woken ahead of their hand-off, 4 logical processors",
            "wake slice: 300000 ns for guest threads of priority 44 or better and serial threads, 4 logical processors",
            "guest short sleeps: yield, logical processors unknown",
            "host short sleeps: yield, logical processors unknown",
            "poller cap: 1, logical processors unknown",
            "idle polls: served like other sleeps, logical processors unknown",
            "spin: serial and host 20000 ns, other 20000 ns, logical processors unknown",
            "lock heirs: none, woken by their hand-off, logical processors unknown",
            "wake slice: 300000 ns for guest threads of priority 44 or better and serial threads, logical processors unknown",
            "guest short sleeps: precise, 16 logical processors",
            "host short sleeps: precise, 16 logical processors",
            "poller cap: 4, 16 logical processors",
            "idle polls of hos objects: relaxed, up to 1000000 ns past the deadline, promoted by work (by a better-priority guest thread: when it gives its core up), 16 logical processors",
            "idle polls of guest words: relaxed at the deadline, promoted by a signal (by a better-priority guest thread: when it gives its core up), 16 logical processors",
            "blind pollers: precise, 16 logical processors",
            "spin: serial and host 20000 ns, other 5000 ns, 16 logical processors",
            "lock heirs: woken ahead of their hand-off, 16 logical processors",
            "wake slice: 300000 ns for guest threads of priority 44 or better and serial threads, 16 logical processors",
            "guest short sleeps: precise, 2 logical processors",
            "host short sleeps: precise, 2 logical processors",
            "poller cap: 1, 2 logical processors",
            "idle polls of hos objects: relaxed, up to 1000000 ns past the deadline, on shared ticks, promoted by work (by a better-priority guest thread: when it gives its core up), 2 logical processors",
            "idle polls of guest words: relaxed at the deadline, promoted by a signal (by a better-priority guest thread: when it gives its core up), 2 logical processors",
            "blind pollers: relaxed at the deadline after 8 quiet sleeps, 2 logical processors",
            "spin: serial and host 20000 ns, other 20000 ns, 2 logical processors",
            "lock heirs: none, woken by their hand-off, 2 logical processors",
            "wake slice: none asked, 2 logical processors",
        ]
    );
}

/// The coarse-timer rule (docs/design.md section 4): a lateness estimate, whether the timer
/// was coarse, whether it is now. Coarse from 1.5 ms, fine again below 1 ms: a
/// `timeBeginPeriod(1)` tick (boot estimate 0.97 ms, tracked up to about 1 ms) is never coarse
/// however its estimate wanders, and an estimate about either threshold does not flip the
/// sleeps to and fro.
#[test]
fn the_coarse_timer_rule_has_hysteresis() {
    use crate::calibration::coarse_timer;
    const TABLE: [(u64, bool, bool); 12] = [
        (5_000, false, false),
        (970_000, false, false),
        (1_000_000, false, false),
        (1_200_000, false, false),
        (1_499_999, false, false),
        (1_500_000, false, true),
        (2_000_000, false, true),
        (2_000_000, true, true),
        (1_200_000, true, true),
        (1_000_000, true, true),
        (999_999, true, false),
        (5_000, true, false),
    ];
    for (lateness, was, is) in TABLE {
        assert_eq!(coarse_timer(lateness, was), is, "{lateness} ns, was {was}");
    }
    // A walk up and down: one flip each way, at the thresholds.
    let walk = (0..=40u64).chain((0..=40).rev()).map(|i| i * 50_000);
    let mut was = false;
    let mut flips = Vec::new();
    for lateness in walk {
        let is = coarse_timer(lateness, was);
        if is != was {
            flips.push((lateness, is));
        }
        was = is;
    }
    assert_eq!(flips, [(1_500_000, true), (950_000, false)]);
}

/// A boot figure past the estimates' cap is named in a warning, with what it costs; one at or
/// below the cap is not.
#[test]
fn a_capped_boot_figure_is_named() {
    use crate::calibration::cap_warning;
    assert_eq!(cap_warning("timer lateness", 495_000), None);
    assert_eq!(cap_warning("timer lateness", 2_000_000), None);
    let w = cap_warning("timer lateness", 15_625_000).expect("past the cap");
    assert!(
        w.contains("timer lateness of 15.625 ms") && w.contains("up to 13.625 ms"),
        "{w}"
    );
}
