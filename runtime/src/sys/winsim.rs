//! The Windows simulation (`--cfg hos_winsim`, Linux only): the sys contract with Windows'
//! timing, so that hos's policies can be run against it where no Windows machine is.
//!
//! Invariant: every wait is a real Linux wait, to an instant the model drew; nothing returns
//! before the instant Windows would have returned at. A timer sleep ([`sleep_until`]) really
//! blocks to a drawn wake at or after its deadline (`clock_nanosleep(TIMER_ABSTIME)` at 1 ns
//! slack); a timed futex wait ([`futex_wait`]) blocks on the real futex to the drawn timeout,
//! so wakes by [`futex_wake`] stay instant, as `WakeByAddressAll`'s do; a precise wait
//! ([`wait_precise`]) blocks on the real futex to a drawn timer wake, as a timer and an event
//! waited on together would; a yield
//! ([`yield_now`]) that the model says lost the processor sleeps the drawn time. Linux's own
//! error (microseconds) is small beside the modelled one (0.3 ms and more).
//!
//! The clocks (`now`, `ticks`), the wake, the processor count and the affinity are Linux's
//! (docs/windows.md says what Windows' would differ in). CPU time is Linux's, coarsened as
//! Windows reports it (`profile.rs`, [`CpuClock`]); voluntary switches read 0, as Windows
//! reports none. Scheduler slices do not exist (`set_wake_slice` is `false`). The timer
//! slack is a per-thread value that hos keeps itself, as the Windows backend would: 1 us or
//! less selects the high-resolution timer where the profile has one.
//!
//! The profile, seed and CPU clock are read once, at the first use, from the process
//! environment (HOS_WINSIM_PROFILE, HOS_WINSIM_SEED, HOS_WINSIM_CPU; docs/switches.md): the
//! OS layer is the process's, below every runtime, so a C host sets them as it sets any
//! variable, before its first hos call. A value that is not accepted leaves the default in
//! place and fails every runtime's build ([`switch_error`]).

#[cfg(test)]
mod fits;
mod profile;

pub use super::linux::{
    futex_wake, logical_processors, now, prefetch_write, set_affinity_first, tick_scale, ticks,
};
pub use profile::{CpuClock, Model, Profile, Rng};

use super::{linux, CpuTime};
use crate::sync::atomic::AtomicU32;
use std::cell::{Cell, RefCell};
use std::sync::LazyLock;

/// Which implementation this is, for logs and stats.
pub const KIND: &str = "winsim";

/// The profile's switch.
pub const PROFILE_SWITCH: &str = "HOS_WINSIM_PROFILE";
/// The seed's switch.
pub const SEED_SWITCH: &str = "HOS_WINSIM_SEED";
/// The CPU clock's switch.
pub const CPU_SWITCH: &str = "HOS_WINSIM_CPU";

/// The profile where none is set: what the Windows backend aims at.
const DEFAULT_PROFILE: Profile = Profile::Hires;
/// The seed where none is set.
const DEFAULT_SEED: u64 = 1;
/// A thread's timer slack until it sets one (Linux's default, so that hos's sleep paths
/// treat it alike): a plain timer.
const DEFAULT_SLACK_NS: u64 = 50_000;
/// The largest slack that selects the high-resolution timer (`TolerableDelay` 0).
const HIGH_RES_SLACK_NS: u64 = 1_000;

/// A switch value that is not accepted: (switch, value, what is accepted).
pub type SwitchError = (&'static str, String, &'static str);

/// The model the process runs under, with the first switch value it refused.
struct Sim {
    model: Model,
    error: Option<SwitchError>,
}

static SIM: LazyLock<Sim> = LazyLock::new(|| {
    read_switches(|name| match std::env::var(name) {
        Ok(v) => Some(v),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(v)) => Some(v.to_string_lossy().into_owned()),
    })
});

/// The model of the switches `read` gives (a name to its value, `None` if unset); a value
/// that is not accepted keeps that part's default and is the error.
fn read_switches(read: impl Fn(&str) -> Option<String>) -> Sim {
    let mut error = None;
    let mut refuse = |switch, raw: String, accepted| {
        error.get_or_insert((switch, raw, accepted));
    };
    let profile = read(PROFILE_SWITCH).map_or(DEFAULT_PROFILE, |raw| {
        Profile::parse(&raw).unwrap_or_else(|| {
            refuse(
                PROFILE_SWITCH,
                raw,
                "one of tick, 1ms, 0.5ms, hires, hires-loaded, minimized",
            );
            DEFAULT_PROFILE
        })
    });
    let seed = read(SEED_SWITCH).map_or(DEFAULT_SEED, |raw| {
        raw.trim().parse().unwrap_or_else(|_| {
            refuse(
                SEED_SWITCH,
                raw,
                "a decimal integer in 0..=18446744073709551615",
            );
            DEFAULT_SEED
        })
    });
    let cpu = read(CPU_SWITCH).map_or(CpuClock::Cycles, |raw| {
        CpuClock::parse(&raw).unwrap_or_else(|| {
            refuse(CPU_SWITCH, raw, "one of cycles, times");
            CpuClock::Cycles
        })
    });
    Sim {
        model: Model::new(profile, cpu, seed),
        error,
    }
}

/// The model this process runs under.
pub fn model() -> Model {
    SIM.model
}

/// The first HOS_WINSIM_* value that was not accepted, if any: a runtime's build fails with it.
pub fn switch_error() -> Option<SwitchError> {
    SIM.error.clone()
}

std::thread_local! {
    /// This thread's draws: its own stream of the seed.
    static RNG: RefCell<Option<Rng>> = const { RefCell::new(None) };
    /// This thread's timer slack, as hos set it.
    static SLACK: Cell<u64> = const { Cell::new(DEFAULT_SLACK_NS) };
    /// Whether this thread's real Linux timer slack is at 1 ns yet.
    static REAL_SLACK: Cell<bool> = const { Cell::new(false) };
}

/// `f` on the model and this thread's generator (a thread being torn down draws from a
/// stream of its own).
fn draw<T>(f: impl FnOnce(&Model, &mut Rng) -> T) -> T {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STREAMS: AtomicU64 = AtomicU64::new(0);
    let model = &SIM.model;
    let fresh = || Rng::new(model.seed, STREAMS.fetch_add(1, Ordering::Relaxed));
    let mut f = Some(f);
    let drawn = RNG.try_with(|cell| {
        let mut rng = cell.borrow_mut();
        let rng = rng.get_or_insert_with(fresh);
        (f.take().expect("called once"))(model, rng)
    });
    // Relaxed (above): a stream number only has to be unique.
    drawn.unwrap_or_else(|_| (f.take().expect("not called"))(model, &mut fresh()))
}

/// Readies this thread's real timers to fire at the drawn instant (1 ns slack), once.
fn exact_real_timers() {
    let _ = REAL_SLACK.try_with(|set| {
        if !set.get() {
            set.set(linux::set_timer_slack_ns(1));
        }
    });
}

/// Really blocks until the `now()` value `wake`.
fn block_until(wake: u64) {
    exact_real_timers();
    linux::sleep_until(wake);
}

/// Sleeps while `*word == expected`, until woken, until the modelled `WaitOnAddress` timeout
/// for `deadline` (whole milliseconds on the tick: it may come before the deadline), or
/// spuriously.
pub fn futex_wait(word: &AtomicU32, expected: u32, deadline: Option<u64>) {
    let wake = deadline.map(|d| {
        let t = now();
        draw(|m, rng| m.wait_wake(t, d, rng))
    });
    exact_real_timers();
    linux::futex_wait(word, expected, wake);
}

/// The reactor's precise wait and a slack-1 sleep are the same modelled timer (a
/// high-resolution waitable timer where the profile has one): one lateness estimate serves
/// both.
pub const PRECISE_WAIT_SHARES_TIMER: bool = true;

/// Sleeps while `*word == expected`, until woken, until the drawn wake of a timer to
/// `deadline`, or spuriously: `WaitForMultipleObjects` on the thread's high-resolution
/// waitable timer (a plain one where the profile has none, re-armed until due) and an
/// auto-reset event that the nudge sets. The real futex carries the wake, so a
/// [`futex_wake`] ends it at once; the timeout is a timer's, never a millisecond
/// `WaitOnAddress` on the tick.
pub fn wait_precise(word: &AtomicU32, expected: u32, deadline: Option<u64>) {
    let wake = deadline.map(|d| {
        let t = now();
        draw(|m, rng| m.sleep_wake(t, d, true, rng))
    });
    exact_real_timers();
    linux::futex_wait(word, expected, wake);
}

/// One modelled timer sleep to `deadline`: returns at the drawn wake, never early.
pub fn sleep_until(deadline: u64) {
    let t = now();
    if t >= deadline {
        return;
    }
    let high_res = SLACK.try_with(Cell::get).unwrap_or(DEFAULT_SLACK_NS) <= HIGH_RES_SLACK_NS;
    block_until(draw(|m, rng| m.sleep_wake(t, deadline, high_res, rng)));
}

/// This thread's timer slack as hos set it (it selects the timer, not Linux's slack).
pub fn timer_slack_ns() -> Option<u64> {
    SLACK.try_with(Cell::get).ok()
}

/// Keeps this thread's timer slack: 1 us or less selects the high-resolution timer.
pub fn set_timer_slack_ns(ns: u64) -> bool {
    SLACK.try_with(|s| s.set(ns.max(1))).is_ok()
}

/// Windows has no scheduler slices: nothing is set.
pub fn set_wake_slice(_tid: u64, _ns: u64) -> bool {
    false
}

/// Windows has no scheduler slices: none is reported.
pub fn wake_slice_ns(_tid: u64) -> Option<u64> {
    None
}

/// Linux's exact times as Windows reports them; no voluntary switches.
fn as_windows(c: CpuTime) -> CpuTime {
    let (user, kernel) = SIM.model.cpu_time(c.user, c.kernel);
    CpuTime {
        user,
        kernel,
        voluntary_switches: 0,
    }
}

/// This thread's CPU time, as Windows reports it.
pub fn thread_cpu() -> CpuTime {
    as_windows(linux::thread_cpu())
}

/// The process's CPU time, as Windows reports it.
pub fn process_cpu() -> CpuTime {
    as_windows(linux::process_cpu())
}

/// Reads one thread's CPU time from any thread, as Windows reports it.
#[derive(Clone, Copy, Debug)]
pub struct ThreadClock(linux::ThreadClock);

impl ThreadClock {
    /// The calling thread's clock; make it once per thread and keep it.
    pub fn current() -> Self {
        ThreadClock(linux::ThreadClock::current())
    }

    /// The OS thread id.
    pub fn tid(&self) -> u64 {
        self.0.tid()
    }

    /// The thread's CPU time.
    pub fn read(&self) -> CpuTime {
        as_windows(self.0.read())
    }
}

/// `SwitchToThread`: a Linux yield, or under load the drawn time off the processor.
pub fn yield_now() {
    match draw(Model::yield_delay) {
        0 => linux::yield_now(),
        off => block_until(now().saturating_add(off)),
    }
}

#[cfg(test)]
mod tests {
    use super::profile::TICK_05_MS_NS;
    use super::*;

    #[test]
    fn switches_are_read_and_bad_values_named() {
        let sim = read_switches(|_| None);
        assert_eq!(sim.model, Model::new(Profile::Hires, CpuClock::Cycles, 1));
        assert_eq!(sim.error, None);

        let given = |name: &str| match name {
            PROFILE_SWITCH => Some(" Hires-Loaded ".to_string()),
            SEED_SWITCH => Some("42".to_string()),
            CPU_SWITCH => Some("TIMES".to_string()),
            _ => None,
        };
        let sim = read_switches(given);
        assert_eq!(
            sim.model,
            Model::new(Profile::HiresLoaded, CpuClock::Times, 42)
        );
        assert_eq!(sim.error, None);

        let bad = |name: &str| match name {
            PROFILE_SWITCH => Some("2ms".to_string()),
            SEED_SWITCH => Some("-1".to_string()),
            _ => None,
        };
        let sim = read_switches(bad);
        let (switch, value, accepted) = sim.error.expect("a refused value");
        assert_eq!((switch, value.as_str()), (PROFILE_SWITCH, "2ms"));
        assert!(accepted.contains("hires-loaded"));
        assert_eq!(sim.model, Model::new(DEFAULT_PROFILE, CpuClock::Cycles, 1));
    }

    #[test]
    fn every_profile_name_parses_back() {
        for p in Profile::ALL {
            assert_eq!(Profile::parse(p.name()), Some(p));
        }
        assert_eq!(Profile::parse("15.6ms"), None);
    }

    #[test]
    fn slack_selects_the_timer_and_is_kept_per_thread() {
        std::thread::spawn(|| {
            assert_eq!(timer_slack_ns(), Some(DEFAULT_SLACK_NS));
            assert!(set_timer_slack_ns(0));
            assert_eq!(timer_slack_ns(), Some(1));
        })
        .join()
        .unwrap();
        assert!(!set_wake_slice(0, 300_000));
        assert_eq!(wake_slice_ns(0), None);
    }

    #[test]
    fn a_precise_wait_is_a_timer_not_a_millisecond_timeout() {
        // Under `hires` a 100 us deadline is served by the 0.5 ms high-resolution grid
        // (0 to 0.5 ms late), where a `WaitOnAddress` timeout of a whole millisecond on the
        // 0.5 ms tick was 0.48 ms late at best and 0.68 ms at the median.
        if model().profile != Profile::Hires {
            return;
        }
        let word = AtomicU32::new(0);
        let mut late: Vec<u64> = (0..21)
            .map(|_| {
                let deadline = now() + 100_000;
                while now() < deadline {
                    wait_precise(&word, 0, Some(deadline));
                }
                now() - deadline
            })
            .collect();
        late.sort_unstable();
        assert!(
            late[10] < TICK_05_MS_NS,
            "median {} ns late: {late:?}",
            late[10]
        );
    }

    #[test]
    fn a_real_sleep_lasts_at_least_its_drawn_wake() {
        // The real block: whatever the profile, the sleep ends at or after its deadline.
        for ask in [1_000u64, 20_000, 600_000] {
            let deadline = now() + ask;
            sleep_until(deadline);
            assert!(now() >= deadline);
        }
    }
}
