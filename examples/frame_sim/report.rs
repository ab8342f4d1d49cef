//! What a cell leaves behind: the table, `frames.csv`, the JSON, and the plot.
//!
//! Invariant: they say the same thing: the table and the JSON are written from one
//! [`Summary`](crate::figures::Summary) (same rows, same keys, same medians and ratios), the CSV holds every measured
//! frame those figures were computed from, one line a frame, and the plot draws the same
//! runs' frames and figures.

use crate::arms::Run;
use crate::cell::Cell;
use crate::figures::RATIO_KEYS;
use crate::group::Group;
use crate::plot;
use crate::verdict::{Verdict, JUDGED};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What the header says about a cell and where it ran.
pub(crate) struct Context<'a> {
    /// The scene's name (and variant, e.g. `field, uncapped`).
    pub(crate) scene: &'a str,
    /// The cell.
    pub(crate) cell: &'a Cell,
    /// The kernel, for the record.
    pub(crate) kernel: &'a str,
}

/// What the table's rows and lines mean: printed once under a cell's table, and in `--help`.
/// The verdict's tolerances are [`JUDGED`]'s.
pub(crate) fn legend() -> String {
    let judged: Vec<String> = JUDGED
        .iter()
        .filter_map(|&(name, tolerance, more_is_better)| {
            let t = tolerance?;
            Some(if more_is_better {
                format!("{name} below {:.2}x", 1.0 - t)
            } else {
                format!("{name} above {:.2}x", 1.0 + t)
            })
        })
        .collect();
    format!(
        "\
legend: a column an arm; each figure the median over pairs of the runs' figures.
  fps                   frames presented a second
  frame p50 .. worst ms frame times, present to present: quantiles and the slowest
  CPU ms/frame          the process's user + kernel CPU over the window, a frame
  own cost ms/frame     CPU ms/frame less the load's bursts (the header's \"bursts\"): what
                        the runtime, its sleeps and polls, and the OS spent
  frames > N ms         measured frames longer than N ms
  vcore ...             virtual-core waits, kicks (by priority, slice, first), escapes and
                        revokes a frame; wake slices the OS took or ignored, the whole run
  vcore grace us        the arm's kick's grace: 0 holds the strict bound (never more guest
                        threads run guest code than virtual cores, escapes aside); above 0
                        each revoke relaxes it for one holder until its next checkpoint
  idle polls promoted   idle-poll sleeps that work ended, a frame; deferred: those whose
                        poster held the promotion until it gave its core up
  ... pickup p50/p99 us post to start of a job, of an executor's message
  <group> ...           a thread group's CPU (s a second, ms a frame), kernel CPU, guest
                        sleeps and voluntary switches a second
  calib.                the calibration in force at the window's end
  ratio / seeds, / auto the arm's figure over that arm's in the same pair, median over pairs
  verdict               the default arm ({}) against the other arm of most fps (a
                        variant of the default, as grace, only if no other design
                        ran); it loses on {};
                        wins when better beyond one of them and worse on none; else even
                        (own cost is shown, not judged)
",
        crate::verdict::DEFAULT.name(),
        judged.join(", ")
    )
}

/// The running kernel's release, for the record.
pub(crate) fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
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

/// Whether a row has anything to say for this cell: a host group's rows are left out of the
/// table of a load without host threads (the JSON keeps every key).
fn shown(ctx: &Context, group: Option<Group>) -> bool {
    let host = &ctx.cell.spec.load.host;
    match group {
        Some(Group::Renderer) => host.pool_threads() > 0,
        Some(Group::GpuSubmit) => host.renders(),
        Some(Group::Audio) => host.audio_us > 0,
        _ => true,
    }
}

/// The table: a header, the medians over pairs, the ratios to the baseline.
pub(crate) fn table(ctx: &Context) -> String {
    let (c, s) = (&ctx.cell.spec, &ctx.cell.summary);
    let mut t = String::new();
    let procs = ctx
        .cell
        .processors
        .map_or("an unknown number of".to_string(), |n| n.to_string());
    let _ = writeln!(t, "frame_sim, scene {}: {}", ctx.scene, c.load.describe());
    let _ = writeln!(
        t,
        "{} frames (+{} warm-up) a run, {} pair{}, arms alternate; {} logical processors \
         (kernel {}); bursts {:.2} ms CPU a frame{}",
        c.frames,
        c.warmup,
        c.pairs,
        if c.pairs == 1 { "" } else { "s" },
        procs,
        ctx.kernel,
        c.load.cpu_per_frame().as_secs_f64() * 1e3,
        if c.load.host.audio_us > 0 {
            format!(
                " (+ audio {} us every {} us)",
                c.load.host.audio_us, c.load.host.audio_period_us
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(t, "{}", calibration_line(&ctx.cell.calibration));
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
            c.pairs,
            if c.pairs == 1 { "" } else { "s" }
        ),
    );
    for (i, m) in s.metrics.iter().enumerate() {
        if !shown(ctx, m.group) {
            continue;
        }
        let _ = write!(t, "{:<LABEL$}", m.label);
        for a in &s.arms {
            let _ = write!(t, "{:>COL$}", cell(a.median[i], m.digits));
        }
        let _ = writeln!(t);
    }
    let _ = writeln!(t);
    header(&mut t, "ratio, pair by pair");
    for (i, &(name, _, _)) in JUDGED.iter().enumerate() {
        for (b, base) in s.bases.iter().enumerate() {
            let label = format!("{name:<16}/ {}", base.name());
            let _ = write!(t, "{label:<LABEL$}");
            for a in &s.arms {
                let _ = write!(t, "{:>COL$}", cell(a.ratios[b][i], 3));
            }
            let _ = writeln!(t);
        }
    }
    let _ = writeln!(t, "\n{}", Verdict::line(s));
    t
}

/// Writes `frames.csv`: `arm,pair,frame,ms`, every measured frame of every run, in run
/// order (frames and pairs from 1).
pub(crate) fn csv(path: &Path, runs: &[Run]) -> io::Result<()> {
    let mut w = io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(w, "arm,pair,frame,ms")?;
    for r in runs {
        for (i, ms) in r.frame_ms.iter().enumerate() {
            writeln!(w, "{},{},{},{:.4}", r.arm.name(), r.pair, i + 1, ms)?;
        }
    }
    w.flush()
}

/// A JSON string literal, escaped by serde_json.
pub(crate) fn string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// A JSON number; `null` for NaN and infinities, which JSON has no word for.
pub(crate) fn number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

/// A JSON object of `(key, already-encoded value)` pairs.
pub(crate) fn object<'a>(
    fields: impl IntoIterator<Item = (&'a str, String)>,
    indent: usize,
) -> String {
    let pad = " ".repeat(indent + 2);
    let body: Vec<String> = fields
        .into_iter()
        .map(|(k, v)| format!("{pad}{}: {v}", string(k)))
        .collect();
    format!("{{\n{}\n{}}}", body.join(",\n"), " ".repeat(indent))
}

/// The JSON of the table, for scripts: the run's settings, then by arm the medians, the
/// ratios to the baseline and every pair's figures, under the table's keys.
pub(crate) fn json(ctx: &Context) -> String {
    let (c, s) = (&ctx.cell.spec, &ctx.cell.summary);
    let l = &c.load;
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
            (
                "linger_us",
                l.linger_us.map_or("null".into(), |v| v.to_string()),
            ),
            (
                "repoll_us",
                l.repoll_us.map_or("null".into(), |v| v.to_string()),
            ),
            ("fps_cap", l.fps.to_string()),
            ("render_threads", l.host.pool_threads().to_string()),
            ("render_us", l.host.render_us.to_string()),
            ("gpu_us", l.host.gpu_us.to_string()),
            ("audio_us", l.host.audio_us.to_string()),
            ("audio_period_us", l.host.audio_period_us.to_string()),
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
            let ratio = |r: &[f64; RATIO_KEYS.len()]| {
                object(RATIO_KEYS.iter().zip(r).map(|(k, v)| (*k, number(*v))), 6)
            };
            let ratios = s
                .bases
                .iter()
                .zip(&a.ratios)
                .map(|(b, r)| (format!("ratio_to_{}", b.name()), ratio(r)));
            let pairs: Vec<String> = a
                .runs
                .iter()
                .map(|f| figures(&|i| (s.metrics[i].get)(f), 8))
                .collect();
            let mut fields = vec![
                ("arm".to_string(), string(a.arm.name())),
                ("median".to_string(), figures(&|i| a.median[i], 6)),
                ("ratio_to_baseline".to_string(), ratio(&a.ratios[0])),
            ];
            fields.extend(ratios);
            fields.push((
                "pairs".to_string(),
                format!("[\n        {}\n      ]", pairs.join(",\n        ")),
            ));
            object(fields.iter().map(|(k, v)| (k.as_str(), v.clone())), 4)
        })
        .collect();
    let mut out = object(
        [
            ("scene", string(ctx.scene)),
            ("load", load),
            ("frames", c.frames.to_string()),
            ("warmup", c.warmup.to_string()),
            ("pairs", c.pairs.to_string()),
            ("logical_processors", opt(ctx.cell.processors)),
            ("kernel", string(ctx.kernel)),
            (
                "calibration",
                string(&calibration_line(&ctx.cell.calibration)),
            ),
            (
                "calibration_pinned",
                (ctx.cell.calibration.is_some()).to_string(),
            ),
            ("baseline", string(s.bases[0].name())),
            (
                "bursts_ms_per_frame",
                number(c.load.cpu_per_frame().as_secs_f64() * 1e3),
            ),
            ("verdict", string(&Verdict::line(s))),
            ("critical_path_ms", crate::critical::json(&ctx.cell.runs)),
            ("arms", format!("[\n    {}\n  ]", arms.join(",\n    "))),
        ],
        0,
    );
    out.push('\n');
    out
}

/// Writes the cell's `frames.csv` and `frame_sim.svg` into `dir`, and its JSON to `json`
/// if given; returns the paths written.
///
/// # Errors
/// A file or directory could not be written (the message names it).
pub(crate) fn save(
    ctx: &Context,
    dir: &Path,
    json_path: Option<&Path>,
) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let csv_path = dir.join("frames.csv");
    csv(&csv_path, &ctx.cell.runs).map_err(|e| format!("writing {}: {e}", csv_path.display()))?;
    let svg_path = dir.join("frame_sim.svg");
    write(&svg_path, &plot::svg(ctx))?;
    let mut written = vec![csv_path, svg_path];
    if let Some(j) = json_path {
        write(j, &json(ctx))?;
        written.push(j.to_path_buf());
    }
    Ok(written)
}

/// Writes `text` to `path`, making its folder first.
///
/// # Errors
/// The folder or the file could not be written (the message names it).
pub(crate) fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| format!("creating {}: {e}", d.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
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

    #[test]
    fn the_table_has_ratios_to_seeds_and_auto_and_a_verdict() {
        use crate::arms::Arm;
        use crate::cell::CellSpec;
        use crate::figures::{Figures, Summary};
        let run = |fps: f64, cpu: f64, own: f64| Figures {
            fps,
            p99: 17.0,
            cpu_ms_frame: cpu,
            own_ms_frame: own,
            ..Figures::default()
        };
        let cell = Cell {
            spec: CellSpec {
                load: crate::scenes::Scene::Field.load(),
                arms: Arm::DEFAULT.to_vec(),
                pairs: 1,
                warmup: 1,
                frames: 1,
                calibrate_once: false,
                trace: None,
                det: None,
            },
            processors: Some(2),
            calibration: None,
            runs: Vec::new(),
            summary: Summary::new(vec![
                (Arm::Seeds, vec![run(50.0, 20.0, 9.2)]),
                (Arm::Auto, vec![run(60.0, 16.0, 5.2)]),
                (Arm::Reactor, vec![run(60.0, 12.0, 1.3)]),
            ]),
        };
        let ctx = Context {
            scene: "field",
            cell: &cell,
            kernel: "test",
        };
        let t = table(&ctx);
        let row = |label: &str| t.lines().find(|l| l.starts_with(label)).unwrap_or("");
        assert!(
            row("own cost ms/frame").ends_with("9.20      5.20      1.30"),
            "{t}"
        );
        assert!(
            row("CPU             / auto").ends_with("1.250     1.000     0.750"),
            "{t}"
        );
        assert!(
            row("own cost        / seeds").ends_with("1.000     0.565     0.141"),
            "{t}"
        );
        assert!(
            t.contains("\nverdict: default (reactor) wins against auto,"),
            "{t}"
        );
        let j = json(&ctx);
        assert!(j.contains("\"ratio_to_auto\"") && j.contains("\"verdict\": \"verdict: default"));
        assert!(legend().contains("fps below 0.99x, p99 above 1.05x, CPU above 1.02x"));
    }
}
