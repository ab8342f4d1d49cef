//! One trial: a zoo program run once in a runtime of its own, in the deterministic mode
//! under a selector or in normal mode, and its outcome (ok, the bug seen, a hang, a panic).
//!
//! Invariant: a trial returns within its wall-time bound plus its shutdown's, and leaves no
//! guest thread of its own running: a program that hangs is shut down (every wait ends
//! Cancelled, and the zoo's loops are bounded). A hang is, in the mode, the runtime's
//! softlock report (`Runtime::det_softlock`: nothing can run, no timer and no post pending,
//! found at the decision itself); in normal mode, judged from outside the schedule: every
//! guest thread waiting for the whole stall window; in both, the wall-time bound passing (a
//! livelock: threads that run and never finish).

use crate::zoo::{Bug, Verdict};
use hos::det::clock::Pacing;
use hos::det::selector::Spec;
use hos::{Calibration, DetStats, Doing, GuestState, Runtime};
use std::fmt;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How a trial runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Setup {
    /// The selector; `None`: normal mode (the mode off).
    pub(crate) det: Option<Spec>,
    /// HOS_DET_QUANTUM, in checkpoints.
    pub(crate) quantum: u32,
    /// Normal mode: how long every guest thread must wait to be a hang (the mode has the
    /// runtime's softlock report instead).
    pub(crate) stall: Duration,
    /// The most a trial runs before it is called a hang whatever its threads do.
    pub(crate) bound: Duration,
    /// The `.hosrec` the run is recorded to, with its decisions (the mode only).
    pub(crate) record: Option<PathBuf>,
}

impl Setup {
    /// The deterministic mode under `spec`, free pacing, a quantum of one checkpoint (every
    /// checkpoint a decision).
    pub(crate) fn det(spec: Spec) -> Setup {
        Setup {
            det: Some(spec),
            quantum: 1,
            stall: Duration::ZERO,
            bound: Duration::from_secs(10),
            record: None,
        }
    }

    /// Normal mode: the guest threads run in parallel, as the OS schedules them.
    pub(crate) fn normal() -> Setup {
        Setup {
            det: None,
            quantum: 1,
            stall: Duration::from_millis(250),
            bound: Duration::from_secs(10),
            record: None,
        }
    }
}

/// Why a trial was called a hang.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// The runtime's softlock report, at this decision (the mode).
    Softlock(u64),
    /// Every guest thread waited for the stall window (normal mode).
    Stalled,
    /// The wall-time bound passed.
    Bound,
}

/// A hang: what was seen when it was called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hang {
    /// How it was judged.
    pub(crate) why: Why,
    /// Each guest thread, with what it waited on (`None`: it was not waiting).
    pub(crate) threads: Vec<(String, Option<&'static str>)>,
}

/// A trial's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The program ended and found nothing wrong.
    Ok,
    /// The program ended and saw its bug (what it saw).
    Bug(String),
    /// It did not end.
    Hang(Hang),
    /// A guest thread panicked (the panic's message).
    Panic(String),
}

impl Outcome {
    /// Its kind, one word: `ok`, `bug`, `hang` or `panic`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Bug(_) => "bug",
            Outcome::Hang(_) => "hang",
            Outcome::Panic(_) => "panic",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ok => f.write_str("ok"),
            Outcome::Bug(what) => write!(f, "bug: {what}"),
            Outcome::Panic(what) => write!(f, "panic: {what}"),
            Outcome::Hang(h) => {
                match h.why {
                    Why::Softlock(d) => write!(f, "hang (softlock at decision {d}):")?,
                    Why::Stalled => write!(f, "hang (every thread waits):")?,
                    Why::Bound => write!(f, "hang (the wall-time bound passed):")?,
                }
                for (name, on) in &h.threads {
                    match on {
                        Some(on) => write!(f, " {name} on {on};")?,
                        None => write!(f, " {name} running;")?,
                    }
                }
                Ok(())
            }
        }
    }
}

/// A trial's outcome and, in the mode, the token's figures at its end (at the hang, for a
/// hang): two trials of one setup agree on both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Trial {
    /// What happened.
    pub(crate) outcome: Outcome,
    /// Decisions, their hash and the virtual time; `None` in normal mode.
    pub(crate) figures: Option<DetStats>,
    /// A replay's first divergence from its recording (`None`: it followed it, or it is no
    /// replay), read after the shutdown.
    pub(crate) divergence: Option<String>,
}

/// How often the host thread looks at a running trial.
const LOOK: Duration = Duration::from_millis(5);

/// Runs `bug` once under `setup`.
///
/// # Panics
/// If the runtime cannot be built or its main guest thread started (a bad setup).
pub(crate) fn run(bug: Bug, setup: &Setup) -> Trial {
    let rt: Runtime = Runtime::builder()
        .calibration(Calibration::default())
        .vcores(3)
        .det(setup.det.clone())
        .det_quantum(setup.quantum)
        .det_pace(Pacing::Free)
        .det_record(setup.record.clone())
        .det_record_decisions(setup.record.is_some())
        .flight(false)
        .log_stderr(false)
        .build()
        .expect("a runtime for the trial");
    let (tx, rx) = channel::<Verdict>();
    let main = rt
        .thread()
        .name("ZooMain")
        .ideal_core(2)
        .priority(44)
        .spawn({
            let rt = rt.clone();
            move || {
                let _ = tx.send(bug.run(&rt));
            }
        })
        .expect("the zoo's main guest thread");
    let outcome = match watch(&rt, &rx, setup) {
        Watched::Hang(hang) => Outcome::Hang(hang),
        // The main thread still decides as it ends (its exit signals its handle, a
        // checkpoint): the figures are read once it has.
        ended => match (main.join(), ended) {
            (Err(panic), _) => Outcome::Panic(message(&*panic)),
            (Ok(()), Watched::Verdict(Ok(()))) => Outcome::Ok,
            (Ok(()), Watched::Verdict(Err(what))) => Outcome::Bug(what),
            (Ok(()), _) => Outcome::Panic("the main thread ended without a verdict".into()),
        },
    };
    // At a hang: the figures at rest, before the shutdown moves anything.
    let figures = rt.det_stats();
    rt.shutdown_timeout(Duration::from_secs(2));
    let divergence = rt.det_divergence().map(|d| d.to_string());
    Trial {
        outcome,
        figures,
        divergence,
    }
}

/// What the host thread saw of a running trial.
enum Watched {
    /// The program's verdict.
    Verdict(Verdict),
    /// The main thread ended without one (it panicked).
    Gone,
    /// It hung.
    Hang(Hang),
}

/// Watches the trial until its verdict comes or it hangs (module doc).
fn watch(rt: &Runtime, rx: &Receiver<Verdict>, setup: &Setup) -> Watched {
    let start = Instant::now();
    // Since when every thread was last seen waiting (normal mode).
    let mut still: Option<Instant> = None;
    loop {
        match rx.recv_timeout(LOOK) {
            Ok(v) => return Watched::Verdict(v),
            Err(RecvTimeoutError::Disconnected) => return Watched::Gone,
            Err(RecvTimeoutError::Timeout) => {}
        }
        // The states after the report: a thread marks its wait before it gives the token up,
        // so once the report is made every thread shows the wait it is stuck in (read
        // before it, the last one to wait could still show guest code).
        if let Some(report) = rt.det_softlock() {
            let states = rt.guest_states();
            return Watched::Hang(hang(states, Why::Softlock(report.decision)));
        }
        let states = rt.guest_states();
        let all_wait = setup.det.is_none()
            && !states.is_empty()
            && states
                .iter()
                .all(|s| matches!(s.doing, Doing::Waiting { .. }));
        still = match still {
            Some(since) if all_wait => {
                if since.elapsed() >= setup.stall {
                    return Watched::Hang(hang(states, Why::Stalled));
                }
                Some(since)
            }
            _ if all_wait => Some(Instant::now()),
            _ => None,
        };
        if start.elapsed() >= setup.bound {
            return Watched::Hang(hang(states, Why::Bound));
        }
    }
}

fn hang(states: Vec<GuestState>, why: Why) -> Hang {
    Hang {
        why,
        threads: states
            .into_iter()
            .map(|s| {
                let on = match s.doing {
                    Doing::Waiting { on, .. } => Some(on),
                    Doing::GuestCode | Doing::Leaving => None,
                };
                (s.name, on)
            })
            .collect(),
    }
}

/// A panic's message, if it is a string.
fn message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
