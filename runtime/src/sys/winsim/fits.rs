//! The model against the published figures it is fitted on (docs/windows.md, "How the
//! simulator is fitted"; WINDOWS.md section 2 has the sources): each within 10 %, drawn in
//! modelled time (no clock is read, nothing sleeps), so the tests are fast and the same on
//! every run.

use super::profile::{CpuClock, Model, Profile, Rng, TICK_NS};
use std::time::Duration;

const US: f64 = 1_000.0;
const MS: f64 = 1_000_000.0;
/// Sleeps in a measurement loop.
const LOOP: usize = 2_000;
/// The instant the loops start at (any: the grid's phase comes from the seed).
const START: u64 = 5_000_000_000;
/// A `SwitchToThread` that returns at once costs about this (a system call).
const YIELD_COST_NS: u64 = 1_000;

fn model(profile: Profile) -> Model {
    Model::new(profile, CpuClock::Cycles, 7)
}

/// The lengths of `LOOP` back-to-back sleeps of `ask` from `start`, each armed as the one
/// before woke (the published figures come from such loops).
fn sleep_loop(m: &Model, ask: u64, high_res: bool, start: u64) -> Vec<f64> {
    let mut rng = Rng::new(m.seed, 0);
    let mut t = start;
    (0..LOOP)
        .map(|_| {
            let wake = m.sleep_wake(t, t + ask, high_res, &mut rng);
            let took = wake - t;
            t = wake;
            took as f64
        })
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn p50(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

/// Fails unless `modelled` is within 10 % of `published`.
#[track_caller]
fn within_10_percent(what: &str, modelled: f64, published: f64) {
    let off = (modelled - published).abs() / published;
    assert!(
        off <= 0.10,
        "{what}: modelled {:.3} ms, published {:.3} ms ({:.1} % off)",
        modelled / MS,
        published / MS,
        off * 100.0
    );
}

#[test]
fn default_tick_sleeps_match_go_and_the_plain_waitable_timer() {
    let m = model(Profile::Tick);
    // golang/go#44343: a 1 ms sleep loop, p50 15.4 ms.
    within_10_percent(
        "tick, 1 ms, p50",
        p50(&sleep_loop(&m, MS as u64, false, START)),
        15.4 * MS,
    );
    // Haukcode.HighResolutionTimer PR 18: a plain waitable timer, means.
    for (ask, published) in [(1.0, 14.96), (10.0, 14.97), (100.0, 108.3)] {
        let took = mean(&sleep_loop(&m, (ask * MS) as u64, false, START));
        within_10_percent(&format!("tick, {ask} ms, mean"), took, published * MS);
    }
}

#[test]
fn one_ms_period_sleeps_take_two_ticks() {
    // golang/go#17696: 1 ms sleeps at 1024 Hz took 1.953 ms.
    let took = sleep_loop(&model(Profile::Ms1), MS as u64, false, START);
    within_10_percent("1ms, 1 ms, p50", p50(&took), 1.953 * MS);
    within_10_percent("1ms, 1 ms, mean", mean(&took), 1.953 * MS);
}

#[test]
fn half_ms_period_rounds_to_whole_ticks() {
    // RPCS3 PR 4716: usleep(600) took 972 us at 0.5 ms resolution (the quantum's phase).
    let took = sleep_loop(&model(Profile::Ms05), 600_000, false, START);
    within_10_percent("0.5ms, 600 us, mean", mean(&took), 972.0 * US);
}

#[test]
fn high_res_timer_matches_the_half_ms_grid() {
    // SAB2's usleep: a high-resolution timer at 0.5 ms resolution, means.
    let m = model(Profile::Hires);
    for (ask, published) in [
        (20.0 * US, 0.496 * MS),
        (200.0 * US, 0.501 * MS),
        (500.0 * US, 0.97 * MS),
        (2.0 * MS, 2.33 * MS),
        (8.0 * MS, 8.27 * MS),
        (16.0 * MS, 16.32 * MS),
    ] {
        let took = mean(&sleep_loop(&m, ask as u64, true, START));
        within_10_percent(&format!("hires, {} us", ask / US), took, published);
    }
    // The thread that asked for a plain timer (its own slack) stays on the tick.
    let plain = mean(&sleep_loop(&m, 20_000, false, START));
    within_10_percent("hires profile, plain 20 us", plain, 0.5 * MS);
}

#[test]
fn loaded_high_res_timer_waits_behind_quanta() {
    // spin-sleep PR 22: 16 busy threads, means 14.9 / 16.0 ms, worst 46.9 ms for 1 us.
    let m = model(Profile::HiresLoaded);
    let one_us = sleep_loop(&m, 1_000, true, START);
    within_10_percent("hires-loaded, 1 us, mean", mean(&one_us), 14.9 * MS);
    within_10_percent("hires-loaded, 1 us, worst", max(&one_us), 46.9 * MS);
    let one_ms = sleep_loop(&m, MS as u64, true, START);
    within_10_percent("hires-loaded, 1 ms, mean", mean(&one_ms), 16.0 * MS);
}

#[test]
fn loaded_yield_spins_overshoot_by_a_quantum() {
    // spin-sleep's experiments: a 5 us spin of SwitchToThread took 13.9 ms under load.
    let m = model(Profile::HiresLoaded);
    let mut rng = Rng::new(m.seed, 0);
    let spins: Vec<f64> = (0..LOOP)
        .map(|_| {
            let mut t = 0;
            while t < 5_000 {
                t += YIELD_COST_NS + m.yield_delay(&mut rng);
            }
            t as f64
        })
        .collect();
    within_10_percent("hires-loaded, 5 us yield spin", mean(&spins), 13.9 * MS);
    // Idle, a yield never leaves the processor.
    let idle = model(Profile::Hires);
    assert!((0..LOOP).all(|_| idle.yield_delay(&mut rng) == 0));
}

#[test]
fn minimized_window_falls_back_to_the_default_tick() {
    let m = model(Profile::Minimized);
    let seconds = 200;
    let occluded = (0..seconds)
        .filter(|s| m.occluded(START + s * 1_000_000_000))
        .count();
    assert!(
        (70..=130).contains(&occluded),
        "{occluded} of {seconds} seconds occluded"
    );
    // A 1 ms sleep loop within one second: the default tick's 15.4 ms where occluded, the
    // 1024 Hz tick's 1.953 ms where not.
    for s in 0..20 {
        let start = START + s * 1_000_000_000;
        let took: Vec<f64> = sleep_loop(&m, MS as u64, false, start)
            .into_iter()
            .take(40)
            .collect();
        let published = if m.occluded(start) { 15.4 } else { 1.953 };
        within_10_percent(
            &format!("minimized, second {s}"),
            p50(&took),
            published * MS,
        );
    }
}

#[test]
fn timer_sleeps_never_wake_before_their_deadline() {
    // Plain waits fire up to a tick early (the tick rule); the sleep re-arms until it is due.
    let mut rng = Rng::new(3, 0);
    let mut early_fires = 0;
    for p in Profile::ALL {
        let m = model(p);
        for _ in 0..5_000 {
            let now = START + rng.next_u64() % 3_000_000_000;
            let ask = rng.next_u64() % (40 * MS as u64);
            let high_res = rng.next_u64() % 2 == 0;
            let wake = m.sleep_wake(now, now + ask, high_res, &mut rng);
            assert!(
                wake >= now + ask,
                "{p:?}: {ask} ns from {now} woke at {wake}"
            );
            early_fires += u32::from(ask > 0 && m.plain_fire(now, ask) < now + ask);
            assert!(m.high_res_fire(now, ask) >= now + ask);
        }
    }
    assert!(early_fires > 0, "the tick rule fires plain waits early");
}

#[test]
fn wait_on_address_timeouts_are_whole_ms_on_the_tick() {
    let m = model(Profile::Hires);
    let mut rng = Rng::new(4, 0);
    for i in 0..1_000 {
        let now = START + i * 37_000;
        // A 20 us timeout becomes 1 ms counted from the last 0.5 ms tick: 0.5..=1 ms.
        let waited = m.wait_wake(now, now + 20_000, &mut rng) - now;
        assert!((500_000..1_400_000).contains(&waited), "{waited} ns");
        // A passed deadline returns at once.
        assert_eq!(m.wait_wake(now, now, &mut rng), now);
    }
    // At the default tick a 20 ms timeout can return before its deadline.
    let tick = model(Profile::Tick);
    let early = (0..1_000).any(|i| {
        let now = START + i * 1_234_567;
        tick.wait_wake(now, now + 20 * MS as u64, &mut rng) < now + 20 * MS as u64
    });
    assert!(early, "WaitOnAddress at the default tick is never early");
}

#[test]
fn draws_follow_the_seed() {
    let a = model(Profile::HiresLoaded);
    let b = Model::new(Profile::HiresLoaded, CpuClock::Cycles, 8);
    assert_eq!(
        sleep_loop(&a, 1_000, true, START),
        sleep_loop(&a, 1_000, true, START)
    );
    assert_ne!(
        sleep_loop(&a, 1_000, true, START),
        sleep_loop(&b, 1_000, true, START)
    );
    // Threads draw different streams of one seed.
    let (mut s0, mut s1) = (Rng::new(7, 0), Rng::new(7, 1));
    assert_ne!(s0.next_u64(), s1.next_u64());
}

#[test]
fn cpu_time_is_coarse_as_windows_reports_it() {
    let ms = Duration::from_millis;
    let cycles = Model::new(Profile::Hires, CpuClock::Cycles, 1);
    // Cycle time: the total exact, the kernel part in whole quanta.
    let (user, kernel) = cycles.cpu_time(ms(40), ms(20));
    assert_eq!(
        (user + kernel, kernel),
        (ms(60), Duration::from_nanos(TICK_NS))
    );
    // GetThreadTimes alone: 10 ms of work reads 0 (PCSX2's spurious 0 %), 40 ms reads 31.25.
    let times = Model::new(Profile::Hires, CpuClock::Times, 1);
    assert_eq!(times.cpu_time(ms(10), ms(0)), (ms(0), ms(0)));
    assert_eq!(
        times.cpu_time(ms(40), ms(0)),
        (Duration::from_nanos(2 * TICK_NS), ms(0))
    );
}
