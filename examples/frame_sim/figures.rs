//! The figures a run reports (docs/design.md section 11), and the medians and ratios over pairs.
//!
//! Invariant: every figure of a run comes from that run's window alone (present times of
//! its measured frames, deltas between its two snapshots); a median is over pairs of one
//! arm, and a ratio is taken pair by pair against the baseline arm's run of the same pair
//! before its median is taken, so a slow stretch of the machine divides out.

use crate::arms::{Arm, Run};
use crate::group::Group;
use crate::load::Load;
use hos::CpuTime;

/// One group's figures over the window, summed over its threads, per second of wall time.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GroupFigures {
    /// Threads counted.
    pub(crate) threads: usize,
    /// User + kernel CPU seconds a second.
    pub(crate) cpu_s: f64,
    /// Kernel CPU seconds a second.
    pub(crate) kernel_s: f64,
    /// Guest sleeps a second.
    pub(crate) sleeps_s: f64,
    /// Voluntary context switches a second.
    pub(crate) switches_s: f64,
    /// User + kernel CPU, ms a frame (over the frames presented in the window).
    pub(crate) ms_frame: f64,
}

/// Groups in a run's figures.
pub(crate) const GROUPS: usize = Group::ALL.len();

/// The figures of one run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Figures {
    /// Measured frames.
    pub(crate) frames: usize,
    /// The window, seconds of wall time.
    pub(crate) window_s: f64,
    /// Frames a second over the measured frames.
    pub(crate) fps: f64,
    /// Process user + kernel CPU over the window, ms a frame.
    pub(crate) cpu_ms_frame: f64,
    /// The arm's own cost: `cpu_ms_frame` less the load's bursts a frame
    /// ([`Load::bursts_ms`]): what the runtime, its sleeps and polls, and the OS spent.
    pub(crate) own_ms_frame: f64,
    /// Frame time quantiles and the worst, ms.
    pub(crate) p50: f64,
    /// See `p50`.
    pub(crate) p95: f64,
    /// See `p50`.
    pub(crate) p99: f64,
    /// See `p50`.
    pub(crate) worst: f64,
    /// Frames over 50, 100 and 250 ms.
    pub(crate) over: [u64; 3],
    /// Virtual-core acquisitions that waited, a frame.
    pub(crate) vcore_waits: f64,
    /// Kicks a frame: by priority, slice and first.
    pub(crate) kicks: [f64; 3],
    /// Escapes a frame.
    pub(crate) escapes: f64,
    /// Escapes in the window.
    pub(crate) escapes_total: u64,
    /// The kick's grace the runtime reports (`Stats::vcore_bound`), us: 0 is the strict bound
    /// (never more guest threads run guest code than there are virtual cores, escapes aside)
    /// or no virtual cores; above 0 each revoke relaxes it.
    pub(crate) grace_us: f64,
    /// Cores taken after a kick's grace, a frame: the relaxations of the bound.
    pub(crate) revokes: f64,
    /// Idle polls promoted by work a frame, and of them those whose promoter deferred the
    /// promotion until it gave its core up (HOS_IDLE_POLL_DEFER).
    pub(crate) promoted: [f64; 2],
    /// Wake slices (HOS_WAKE_SLICE_US) the OS took and ignored, the whole run (they are asked
    /// when the threads start, before the window).
    pub(crate) wake_slices: [u64; 2],
    /// By group, in [`Group::ALL`] order.
    pub(crate) groups: [GroupFigures; GROUPS],
    /// Job pickup latency p50 and p99, us.
    pub(crate) job_pickup: [f64; 2],
    /// Executor message pickup latency p50 and p99, us.
    pub(crate) exec_pickup: [f64; 2],
    /// The runtime's calibration at the window's end: its OS timer's lateness, us.
    pub(crate) timer_late_us: f64,
    /// The same: the latency of waking a parked thread, us.
    pub(crate) wake_us: f64,
    /// The same: the precise path it chose.
    pub(crate) precise: hos::PrecisePath,
}

/// Frame-time thresholds of `Figures::over`, ms.
pub(crate) const OVER_MS: [f64; 3] = [50.0, 100.0, 250.0];

/// The nearest-rank quantile `q` of sorted values.
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The median (the mean of the middle two for an even count); NaN for none.
pub(crate) fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Figures {
    /// The figures of `run`, a run of `load`.
    pub(crate) fn of(run: &Run, load: &Load) -> Figures {
        let mut sorted = run.frame_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let frames = sorted.len();
        let total_ms: f64 = run.frame_ms.iter().sum();
        let (b, a) = (&run.before, &run.after);
        let per_frame = |after: u64, before: u64| {
            after.saturating_sub(before) as f64 / run.window_frames as f64
        };
        let secs = run.window.as_secs_f64().max(1e-9);
        let mut groups = [GroupFigures::default(); GROUPS];
        let mut add = |group: Group, cpu: CpuTime, sleeps: u64| {
            let r = &mut groups[group as usize];
            r.threads += 1;
            r.cpu_s += cpu.total().as_secs_f64() / secs;
            r.kernel_s += cpu.kernel.as_secs_f64() / secs;
            r.sleeps_s += sleeps as f64 / secs;
            r.switches_s += cpu.voluntary_switches as f64 / secs;
            r.ms_frame += cpu.total().as_secs_f64() * 1e3 / run.window_frames as f64;
        };
        for t in &a.threads {
            let Some(group) = Group::of_guest(&t.name) else {
                continue;
            };
            // Matched by name (unique in the load); a thread missing before counts from 0.
            let old = b.threads.iter().find(|o| o.name == t.name);
            let cpu = old.map_or(t.cpu, |o| t.cpu.since(&o.cpu));
            let sleeps = t.sleeps.saturating_sub(old.map_or(0, |o| o.sleeps));
            add(group, cpu, sleeps);
        }
        add(Group::Reactor, a.reactor_cpu.since(&b.reactor_cpu), 0);
        // Host threads: the same slots in the same order at both ends.
        for ((group, after), (_, before)) in run.host_after.iter().zip(&run.host_before) {
            add(*group, after.since(before), 0);
        }
        let cpu_ms_frame = a.process_cpu.since(&b.process_cpu).total().as_secs_f64() * 1e3
            / run.window_frames as f64;
        Figures {
            frames,
            window_s: run.window.as_secs_f64(),
            fps: frames as f64 / (total_ms / 1e3),
            cpu_ms_frame,
            own_ms_frame: cpu_ms_frame - load.bursts_ms(run.window, run.window_frames),
            p50: quantile(&sorted, 0.50),
            p95: quantile(&sorted, 0.95),
            p99: quantile(&sorted, 0.99),
            worst: sorted.last().copied().unwrap_or(f64::NAN),
            over: OVER_MS.map(|ms| sorted.iter().filter(|&&x| x > ms).count() as u64),
            vcore_waits: per_frame(a.vcore_waits, b.vcore_waits),
            kicks: [
                per_frame(a.vcore_kicks_priority, b.vcore_kicks_priority),
                per_frame(a.vcore_kicks_slice, b.vcore_kicks_slice),
                per_frame(a.vcore_kicks_first, b.vcore_kicks_first),
            ],
            escapes: per_frame(a.vcore_escapes, b.vcore_escapes),
            promoted: [
                per_frame(a.idle_promoted, b.idle_promoted),
                per_frame(a.idle_deferred, b.idle_deferred),
            ],
            escapes_total: a.vcore_escapes.saturating_sub(b.vcore_escapes),
            grace_us: match a.vcore_bound {
                hos::Bound::Relaxed { grace } => grace.as_secs_f64() * 1e6,
                hos::Bound::Strict | hos::Bound::Off => 0.0,
            },
            revokes: per_frame(a.vcore_revokes, b.vcore_revokes),
            wake_slices: [a.wake_slices, a.wake_slices_ignored],
            groups,
            job_pickup: run.pickup.job,
            exec_pickup: run.pickup.exec,
            timer_late_us: a.calibration.timer_lateness_ns as f64 / 1e3,
            wake_us: a.calibration.wake_latency_ns as f64 / 1e3,
            precise: a.calibration.precise,
        }
    }
}

/// One row of the report: a key for scripts, a label for people, a reader.
pub(crate) struct Metric {
    /// JSON key (snake case).
    pub(crate) key: String,
    /// Table label.
    pub(crate) label: String,
    /// Decimals in the table.
    pub(crate) digits: usize,
    /// The thread group it is a figure of, if any.
    pub(crate) group: Option<Group>,
    /// Reads the figure of a run.
    pub(crate) get: Box<dyn Fn(&Figures) -> f64>,
}

fn metric(
    key: &str,
    label: &str,
    digits: usize,
    get: impl Fn(&Figures) -> f64 + 'static,
) -> Metric {
    Metric {
        key: key.into(),
        label: label.into(),
        digits,
        group: None,
        get: Box::new(get),
    }
}

/// Every row, in report order.
pub(crate) fn metrics() -> Vec<Metric> {
    let mut m = vec![
        metric("fps", "fps", 2, |f| f.fps),
        metric("cpu_ms_per_frame", "CPU ms/frame", 2, |f| f.cpu_ms_frame),
        metric("own_cost_ms_per_frame", "own cost ms/frame", 2, |f| {
            f.own_ms_frame
        }),
        metric("p50_ms", "frame p50 ms", 2, |f| f.p50),
        metric("p95_ms", "frame p95 ms", 2, |f| f.p95),
        metric("p99_ms", "frame p99 ms", 2, |f| f.p99),
        metric("worst_ms", "frame worst ms", 2, |f| f.worst),
    ];
    for (i, ms) in OVER_MS.iter().enumerate() {
        m.push(metric(
            &format!("frames_over_{ms}_ms"),
            &format!("frames > {ms} ms"),
            1,
            move |f| f.over[i] as f64,
        ));
    }
    m.extend([
        metric("vcore_waits_per_frame", "vcore waits/frame", 2, |f| {
            f.vcore_waits
        }),
        metric("vcore_kicks_per_frame", "vcore kicks/frame", 3, |f| {
            f.kicks.iter().sum()
        }),
        metric("vcore_kicks_priority_per_frame", "  by priority", 3, |f| {
            f.kicks[0]
        }),
        metric("vcore_kicks_slice_per_frame", "  by slice", 3, |f| {
            f.kicks[1]
        }),
        metric("vcore_kicks_first_per_frame", "  by first", 3, |f| {
            f.kicks[2]
        }),
        metric("vcore_escapes_per_frame", "vcore escapes/frame", 4, |f| {
            f.escapes
        }),
        metric("vcore_escapes", "vcore escapes", 0, |f| {
            f.escapes_total as f64
        }),
        metric("vcore_grace_us", "vcore grace us (0: strict)", 0, |f| {
            f.grace_us
        }),
        metric("vcore_revokes_per_frame", "vcore revokes/frame", 3, |f| {
            f.revokes
        }),
        metric(
            "idle_promoted_per_frame",
            "idle polls promoted/frame",
            2,
            |f| f.promoted[0],
        ),
        metric("idle_deferred_per_frame", "  deferred", 2, |f| {
            f.promoted[1]
        }),
        metric("wake_slices", "wake slices taken", 0, |f| {
            f.wake_slices[0] as f64
        }),
        metric("wake_slices_ignored", "wake slices ignored", 0, |f| {
            f.wake_slices[1] as f64
        }),
        metric("job_pickup_p50_us", "job pickup p50 us", 1, |f| {
            f.job_pickup[0]
        }),
        metric("job_pickup_p99_us", "job pickup p99 us", 1, |f| {
            f.job_pickup[1]
        }),
        metric("exec_pickup_p50_us", "exec msg pickup p50 us", 1, |f| {
            f.exec_pickup[0]
        }),
        metric("exec_pickup_p99_us", "exec msg pickup p99 us", 1, |f| {
            f.exec_pickup[1]
        }),
    ]);
    for group in Group::ALL {
        let i = group as usize;
        let n = group.name();
        let mut rows = vec![
            metric(
                &format!("{n}_cpu_s_per_s"),
                &format!("{n} CPU s/s"),
                3,
                move |f| f.groups[i].cpu_s,
            ),
            metric(
                &format!("{n}_kernel_s_per_s"),
                &format!("{n} kernel s/s"),
                3,
                move |f| f.groups[i].kernel_s,
            ),
            metric(
                &format!("{n}_cpu_ms_per_frame"),
                &format!("{n} CPU ms/frame"),
                2,
                move |f| f.groups[i].ms_frame,
            ),
        ];
        if group.is_guest() {
            rows.push(metric(
                &format!("{n}_sleeps_per_s"),
                &format!("{n} sleeps/s"),
                0,
                move |f| f.groups[i].sleeps_s,
            ));
        }
        rows.push(metric(
            &format!("{n}_switches_per_s"),
            &format!("{n} vol. switches/s"),
            0,
            move |f| f.groups[i].switches_s,
        ));
        m.extend(rows.into_iter().map(|r| Metric {
            group: Some(group),
            ..r
        }));
    }
    m.push(metric("timer_late_us", "calib. timer late us", 1, |f| {
        f.timer_late_us
    }));
    m.push(metric("wake_us", "calib. wake us", 1, |f| f.wake_us));
    m.push(metric("frames", "measured frames", 0, |f| f.frames as f64));
    m.push(metric("window_s", "window s", 2, |f| f.window_s));
    m
}

/// The rows whose per-pair ratios to the bases are reported (the verdict's figures).
pub(crate) const RATIO_KEYS: [&str; 4] =
    ["fps", "p99_ms", "cpu_ms_per_frame", "own_cost_ms_per_frame"];

/// Ratios of [`RATIO_KEYS`], in that order.
pub(crate) type Ratios = [f64; RATIO_KEYS.len()];

/// One arm over its pairs.
pub(crate) struct ArmSummary {
    /// The arm.
    pub(crate) arm: Arm,
    /// Its runs' figures, by pair.
    pub(crate) runs: Vec<Figures>,
    /// The median over pairs of each metric, in `metrics()` order.
    pub(crate) median: Vec<f64>,
    /// By base, in [`Summary::bases`] order: the median over pairs of the ratio to it.
    pub(crate) ratios: Vec<Ratios>,
}

/// Every arm over its pairs, against its bases.
pub(crate) struct Summary {
    /// What ratios are taken against: `seeds` (the old design) and `auto` (the reference
    /// host today), those of them that ran, in that order; the first arm if neither did.
    pub(crate) bases: Vec<Arm>,
    /// The rows.
    pub(crate) metrics: Vec<Metric>,
    /// By arm, in run order.
    pub(crate) arms: Vec<ArmSummary>,
}

impl Summary {
    /// Summarizes runs of `arms`, each holding its runs' figures by pair.
    pub(crate) fn new(arms: Vec<(Arm, Vec<Figures>)>) -> Summary {
        let metrics = metrics();
        let mut bases: Vec<Arm> = [Arm::Seeds, Arm::Auto]
            .into_iter()
            .filter(|b| arms.iter().any(|(a, _)| a == b))
            .collect();
        if bases.is_empty() {
            bases.push(arms[0].0);
        }
        let arms: Vec<ArmSummary> = arms
            .into_iter()
            .map(|(arm, runs)| ArmSummary {
                arm,
                median: metrics
                    .iter()
                    .map(|m| median(runs.iter().map(|f| (m.get)(f))))
                    .collect(),
                ratios: Vec::new(),
                runs,
            })
            .collect();
        let mut s = Summary {
            bases,
            metrics,
            arms,
        };
        for i in 0..s.arms.len() {
            let arm = s.arms[i].arm;
            s.arms[i].ratios = s.bases.iter().map(|&b| s.ratios(arm, b)).collect();
        }
        s
    }

    /// The median over pairs of `arm`'s [`RATIO_KEYS`] ratios to `base`.
    pub(crate) fn ratios(&self, arm: Arm, base: Arm) -> Ratios {
        RATIO_KEYS.map(|k| self.ratio(arm, base, k))
    }

    /// The metric of `key`.
    ///
    /// # Panics
    /// No metric has that key (a typo in frame_sim's own code).
    pub(crate) fn metric(&self, key: &str) -> (usize, &Metric) {
        self.metrics
            .iter()
            .enumerate()
            .find(|(_, m)| m.key == key)
            .unwrap_or_else(|| panic!("no metric {key}"))
    }

    /// The arm's summary, if it ran.
    pub(crate) fn arm(&self, arm: Arm) -> Option<&ArmSummary> {
        self.arms.iter().find(|a| a.arm == arm)
    }

    /// The median over pairs of `arm`'s metric `key`; NaN if the arm did not run.
    pub(crate) fn median(&self, arm: Arm, key: &str) -> f64 {
        let (i, _) = self.metric(key);
        self.arm(arm).map_or(f64::NAN, |a| a.median[i])
    }

    /// The median over pairs of `arm`'s metric `key` divided by `base`'s in the same pair;
    /// NaN if either did not run.
    pub(crate) fn ratio(&self, arm: Arm, base: Arm, key: &str) -> f64 {
        self.pair_ratios(arm, base, key)
            .map_or(f64::NAN, |r| median(r.iter().copied()))
    }

    /// `arm`'s metric `key` divided by `base`'s, pair by pair (only finite ratios).
    pub(crate) fn pair_ratios(&self, arm: Arm, base: Arm, key: &str) -> Option<Vec<f64>> {
        let (_, m) = self.metric(key);
        let (a, b) = (self.arm(arm)?, self.arm(base)?);
        Some(
            a.runs
                .iter()
                .zip(&b.runs)
                .map(|(r, b)| (m.get)(r) / (m.get)(b))
                .filter(|x| x.is_finite())
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_medians() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median([]).is_nan());
    }

    #[test]
    fn own_cost_is_cpu_less_the_bursts_and_ratios_go_to_seeds_and_auto() {
        let load = crate::scenes::Scene::Field.load();
        let frame = load.cpu_per_frame().as_secs_f64() * 1e3;
        assert!(frame > 5.0, "{frame}");
        let second = std::time::Duration::from_secs(1);
        assert!(
            (load.bursts_ms(second, 60) - frame).abs() < 1e-9,
            "no audio"
        );
        let mut audio = load;
        audio.host.audio_us = 500;
        audio.host.audio_period_us = 5_000;
        // 200 periods of 0.5 ms over 100 frames: 1 ms a frame more.
        let b = audio.bursts_ms(second, 100);
        assert!((b - frame - 1.0).abs() < 1e-9, "{b}");
        let run = |cpu: f64, own: f64| Figures {
            fps: 60.0,
            cpu_ms_frame: cpu,
            own_ms_frame: own,
            ..Figures::default()
        };
        let s = Summary::new(vec![
            (Arm::Seeds, vec![run(20.0, 4.0)]),
            (Arm::Auto, vec![run(12.0, 2.0)]),
            (Arm::Reactor, vec![run(10.0, 1.0)]),
        ]);
        assert_eq!(s.bases, vec![Arm::Seeds, Arm::Auto]);
        assert_eq!(s.median(Arm::Reactor, "own_cost_ms_per_frame"), 1.0);
        let r = &s.arm(Arm::Reactor).unwrap().ratios;
        assert_eq!((r[0][2], r[0][3]), (0.5, 0.25), "to seeds: CPU, own cost");
        assert_eq!((r[1][2], r[1][3]), (10.0 / 12.0, 0.5), "to auto");
        let alone = Summary::new(vec![(Arm::Reactor, vec![run(1.0, 1.0)])]);
        assert_eq!(alone.bases, vec![Arm::Reactor]);
    }
}
