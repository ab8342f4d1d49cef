//! `--fit`: fits a scene to the reference host's rows from a few probe cells, prints the
//! fitted preset, and checks it.
//!
//! The procedure (docs/frame_sim.md says why each step is there):
//! 1. The centre is the scene's preset with any load flags given (a previous fit's printed
//!    flags re-centre it). Four parameters move it ([`PARAMS`]): `s` multiplies every burst,
//!    guest and host (the CPU a frame); `m` multiplies the game thread's burst on top (the
//!    serial critical path: fps against CPU); `h` multiplies the host threads' bursts on top
//!    (how busy the processors are while the workers poll, untouched by the arms); `linger`
//!    is the workers' polling time before they block (what `seeds` turns into yield loops:
//!    the size of the change).
//! 2. Probes: the centre and one step along each parameter, every row of the scene at its
//!    processors and cap, seeds and auto, 2 pairs of 100 frames (+25), or the `--pairs`,
//!    `--frames`, `--warmup` given.
//! 3. A local linear model per row and quantity (CPU a frame of each arm, auto's frame time,
//!    the pair-by-pair changes in CPU and in fps, p99 of each arm) from the five probes;
//!    frame times are clamped to the cap's period.
//! 4. The fit: a grid over a trust region around the centre, refined around its best point
//!    three times; the best point has the smallest worst verdict ([`Verdict::worst`]) over
//!    the predicted rows, ties broken by the sum of squared criteria.
//! 5. The check: `--check-reference` of the fitted preset in a child process (3 pairs of 240
//!    frames (+30), or the `--pairs`, `--frames`, `--warmup` given; seeds and auto unless
//!    `--arms` says otherwise).
//!
//! Invariant: the preset printed is the one the check runs (the same flags, printed), and
//! the model is never asked outside its trust region (about three probe steps from the
//! centre at most).

use crate::args::{self, Options};
use crate::arms::Arm;
use crate::cell::Cell;
use crate::figures::median;
use crate::load::Load;
use crate::reference::{self, Measured, Row, Shape, Verdict};
use crate::report;
use crate::scenes::Scene;
use std::fmt::Write as _;

/// A parameter of the fit: its name, its probe step, and its trust region, each as a
/// function of the centre's value.
pub(crate) struct Param {
    /// Its name in the output.
    pub(crate) name: &'static str,
    /// The probe's step from the centre's value `c`.
    pub(crate) step: fn(c: f64) -> f64,
    /// The trust region around the centre's value `c`: `[lo, hi]`.
    pub(crate) region: fn(c: f64) -> [f64; 2],
}

/// The parameters, in [`Params`] order. The multipliers step by a quarter (a half for the
/// host share) and stay within 0.6x to 1.6x (0.5x to 2x); the linger steps by half its
/// value (at least 1 ms) and ranges from 0 to three steps past the centre's.
pub(crate) const PARAMS: [Param; 4] = [
    Param {
        name: "s",
        step: |_| 0.25,
        region: |c| [c * 0.6, c * 1.6],
    },
    Param {
        name: "m",
        step: |_| 0.25,
        region: |c| [c * 0.6, c * 1.6],
    },
    Param {
        name: "h",
        step: |_| 0.5,
        region: |c| [c * 0.5, c * 2.0],
    },
    Param {
        name: "linger us",
        step: |c| (c * 0.5).max(1000.0),
        region: |c| [0.0, c + 3.0 * (c * 0.5).max(1000.0)],
    },
];

/// Values of the [`PARAMS`]: `s`, `m`, `h`, the linger in us.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Params(pub [f64; 4]);

impl Params {
    /// The centre load moved by these parameters.
    pub(crate) fn load(&self, centre: &Load) -> Load {
        let [s, m, h, linger] = self.0;
        let l = centre.scaled(s);
        let host = |us: u64| (us as f64 * h).round() as u64;
        Load {
            main_us: (centre.main_us as f64 * s * m).round() as u64,
            linger_us: Some(linger.max(0.0).round() as u64),
            host: crate::host::HostLoad {
                render_us: host(l.host.render_us),
                gpu_us: host(l.host.gpu_us),
                audio_us: host(l.host.audio_us),
                ..l.host
            },
            ..l
        }
    }

    fn with(mut self, k: usize, v: f64) -> Params {
        self.0[k] = v;
        self
    }
}

/// A probe: the modelled quantities of a row and their noise. The quantities are CPU ms a
/// frame of seeds and auto, auto's frame time (ms), the changes in CPU and in fps (pair by
/// pair, so that a slow stretch of the machine divides out), p99 ms of seeds and auto; each
/// is the median over the pairs, and its noise half the range of the pairs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe {
    /// The quantities.
    pub(crate) q: [f64; 7],
    /// Their noise.
    pub(crate) noise: [f64; 7],
}

impl Probe {
    /// The probe of a cell that ran seeds and auto.
    pub(crate) fn of(cell: &Cell) -> Probe {
        let s = &cell.summary;
        let runs = |arm| s.arm(arm).map_or(&[][..], |a| a.runs.as_slice());
        let pairs: Vec<[f64; 7]> = runs(Arm::Seeds)
            .iter()
            .zip(runs(Arm::Auto))
            .map(|(s, a)| {
                [
                    s.cpu_ms_frame,
                    a.cpu_ms_frame,
                    1e3 / a.fps,
                    a.cpu_ms_frame / s.cpu_ms_frame - 1.0,
                    a.fps / s.fps - 1.0,
                    s.p99,
                    a.p99,
                ]
            })
            .collect();
        let mut p = Probe {
            q: [f64::NAN; 7],
            noise: [0.0; 7],
        };
        for i in 0..7 {
            let v = pairs.iter().map(|q| q[i]);
            p.q[i] = median(v.clone());
            let (lo, hi) = v.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
                (l.min(x), h.max(x))
            });
            p.noise[i] = if pairs.is_empty() {
                0.0
            } else {
                (hi - lo) / 2.0
            };
        }
        p
    }
}

/// One row's local linear model: `q(p) = q0 + grad . (p - centre)`.
#[derive(Clone, Debug)]
pub(crate) struct RowModel {
    row: Row,
    centre: Params,
    q0: [f64; 7],
    grad: [[f64; 4]; 7],
}

impl RowModel {
    /// The model from the centre's probe and one probe along each parameter. A probe that
    /// moves a quantity by no more than the two probes' noise moves it by nothing here: a
    /// slope read from noise would be extrapolated across the whole trust region.
    fn new(row: Row, centre: Params, at_centre: &Probe, along: [(Params, Probe); 4]) -> Self {
        let mut grad = [[0.0; 4]; 7];
        for (k, (p, probe)) in along.iter().enumerate() {
            let dp = p.0[k] - centre.0[k];
            debug_assert!(dp != 0.0, "probe {k} does not move its parameter");
            for (i, g) in grad.iter_mut().enumerate() {
                let dq = probe.q[i] - at_centre.q[i];
                let resolved = dq.abs() > probe.noise[i] + at_centre.noise[i];
                g[k] = if resolved && dq.is_finite() {
                    dq / dp
                } else {
                    0.0
                };
            }
        }
        RowModel {
            row,
            centre,
            q0: at_centre.q,
            grad,
        }
    }

    /// The row's figures the model predicts at `p`, kept physical: CPU and frame times
    /// positive, no frame shorter than the cap's period (seeds' frame is auto's stretched by
    /// the change in fps, both clamped there), no p99 shorter than its arm's mean frame.
    pub(crate) fn predict(&self, p: &Params) -> Measured {
        let q: Vec<f64> = (0..7)
            .map(|i| {
                self.q0[i]
                    + (0..4)
                        .map(|k| self.grad[i][k] * (p.0[k] - self.centre.0[k]))
                        .sum::<f64>()
            })
            .collect();
        let floor = if self.row.cap > 0 {
            1e3 / f64::from(self.row.cap)
        } else {
            0.1
        };
        let d_fps = q[4].max(-0.9);
        let frame = [(q[2] * (1.0 + d_fps)).max(floor), q[2].max(floor)];
        let fps = frame.map(|t| 1e3 / t);
        Measured {
            fps,
            cpu: [q[0].max(0.1), q[1].max(0.1)],
            p99: [q[5].max(frame[0]), q[6].max(frame[1])],
            d_fps: fps[1] / fps[0] - 1.0,
            d_cpu: q[3].clamp(-0.95, 10.0),
            reactor: None,
        }
    }
}

/// How well `p` does on every row: the worst verdict, then the sum of squared criteria.
fn score(models: &[RowModel], p: &Params) -> (f64, f64) {
    models.iter().fold((0.0, 0.0), |(worst, sum), m| {
        let v = Verdict::of(&m.row, &m.predict(p));
        (
            f64::max(worst, v.worst()),
            sum + v.fps.powi(2) + v.cpu.powi(2) + v.absolute.powi(2),
        )
    })
}

/// The grid search: 9 points a parameter over its trust region, then three times again
/// over a quarter of the last span around the best point (kept inside the region).
pub(crate) fn solve(models: &[RowModel], centre: Params) -> Params {
    let region: Vec<[f64; 2]> = (0..4).map(|k| (PARAMS[k].region)(centre.0[k])).collect();
    let mut span: Vec<[f64; 2]> = region.clone();
    let mut best = (centre, score(models, &centre));
    const N: usize = 8;
    for _round in 0..4 {
        let axis = |k: usize| -> Vec<f64> {
            let [lo, hi] = span[k];
            (0..=N)
                .map(|i| lo + (hi - lo) * i as f64 / N as f64)
                .collect()
        };
        let axes: Vec<Vec<f64>> = (0..4).map(axis).collect();
        for &a in &axes[0] {
            for &b in &axes[1] {
                for &c in &axes[2] {
                    for &d in &axes[3] {
                        let p = Params([a, b, c, d]);
                        let sc = score(models, &p);
                        let better = sc.0 < best.1 .0 - 1e-12
                            || (sc.0 <= best.1 .0 + 1e-12 && sc.1 < best.1 .1);
                        if better {
                            best = (p, sc);
                        }
                    }
                }
            }
        }
        for k in 0..4 {
            let half = (span[k][1] - span[k][0]) / 8.0;
            let [lo, hi] = region[k];
            span[k] = [(best.0 .0[k] - half).max(lo), (best.0 .0[k] + half).min(hi)];
        }
    }
    best.0
}

/// The preset as the code of scenes.rs.
fn preset_code(scene: Scene, l: &Load) -> String {
    let h = &l.host;
    format!(
        "as the preset in examples/frame_sim/scenes.rs (Scene::{scene:?}):\n  \
         main_us: {}, exec_us: {}, present_us: {}, jobs: {}, job_us: {}, linger_us: {:?},\n  \
         repoll_us: {:?}, \
         host: HostLoad {{ render_threads: {:?}, render_us: {}, gpu_us: {}, audio_us: {}, \
         audio_period_us: {} }},\n",
        l.main_us,
        l.exec_us,
        l.present_us,
        l.jobs,
        l.job_us,
        l.linger_us,
        l.repoll_us,
        h.render_threads,
        h.render_us,
        h.gpu_us,
        h.audio_us,
        h.audio_period_us
    )
}

/// `--fit scene`.
///
/// # Errors
/// The centre has no linger, a row needs more processors than the process has, or a run
/// failed.
pub(crate) fn run(o: &Options, scene: Scene, out: &std::path::Path) -> Result<(), String> {
    let centre_load = if o.scene == scene {
        o.load
    } else {
        scene.load()
    };
    let Some(linger) = centre_load.linger_us else {
        return Err(
            "--fit varies the workers' linger: the centre needs one (--linger-us N)".into(),
        );
    };
    let centre = Params([1.0, 1.0, 1.0, linger as f64]);
    let step: Vec<f64> = (0..4).map(|k| (PARAMS[k].step)(centre.0[k])).collect();
    let probes: Vec<Params> = std::iter::once(centre)
        .chain((0..4).map(|k| centre.with(k, centre.0[k] + step[k])))
        .collect();
    // Short probes by default; `--pairs`, `--frames` and `--warmup` lengthen them to the
    // check's, where the changes fitted are as small as the noise of 100 frames.
    let probe_shape = Shape {
        arms: vec![Arm::Seeds, Arm::Auto],
        pairs: o.pairs.unwrap_or(2),
        warmup: o.warmup.unwrap_or(25),
        frames: o.frames.unwrap_or(100),
    };
    let rows = reference::rows(scene);
    let dir = out.join("fit").join(scene.name());
    let mut t = String::new();
    let _ = writeln!(
        t,
        "frame_sim --fit {}: centre {}\nprobes: the centre, then one step each: {}; seeds and \
         auto, {} pairs of {} frames (+{})\n",
        scene.name(),
        centre_load.describe(),
        (0..4)
            .map(|k| format!("{} {:+}", PARAMS[k].name, step[k]))
            .collect::<Vec<_>>()
            .join(", "),
        probe_shape.pairs,
        probe_shape.frames,
        probe_shape.warmup
    );
    let _ = writeln!(
        t,
        "{:<38}{:>8}{:>8}{:>13}{:>8}{:>8}{:>13}{:>8}{:>8}{:>8}",
        "row, probe",
        "s CPU",
        "a CPU",
        "d CPU",
        "s fps",
        "a fps",
        "d fps",
        "s p99",
        "a p99",
        "linger"
    );
    print!("{t}");
    let mut printed = t.len();
    let mut models = Vec::new();
    for row in &rows {
        let mut measured = Vec::new();
        for (i, p) in probes.iter().enumerate() {
            let label = format!("fit p{} probe {i}", row.procs);
            let cell = reference::run_row(
                row,
                p.load(&centre_load),
                &probe_shape,
                o.procs,
                &label,
                &dir.join(format!("p{}-probe{i}", row.procs)),
            )?;
            let m = Measured::of(&cell);
            let probe = Probe::of(&cell);
            // Printed as it comes: a fit cut short still leaves its probes.
            let line = format!(
                "{:<34}{:>8.2}{:>8.2}{:>8.1}%{:>8.2}{:>8.2}{:>7.1}%{:>8.1}{:>8.1}{:>8.0}",
                format!(
                    "{}, {}",
                    row.name(),
                    ["centre", "s+", "m+", "h+", "linger+"][i]
                ),
                m.cpu[0],
                m.cpu[1],
                m.d_cpu * 100.0,
                m.fps[0],
                m.fps[1],
                m.d_fps * 100.0,
                m.p99[0],
                m.p99[1],
                p.0[3]
            );
            println!("{line}");
            let _ = writeln!(t, "{line}");
            printed = t.len();
            measured.push((*p, probe));
        }
        models.push(RowModel::new(
            *row,
            centre,
            &measured[0].1,
            [measured[1], measured[2], measured[3], measured[4]],
        ));
    }
    let fitted = solve(&models, centre);
    let load = fitted.load(&centre_load);
    let predicted: Vec<(Row, Measured)> =
        models.iter().map(|m| (m.row, m.predict(&fitted))).collect();
    let _ = writeln!(
        t,
        "\nfit: {} (the model's worst criterion {:.2}; <= 1 met)\n\
         the model's prediction at the fit:\n{}",
        (0..4)
            .map(|k| format!("{} {:.3}", PARAMS[k].name, fitted.0[k]))
            .collect::<Vec<_>>()
            .join(", "),
        score(&models, &fitted).0,
        reference::table(&predicted, o.procs)
    );
    let flags = args::load_flags(&load).join(" ");
    let _ = writeln!(
        t,
        "fitted preset as flags (centre the next fit on it with --fit {0} FLAGS):\n  {flags}\n{1}",
        scene.name(),
        preset_code(scene, &load)
    );
    print!("{}", &t[printed..]);
    report::write(&dir.join("fit.txt"), &t)?;
    check(o, scene, &load, &dir.join("check"))
}

/// Step 5: `--check-reference` of the fitted load, in a child process of this binary, started
/// with the widest row's processors (the probes left this process restricted to the last
/// row's, and a child inherits its parent's mask).
///
/// # Errors
/// The child could not start or failed.
fn check(o: &Options, scene: Scene, load: &Load, out: &std::path::Path) -> Result<(), String> {
    let arms = o
        .arms
        .clone()
        .unwrap_or_else(|| vec![Arm::Seeds, Arm::Auto]);
    let mut args: Vec<String> = vec!["--check-reference".into(), scene.name().into()];
    args.extend(args::load_flags(load));
    for (flag, v) in [
        (
            "--arms",
            arms.iter().map(|a| a.name()).collect::<Vec<_>>().join(","),
        ),
        ("--pairs", o.pairs.unwrap_or(3).to_string()),
        ("--frames", o.frames.unwrap_or(240).to_string()),
        ("--warmup", o.warmup.unwrap_or(30).to_string()),
        ("--out", out.display().to_string()),
    ] {
        args.extend([flag.to_string(), v]);
    }
    if let Some(n) = o.procs {
        args.extend(["--procs".to_string(), n.to_string()]);
    }
    println!("\nthe check: frame_sim {}", args.join(" "));
    let widest = reference::rows(scene).iter().map(|r| r.procs).max();
    if let Some(n) = widest {
        reference::restrict(n, o.procs)?;
    }
    let exe = std::env::current_exe().map_err(|e| format!("finding this binary: {e}"))?;
    let status = std::process::Command::new(exe)
        .args(&args)
        .status()
        .map_err(|e| format!("starting the check: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the check failed ({status})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up row whose changes scale with the linger and whose CPU scales with `s` and
    /// `h`: the solver must find parameters that reproduce the game's row.
    #[test]
    fn the_solver_finds_a_known_optimum() {
        let row = reference::ROWS[0];
        let centre = Params([1.0, 1.0, 1.0, 12000.0]);
        let at = |p: Params| {
            let [s, m, h, linger] = p.0;
            let cpu_a = 30.0 * s + 10.0 * s * h;
            let cpu_s = cpu_a + 2.0 * linger / 1000.0;
            let t_a = 18.0 * s * m.sqrt();
            let t_s = t_a + 0.5 * linger / 1000.0 / h;
            Measured {
                fps: [1e3 / t_s, 1e3 / t_a],
                cpu: [cpu_s, cpu_a],
                p99: [t_s * 1.5, t_a * 1.4],
                d_fps: t_s / t_a - 1.0,
                d_cpu: cpu_a / cpu_s - 1.0,
                reactor: None,
            }
        };
        let along = [0, 1, 2, 3].map(|k| {
            let p = centre.with(k, centre.0[k] + (PARAMS[k].step)(centre.0[k]));
            (p, exact(&at(p)))
        });
        let model = RowModel::new(row, centre, &exact(&at(centre)), along);
        assert!(
            Verdict::of(&row, &at(centre)).worst() > 1.0,
            "the centre must miss"
        );
        let fitted = solve(std::slice::from_ref(&model), centre);
        let v = Verdict::of(&row, &model.predict(&fitted));
        assert!(v.worst() <= 1.0, "{fitted:?}: {v:?}");
        for (k, param) in PARAMS.iter().enumerate() {
            let [lo, hi] = (param.region)(centre.0[k]);
            assert!((lo..=hi).contains(&fitted.0[k]), "{k}: {fitted:?}");
        }
        // The model at the centre is the centre's figures.
        let c = model.predict(&centre);
        assert!((c.cpu[1] - 40.0).abs() < 1e-9 && (c.d_cpu - at(centre).d_cpu).abs() < 1e-9);
    }

    /// A probe without noise.
    fn exact(m: &Measured) -> Probe {
        Probe {
            q: [
                m.cpu[0],
                m.cpu[1],
                1e3 / m.fps[1],
                m.d_cpu,
                m.d_fps,
                m.p99[0],
                m.p99[1],
            ],
            noise: [0.0; 7],
        }
    }

    #[test]
    fn a_slope_within_the_noise_is_none_and_predictions_stay_physical() {
        let row = reference::ROWS[0];
        let centre = Params([1.0, 1.0, 1.0, 4000.0]);
        let base = Probe {
            q: [60.0, 50.0, 20.0, -0.1, 0.05, 30.0, 25.0],
            noise: [1.0, 1.0, 0.5, 0.02, 0.02, 3.0, 3.0],
        };
        let mut moved = base;
        moved.q[0] += 1.5; // within 1.0 + 1.0: noise
        moved.q[1] += 10.0; // resolved
        moved.q[6] -= 100.0; // resolved, and would drive p99 negative
        let along = [0, 1, 2, 3].map(|k| (centre.with(k, centre.0[k] + 1.0), base));
        let mut along = along;
        along[0].1 = moved;
        let model = RowModel::new(row, centre, &base, along);
        let far = centre.with(0, 3.0);
        let m = model.predict(&far);
        assert_eq!(m.cpu[0], 60.0, "a slope read from noise is none");
        assert_eq!(m.cpu[1], 70.0, "a resolved slope is kept");
        assert!(
            m.p99[1] >= 1e3 / m.fps[1],
            "p99 is never under the mean frame"
        );
        assert!(m.fps[1] <= 60.0 + 1e-9, "never over the cap");
    }

    #[test]
    fn params_move_the_load_as_documented() {
        let centre = Scene::Hyrule.load();
        let l = Params([2.0, 1.5, 0.5, 1234.4]).load(&centre);
        assert_eq!(l.main_us, centre.main_us * 3);
        assert_eq!(l.exec_us, centre.exec_us * 2);
        assert_eq!(l.host.render_us, centre.host.render_us);
        assert_eq!(l.host.gpu_us, centre.host.gpu_us);
        assert_eq!(l.linger_us, Some(1234));
        assert_eq!((l.jobs, l.fps), (centre.jobs, centre.fps));
    }
}
