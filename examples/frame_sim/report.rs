//! What a run leaves behind in text: the table (stdout), `frames.csv`, and the JSON.
//!
//! Invariant: the three say the same thing: the table and the JSON are written from one
//! [`Summary`] (same rows, same keys, same medians and ratios), and the CSV holds every
//! measured frame those figures were computed from, one line a frame.

use crate::args::Options;
use crate::arms::Run;
use crate::figures::{Summary, RATIO_KEYS};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

/// What the header says about where the runs ran.
pub struct Context<'a> {
    /// The options.
    pub opts: &'a Options,
    /// Logical processors the process may use (after `--procs`).
    pub processors: Option<usize>,
    /// The kernel, for the record.
    pub kernel: String,
    /// The calibration pinned in every run (`--calibrate once`); `None`: each run measured.
    pub calibration: Option<hos::Calibration>,
    /// The traced arms' critical paths, as JSON (`--trace`).
    pub critical: Option<String>,
}

fn calibration_line(c: &Option<hos::Calibration>) -> String {
    match c {
        Some(c) => format!(
            "calibration pinned in every run: timer late {:.1} us, wake {:.1} us, precise path {:?}",
            c.timer_lateness_ns as f64 / 1e3,
            c.wake_latency_ns as f64 / 1e3,
            c.precise
        ),
        None => "calibration measured by each run's runtime (rows calib. below)".into(),
    }
}

fn cell(v: f64, digits: usize) -> String {
    if v.is_finite() {
        format!("{v:.digits$}")
    } else {
        "-".into()
    }
}

/// The table: a header, the medians over pairs, the ratios to the baseline.
pub fn table(ctx: &Context, s: &Summary) -> String {
    let o = ctx.opts;
    let mut t = String::new();
    let procs = ctx
        .processors
        .map_or("an unknown number of".to_string(), |n| n.to_string());
    let _ = writeln!(
        t,
        "frame_sim, scene {}: {}",
        o.scene.name(),
        o.load.describe()
    );
    let _ = writeln!(
        t,
        "{} frames (+{} warm-up) a run, {} pair{}, arms alternate; {} logical processors \
         (kernel {}); bursts {:.2} ms CPU a frame",
        o.frames,
        o.warmup,
        o.pairs,
        if o.pairs == 1 { "" } else { "s" },
        procs,
        ctx.kernel,
        o.load.cpu_per_frame().as_secs_f64() * 1e3,
    );
    let _ = writeln!(t, "{}", calibration_line(&ctx.calibration));
    let _ = writeln!(t);
    const LABEL: usize = 30;
    const COL: usize = 10;
    let header = |t: &mut String, title: &str| {
        let _ = write!(t, "{title:<LABEL$}");
        for a in &s.arms {
            let _ = write!(t, "{:>COL$}", a.arm.name());
        }
        let _ = writeln!(t);
    };
    header(
        &mut t,
        &format!(
            "median of {} pair{}",
            o.pairs,
            if o.pairs == 1 { "" } else { "s" }
        ),
    );
    for (i, m) in s.metrics.iter().enumerate() {
        let _ = write!(t, "{:<LABEL$}", m.label);
        for a in &s.arms {
            let _ = write!(t, "{:>COL$}", cell(a.median[i], m.digits));
        }
        let _ = writeln!(t);
    }
    let _ = writeln!(t);
    header(
        &mut t,
        &format!("ratio to {} (pair by pair)", s.baseline.name()),
    );
    for (i, key) in RATIO_KEYS.iter().enumerate() {
        let label = s
            .metrics
            .iter()
            .find(|m| m.key == *key)
            .map_or(*key, |m| m.label.as_str());
        let _ = write!(t, "{label:<LABEL$}");
        for a in &s.arms {
            let _ = write!(t, "{:>COL$}", cell(a.ratio[i], 3));
        }
        let _ = writeln!(t);
    }
    t
}

/// Writes `frames.csv`: `arm,pair,frame,ms`, every measured frame of every run, in run
/// order (frames and pairs from 1).
pub fn csv(path: &Path, runs: &[Run]) -> io::Result<()> {
    let mut w = io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(w, "arm,pair,frame,ms")?;
    for r in runs {
        for (i, ms) in r.frame_ms.iter().enumerate() {
            writeln!(w, "{},{},{},{:.4}", r.arm.name(), r.pair, i + 1, ms)?;
        }
    }
    w.flush()
}

/// A JSON string.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number; `null` for NaN and infinities, which JSON has no word for.
fn number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

/// A JSON object of `(key, already-encoded value)` pairs.
fn object<'a>(fields: impl IntoIterator<Item = (&'a str, String)>, indent: usize) -> String {
    let pad = " ".repeat(indent + 2);
    let body: Vec<String> = fields
        .into_iter()
        .map(|(k, v)| format!("{pad}{}: {v}", string(k)))
        .collect();
    format!("{{\n{}\n{}}}", body.join(",\n"), " ".repeat(indent))
}

/// The JSON of the table, for scripts: the run's settings, then by arm the medians, the
/// ratios to the baseline and every pair's figures, under the table's keys.
pub fn json(ctx: &Context, s: &Summary) -> String {
    let o = ctx.opts;
    let l = &o.load;
    let opt = |v: Option<usize>| v.map_or("null".into(), |n| n.to_string());
    let load = object(
        [
            ("executors", l.executors.to_string()),
            ("workers", l.workers.to_string()),
            ("main_us", l.main_us.to_string()),
            ("exec_us", l.exec_us.to_string()),
            ("present_us", l.present_us.to_string()),
            ("jobs", l.jobs.to_string()),
            ("job_us", l.job_us.to_string()),
            ("poll_us", l.poll_us.to_string()),
            ("fps_cap", l.fps.to_string()),
        ],
        2,
    );
    let figures = |get: &dyn Fn(usize) -> f64, indent| {
        object(
            s.metrics
                .iter()
                .enumerate()
                .map(|(i, m)| (m.key.as_str(), number(get(i)))),
            indent,
        )
    };
    let arms: Vec<String> = s
        .arms
        .iter()
        .map(|a| {
            let ratio = object(
                RATIO_KEYS
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (*k, number(a.ratio[i]))),
                6,
            );
            let pairs: Vec<String> = a
                .runs
                .iter()
                .map(|f| figures(&|i| (s.metrics[i].get)(f), 8))
                .collect();
            object(
                [
                    ("arm", string(a.arm.name())),
                    ("median", figures(&|i| a.median[i], 6)),
                    ("ratio_to_baseline", ratio),
                    (
                        "pairs",
                        format!("[\n        {}\n      ]", pairs.join(",\n        ")),
                    ),
                ],
                4,
            )
        })
        .collect();
    let mut out = object(
        [
            ("scene", string(o.scene.name())),
            ("load", load),
            ("frames", o.frames.to_string()),
            ("warmup", o.warmup.to_string()),
            ("pairs", o.pairs.to_string()),
            ("procs", opt(o.procs)),
            ("logical_processors", opt(ctx.processors)),
            ("kernel", string(&ctx.kernel)),
            ("calibration", string(&calibration_line(&ctx.calibration))),
            (
                "calibration_pinned",
                (ctx.calibration.is_some()).to_string(),
            ),
            ("baseline", string(s.baseline.name())),
            (
                "critical_path_ms",
                ctx.critical.clone().unwrap_or_else(|| "null".into()),
            ),
            ("arms", format!("[\n    {}\n  ]", arms.join(",\n    "))),
        ],
        0,
    );
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_words() {
        assert_eq!(string("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\u0001""#);
        assert_eq!(number(1.5), "1.5");
        assert_eq!(number(f64::NAN), "null");
        assert_eq!(object([("k", "1".to_string())], 0), "{\n  \"k\": 1\n}");
    }
}
