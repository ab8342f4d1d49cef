//! How switches are read (docs/switches.md): numbers, modes and name parts, the errors that
//! name a switch and its value, the builder methods, code against the environment, and the
//! process environment itself. `policy_table.rs` tests what the switches decide.
//!
//! No test here sets a process variable (unsound while tests run in parallel): switches come
//! through `Builder::env_from`, and the tests of `Builder::env` run this binary again as a
//! child with its own environment.

use crate::det::clock::Pacing;
use crate::det::selector::Spec;
use crate::runtime::Runtime;
use crate::{BuildError, Builder, Calibration, Config, ShortSleep};
use std::collections::HashMap;

use super::common::{resolve, with_env};

#[test]
fn numbers_and_modes_are_read() {
    let c = resolve(&[
        ("HOS_SHORT_SLEEP", " Auto "),
        ("HOS_SHORT_SLEEP_POLLERS", "7"),
        ("HOS_SPIN_US", " 30"),
        ("HOS_SPIN_OTHER_US", "2 "),
        ("HOS_CORES", "4"),
        ("HOS_VCORE_SLICE_US", "500"),
        ("HOS_VCORE_ESCAPE_MS", "100"),
        ("HOS_VCORE_GRACE_US", " 200"),
        ("HOS_IDLE_POLL_STRETCH_US", " 250"),
        ("HOS_IDLE_POLL_BLIND", "16"),
        ("HOS_WAKE_SLICE_US", " 150"),
        ("HOS_WAKE_SLICE_PRIORITY", "30 "),
    ])
    .unwrap();
    assert_eq!((c.wake_slice_us, c.wake_slice_priority), (150, 30));
    assert_eq!((c.idle_poll_stretch_us, c.idle_poll_blind), (250, 16));
    assert_eq!(c.short_sleep, ShortSleep::Auto);
    assert_eq!(c.short_sleep_pollers, Some(7));
    assert_eq!((c.spin_us, c.spin_other_us), (30, Some(2)));
    assert_eq!(
        (
            c.cores,
            c.vcore_slice_us,
            c.vcore_escape_ms,
            c.vcore_grace_us
        ),
        (4, 500, 100, 200)
    );
    for (raw, mode) in [
        ("yield", ShortSleep::Yield),
        ("TIMER", ShortSleep::Timer),
        (" reactor\n", ShortSleep::Reactor),
        ("aUtO", ShortSleep::Auto),
    ] {
        assert_eq!(
            resolve(&[("HOS_SHORT_SLEEP", raw)]).unwrap().short_sleep,
            mode
        );
    }
    // A guided schedule's file is read when a runtime is built.
    let det = resolve(&[("HOS_DET", " guided:40:9,3:run.hosrec ")])
        .unwrap()
        .det;
    let drop = [3, 9].into_iter().collect();
    assert_eq!(
        det,
        Some(Spec::Guided {
            path: "run.hosrec".into(),
            prefix: 40,
            drop
        })
    );
}

#[test]
fn bounds_are_accepted() {
    for (name, raw) in [
        ("HOS_CORES", "1"),
        ("HOS_CORES", "8"),
        ("HOS_SPIN_US", "0"),
        ("HOS_SPIN_US", "1000000"),
        ("HOS_SPIN_OTHER_US", "0"),
        ("HOS_SPIN_OTHER_US", "1000000"),
        ("HOS_SHORT_SLEEP_POLLERS", "0"),
        ("HOS_SHORT_SLEEP_POLLERS", "1024"),
        ("HOS_VCORE_SLICE_US", "1"),
        ("HOS_VCORE_SLICE_US", "1000000"),
        ("HOS_VCORE_ESCAPE_MS", "1"),
        ("HOS_VCORE_ESCAPE_MS", "3600000"),
        ("HOS_VCORE_GRACE_US", "0"),
        ("HOS_VCORE_GRACE_US", "1000000"),
        ("HOS_IDLE_POLL_STRETCH_US", "0"),
        ("HOS_IDLE_POLL_STRETCH_US", "1000000"),
        ("HOS_IDLE_POLL_BLIND", "0"),
        ("HOS_IDLE_POLL_BLIND", "1000000"),
        ("HOS_WAKE_SLICE_US", "0"),
        ("HOS_WAKE_SLICE_US", "100"),
        ("HOS_WAKE_SLICE_US", "100000"),
        ("HOS_WAKE_SLICE_PRIORITY", "0"),
        ("HOS_WAKE_SLICE_PRIORITY", "63"),
    ] {
        assert!(resolve(&[(name, raw)]).is_ok(), "{name}={raw}");
    }
}

#[test]
fn bad_values_are_errors_naming_switch_and_value() {
    let bad = [
        ("HOS_CORES", "9"),
        ("HOS_CORES", "0"),
        ("HOS_CORES", "-1"),
        ("HOS_CORES", "six"),
        ("HOS_CORES", ""),
        ("HOS_SPIN_US", "-5"),
        ("HOS_SPIN_US", "1000001"),
        ("HOS_SPIN_US", "18446744073709551616"),
        ("HOS_SPIN_US", "20us"),
        ("HOS_SPIN_US", "1e3"),
        ("HOS_SPIN_OTHER_US", "-1"),
        ("HOS_SPIN_OTHER_US", "2000000"),
        ("HOS_SHORT_SLEEP_POLLERS", "1025"),
        ("HOS_SHORT_SLEEP_POLLERS", "-1"),
        ("HOS_SHORT_SLEEP_POLLERS", "3.0"),
        ("HOS_SHORT_SLEEP", "fast"),
        ("HOS_SHORT_SLEEP", ""),
        ("HOS_SHORT_SLEEP", "yield,timer"),
        ("HOS_VCORE_SLICE_US", "0"),
        ("HOS_VCORE_SLICE_US", "1000001"),
        ("HOS_VCORE_ESCAPE_MS", "0"),
        ("HOS_VCORE_ESCAPE_MS", "3600001"),
        ("HOS_VCORE_GRACE_US", "1000001"),
        ("HOS_VCORE_GRACE_US", "-1"),
        ("HOS_VCORE_GRACE_US", "200us"),
        ("HOS_FLIGHT_WAIT_MS", "-1"),
        ("HOS_FLIGHT_WAIT_MS", "3600001"),
        ("HOS_IDLE_POLL_STRETCH_US", "1000001"),
        ("HOS_IDLE_POLL_STRETCH_US", "-1"),
        ("HOS_IDLE_POLL_BLIND", "1000001"),
        ("HOS_IDLE_POLL_BLIND", "4294967296"),
        ("HOS_WAKE_SLICE_US", "1"),
        ("HOS_WAKE_SLICE_US", "99"),
        ("HOS_WAKE_SLICE_US", "100001"),
        ("HOS_WAKE_SLICE_US", "-7"),
        ("HOS_WAKE_SLICE_PRIORITY", "64"),
        ("HOS_WAKE_SLICE_PRIORITY", "-1"),
        ("HOS_WAKE_SLICE_PRIORITY", "0x2C"),
        ("HOS_DET", "guided:x:-:run.hosrec"),
        ("HOS_DET", "guided:40:-"),
    ];
    for (name, raw) in bad {
        let err = resolve(&[(name, raw)]).expect_err(&format!("{name}={raw:?} accepted"));
        assert_eq!((err.switch, err.value.as_str()), (name, raw));
        assert!(!err.accepted.is_empty());
        let text = err.to_string();
        assert!(
            text.contains(name) && text.contains(&format!("{raw:?}")),
            "{text}"
        );
        // build() refuses it too, and starts nothing.
        let built = with_env(&[(name, raw)]).build().err();
        assert_eq!(built.as_ref().and_then(BuildError::config), Some(&err));
    }
    let err = resolve(&[("HOS_SPIN_US", "2000000")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "HOS_SPIN_US=\"2000000\" is not accepted: expected microseconds, an integer in 0..=1000000"
    );
}

#[test]
fn bad_builder_values_are_errors_naming_the_method() {
    type Set = fn(Builder<Runtime>) -> Builder<Runtime>;
    let bad: [(Set, &str, &str); 24] = [
        (
            |b| b.idle_poll_stretch_us(1_000_001),
            "idle_poll_stretch_us",
            "1000001",
        ),
        (
            |b| b.idle_poll_blind(1_000_001),
            "idle_poll_blind",
            "1000001",
        ),
        (|b| b.vcores(0), "vcores", "0"),
        (|b| b.vcores(9), "vcores", "9"),
        (|b| b.spin_us(1_000_001), "spin_us", "1000001"),
        (|b| b.spin_other_us(1_000_001), "spin_other_us", "1000001"),
        (
            |b| b.short_sleep_pollers(Some(1025)),
            "short_sleep_pollers",
            "1025",
        ),
        (|b| b.vcore_slice_us(0), "vcore_slice_us", "0"),
        (|b| b.vcore_slice_us(1_000_001), "vcore_slice_us", "1000001"),
        (|b| b.vcore_escape_ms(0), "vcore_escape_ms", "0"),
        (
            |b| b.vcore_escape_ms(3_600_001),
            "vcore_escape_ms",
            "3600001",
        ),
        (|b| b.vcore_grace_us(1_000_001), "vcore_grace_us", "1000001"),
        (|b| b.wake_slice_us(99), "wake_slice_us", "99"),
        (|b| b.wake_slice_us(100_001), "wake_slice_us", "100001"),
        (|b| b.wake_slice_priority(64), "wake_slice_priority", "64"),
        (|b| b.flight_wait_ms(3_600_001), "flight_wait_ms", "3600001"),
        (|b| b.det_quantum(0), "det_quantum", "0"),
        (
            |b| b.det_watchdog_ms(3_600_001),
            "det_watchdog_ms",
            "3600001",
        ),
        (
            |b| {
                b.det(Some(Spec::Pct {
                    depth: 0,
                    seed: 1,
                    steps: 10,
                }))
            },
            "det",
            "pct:0:1:10",
        ),
        (
            |b| b.logical_processors(Some(0)),
            "logical_processors",
            "Some(0)",
        ),
        (
            |b| {
                b.calibration(Calibration {
                    timer_lateness_ns: 2_000_001,
                    ..Calibration::default()
                })
            },
            "calibration.timer_lateness_ns",
            "2000001",
        ),
        (
            |b| {
                b.calibration(Calibration {
                    timer_margin_ns: u64::MAX,
                    ..Calibration::default()
                })
            },
            "calibration.timer_margin_ns",
            "18446744073709551615",
        ),
        (
            |b| {
                b.calibration(Calibration {
                    poller_margin_ns: 2_000_001,
                    ..Calibration::default()
                })
            },
            "calibration.poller_margin_ns",
            "2000001",
        ),
        (
            |b| {
                b.calibration(Calibration {
                    wake_latency_ns: 2_000_001,
                    ..Calibration::default()
                })
            },
            "calibration.wake_latency_ns",
            "2000001",
        ),
    ];
    for (set, method, value) in bad {
        let err = set(Builder::new()).resolve().unwrap_err();
        assert_eq!((err.switch, err.value.as_str()), (method, value));
    }
    let hand_made = Config {
        cores: 9,
        ..Config::default()
    };
    assert_eq!(
        Builder::<Runtime>::new()
            .config(hand_made)
            .resolve()
            .unwrap_err()
            .switch,
        "vcores"
    );
}

#[test]
fn every_builder_method_sets_its_switch() {
    let c = Builder::<Runtime>::new()
        .short_sleep(ShortSleep::Yield)
        .short_sleep_timer(Some(false))
        .short_sleep_pollers(Some(3))
        .spin_us(40)
        .spin_other_us(7)
        .idle_poll(false)
        .idle_poll_stretch_us(50)
        .idle_poll_coalesce(true)
        .idle_poll_defer(false)
        .idle_poll_blind(8)
        .serial([" Render ", "", "Main"])
        .vcores(8)
        .vcores_enabled(false)
        .vcore_slice_us(1500)
        .vcore_escape_ms(100)
        .vcore_first(["Presentation"])
        .vcore_claim(false)
        .vcore_claim_defer(true)
        .vcore_grace_us(150)
        .wake_slice_us(1000)
        .wake_slice_priority(20)
        .sleep_log(true)
        .tls_trace(true)
        .trace("t.json")
        .flight(false)
        .flight_dir("/tmp/d")
        .flight_wait_ms(500)
        .log_stderr(false)
        .det(Some(Spec::Pct {
            depth: 2,
            seed: 5,
            steps: 100,
        }))
        .det_quantum(64)
        .det_pace(Pacing::Free)
        .det_watchdog_ms(300)
        .det_record(Some("r.hosrec".into()))
        .det_record_decisions(true)
        .det_build_id(Some(" Game 1.0 ".into()))
        .calibration(Calibration::default())
        .logical_processors(None)
        .resolve()
        .unwrap();
    let want = Config {
        short_sleep: ShortSleep::Yield,
        short_sleep_timer: Some(false),
        short_sleep_pollers: Some(3),
        spin_us: 40,
        spin_other_us: Some(7),
        idle_poll: false,
        idle_poll_stretch_us: 50,
        idle_poll_coalesce: true,
        idle_poll_defer: false,
        idle_poll_blind: 8,
        serial: vec!["Render".into(), "Main".into()],
        cores: 8,
        vcores: false,
        vcore_slice_us: 1500,
        vcore_escape_ms: 100,
        vcore_first: vec!["Presentation".into()],
        vcore_claim: false,
        vcore_claim_defer: true,
        vcore_grace_us: 150,
        wake_slice_us: 1000,
        wake_slice_priority: 20,
        sleep_log: true,
        tls_trace: true,
        trace: Some("t.json".into()),
        flight: false,
        flight_dir: Some("/tmp/d".into()),
        flight_wait_ms: 500,
        log_stderr: false,
        det: Some(Spec::Pct {
            depth: 2,
            seed: 5,
            steps: 100,
        }),
        det_quantum: 64,
        det_pace: Pacing::Free,
        det_watchdog_ms: 300,
        det_record: Some("r.hosrec".into()),
        det_record_decisions: true,
        det_build_id: Some("Game 1.0".into()),
        calibration: Some(Calibration::default()),
        logical_processors: Some(None),
    };
    assert_eq!(c, want);
    assert_eq!(
        Builder::<Runtime>::new().resolve().unwrap(),
        Config::default()
    );
    assert_eq!(
        Builder::<Runtime>::default().resolve().unwrap(),
        Config::default()
    );
}

#[test]
fn defaults_are_the_documented_ones() {
    let d = Config::default();
    assert_eq!(d.short_sleep, ShortSleep::Reactor);
    assert_eq!((d.short_sleep_timer, d.short_sleep_pollers), (None, None));
    assert_eq!((d.spin_us, d.spin_other_us), (20, None));
    assert_eq!(
        (
            d.idle_poll,
            d.idle_poll_stretch_us,
            d.idle_poll_coalesce,
            d.idle_poll_defer,
            d.idle_poll_blind
        ),
        (true, 1000, false, true, 0)
    );
    assert_eq!(d.serial, ["MainThread", "Presentation"]);
    assert_eq!((d.cores, d.vcores), (6, true));
    assert_eq!((d.vcore_slice_us, d.vcore_escape_ms), (2000, 2000));
    assert_eq!(d.vcore_grace_us, 0, "the strict bound by default");
    assert_eq!((d.wake_slice_us, d.wake_slice_priority), (300, 44));
    assert!(d.vcore_first.is_empty());
    assert_eq!((d.sleep_log, d.tls_trace), (false, false));
    assert_eq!((&d.trace, d.flight, &d.flight_dir), (&None, true, &None));
    assert_eq!((d.flight_wait_ms, d.log_stderr), (0, true));
    assert_eq!((d.calibration, d.logical_processors), (None, None));
}

/// Every switch with a value unlike its default, and a builder that sets each in code to a
/// third value.
fn everything_set() -> (Vec<(&'static str, &'static str)>, Builder<Runtime>) {
    let env = vec![
        ("HOS_SHORT_SLEEP", "yield"),
        ("HOS_SHORT_SLEEP_TIMER", "on"),
        ("HOS_SHORT_SLEEP_POLLERS", "2"),
        ("HOS_SPIN_US", "30"),
        ("HOS_SPIN_OTHER_US", "3"),
        ("HOS_IDLE_POLL", "off"),
        ("HOS_IDLE_POLL_STRETCH_US", "20"),
        ("HOS_IDLE_POLL_COALESCE", "on"),
        ("HOS_IDLE_POLL_DEFER", "off"),
        ("HOS_IDLE_POLL_BLIND", "3"),
        ("HOS_SERIAL", "Game"),
        ("HOS_CORES", "2"),
        ("HOS_VCORES", "0"),
        ("HOS_VCORE_SLICE_US", "700"),
        ("HOS_VCORE_ESCAPE_MS", "70"),
        ("HOS_VCORE_FIRST", "Audio"),
        ("HOS_VCORE_CLAIM", "off"),
        ("HOS_VCORE_CLAIM_DEFER", "on"),
        ("HOS_VCORE_GRACE_US", "70"),
        ("HOS_WAKE_SLICE_US", "0"),
        ("HOS_WAKE_SLICE_PRIORITY", "7"),
        ("HOS_SLEEP_LOG", "1"),
        ("HOS_TLS_TRACE", "1"),
        ("HOS_TRACE", "env.json"),
        ("HOS_FLIGHT", "off"),
        ("HOS_FLIGHT_DIR", "/tmp/env"),
        ("HOS_FLIGHT_WAIT_MS", "250"),
        ("HOS_LOG_STDERR", "0"),
        ("HOS_DET", " random:0x10 "),
        ("HOS_DET_QUANTUM", "12"),
        ("HOS_DET_PACE", "FREE"),
        ("HOS_DET_WATCHDOG_MS", "0"),
        ("HOS_DET_RECORD", "env.hosrec"),
        ("HOS_DET_RECORD_DECISIONS", "on"),
        ("HOS_DET_BUILD_ID", " Game 2.0 "),
    ];
    let code = Builder::new()
        .short_sleep(ShortSleep::Timer)
        .short_sleep_timer(Some(false))
        .short_sleep_pollers(Some(9))
        .spin_us(40)
        .spin_other_us(4)
        .idle_poll(true)
        .idle_poll_stretch_us(40)
        .idle_poll_coalesce(false)
        .idle_poll_defer(true)
        .idle_poll_blind(5)
        .serial(["Render"])
        .vcores(3)
        .vcores_enabled(true)
        .vcore_slice_us(900)
        .vcore_escape_ms(90)
        .vcore_first(["Loader"])
        .vcore_claim(true)
        .vcore_claim_defer(false)
        .vcore_grace_us(90)
        .wake_slice_us(900)
        .wake_slice_priority(9)
        .sleep_log(false)
        .tls_trace(false)
        .trace("code.json")
        .flight(true)
        .flight_dir("/tmp/code")
        .flight_wait_ms(9)
        .log_stderr(true)
        .det(None)
        .det_quantum(7)
        .det_pace(Pacing::Paced)
        .det_watchdog_ms(70)
        .det_record(Some("code.hosrec".into()))
        .det_record_decisions(false)
        .det_build_id(Some("Game 1.0".into()));
    (env, code)
}

#[test]
fn code_wins_over_the_environment_unless_asked() {
    let (env, code) = everything_set();
    let from_code = code.resolve().unwrap();
    let (_, code) = everything_set();
    let map: HashMap<_, _> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let m2 = map.clone();
    let code_won = code
        .env_from(move |k| map.get(k).cloned())
        .resolve()
        .unwrap();
    assert_eq!(code_won, from_code, "the environment overrode code");

    let from_env = resolve(&env).unwrap();
    let want_env = Config {
        short_sleep: ShortSleep::Yield,
        short_sleep_timer: Some(true),
        short_sleep_pollers: Some(2),
        spin_us: 30,
        spin_other_us: Some(3),
        idle_poll: false,
        idle_poll_stretch_us: 20,
        idle_poll_coalesce: true,
        idle_poll_defer: false,
        idle_poll_blind: 3,
        serial: vec!["Game".into()],
        cores: 2,
        vcores: false,
        vcore_slice_us: 700,
        vcore_escape_ms: 70,
        vcore_first: vec!["Audio".into()],
        vcore_claim: false,
        vcore_claim_defer: true,
        vcore_grace_us: 70,
        wake_slice_us: 0,
        wake_slice_priority: 7,
        sleep_log: true,
        tls_trace: true,
        trace: Some("env.json".into()),
        flight: false,
        flight_dir: Some("/tmp/env".into()),
        flight_wait_ms: 250,
        log_stderr: false,
        det: Some(Spec::Random { seed: 16 }),
        det_quantum: 12,
        det_pace: Pacing::Free,
        det_watchdog_ms: 0,
        det_record: Some("env.hosrec".into()),
        det_record_decisions: true,
        det_build_id: Some("Game 2.0".into()),
        calibration: None,
        logical_processors: None,
    };
    assert_eq!(from_env, want_env);
    // env_overrides before or after the source: the environment wins everywhere.
    let (_, code) = everything_set();
    let m3 = m2.clone();
    let env_won = code
        .env_overrides()
        .env_from(move |k| m2.get(k).cloned())
        .resolve()
        .unwrap();
    assert_eq!(env_won, want_env);
    let (_, code) = everything_set();
    let env_won = code
        .env_from(move |k| m3.get(k).cloned())
        .env_overrides()
        .resolve()
        .unwrap();
    assert_eq!(env_won, want_env);
}

#[test]
fn precedence_details() {
    // A bad environment value is an error even where code wins.
    let err = with_env(&[("HOS_CORES", "9")])
        .vcores(4)
        .resolve()
        .unwrap_err();
    assert_eq!((err.switch, err.value.as_str()), ("HOS_CORES", "9"));
    // With env_overrides, a good environment value replaces a bad one from code.
    let c = with_env(&[("HOS_CORES", "2")])
        .vcores(40)
        .env_overrides()
        .resolve()
        .unwrap();
    assert_eq!(c.cores, 2);
    // A switch the environment leaves unset keeps the code's value even with env_overrides.
    let c = with_env(&[]).vcores(3).env_overrides().resolve().unwrap();
    assert_eq!(c.cores, 3);
    // A whole Config counts as set in code.
    let hand_made = Config {
        cores: 3,
        ..Config::default()
    };
    let c = with_env(&[("HOS_CORES", "2")])
        .config(hand_made.clone())
        .resolve()
        .unwrap();
    assert_eq!(c.cores, 3);
    let c = with_env(&[("HOS_CORES", "2")])
        .config(hand_made)
        .env_overrides()
        .resolve()
        .unwrap();
    assert_eq!(c.cores, 2);
    // The last source wins.
    let c = with_env(&[("HOS_CORES", "2")])
        .env_from(|k| (k == "HOS_CORES").then(|| "5".into()))
        .resolve()
        .unwrap();
    assert_eq!(c.cores, 5);
    // Without env() or env_from(), nothing is read: see the child test for the process.
    assert_eq!(
        Builder::<Runtime>::new().vcores(4).resolve().unwrap().cores,
        4
    );
}

#[test]
fn name_parts_are_trimmed_and_empty_ones_dropped() {
    let c = resolve(&[
        ("HOS_SERIAL", " Main , ,Render,, "),
        ("HOS_VCORE_FIRST", ",Presentation Thread,"),
    ])
    .unwrap();
    assert_eq!(c.serial, ["Main", "Render"]);
    assert_eq!(c.vcore_first, ["Presentation Thread"]);
    let c = resolve(&[("HOS_SERIAL", ""), ("HOS_VCORE_FIRST", " , ")]).unwrap();
    assert!(c.serial.is_empty() && c.vcore_first.is_empty());
    let c = Builder::<Runtime>::new()
        .vcore_first([" A ", "", "B"])
        .resolve()
        .unwrap();
    assert_eq!(c.vcore_first, ["A", "B"]);
    let untidy = Config {
        serial: vec![" X ".into(), String::new()],
        ..Config::default()
    };
    assert_eq!(
        Builder::<Runtime>::new()
            .config(untidy)
            .resolve()
            .unwrap()
            .serial,
        ["X"]
    );
}

/// Runs this test binary again, as `test` alone, with `vars` as extra environment.
fn run_child(test: &str, vars: &[(&str, &std::ffi::OsStr)]) {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        &format!("tests::switches::{test}"),
        "--test-threads=1",
    ]);
    cmd.env("HOS_TEST_ALONE", "1");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "child {test} failed:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "child {test} did not run"
    );
}

#[test]
fn env_reads_the_process_environment() {
    if std::env::var_os("HOS_TEST_ALONE").is_none() {
        return run_child(
            "env_reads_the_process_environment",
            &[
                ("HOS_CORES", "3".as_ref()),
                ("HOS_SLEEP_LOG", "off".as_ref()),
            ],
        );
    }
    assert_eq!(
        Builder::<Runtime>::new().resolve().unwrap().cores,
        6,
        "read without env()"
    );
    let c = Builder::<Runtime>::new().env().resolve().unwrap();
    assert_eq!((c.cores, c.sleep_log), (3, false));
    assert_eq!(
        Builder::<Runtime>::new()
            .vcores(5)
            .env()
            .resolve()
            .unwrap()
            .cores,
        5
    );
    assert_eq!(
        Builder::<Runtime>::new()
            .vcores(5)
            .env_overrides()
            .resolve()
            .unwrap()
            .cores,
        3
    );
    // The process environment overrides env_from only if it comes last.
    let c = Builder::<Runtime>::new()
        .env_from(|_| None)
        .env()
        .resolve()
        .unwrap();
    assert_eq!(c.cores, 3);
}

#[cfg(unix)]
fn not_utf8() -> &'static std::ffi::OsStr {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(b"\xff")
}

#[cfg(unix)]
#[test]
fn env_reads_values_that_are_not_utf8() {
    if std::env::var_os("HOS_TEST_ALONE").is_none() {
        return run_child(
            "env_reads_values_that_are_not_utf8",
            &[
                ("HOS_TLS_TRACE", not_utf8()),
                ("HOS_VCORE_FIRST", not_utf8()),
            ],
        );
    }
    let c = Builder::<Runtime>::new().env().resolve().unwrap();
    assert!(c.tls_trace, "a value that is not UTF-8 is set, so on");
    assert_eq!(c.vcore_first, ["\u{fffd}"]);
}

#[cfg(unix)]
#[test]
fn env_refuses_numbers_that_are_not_utf8() {
    if std::env::var_os("HOS_TEST_ALONE").is_none() {
        return run_child(
            "env_refuses_numbers_that_are_not_utf8",
            &[("HOS_SPIN_US", not_utf8())],
        );
    }
    let err = Builder::<Runtime>::new().env().resolve().unwrap_err();
    assert_eq!(
        (err.switch, err.value.as_str()),
        ("HOS_SPIN_US", "\u{fffd}")
    );
}
