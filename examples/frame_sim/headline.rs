//! A cell's headline: the default arm's figures that the matrix summary prints for each cell
//! and that `--repeat` spreads over the repeats.
//!
//! Invariant: each figure is read from one cell's summary alone, a ratio pair by pair inside
//! the cell and then the median (as the table's); a figure whose arm did not run is NaN,
//! never a stand-in.

use crate::arms::Arm;
use crate::cell::Cell;
use crate::figures::median;
use crate::verdict::DEFAULT;

/// The figures, in order: the key in the JSON and the column in the text. Ratios to `auto`
/// are the default's over auto's in the same pair; `p99 r/best` is over the best arm's p99
/// in the same pair; `own/bursts` is the default's own cost over the load's bursts, both a
/// frame; `revokes/f` the default's revokes a frame (relaxations of the virtual cores'
/// bound); `>100ms` its frames over 100 ms, every pair.
pub(crate) const FIGURES: [(&str, &str); 7] = [
    ("cpu_vs_auto", "CPU r/a"),
    ("own_cost_vs_auto", "own r/a"),
    ("own_cost_vs_bursts", "own/bursts"),
    ("fps_vs_auto", "fps r/a"),
    ("p99_vs_best", "p99 r/best"),
    ("revokes_per_frame", "revokes/f"),
    ("frames_over_100_ms", ">100ms"),
];

/// The figures of one cell, in [`FIGURES`] order.
pub(crate) type Headline = [f64; FIGURES.len()];

/// The columns of [`FIGURES`].
pub(crate) fn columns() -> [&'static str; FIGURES.len()] {
    FIGURES.map(|(_, column)| column)
}

/// The headline of `cell`.
pub(crate) fn of(cell: &Cell) -> Headline {
    let s = &cell.summary;
    let (own, cpu) = ("own_cost_ms_per_frame", "cpu_ms_per_frame");
    let bursts = cell.spec.load.cpu_per_frame().as_secs_f64() * 1e3;
    [
        s.ratio(DEFAULT, Arm::Auto, cpu),
        s.ratio(DEFAULT, Arm::Auto, own),
        s.median(DEFAULT, own) / bursts,
        s.ratio(DEFAULT, Arm::Auto, "fps"),
        p99_vs_best(cell),
        s.median(DEFAULT, "vcore_revokes_per_frame"),
        totals(cell).0.map_or(f64::NAN, |n| n as f64),
    ]
}

/// Pair by pair: the default's p99 over the best arm's p99 of the same pair, the median.
fn p99_vs_best(cell: &Cell) -> f64 {
    let s = &cell.summary;
    let Some(r) = s.arm(DEFAULT) else {
        return f64::NAN;
    };
    median((0..r.runs.len()).map(|pair| {
        let best = s
            .arms
            .iter()
            .filter_map(|a| a.runs.get(pair).map(|f| f.p99))
            .fold(f64::INFINITY, f64::min);
        r.runs[pair].p99 / best
    }))
}

/// The default's runs: frames over 100 ms and escapes, summed; none if it did not run.
pub(crate) fn totals(cell: &Cell) -> (Option<u64>, Option<u64>) {
    cell.summary.arm(DEFAULT).map_or((None, None), |a| {
        let (over, escapes) = a
            .runs
            .iter()
            .fold((0, 0), |(f, e), r| (f + r.over[1], e + r.escapes_total));
        (Some(over), Some(escapes))
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cell::CellSpec;
    use crate::figures::{Figures, Summary};

    pub(crate) fn cell(arms: Vec<(Arm, Vec<Figures>)>) -> Cell {
        Cell {
            spec: CellSpec {
                load: crate::scenes::Scene::Field.load(),
                arms: arms.iter().map(|(a, _)| *a).collect(),
                pairs: arms[0].1.len(),
                warmup: 1,
                frames: 1,
                calibrate_once: true,
                trace: None,
                det: None,
            },
            processors: Some(2),
            calibration: None,
            runs: Vec::new(),
            summary: Summary::new(arms),
        }
    }

    #[test]
    fn ratios_pair_by_pair_totals_over_pairs_and_nan_for_a_missing_arm() {
        let run = |fps: f64, p99: f64, own: f64, over: u64| Figures {
            fps,
            p99,
            cpu_ms_frame: own + 6.0,
            own_ms_frame: own,
            revokes: 0.25,
            over: [over, over, 0],
            escapes_total: 1,
            ..Figures::default()
        };
        let c = cell(vec![
            (
                Arm::Auto,
                vec![run(60.0, 20.0, 2.0, 0), run(50.0, 18.0, 2.0, 0)],
            ),
            (
                Arm::Reactor,
                vec![run(60.0, 19.0, 1.0, 1), run(55.0, 19.0, 1.0, 2)],
            ),
        ]);
        let bursts = c.spec.load.cpu_per_frame().as_secs_f64() * 1e3;
        let h = of(&c);
        assert_eq!(h[1], 0.5, "own r/a");
        assert!((h[2] - 1.0 / bursts).abs() < 1e-12, "own/bursts {}", h[2]);
        assert_eq!(h[3], 1.05, "fps r/a: the median of 1.0 and 1.1");
        assert!(
            (h[4] - (1.0 + 19.0 / 18.0) / 2.0).abs() < 1e-12,
            "p99 r/best: itself the best, then auto"
        );
        assert_eq!((h[5], h[6]), (0.25, 3.0), "revokes/f, >100ms");
        assert_eq!(totals(&c), (Some(3), Some(2)));
        let alone = cell(vec![(Arm::Auto, vec![run(60.0, 20.0, 2.0, 0)])]);
        assert!(of(&alone).iter().all(|x| x.is_nan()), "{:?}", of(&alone));
        assert_eq!(totals(&alone), (None, None));
    }
}
