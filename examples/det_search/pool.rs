//! The parent side: jobs in batches over child processes (this program re-invoked with
//! `--child`), a few at a time, until they are done or the caller has seen enough.
//!
//! Invariant: every job given is answered by exactly one [`Line`] unless the caller stops
//! the search: by its child's line, or, when the child exits, crashes or goes silent past
//! the bound (and is killed), by an `exit` line for the job it was running, the rest of its
//! batch going back to the queue. So a crash or a wedged runtime costs one seed, never the
//! search; and no child outlives [`Pool::run`].

use crate::child::{Line, CHILD};
use crate::zoo::Bug;
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// How the jobs run.
#[derive(Clone, Debug)]
pub(crate) struct Pool {
    /// Children at a time.
    pub(crate) jobs: usize,
    /// Jobs a child runs.
    pub(crate) batch: usize,
    /// HOS_DET_QUANTUM.
    pub(crate) quantum: u32,
    /// The trials' stall window (`None`: the mode's default).
    pub(crate) stall: Option<Duration>,
    /// The longest a child may go without a line before it is killed.
    pub(crate) silence: Duration,
}

/// A running child and its batch.
struct Running {
    child: Child,
    batch: Vec<String>,
    /// Lines it has written.
    done: usize,
    last: Instant,
    killed: bool,
}

/// What a reader thread passes on: a child's line, or `None` at its end.
type Heard = (u64, Option<String>);

impl Pool {
    /// Runs `jobs` of `bug`; after each line, `enough` is asked (with every line so far) and
    /// `true` stops the search (the children still running are killed). The lines come back
    /// in the order of `jobs`.
    ///
    /// # Errors
    /// If a child cannot be started.
    pub(crate) fn run(
        &self,
        bug: Bug,
        jobs: &[String],
        mut enough: impl FnMut(&[Line]) -> bool,
    ) -> Result<Vec<Line>, String> {
        let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
        let mut queue: VecDeque<Vec<String>> =
            jobs.chunks(self.batch).map(<[String]>::to_vec).collect();
        let mut running: BTreeMap<u64, Running> = BTreeMap::new();
        let mut lines: Vec<Line> = Vec::new();
        let (tx, rx) = channel::<Heard>();
        let mut next_id = 0u64;
        let mut stopped = false;
        while !running.is_empty() || (!stopped && !queue.is_empty()) {
            while !stopped && running.len() < self.jobs {
                let Some(batch) = queue.pop_front() else {
                    break;
                };
                let child = self.start(&exe, bug, &batch, next_id, &tx)?;
                running.insert(
                    next_id,
                    Running {
                        child,
                        batch,
                        done: 0,
                        last: Instant::now(),
                        killed: false,
                    },
                );
                next_id += 1;
            }
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok((id, Some(text))) => {
                    let Some(r) = running.get_mut(&id) else {
                        continue;
                    };
                    if let Some(line) = Line::decode(&text) {
                        r.done += 1;
                        r.last = Instant::now();
                        lines.push(line);
                        if !stopped && enough(&lines) {
                            stopped = true;
                            running.values_mut().for_each(kill);
                        }
                    }
                }
                Ok((id, None)) => {
                    let Some(mut r) = running.remove(&id) else {
                        continue;
                    };
                    let status = r.child.wait().map_err(|e| format!("a child: {e}"))?;
                    if r.done < r.batch.len() && !stopped {
                        let how = if r.killed {
                            format!("killed after {:.1?} without a line", self.silence)
                        } else {
                            format!("the child ended ({status}) during this trial")
                        };
                        lines.push(Line {
                            job: r.batch[r.done].clone(),
                            kind: "exit".into(),
                            figures: None,
                            text: how,
                        });
                        let rest = r.batch.split_off(r.done + 1);
                        if !rest.is_empty() {
                            queue.push_front(rest);
                        }
                        if enough(&lines) {
                            stopped = true;
                            running.values_mut().for_each(kill);
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    for r in running.values_mut() {
                        if r.last.elapsed() > self.silence {
                            kill(r);
                        }
                    }
                }
                Err(RecvTimeoutError::Disconnected) => unreachable!("the pool holds a sender"),
            }
        }
        let order: BTreeMap<&str, usize> = jobs
            .iter()
            .enumerate()
            .map(|(i, j)| (j.as_str(), i))
            .collect();
        lines.sort_by_key(|l| order.get(l.job.as_str()).copied());
        Ok(lines)
    }

    /// Starts child `id` on `batch`, with a thread that passes its lines on.
    fn start(
        &self,
        exe: &std::path::Path,
        bug: Bug,
        batch: &[String],
        id: u64,
        tx: &Sender<Heard>,
    ) -> Result<Child, String> {
        let stall = self
            .stall
            .map_or_else(|| "-".to_string(), |s| s.as_millis().to_string());
        let mut child = Command::new(exe)
            .arg(CHILD)
            .arg(bug.name())
            .arg(self.quantum.to_string())
            .arg(stall)
            .args(batch)
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting a child: {e}"))?;
        let out = child.stdout.take().expect("a piped stdout");
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send((id, Some(line)));
            }
            let _ = tx.send((id, None));
        });
        Ok(child)
    }
}

/// Kills a child (once); its reader then reports its end.
fn kill(r: &mut Running) {
    if !r.killed {
        r.killed = true;
        let _ = r.child.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> Pool {
        Pool {
            jobs: 2,
            batch: 2,
            quantum: 1,
            stall: None,
            silence: Duration::from_secs(30),
        }
    }

    // In a test this program is the test harness, which refuses `--child`: every child dies
    // before its first trial.
    #[test]
    fn a_child_that_dies_fails_each_of_its_jobs_once() {
        let jobs: Vec<String> = (0..5).map(|s| format!("random:{s}")).collect();
        let lines = pool()
            .run(Bug::SplitCounter, &jobs, |_| false)
            .expect("children start");
        let answered: Vec<&str> = lines.iter().map(|l| l.job.as_str()).collect();
        assert_eq!(answered, jobs, "one line a job, in the jobs' order");
        assert!(
            lines
                .iter()
                .all(|l| l.kind == "exit" && l.text.contains("during this trial")),
            "{lines:?}"
        );
    }

    #[test]
    fn enough_stops_the_search() {
        let jobs: Vec<String> = (0..40).map(|s| format!("random:{s}")).collect();
        let lines = pool()
            .run(Bug::SplitCounter, &jobs, |ls| !ls.is_empty())
            .expect("children start");
        assert!(
            !lines.is_empty() && lines.len() < jobs.len(),
            "{}",
            lines.len()
        );
    }
}
