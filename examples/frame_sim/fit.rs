//! `--fit`: fits a scene to the reference host's rows from a few probe cells, prints the
//! fitted preset, and checks it.
//!
//! The procedure (docs/frame_sim.md says why each step is there):
//! 1. The centre is the scene's preset with any load flags given (a previous fit's printed
//!    flags re-centre it). Three parameters move it: `s` multiplies every burst, guest and
//!    host (the CPU a frame); `m` multiplies the game thread's burst on top (the serial
//!    critical path, so fps against CPU); `linger` is the workers' polling time before they
//!    block (what `seeds` turns into yield loops, so the size of the change).
//! 2. Probes: the centre and one step along each parameter, every row of the scene at its
//!    processors and cap, seeds and auto, 2 pairs of 120 frames.
//! 3. A local linear model per row and quantity (CPU a frame and frame time of each arm, the
//!    pair-by-pair change in CPU, p99 of each arm) from the four probes; frame time is
//!    clamped to the cap's period.
//! 4. The fit: on a grid over a trust region around the centre, the parameters whose
//!    predicted rows have the smallest worst verdict ([`Verdict::worst`]), ties broken by the
//!    sum of squared criteria.
//! 5. The check: every row run with the fitted preset (3 pairs of 240 frames, or the
//!    `--pairs`, `--frames`, `--warmup` given), beside the game, as `--check-reference`.
//!
//! Invariant: the preset printed is the one the check ran, and the model is never asked
//! outside its trust region (at most about three probe steps from the centre).

use crate::args::Options;
use crate::arms::Arm;
use crate::load::Load;
use crate::reference::{self, Measured, Row, Shape, Verdict};
use crate::report;
use crate::scenes::Scene;
use std::fmt::Write as _;

/// The fitted parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Every burst is multiplied by this.
    pub s: f64,
    /// The game thread's burst is multiplied by this on top.
    pub m: f64,
    /// The workers' linger, us.
    pub linger_us: f64,
}

impl Params {
    fn get(&self, k: usize) -> f64 {
        [self.s, self.m, self.linger_us][k]
    }

    fn with(mut self, k: usize, v: f64) -> Params {
        match k {
            0 => self.s = v,
            1 => self.m = v,
            _ => self.linger_us = v,
        }
        self
    }

    /// The centre load moved by these parameters.
    pub fn load(&self, centre: &Load) -> Load {
        Load {
            main_us: (centre.main_us as f64 * self.s * self.m).round() as u64,
            linger_us: Some(self.linger_us.max(0.0).round() as u64),
            ..centre.scaled(self.s)
        }
    }
}

/// The probe steps: `s` and `m` by a quarter, the linger by half its value (at least 1 ms).
fn steps(centre: &Params) -> [f64; 3] {
    [0.25, 0.25, (centre.linger_us * 0.5).max(1000.0)]
}

/// The modelled quantities of a row: CPU ms a frame of seeds and auto, frame time (ms) of
/// seeds and auto, the change in CPU (pair by pair), p99 ms of seeds and auto.
fn quantities(m: &Measured) -> [f64; 7] {
    [
        m.cpu[0],
        m.cpu[1],
        1e3 / m.fps[0],
        1e3 / m.fps[1],
        m.d_cpu,
        m.p99[0],
        m.p99[1],
    ]
}

/// One row's local linear model: `q(p) = q0 + grad . (p - centre)`.
#[derive(Clone, Debug)]
pub struct RowModel {
    row: Row,
    centre: Params,
    q0: [f64; 7],
    grad: [[f64; 3]; 7],
}

impl RowModel {
    /// The model from the centre's figures and one probe along each parameter.
    fn new(row: Row, centre: Params, at_centre: &Measured, along: [(Params, Measured); 3]) -> Self {
        let q0 = quantities(at_centre);
        let mut grad = [[0.0; 3]; 7];
        for (k, (p, m)) in along.iter().enumerate() {
            let dq = quantities(m);
            let dp = p.get(k) - centre.get(k);
            for (i, g) in grad.iter_mut().enumerate() {
                g[k] = (dq[i] - q0[i]) / dp;
            }
        }
        RowModel {
            row,
            centre,
            q0,
            grad,
        }
    }

    /// The row's figures the model predicts at `p`.
    pub fn predict(&self, p: &Params) -> Measured {
        let q: Vec<f64> = (0..7)
            .map(|i| {
                self.q0[i]
                    + (0..3)
                        .map(|k| self.grad[i][k] * (p.get(k) - self.centre.get(k)))
                        .sum::<f64>()
            })
            .collect();
        // A frame is never shorter than the cap's period.
        let floor = if self.row.cap > 0 {
            1e3 / self.row.cap as f64
        } else {
            0.0
        };
        let fps = [1e3 / q[2].max(floor), 1e3 / q[3].max(floor)];
        Measured {
            fps,
            cpu: [q[0], q[1]],
            p99: [q[5], q[6]],
            d_fps: fps[1] / fps[0] - 1.0,
            d_cpu: q[4],
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

/// The grid search over the trust region: `s` and `m` within 0.6x to 1.6x of the centre,
/// the linger from 0 to three steps past the centre's.
pub fn solve(models: &[RowModel], centre: Params) -> Params {
    let step = steps(&centre);
    let span = |lo: f64, hi: f64, n: usize| -> Vec<f64> {
        (0..=n)
            .map(|i| lo + (hi - lo) * i as f64 / n as f64)
            .collect()
    };
    let mut best = (centre, score(models, &centre));
    for s in span(centre.s * 0.6, centre.s * 1.6, 40) {
        for m in span(centre.m * 0.6, centre.m * 1.6, 20) {
            for l in span(0.0, centre.linger_us + 3.0 * step[2], 60) {
                let p = Params { s, m, linger_us: l };
                let sc = score(models, &p);
                if sc.0 < best.1 .0 - 1e-12 || (sc.0 <= best.1 .0 + 1e-12 && sc.1 < best.1 .1) {
                    best = (p, sc);
                }
            }
        }
    }
    best.0
}

/// The preset as flags and as the code of scenes.rs.
fn preset_text(scene: Scene, l: &Load) -> String {
    let h = &l.host;
    let flags = format!(
        "--main-us {} --exec-us {} --present-us {} --jobs {} --job-us {} --linger-us {} \
         --render-us {} --gpu-us {} --audio-us {} --audio-period-us {}",
        l.main_us,
        l.exec_us,
        l.present_us,
        l.jobs,
        l.job_us,
        l.linger_us.unwrap_or(0),
        h.render_us,
        h.gpu_us,
        h.audio_us,
        h.audio_period_us
    );
    let mut t = String::new();
    let _ = writeln!(
        t,
        "fitted preset as flags (check it, or centre the next fit on it):\n  \
         frame_sim --fit {} {flags}\n  frame_sim --check-reference {} {flags}",
        scene.name(),
        scene.name()
    );
    let _ = writeln!(
        t,
        "as the preset in examples/frame_sim/scenes.rs (Scene::{:?}):\n  \
         main_us: {}, exec_us: {}, present_us: {}, jobs: {}, job_us: {}, linger_us: Some({}),\n  \
         host: HostLoad {{ render_threads: {:?}, render_us: {}, gpu_us: {}, audio_us: {}, \
         audio_period_us: {} }},",
        scene,
        l.main_us,
        l.exec_us,
        l.present_us,
        l.jobs,
        l.job_us,
        l.linger_us.unwrap_or(0),
        h.render_threads,
        h.render_us,
        h.gpu_us,
        h.audio_us,
        h.audio_period_us
    );
    t
}

/// `--fit scene`.
///
/// # Errors
/// The centre has no linger, a row needs more processors than the process has, or a run
/// failed.
pub fn run(o: &Options, scene: Scene) -> Result<(), String> {
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
    let centre = Params {
        s: 1.0,
        m: 1.0,
        linger_us: linger as f64,
    };
    let step = steps(&centre);
    let probes: Vec<Params> = std::iter::once(centre)
        .chain((0..3).map(|k| centre.with(k, centre.get(k) + step[k])))
        .collect();
    let probe_shape = Shape {
        arms: vec![Arm::Seeds, Arm::Auto],
        pairs: 2,
        warmup: 30,
        frames: 120,
    };
    let rows = reference::rows(scene);
    let dir = o.out.join("fit").join(scene.name());
    let mut t = String::new();
    let _ = writeln!(
        t,
        "frame_sim --fit {}: centre {}\nprobes: the centre, then s {:+}, m {:+}, linger {:+} us; \
         seeds and auto, {} pairs of {} frames (+{})\n",
        scene.name(),
        centre_load.describe(),
        step[0],
        step[1],
        step[2],
        probe_shape.pairs,
        probe_shape.frames,
        probe_shape.warmup
    );
    let _ = writeln!(
        t,
        "{:<34}{:>8}{:>8}{:>9}{:>8}{:>8}{:>8}{:>8}{:>8}{:>8}",
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
            let _ = writeln!(
                t,
                "{:<34}{:>8.2}{:>8.2}{:>8.1}%{:>8.2}{:>8.2}{:>7.1}%{:>8.1}{:>8.1}{:>8.0}",
                format!("{}, {}", row.name(), ["centre", "s+", "m+", "linger+"][i]),
                m.cpu[0],
                m.cpu[1],
                m.d_cpu * 100.0,
                m.fps[0],
                m.fps[1],
                m.d_fps * 100.0,
                m.p99[0],
                m.p99[1],
                p.linger_us
            );
            measured.push((*p, m));
        }
        models.push(RowModel::new(
            *row,
            centre,
            &measured[0].1,
            [measured[1], measured[2], measured[3]],
        ));
    }
    let fitted = solve(&models, centre);
    let load = fitted.load(&centre_load);
    let predicted: Vec<(Row, Measured)> =
        models.iter().map(|m| (m.row, m.predict(&fitted))).collect();
    let _ = writeln!(
        t,
        "\nfit: s {:.3}, m {:.3}, linger {:.0} us (model's worst criterion {:.2}; <= 1 met)\n\
         the model's prediction at the fit:\n{}",
        fitted.s,
        fitted.m,
        fitted.linger_us,
        score(&models, &fitted).0,
        reference::table(&predicted, o.procs)
    );
    let _ = writeln!(t, "{}", preset_text(scene, &load));
    print!("{t}");
    let verify = Shape {
        arms: o
            .arms
            .clone()
            .unwrap_or_else(|| vec![Arm::Seeds, Arm::Auto]),
        pairs: o.pairs.unwrap_or(3),
        warmup: o.warmup.unwrap_or(30),
        frames: o.frames.unwrap_or(240),
    };
    let mut results = Vec::new();
    for row in &rows {
        let cell = reference::run_row(
            row,
            load,
            &verify,
            o.procs,
            &format!("check p{}", row.procs),
            &dir.join(format!("p{}-check", row.procs)),
        )?;
        results.push((*row, Measured::of(&cell)));
    }
    let check = format!(
        "\nthe check: the fitted preset, {} pairs of {} frames (+{}) a cell\n{}",
        verify.pairs,
        verify.frames,
        verify.warmup,
        reference::table(&results, o.procs)
    );
    print!("{check}");
    t.push_str(&check);
    report::write(&dir.join("fit.txt"), &t)?;
    println!("probes, checks and this text: {}", dir.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up row whose changes scale with the linger and whose CPU scales with `s`:
    /// the solver must find the linger and scale that reproduce it.
    #[test]
    fn the_solver_finds_a_known_optimum() {
        let row = reference::ROWS[0];
        let centre = Params {
            s: 1.0,
            m: 1.0,
            linger_us: 4000.0,
        };
        // cpu_a = 40 s; cpu_s = cpu_a + 2 ms per ms of linger; frame time 18 ms, + 2 ms of
        // seeds' a ms of linger; d_cpu follows.
        let at = |p: Params| {
            let cpu_a = 40.0 * p.s;
            let cpu_s = cpu_a + 2.0 * p.linger_us / 1000.0;
            let t_a = 18.0 * p.s * p.m.sqrt();
            let t_s = t_a + 0.5 * p.linger_us / 1000.0;
            Measured {
                fps: [1e3 / t_s, 1e3 / t_a],
                cpu: [cpu_s, cpu_a],
                p99: [t_s * 1.5, t_a * 1.4],
                d_fps: t_s / t_a - 1.0,
                d_cpu: cpu_a / cpu_s - 1.0,
                reactor: None,
            }
        };
        let step = steps(&centre);
        let along = [0, 1, 2].map(|k| {
            let p = centre.with(k, centre.get(k) + step[k]);
            (p, at(p))
        });
        let model = RowModel::new(row, centre, &at(centre), along);
        let fitted = solve(std::slice::from_ref(&model), centre);
        let v = Verdict::of(&row, &model.predict(&fitted));
        assert!(v.worst() <= 1.0, "{fitted:?}: {v:?}");
        // And the model at the centre is the centre's figures.
        let c = model.predict(&centre);
        assert!((c.cpu[1] - 40.0).abs() < 1e-9 && (c.d_cpu - at(centre).d_cpu).abs() < 1e-9);
    }

    #[test]
    fn params_move_the_load_as_documented() {
        let centre = Scene::Hyrule.load();
        let p = Params {
            s: 2.0,
            m: 1.5,
            linger_us: 1234.4,
        };
        let l = p.load(&centre);
        assert_eq!(l.main_us, centre.main_us * 3);
        assert_eq!(l.exec_us, centre.exec_us * 2);
        assert_eq!(l.host.render_us, centre.host.render_us * 2);
        assert_eq!(l.linger_us, Some(1234));
        assert_eq!((l.jobs, l.fps), (centre.jobs, centre.fps));
    }
}
