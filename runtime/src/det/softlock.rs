//! A softlock's report in the deterministic mode (docs/determinism.md section 7): a run
//! that can never go on by itself (a deadlock: no thread can run, no timer and no post is
//! pending), or a token held past HOS_DET_WATCHDOG_MS of wall time without a checkpoint;
//! with the wait-for graph (each enrolled thread, what it waits on and who holds that), the
//! decision index, the virtual time, the selector and each thread's last turns.
//!
//! Invariant: plain data, printed from itself alone; the token fills in what it decided
//! (threads, standings, turns, decision, `vt`) and the runtime what the wait tree saw (names,
//! objects, holders, cycles), so the text says what was true at that instant.

use super::history::Turn;
use std::fmt;

/// Why a run is stuck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// No thread can run, no timer and no post is pending: nothing in the run can wake a
    /// thread again (only a host thread outside the contract could).
    Deadlock,
    /// Thread `thread` held the token `held_ms` of wall time without a checkpoint: a guest
    /// loop without checkpoints, or a host primitive outside the runtime's waits.
    Held {
        /// The holder's id.
        thread: u64,
        /// How long it held it, in ms of wall time.
        held_ms: u64,
    },
}

/// Where an enrolled thread stands with the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Its OS thread is being started by its spawner.
    Starting,
    /// Ready for a turn.
    Ready,
    /// Holds the token.
    Holds,
    /// Waits for a wake, or until the virtual time `until`.
    Waiting {
        /// The wait's timeout, in virtual ns.
        until: Option<u64>,
    },
    /// Sleeps until the virtual time `until`.
    Sleeping {
        /// Its deadline, in virtual ns.
        until: u64,
    },
}

/// One enrolled thread in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck {
    /// Its id (from the creation counter: `svc::get_thread_id`).
    pub id: u64,
    /// Its name.
    pub name: String,
    /// The Horizon priority the token ranks it by.
    pub priority: u8,
    /// A better priority lent to it by a lock's waiter, if any.
    pub lent: Option<u8>,
    /// Its logical core.
    pub core: u8,
    /// Where it stands with the token.
    pub standing: Standing,
    /// What it waits on, as the wait tree names it (`mutex::Lock 0x5555...`), or its wait's
    /// kind alone when the flight recorder is off; empty when it waits on nothing.
    pub waits_on: String,
    /// The threads (ids) that hold what it waits for: a mutex's owner.
    pub holders: Vec<u64>,
    /// Its last turns, oldest first.
    pub turns: Vec<Turn>,
}

/// A softlock's report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Softlock {
    /// Why the run is stuck.
    pub cause: Cause,
    /// Decisions taken when it was found (the index the next decision would have).
    pub decision: u64,
    /// The virtual time, in ns.
    pub vt: u64,
    /// The selector (`random:7`), with its seed: what reproduces the run.
    pub selector: String,
    /// Every enrolled thread, by id.
    pub threads: Vec<Stuck>,
    /// Each cycle of holders (a lock-order deadlock), as the threads' ids in order.
    pub cycles: Vec<Vec<u64>>,
}

impl Softlock {
    /// The thread named `name`, if it is in the report.
    pub fn thread(&self, name: &str) -> Option<&Stuck> {
        self.threads.iter().find(|t| t.name == name)
    }

    fn name(&self, id: u64) -> String {
        self.threads
            .iter()
            .find(|t| t.id == id)
            .map_or_else(|| format!("thread {id}"), |t| t.name.clone())
    }
}

impl fmt::Display for Standing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Standing::Starting => f.write_str("starts"),
            Standing::Ready => f.write_str("is ready"),
            Standing::Holds => f.write_str("holds the token"),
            Standing::Waiting { until: None } => f.write_str("waits"),
            Standing::Waiting { until: Some(vt) } => write!(f, "waits until vt {vt} ns"),
            Standing::Sleeping { until } => write!(f, "sleeps until vt {until} ns"),
        }
    }
}

impl fmt::Display for Softlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = format!(
            "at decision {}, vt {} ns (selector {})",
            self.decision, self.vt, self.selector
        );
        match self.cause {
            Cause::Deadlock => writeln!(
                f,
                "deterministic mode: softlock {at}: no thread can run, no timer and no post \
                 is pending"
            )?,
            Cause::Held { thread, held_ms } => writeln!(
                f,
                "deterministic mode: {} held the token {held_ms} ms of wall time without a \
                 checkpoint {at}: a guest loop without checkpoints, or a host primitive \
                 outside the runtime's waits",
                self.name(thread)
            )?,
        }
        for t in &self.threads {
            write!(f, "  {} (id {}, priority {}", t.name, t.id, t.priority)?;
            if let Some(p) = t.lent {
                write!(f, ", runs at {p} lent")?;
            }
            write!(f, ", core {}) {}", t.core, t.standing)?;
            if !t.waits_on.is_empty() {
                write!(f, " on {}", t.waits_on)?;
            }
            if !t.holders.is_empty() {
                let hs: Vec<String> = t.holders.iter().map(|h| self.name(*h)).collect();
                write!(f, ", held by {}", hs.join(", "))?;
            }
            writeln!(f)?;
            for turn in &t.turns {
                write!(
                    f,
                    "    turn: decision {} at vt {} ns ({:?}, {} candidates)",
                    turn.decision, turn.vt, turn.given, turn.candidates
                )?;
                match turn.ended {
                    Some(r) => writeln!(f, ", ended by {r:?}")?,
                    None => writeln!(f, ", not ended")?,
                }
            }
        }
        for cycle in &self.cycles {
            let names: Vec<String> = cycle
                .iter()
                .chain(cycle.first())
                .map(|id| self.name(*id))
                .collect();
            writeln!(f, "deadlock: cycle {}", names.join(" -> "))?;
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::det::witness::Reason;

    fn stuck(id: u64, name: &str, on: &str, holders: Vec<u64>) -> Stuck {
        Stuck {
            id,
            name: name.into(),
            priority: 44,
            lent: None,
            core: 0,
            standing: Standing::Waiting { until: None },
            waits_on: on.into(),
            holders,
            turns: vec![Turn {
                decision: 7,
                vt: 9000,
                given: Reason::Start,
                candidates: 2,
                ended: Some(Reason::Wait),
            }],
        }
    }

    #[test]
    fn the_text_names_each_thread_its_object_its_holder_and_the_cycle() {
        let s = Softlock {
            cause: Cause::Deadlock,
            decision: 12,
            vt: 34_000,
            selector: "random:7".into(),
            threads: vec![
                stuck(2, "A", "mutex::Lock 0x10", vec![3]),
                stuck(3, "B", "mutex::Lock 0x20", vec![2]),
            ],
            cycles: vec![vec![2, 3]],
        };
        let text = s.to_string();
        for part in [
            "softlock at decision 12, vt 34000 ns (selector random:7)",
            "A (id 2, priority 44, core 0) waits on mutex::Lock 0x10, held by B",
            "B (id 3, priority 44, core 0) waits on mutex::Lock 0x20, held by A",
            "turn: decision 7 at vt 9000 ns (Start, 2 candidates), ended by Wait",
            "deadlock: cycle A -> B -> A",
        ] {
            assert!(text.contains(part), "{part:?} not in\n{text}");
        }
        assert_eq!(s.thread("B").map(|t| t.holders.clone()), Some(vec![2]));
        let held = Softlock {
            cause: Cause::Held {
                thread: 3,
                held_ms: 2000,
            },
            cycles: vec![],
            ..s
        };
        assert!(
            held.to_string()
                .contains("B held the token 2000 ms of wall time without a checkpoint"),
            "{held}"
        );
    }
}
