//! A cell's verdict: one line, the default arm against the strongest other arm.
//!
//! Invariant: the verdict is read from the cell's summary alone, from the ratios the table
//! prints (pair by pair, then the median); the strongest other arm is the one of most fps
//! (median of pairs), ties going to less CPU a frame, among the other designs (`seeds`,
//! `auto`) where one ran, else among the variants of the default (an ablation such as
//! `grace` speaks for one rule, judged on its own line: `grace.rs`); a figure counts for or
//! against the default only beyond its tolerance ([`JUDGED`]), so a difference within it is
//! even.

use crate::arms::Arm;
use crate::figures::{Ratios, Summary, RATIO_KEYS};
use std::fmt;

/// The arm the verdict speaks for: hos's defaults.
pub(crate) const DEFAULT: Arm = Arm::Reactor;

/// Per [`RATIO_KEYS`]: the figure's name, how far its ratio may move before it counts (none:
/// shown, not judged), and whether more is better. Own cost is not judged: it is a small
/// difference of two large figures, so its ratio swings wide; CPU a frame carries it.
pub(crate) const JUDGED: [(&str, Option<f64>, bool); RATIO_KEYS.len()] = [
    ("fps", Some(0.01), true),
    ("p99", Some(0.05), false),
    ("CPU", Some(0.02), false),
    ("own cost", None, false),
];

/// How the default came out.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// Better on a judged figure beyond its tolerance, worse on none.
    Wins,
    /// Within the tolerances on every judged figure.
    Even,
    /// Worse beyond the tolerance on these figures: (name, percent worse).
    Loses(Vec<(&'static str, f64)>),
}

/// The default arm against the strongest other arm of a cell.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Verdict {
    /// The strongest other arm.
    pub(crate) against: Arm,
    /// The default's ratios to it, in [`RATIO_KEYS`] order.
    pub(crate) ratios: Ratios,
    /// How the default came out.
    pub(crate) outcome: Outcome,
}

impl Verdict {
    /// The verdict of a cell; `None` if the default arm or no other arm ran.
    pub(crate) fn of(s: &Summary) -> Option<Verdict> {
        s.arm(DEFAULT)?;
        let key = |arm: Arm| (s.median(arm, "fps"), -s.median(arm, "cpu_ms_per_frame"));
        let others = s.arms.iter().map(|a| a.arm).filter(|&a| a != DEFAULT);
        let designs_ran = others.clone().any(|a| !a.is_variant());
        let against = others
            .filter(|a| !(designs_ran && a.is_variant()))
            .max_by(|&a, &b| {
                let (ka, kb) = (key(a), key(b));
                ka.0.total_cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
            })?;
        let ratios = s.ratios(DEFAULT, against);
        let (mut losses, mut gains) = (Vec::new(), false);
        for (&(name, tolerance, more_is_better), r) in JUDGED.iter().zip(ratios) {
            let Some(tolerance) = tolerance.filter(|_| r.is_finite()) else {
                continue;
            };
            let worse = if more_is_better { 1.0 - r } else { r - 1.0 };
            if worse > tolerance {
                losses.push((name, worse * 100.0));
            } else if -worse > tolerance {
                gains = true;
            }
        }
        let outcome = match (losses.is_empty(), gains) {
            (false, _) => Outcome::Loses(losses),
            (true, true) => Outcome::Wins,
            (true, false) => Outcome::Even,
        };
        Some(Verdict {
            against,
            ratios,
            outcome,
        })
    }

    /// The verdict line of a cell, also where there is none (it says why).
    pub(crate) fn line(s: &Summary) -> String {
        match Verdict::of(s) {
            Some(v) => v.to_string(),
            None if s.arm(DEFAULT).is_none() => format!(
                "verdict: none (the default arm, {}, did not run)",
                DEFAULT.name()
            ),
            None => "verdict: none (no other arm ran)".into(),
        }
    }
}

impl Outcome {
    /// The outcome's word, its figures left out: what must hold in every repeat.
    fn word(&self) -> &'static str {
        match self {
            Outcome::Wins => "wins",
            Outcome::Even => "is even",
            Outcome::Loses(_) => "loses",
        }
    }
}

/// A cell's verdict over repeats: whether one holds in every repeat, and the line that says
/// which (or how the repeats split).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Steady {
    /// Every repeat had a verdict, and all of them the same outcome (wins, even or loses).
    pub(crate) holds: bool,
    /// The line: the outcome and the arms it was against, with how many repeats each; or
    /// how the repeats split.
    pub(crate) line: String,
}

/// `(name, count)` of each distinct name, in order of first sighting.
fn tally<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<(&'a str, usize)> {
    let mut out: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match out.iter_mut().find(|(m, _)| *m == n) {
            Some((_, c)) => *c += 1,
            None => out.push((n, 1)),
        }
    }
    out
}

fn counted(t: &[(&str, usize)]) -> String {
    t.iter()
        .map(|(n, c)| format!("{n} {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Steady {
    /// The verdict that holds in every one of `repeats` (each repeat's verdict of the cell),
    /// if one does: the same outcome in each. A loss lists the figures it was on, with how
    /// many repeats each.
    pub(crate) fn of(repeats: &[Option<Verdict>]) -> Steady {
        let n = repeats.len();
        let missing = repeats.iter().filter(|v| v.is_none()).count();
        let verdicts: Vec<&Verdict> = repeats.iter().flatten().collect();
        let words = tally(verdicts.iter().map(|v| v.outcome.word()));
        let line = match (missing, words.as_slice()) {
            (_, []) => format!("none (no verdict in {n} repeats)"),
            (0, [(word, _)]) => {
                let against = tally(verdicts.iter().map(|v| v.against.name()));
                let to = if *word == "loses" { "to" } else { "against" };
                let on = tally(verdicts.iter().flat_map(|v| match &v.outcome {
                    Outcome::Loses(l) => l.iter().map(|(name, _)| *name).collect(),
                    _ => Vec::new(),
                }));
                let on = if on.is_empty() {
                    String::new()
                } else {
                    format!(", on {}", counted(&on))
                };
                return Steady {
                    holds: true,
                    line: format!(
                        "default ({}) {word} in every repeat ({n}): {to} {}{on}",
                        DEFAULT.name(),
                        counted(&against)
                    ),
                };
            }
            _ => {
                let none = if missing > 0 {
                    format!(", none {missing}")
                } else {
                    String::new()
                };
                format!(
                    "none holds in every repeat: {}{none} (of {n})",
                    counted(&words)
                )
            }
        };
        Steady { holds: false, line }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (d, a) = (DEFAULT.name(), self.against.name());
        match &self.outcome {
            Outcome::Wins => write!(f, "verdict: default ({d}) wins against {a}")?,
            Outcome::Even => write!(f, "verdict: default ({d}) is even with {a}")?,
            Outcome::Loses(l) => {
                write!(f, "verdict: default ({d}) loses to {a}")?;
                for (name, pct) in l {
                    write!(f, " on {name} by {pct:.1} %")?;
                }
            }
        }
        f.write_str(", the other arm of most fps:")?;
        for (i, (&(name, _, _), r)) in JUDGED.iter().zip(self.ratios).enumerate() {
            let sep = if i == 0 { "" } else { "," };
            if r.is_finite() {
                write!(f, "{sep} {name} {r:.3}x")?;
            } else {
                write!(f, "{sep} {name} -")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::Figures;

    fn run(fps: f64, p99: f64, cpu: f64, own: f64) -> Figures {
        Figures {
            fps,
            p99,
            cpu_ms_frame: cpu,
            own_ms_frame: own,
            ..Figures::default()
        }
    }

    fn cell(reactor: Figures) -> Summary {
        Summary::new(vec![
            (Arm::Seeds, vec![run(58.0, 20.0, 20.0, 10.0)]),
            (Arm::Auto, vec![run(60.0, 17.0, 15.0, 5.0)]),
            (Arm::Reactor, vec![reactor]),
        ])
    }

    #[test]
    fn against_the_arm_of_most_fps_each_figure_beyond_its_tolerance() {
        let v = Verdict::of(&cell(run(60.0, 16.9, 10.0, 1.0))).unwrap();
        assert_eq!((v.against, &v.outcome), (Arm::Auto, &Outcome::Wins));
        assert_eq!(
            v.to_string(),
            "verdict: default (reactor) wins against auto, the other arm of most fps: \
             fps 1.000x, p99 0.994x, CPU 0.667x, own cost 0.200x"
        );
        let v = Verdict::of(&cell(run(60.3, 17.5, 15.1, 9.0))).unwrap();
        assert_eq!(
            v.outcome,
            Outcome::Even,
            "within 1 %, 5 %, 2 %; own cost not judged"
        );
        let v = Verdict::of(&cell(run(58.74, 18.7, 14.0, 4.0))).unwrap();
        match &v.outcome {
            Outcome::Loses(l) => {
                assert_eq!(l.len(), 2, "{l:?}");
                assert_eq!(l[0].0, "fps");
                assert!((l[0].1 - 2.1).abs() < 1e-9, "{l:?}");
                assert_eq!(l[1].0, "p99");
            }
            o => panic!("{o:?}"),
        }
        assert!(v.to_string().starts_with(
            "verdict: default (reactor) loses to auto on fps by 2.1 % on p99 by 10.0 %"
        ));
    }

    #[test]
    fn ties_on_fps_go_to_less_cpu_and_a_missing_arm_is_said() {
        let s = Summary::new(vec![
            (Arm::Seeds, vec![run(60.0, 17.0, 20.0, 10.0)]),
            (Arm::Auto, vec![run(60.0, 17.0, 15.0, 5.0)]),
            (Arm::Reactor, vec![run(60.0, 17.0, 15.0, 5.0)]),
        ]);
        let v = Verdict::of(&s).unwrap();
        assert_eq!((v.against, v.outcome), (Arm::Auto, Outcome::Even));
        let variant = |arms: &[Arm]| {
            Summary::new(
                arms.iter()
                    .map(|&a| {
                        (
                            a,
                            vec![run(
                                60.0 + f64::from(u8::from(a.is_variant())),
                                17.0,
                                9.0,
                                1.0,
                            )],
                        )
                    })
                    .collect(),
            )
        };
        let v = Verdict::of(&variant(&[Arm::Auto, Arm::Reactor, Arm::Grace])).unwrap();
        assert_eq!(
            v.against,
            Arm::Auto,
            "a variant of more fps is not the other design"
        );
        let v = Verdict::of(&variant(&[Arm::Reactor, Arm::Grace])).unwrap();
        assert_eq!(v.against, Arm::Grace, "only variants ran");
        let alone = Summary::new(vec![(Arm::Reactor, vec![run(60.0, 17.0, 1.0, 1.0)])]);
        assert_eq!(Verdict::line(&alone), "verdict: none (no other arm ran)");
        let none = Summary::new(vec![(Arm::Auto, vec![run(60.0, 17.0, 1.0, 1.0)])]);
        assert!(Verdict::line(&none).contains("reactor, did not run"));
    }

    #[test]
    fn a_verdict_holds_over_repeats_only_if_every_repeat_has_it() {
        let wins = Verdict::of(&cell(run(60.0, 16.9, 10.0, 1.0)));
        let even = Verdict::of(&cell(run(60.3, 17.5, 15.1, 9.0)));
        let loses = Verdict::of(&cell(run(58.74, 18.7, 14.0, 4.0)));
        let s = Steady::of(&[wins.clone(), wins.clone(), wins.clone()]);
        assert!(s.holds);
        assert_eq!(
            s.line,
            "default (reactor) wins in every repeat (3): against auto 3"
        );
        let s = Steady::of(&[wins.clone(), even.clone(), wins.clone()]);
        assert!(!s.holds);
        assert_eq!(
            s.line,
            "none holds in every repeat: wins 2, is even 1 (of 3)"
        );
        let s = Steady::of(&[loses.clone(), loses.clone()]);
        assert!(s.holds, "{s:?}");
        assert_eq!(
            s.line,
            "default (reactor) loses in every repeat (2): to auto 2, on fps 2, p99 2"
        );
        let s = Steady::of(&[wins.clone(), None]);
        assert!(!s.holds);
        assert_eq!(s.line, "none holds in every repeat: wins 1, none 1 (of 2)");
        assert_eq!(Steady::of(&[None]).line, "none (no verdict in 1 repeats)");
        let s = Steady::of(&[even]);
        assert!(
            s.holds
                && s.line
                    .ends_with("is even in every repeat (1): against auto 1"),
            "{s:?}"
        );
    }
}
