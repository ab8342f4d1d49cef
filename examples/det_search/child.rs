//! The child side: a batch of trials of one bug, one line of result each on stdout, and the
//! line's one encoding, which the parent (`pool.rs`) decodes.
//!
//! Invariant: a child runs its jobs in the order given and writes each one's line (flushed)
//! as soon as its trial ends, so the first job without a line is the one it was running
//! when it died or was killed. A line is tab-separated: the job, the outcome's kind, the
//! decisions, the hash and the virtual time (`-` in normal mode), and the outcome's text
//! with its tabs and newlines turned to spaces.

use crate::trial::{self, Setup};
use crate::zoo::Bug;
use hos::det::selector::Spec;
use std::io::Write;
use std::time::Duration;

/// The first argument that makes this program a child.
pub(crate) const CHILD: &str = "--child";

/// The job that runs a trial in normal mode.
pub(crate) const NORMAL: &str = "normal";

/// One trial's result, as a line carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    /// The job: a selector spec, or `normal`.
    pub(crate) job: String,
    /// `ok`, `bug`, `hang`, `panic`, or `exit` (written by the parent for a child that died).
    pub(crate) kind: String,
    /// Decisions, hash and virtual time, in the mode.
    pub(crate) figures: Option<(u64, u64, u64)>,
    pub(crate) text: String,
}

impl Line {
    /// The line's text (no newline).
    pub(crate) fn encode(&self) -> String {
        let (d, h, vt) = match self.figures {
            Some((d, h, vt)) => (d.to_string(), format!("{h:#018x}"), vt.to_string()),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let text: String = self
            .text
            .chars()
            .map(|c| if c == '\t' || c == '\n' { ' ' } else { c })
            .collect();
        format!("{}\t{}\t{d}\t{h}\t{vt}\t{text}", self.job, self.kind)
    }

    /// A line back; `None` for anything a child does not write.
    pub(crate) fn decode(s: &str) -> Option<Line> {
        let f: Vec<&str> = s.splitn(6, '\t').collect();
        let [job, kind, d, h, vt, text] = f[..] else {
            return None;
        };
        let figures = match (d, h, vt) {
            ("-", "-", "-") => None,
            _ => Some((
                d.parse().ok()?,
                u64::from_str_radix(h.strip_prefix("0x")?, 16).ok()?,
                vt.parse().ok()?,
            )),
        };
        Some(Line {
            job: job.into(),
            kind: kind.into(),
            figures,
            text: text.into(),
        })
    }
}

/// The setup a job names, with `quantum` and the stall window `stall` (`None`: the mode's
/// default).
pub(crate) fn setup(job: &str, quantum: u32, stall: Option<Duration>) -> Result<Setup, String> {
    let mut s = match job {
        NORMAL => Setup::normal(),
        spec => Setup::det(spec.parse::<Spec>().map_err(|e| e.to_string())?),
    };
    s.quantum = quantum;
    if let Some(stall) = stall {
        s.stall = stall;
    }
    Ok(s)
}

/// One trial of `bug` for `job`, as a line.
pub(crate) fn trial_line(bug: Bug, job: &str, setup: &Setup) -> Line {
    let t = trial::run(bug, setup);
    Line {
        job: job.into(),
        kind: t.outcome.kind().into(),
        figures: t.figures.map(|f| (f.decisions, f.hash, f.vt)),
        text: t.outcome.to_string(),
    }
}

/// The child's run: `args` are `BUG QUANTUM STALL_MS JOB...` (after [`CHILD`]).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let [bug, quantum, stall, jobs @ ..] = args else {
        return Err(format!(
            "a child needs BUG QUANTUM STALL_MS JOB..., not {args:?}"
        ));
    };
    let bug = Bug::named(bug).ok_or_else(|| format!("no bug `{bug}`"))?;
    let quantum: u32 = quantum
        .parse()
        .map_err(|_| format!("quantum `{quantum}`"))?;
    let stall = match stall.as_str() {
        "-" => None,
        ms => Some(Duration::from_millis(
            ms.parse().map_err(|_| format!("stall `{ms}`"))?,
        )),
    };
    let mut out = std::io::stdout().lock();
    for job in jobs {
        let line = trial_line(bug, job, &setup(job, quantum, stall)?);
        writeln!(out, "{}", line.encode())
            .and_then(|()| out.flush())
            .map_err(|e| format!("stdout: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_goes_and_comes_back() {
        let l = Line {
            job: "pct:2:7:24".into(),
            kind: "hang".into(),
            figures: Some((12, u64::MAX, 15_000)),
            text: "hang (every thread waits): A on mutex;".into(),
        };
        assert_eq!(Line::decode(&l.encode()), Some(l.clone()));
        let n = Line {
            job: NORMAL.into(),
            figures: None,
            text: "bug:\ta\nb".into(),
            ..l
        };
        let back = Line::decode(&n.encode()).expect("a line");
        assert_eq!((back.figures, back.text.as_str()), (None, "bug: a b"));
        assert_eq!(Line::decode("pct:1:1\tok"), None);
        assert_eq!(Line::decode("j\tok\tx\t0x1\t2\tt"), None);
    }

    #[test]
    fn a_job_names_its_setup() {
        let s = setup("random:5", 3, None).expect("a spec");
        assert_eq!((s.det, s.quantum), (Some(Spec::Random { seed: 5 }), 3));
        let s = setup(NORMAL, 1, Some(Duration::from_millis(20))).expect("normal");
        assert_eq!((s.det, s.stall), (None, Duration::from_millis(20)));
        assert!(setup("pct:0:1", 1, None).unwrap_err().contains("depth `0`"));
    }
}
