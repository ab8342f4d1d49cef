//! `--repeat N`: the same cells run N times, each time on fresh runtimes (with `--calibrate
//! once`, each repeat measures the machine afresh), and what holds over the repeats: per
//! cell, the min / median / max of the default's headline figures and of the grace's, the
//! cell's verdict where it holds in every repeat, and the grace's verdict against the spread
//! between repeats.
//!
//! Invariant: every figure of a cell's repeat comes from that repeat's run of the cell (its
//! ratios taken pair by pair inside it, before they are spread); cells keep the order of
//! their first repeat, and a cell's repeats stay aligned (the n-th headline, verdict and
//! grace of a cell are its n-th repeat's).

use crate::cell::Cell;
use crate::grace::{self, GraceRound, GraceVerdict};
use crate::headline::{self, Headline};
use crate::report::{number, object, string};
use crate::spread::{min_median_max, Spread};
use crate::verdict::{Steady, Verdict, DEFAULT};
use std::fmt::Write as _;

/// Every cell's figures, repeat after repeat.
#[derive(Default)]
pub(crate) struct Repeats {
    cells: Vec<CellRepeats>,
}

/// One cell's repeats.
struct CellRepeats {
    /// Its name (`p4 field` in the matrix).
    label: String,
    /// The logical processors it ran on (the first repeat's).
    processors: Option<usize>,
    /// By repeat.
    headline: Vec<Headline>,
    /// By repeat; `None` where the cell had no verdict.
    verdicts: Vec<Option<Verdict>>,
    /// By repeat; `None` where the default or `grace` did not run.
    grace: Vec<Option<GraceRound>>,
}

impl CellRepeats {
    fn grace_verdict(&self) -> Option<GraceVerdict> {
        let rounds: Vec<GraceRound> = self.grace.iter().flatten().cloned().collect();
        GraceVerdict::of(&rounds)
    }
}

impl Repeats {
    /// Records one repeat of the cell named `label`.
    pub(crate) fn add(&mut self, label: &str, cell: &Cell) {
        let i = match self.cells.iter().position(|c| c.label == label) {
            Some(i) => i,
            None => {
                self.cells.push(CellRepeats {
                    label: label.to_string(),
                    processors: cell.processors,
                    headline: Vec::new(),
                    verdicts: Vec::new(),
                    grace: Vec::new(),
                });
                self.cells.len() - 1
            }
        };
        let c = &mut self.cells[i];
        c.headline.push(headline::of(cell));
        c.verdicts.push(Verdict::of(&cell.summary));
        c.grace.push(GraceRound::of(&cell.summary));
    }

    /// The repeats recorded (the most of any cell).
    fn count(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.headline.len())
            .max()
            .unwrap_or(0)
    }

    /// What holds over the repeats: the spread of the headline figures, each cell's verdict
    /// over its repeats, the spread of the grace's figures and its verdict, where `grace` ran.
    pub(crate) fn text(&self) -> String {
        let (mut figures, mut grace) = (Spread::default(), Spread::default());
        for c in &self.cells {
            for h in &c.headline {
                figures.add(&c.label, &headline::columns(), h.to_vec());
            }
            for g in c.grace.iter().flatten() {
                grace.add(&c.label, &grace::FIGURES.map(|f| f.1), g.figures.to_vec());
            }
        }
        let w = self.cells.iter().map(|c| c.label.len()).max().unwrap_or(0) + 2;
        let mut t = format!(
            "\nover {} repeats, each on fresh runtimes; ratios pair by pair within a repeat\n",
            self.count()
        );
        t += &figures.text(&format!(
            "the default ({}): headline figures",
            DEFAULT.name()
        ));
        t += "\nverdicts, each only where it holds in every repeat:\n";
        for c in &self.cells {
            let _ = writeln!(t, "  {:<w$}{}", c.label, Steady::of(&c.verdicts).line);
        }
        let judged: Vec<(&str, GraceVerdict)> = self
            .cells
            .iter()
            .filter_map(|c| Some((c.label.as_str(), c.grace_verdict()?)))
            .collect();
        if !judged.is_empty() {
            t += &grace.text(&format!(
                "the kick's grace: {} over the default (g/s), revokes a frame",
                grace::GRACE.name()
            ));
            let _ = writeln!(
                t,
                "\nthe grace on evidence (turned on where it buys {:.0} % of fps or p99 beyond \
                 the spread between repeats):",
                grace::KEEP * 100.0
            );
            for (label, v) in judged {
                let _ = writeln!(t, "  {label:<w$}{v}");
            }
        }
        t
    }

    /// The JSON of the repeats, for scripts: by cell, every repeat's figures, their min /
    /// median / max, the verdict over the repeats, and the grace's figures and verdict.
    pub(crate) fn json(&self) -> String {
        let spread = |keys: &[(&str, &str)], rows: &[&[f64]], indent: usize| {
            object(
                keys.iter().enumerate().map(|(i, (key, _))| {
                    let (lo, mid, hi) = min_median_max(rows.iter().map(|r| r[i]).collect());
                    let v = [
                        ("min", number(lo)),
                        ("median", number(mid)),
                        ("max", number(hi)),
                    ];
                    (*key, object(v, indent + 2))
                }),
                indent,
            )
        };
        let named = |keys: &[(&'static str, &str)], v: &[f64], indent| {
            object(
                keys.iter().zip(v).map(|((k, _), x)| (*k, number(*x))),
                indent,
            )
        };
        let cells: Vec<String> = self
            .cells
            .iter()
            .map(|c| {
                let repeats: Vec<String> = (0..c.headline.len())
                    .map(|i| {
                        let verdict = c.verdicts[i]
                            .as_ref()
                            .map_or("null".into(), |v| string(&v.to_string()));
                        let grace = c.grace[i]
                            .as_ref()
                            .map_or("null".into(), |g| named(&grace::FIGURES, &g.figures, 10));
                        object(
                            [
                                ("figures", named(&headline::FIGURES, &c.headline[i], 10)),
                                ("verdict", verdict),
                                ("grace", grace),
                            ],
                            8,
                        )
                    })
                    .collect();
                let rows: Vec<&[f64]> = c.headline.iter().map(<[f64; 7]>::as_slice).collect();
                let steady = Steady::of(&c.verdicts);
                let grace = c.grace_verdict().map_or("null".into(), |v| {
                    let rows: Vec<&[f64]> =
                        c.grace.iter().flatten().map(|g| &g.figures[..]).collect();
                    object(
                        [
                            ("spread", spread(&grace::FIGURES, &rows, 8)),
                            ("fps_gain", number(v.fps.gain)),
                            ("fps_spread", number(v.fps.spread)),
                            ("p99_gain", number(v.p99.gain)),
                            ("p99_spread", number(v.p99.spread)),
                            ("earns", v.earns().to_string()),
                            ("verdict", string(&v.to_string())),
                        ],
                        6,
                    )
                });
                object(
                    [
                        ("cell", string(&c.label)),
                        (
                            "logical_processors",
                            c.processors.map_or("null".into(), |n| n.to_string()),
                        ),
                        (
                            "repeats",
                            format!("[\n        {}\n      ]", repeats.join(",\n        ")),
                        ),
                        ("spread", spread(&headline::FIGURES, &rows, 6)),
                        ("verdict", string(&steady.line)),
                        ("verdict_holds", steady.holds.to_string()),
                        ("grace", grace),
                    ],
                    4,
                )
            })
            .collect();
        let mut out = object(
            [
                ("repeats", self.count().to_string()),
                ("default", string(DEFAULT.name())),
                ("grace", string(grace::GRACE.name())),
                ("grace_keep_beyond_spread", number(grace::KEEP)),
                ("cells", format!("[\n    {}\n  ]", cells.join(",\n    "))),
            ],
            0,
        );
        out.push('\n');
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::arms::Arm;
    use crate::figures::Figures;
    use crate::headline::tests::cell;

    /// One run's figures with `fps` and `revokes`, the rest fixed.
    pub(crate) fn run(fps: f64, revokes: f64) -> Figures {
        Figures {
            fps,
            p99: 17.0,
            cpu_ms_frame: 10.0,
            own_ms_frame: 2.0,
            revokes,
            ..Figures::default()
        }
    }

    /// A cell of one pair: auto at 60 fps, the default (strict) at `default`, `grace` at
    /// `grace`.
    fn repeat(default: f64, grace: f64) -> Cell {
        cell(vec![
            (Arm::Auto, vec![run(60.0, 0.0)]),
            (Arm::Reactor, vec![run(default, 0.0)]),
            (Arm::Grace, vec![run(grace, 0.3)]),
        ])
    }

    #[test]
    fn cells_gather_their_repeats_and_verdicts_hold_only_in_all() {
        let mut r = Repeats::default();
        for fps in [103.0, 102.5, 103.5] {
            r.add("p2 field", &repeat(100.0, fps));
            r.add("p2 field, uncapped", &repeat(59.0, 59.0));
        }
        assert_eq!(r.count(), 3);
        assert_eq!(r.cells.len(), 2);
        let t = r.text();
        assert!(t.contains("\nover 3 repeats,"), "{t}");
        let line = |label: &str, what: &str| {
            t.lines()
                .filter(|l| l.starts_with(&format!("  {label} ")))
                .any(|l| l.contains(what))
        };
        assert!(
            line("p2 field", "wins in every repeat (3): against auto 3"),
            "{t}"
        );
        assert!(
            line(
                "p2 field",
                "turn it on (fps at least 1 % beyond the spread)"
            ),
            "{t}"
        );
        assert!(
            line("p2 field, uncapped", "loses in every repeat (3)"),
            "{t}"
        );
        assert!(line("p2 field, uncapped", "keep it off"), "{t}");
        assert!(
            t.contains("1.025 / 1.030 / 1.035"),
            "the grace's fps g/s: {t}"
        );
        let j = r.json();
        assert!(
            j.contains("\"repeats\": 3") && j.contains("\"verdict_holds\": true"),
            "{j}"
        );
        assert_eq!(j.matches("\"fps_vs_auto\"").count(), 2 * 3 + 2, "{j}");
        assert!(
            j.contains("\"earns\": true") && j.contains("\"earns\": false"),
            "{j}"
        );
        assert!(
            j.contains("\"fps_vs_strict\": {\n"),
            "the spread of the grace: {j}"
        );
    }

    #[test]
    fn without_the_grace_arm_there_is_no_grace_section() {
        let mut r = Repeats::default();
        let c = cell(vec![
            (Arm::Auto, vec![run(60.0, 0.0)]),
            (Arm::Reactor, vec![run(60.0, 0.3)]),
        ]);
        r.add("field", &c);
        r.add("field", &c);
        let t = r.text();
        assert!(!t.contains("grace"), "{t}");
        assert!(r.json().contains("\"grace\": null"));
    }
}
