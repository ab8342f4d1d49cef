//! The kick's grace on evidence: in each cell, the `grace` arm (the default with a kick's
//! grace) against the default (the grace off, so the strict bound holds: never more guest
//! threads run guest code than there are virtual cores, escapes aside), and the rule that
//! turns the grace on by default only where it buys at least [`KEEP`] of fps or p99 beyond
//! the spread between runs.
//!
//! Invariant: a round's ratios are `grace`'s figures over the default's, pair by pair inside
//! one run of the cell, then the median (as every ratio of the table). Over several rounds
//! (`--repeat`) the gain is read from the median of the rounds' ratios and the spread is
//! their range; with one round, the gain is its ratio and the spread the range of its pairs'
//! ratios. A figure counts for the grace only where gain less spread is at least [`KEEP`], so
//! a gain that the noise between runs could make is never evidence; without a spread (one
//! pair of one round) nothing is.

use crate::arms::Arm;
use crate::figures::Summary;
use crate::spread::min_median_max;
use crate::verdict::DEFAULT;
use std::fmt;

/// The arm set against the default: the grace on.
pub(crate) const GRACE: Arm = Arm::Grace;

/// The arm with the strict bound: the default (the grace off).
pub(crate) const STRICT: Arm = DEFAULT;

/// The least gain beyond the spread, on fps or p99, that would turn the grace on in a cell.
pub(crate) const KEEP: f64 = 0.01;

/// The figures of a round, in order: the key in the JSON and the column in the text. The
/// first three are `grace`'s over the default's (strict) in the same pair (median of pairs);
/// the last two each arm's revokes a frame (median of pairs), the relaxations of the bound.
pub(crate) const FIGURES: [(&str, &str); 5] = [
    ("fps_vs_strict", "fps g/s"),
    ("p99_vs_strict", "p99 g/s"),
    ("own_cost_vs_strict", "own g/s"),
    ("revokes_per_frame", "revokes/f"),
    ("strict_revokes_per_frame", "strict rev/f"),
];

/// `grace` against the default (strict) in one round of a cell.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GraceRound {
    /// In [`FIGURES`] order.
    pub(crate) figures: [f64; FIGURES.len()],
    /// The fps and the p99 ratios, pair by pair: the spread of a lone round.
    pub(crate) pairs: [Vec<f64>; 2],
}

impl GraceRound {
    /// The round of a cell's summary; `None` unless both `grace` and the default ran.
    pub(crate) fn of(s: &Summary) -> Option<GraceRound> {
        s.arm(GRACE)?;
        s.arm(STRICT)?;
        let ratio = |key| s.ratio(GRACE, STRICT, key);
        let pairs = |key| s.pair_ratios(GRACE, STRICT, key).unwrap_or_default();
        let revokes = "vcore_revokes_per_frame";
        Some(GraceRound {
            figures: [
                ratio("fps"),
                ratio("p99_ms"),
                ratio("own_cost_ms_per_frame"),
                s.median(GRACE, revokes),
                s.median(STRICT, revokes),
            ],
            pairs: [pairs("fps"), pairs("p99_ms")],
        })
    }
}

/// What the grace buys on one figure: the gain (more fps, less p99), and the spread it is
/// read against, both fractions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Gain {
    /// The gain: the fps ratio less 1, or 1 less the p99 ratio.
    pub(crate) gain: f64,
    /// The range of the ratios between rounds (between pairs with one round); NaN with
    /// one ratio.
    pub(crate) spread: f64,
}

impl Gain {
    /// Whether the gain is at least [`KEEP`] beyond the spread (a rounding's worth of slack,
    /// so that what prints as 1.0 % counts).
    pub(crate) fn earns(self) -> bool {
        self.gain - self.spread >= KEEP - 1e-9
    }

    /// The gain of `ratios` (one a round, or a lone round's pairs with its `ratio`), more
    /// being better or not.
    fn of(ratio: f64, ratios: Vec<f64>, more_is_better: bool) -> Gain {
        let finite = ratios.iter().filter(|r| r.is_finite()).count();
        let (lo, _, hi) = min_median_max(ratios);
        Gain {
            gain: if more_is_better {
                ratio - 1.0
            } else {
                1.0 - ratio
            },
            spread: if finite >= 2 { hi - lo } else { f64::NAN },
        }
    }
}

/// The grace's verdict in one cell over its rounds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GraceVerdict {
    /// Rounds it was read from.
    pub(crate) rounds: usize,
    /// On fps.
    pub(crate) fps: Gain,
    /// On p99.
    pub(crate) p99: Gain,
    /// In [`FIGURES`] order: a lone round's figures, else the median over rounds of each.
    pub(crate) figures: [f64; FIGURES.len()],
}

impl GraceVerdict {
    /// The verdict of a cell's rounds; `None` for none.
    pub(crate) fn of(rounds: &[GraceRound]) -> Option<GraceVerdict> {
        let figures = match rounds {
            [] => return None,
            [one] => one.figures,
            _ => std::array::from_fn(|i| {
                min_median_max(rounds.iter().map(|r| r.figures[i]).collect()).1
            }),
        };
        // The spread: between rounds, or between a lone round's pairs.
        let gain = |i: usize, more_is_better| match rounds {
            [one] => Gain::of(figures[i], one.pairs[i].clone(), more_is_better),
            _ => Gain::of(
                figures[i],
                rounds.iter().map(|r| r.figures[i]).collect(),
                more_is_better,
            ),
        };
        Some(GraceVerdict {
            rounds: rounds.len(),
            fps: gain(0, true),
            p99: gain(1, false),
            figures,
        })
    }

    /// Whether the grace should be on in this cell: it earns its place on fps or on p99.
    pub(crate) fn earns(&self) -> bool {
        self.fps.earns() || self.p99.earns()
    }
}

impl fmt::Display for GraceVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |x: f64| {
            if x.is_finite() {
                format!("{:.1} %", x * 100.0)
            } else {
                "-".into()
            }
        };
        let between = if self.rounds > 1 {
            format!("between {} repeats", self.rounds)
        } else {
            "between pairs".into()
        };
        let x = |v: f64| {
            if v.is_finite() {
                format!("{v:.3}x")
            } else {
                "-".into()
            }
        };
        let [fps, p99, own, revokes, strict_revokes] = self.figures;
        write!(
            f,
            "fps {}, p99 {}, own cost {}, revokes/frame {revokes:.3} (strict \
             {strict_revokes:.3}); grace buys {} fps / {} p99 against a spread of {} / {} \
             {between}: ",
            x(fps),
            x(p99),
            x(own),
            pct(self.fps.gain),
            pct(self.p99.gain),
            pct(self.fps.spread),
            pct(self.p99.spread),
        )?;
        let earned: Vec<&str> = [("fps", self.fps), ("p99", self.p99)]
            .into_iter()
            .filter(|(_, g)| g.earns())
            .map(|(name, _)| name)
            .collect();
        if !earned.is_empty() {
            write!(
                f,
                "turn it on ({} at least {:.0} % beyond the spread)",
                earned.join(", "),
                KEEP * 100.0
            )
        } else if self.fps.spread.is_nan() {
            f.write_str("no evidence (one pair: no spread)")
        } else {
            write!(
                f,
                "keep it off (neither fps nor p99 {:.0} % beyond the spread)",
                KEEP * 100.0
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::Figures;

    fn run(fps: f64, p99: f64, revokes: f64) -> Figures {
        Figures {
            fps,
            p99,
            cpu_ms_frame: 10.0,
            own_ms_frame: 2.0,
            revokes,
            ..Figures::default()
        }
    }

    /// A round of pairs `(grace fps, strict fps)`, p99 alike at 17 ms.
    fn round(pairs: &[(f64, f64)]) -> GraceRound {
        GraceRound::of(&Summary::new(vec![
            (
                Arm::Reactor,
                pairs.iter().map(|p| run(p.1, 17.0, 0.0)).collect(),
            ),
            (
                Arm::Grace,
                pairs.iter().map(|p| run(p.0, 17.0, 0.3)).collect(),
            ),
        ]))
        .unwrap()
    }

    #[test]
    fn a_round_needs_both_arms_and_reads_ratios_pair_by_pair() {
        let s = Summary::new(vec![(Arm::Reactor, vec![run(60.0, 17.0, 0.0)])]);
        assert_eq!(GraceRound::of(&s), None);
        let r = round(&[(60.0, 50.0), (60.0, 60.0), (66.0, 60.0)]);
        assert_eq!(r.figures[0], 1.1, "fps: the median of 1.2, 1.0, 1.1");
        assert_eq!((r.figures[1], r.figures[2]), (1.0, 1.0));
        assert_eq!((r.figures[3], r.figures[4]), (0.3, 0.0), "revokes");
        assert_eq!(r.pairs[0].len(), 3);
    }

    #[test]
    fn earned_only_where_the_gain_is_a_percent_beyond_the_spread() {
        // One round: the spread is between its pairs. 3 % more fps, pairs 1.025..1.035.
        let v =
            GraceVerdict::of(&[round(&[(102.5, 100.0), (103.0, 100.0), (103.5, 100.0)])]).unwrap();
        assert!(v.earns(), "{v}");
        assert!(
            v.to_string().contains("turn it on (fps at least 1 %"),
            "{v}"
        );
        assert!(v.to_string().contains("between pairs"), "{v}");
        assert!(
            v.to_string().starts_with(
                "fps 1.030x, p99 1.000x, own cost 1.000x, revokes/frame 0.300 (strict 0.000); \
                 grace buys 3.0 % fps / 0.0 % p99 against a spread of 1.0 % / 0.0 % between pairs: "
            ),
            "{v}"
        );
        // 3 % more fps, but the pairs spread 2.5 %: not beyond.
        let v =
            GraceVerdict::of(&[round(&[(101.5, 100.0), (103.0, 100.0), (104.0, 100.0)])]).unwrap();
        assert!(!v.earns(), "{v}");
        assert!(v
            .to_string()
            .ends_with("keep it off (neither fps nor p99 1 % beyond the spread)"));
        // Over repeats the spread is between the rounds' ratios, not their pairs'.
        let steady = |fps: f64| round(&[(fps, 100.0), (fps * 0.9, 100.0), (fps * 1.1, 100.0)]);
        let v = GraceVerdict::of(&[steady(103.0), steady(102.5), steady(103.5)]).unwrap();
        assert_eq!(v.rounds, 3);
        assert!((v.fps.gain - 0.03).abs() < 1e-9 && (v.fps.spread - 0.01).abs() < 1e-9);
        assert!(
            v.earns() && v.to_string().contains("between 3 repeats"),
            "{v}"
        );
        let v = GraceVerdict::of(&[steady(103.0), steady(101.0), steady(104.5)]).unwrap();
        assert!(!v.earns(), "a spread of 3.5 % swallows a 3 % gain: {v}");
        // A loss is no gain, whatever the spread.
        let v = GraceVerdict::of(&[steady(97.0), steady(97.0)]).unwrap();
        assert!(!v.earns() && v.fps.gain < 0.0, "{v}");
    }

    #[test]
    fn p99_counts_as_less_and_one_pair_is_no_evidence() {
        let p99 = |d: f64, s: f64| {
            GraceRound::of(&Summary::new(vec![
                (Arm::Reactor, vec![run(60.0, s, 0.0)]),
                (Arm::Grace, vec![run(60.0, d, 0.3)]),
            ]))
            .unwrap()
        };
        let v = GraceVerdict::of(&[p99(16.0, 20.0), p99(16.4, 20.0)]).unwrap();
        assert!(
            (v.p99.gain - 0.2).abs() < 1e-9,
            "the lower middle: 16/20: {v}"
        );
        assert!(
            v.earns() && v.to_string().contains("turn it on (p99 at least"),
            "{v}"
        );
        let v = GraceVerdict::of(&[p99(16.0, 20.0)]).unwrap();
        assert!(v.p99.spread.is_nan() && !v.earns(), "{v}");
        assert!(
            v.to_string().ends_with("no evidence (one pair: no spread)"),
            "{v}"
        );
        assert!(
            v.to_string().contains("revokes/frame 0.300 (strict 0.000)"),
            "{v}"
        );
        assert_eq!(GraceVerdict::of(&[]), None);
    }
}
