//! The wait tree: every guest thread, what it does or waits on and since when, under the
//! thread that holds what it waits for; a cycle of holders is a deadlock and is named.
//!
//! Invariant: a snapshot, built at one instant from the virtual cores' table (who holds,
//! who waits for a core) and each thread's latest events (what it waits on, who held it);
//! it is printed from the data alone, so what it says is what was seen at that instant.

use std::collections::{HashMap, HashSet};
use std::fmt;

/// What a guest thread was doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Running guest code on a virtual core.
    Running {
        /// The core.
        core: u8,
    },
    /// Running beside the virtual cores after an escape.
    Escaped,
    /// Running beside the virtual cores until its next checkpoint: a waiter took its core
    /// after the kick's grace (HOS_VCORE_GRACE_US).
    Revoked,
    /// Waiting for a virtual core.
    WaitingForCore,
    /// Waiting on objects (`what` names them).
    Waiting {
        /// The objects, as `event::Take 0x5555...`.
        what: String,
    },
    /// Sleeping.
    Sleeping {
        /// Nanoseconds asked.
        asked_ns: u64,
    },
    /// Holding no core, in no wait the recorder saw (running host code, or the flight
    /// recorder is off).
    Other,
}

/// One guest thread in the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The runtime's id of the thread.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Its own Horizon priority.
    pub priority: u8,
    /// A better priority it runs at, lent by a thread waiting for a lock it holds (priority
    /// inheritance).
    pub lent: Option<u8>,
    /// Allowed virtual cores.
    pub mask: u64,
    /// What it was doing.
    pub state: State,
    /// For how long, in ns (`None`: unknown).
    pub for_ns: Option<u64>,
    /// The threads (by id) that hold what it waits for: a mutex's owner, the cores' holders.
    pub holders: Vec<u64>,
}

/// The wait tree of a runtime at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitTree {
    /// Every guest thread.
    pub nodes: Vec<Node>,
    /// Whether the flight recorder was on (else waits on objects are not known).
    pub recorded: bool,
}

impl WaitTree {
    /// The node of thread `id`.
    pub fn node(&self, id: u64) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Each cycle of holders (a deadlock), as the threads' ids in order, each once.
    pub fn cycles(&self) -> Vec<Vec<u64>> {
        let parent = self.parents();
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for n in &self.nodes {
            let mut path = Vec::new();
            let mut at = Some(n.id);
            while let Some(id) = at {
                if seen.contains(&id) {
                    break;
                }
                if let Some(i) = path.iter().position(|&p| p == id) {
                    out.push(path[i..].to_vec());
                    break;
                }
                path.push(id);
                at = parent.get(&id).copied();
            }
            seen.extend(path);
        }
        out
    }

    /// Each waiting thread's parent: the first of its holders that is in the tree.
    fn parents(&self) -> HashMap<u64, u64> {
        let ids: HashSet<u64> = self.nodes.iter().map(|n| n.id).collect();
        self.nodes
            .iter()
            .filter_map(|n| {
                let p = n.holders.iter().find(|h| ids.contains(h) && **h != n.id)?;
                Some((n.id, *p))
            })
            .collect()
    }

    fn line(&self, n: &Node) -> String {
        let name = |id: u64| {
            self.node(id)
                .map_or_else(|| format!("thread {id}"), |n| n.name.clone())
        };
        let state = match &n.state {
            State::Running { core } => format!("runs on vcore {core}"),
            State::Escaped => "runs beside the vcores (escaped)".into(),
            State::Revoked => {
                "runs beside the vcores (its vcore taken after the kick's grace)".into()
            }
            State::WaitingForCore => "waits for a vcore".into(),
            State::Waiting { what } => format!("waits on {what}"),
            State::Sleeping { asked_ns } => format!("sleeps {} us", asked_ns / 1000),
            State::Other if self.recorded => "holds no vcore, in no wait".into(),
            State::Other => "holds no vcore (the flight recorder is off)".into(),
        };
        let since = n
            .for_ns
            .map(|ns| format!(" for {:.3} ms", ns as f64 / 1e6))
            .unwrap_or_default();
        let held = if n.holders.is_empty() {
            String::new()
        } else {
            let hs: Vec<String> = n.holders.iter().map(|h| name(*h)).collect();
            format!(", held by {}", hs.join(", "))
        };
        let lent = n
            .lent
            .map(|p| format!(", runs at {p} lent"))
            .unwrap_or_default();
        format!(
            "{} (priority {}{lent}, mask {:#x}) {state}{since}{held}",
            n.name, n.priority, n.mask
        )
    }

    fn print(
        &self,
        f: &mut fmt::Formatter<'_>,
        children: &HashMap<u64, Vec<u64>>,
        id: u64,
        depth: usize,
        done: &mut HashSet<u64>,
    ) -> fmt::Result {
        if !done.insert(id) {
            return Ok(());
        }
        let Some(n) = self.node(id) else {
            return Ok(());
        };
        let lead = if depth == 0 {
            String::new()
        } else {
            format!("{}└ ", "  ".repeat(depth - 1))
        };
        writeln!(f, "{lead}{}", self.line(n))?;
        for c in children.get(&id).into_iter().flatten() {
            self.print(f, children, *c, depth + 1, done)?;
        }
        Ok(())
    }
}

impl fmt::Display for WaitTree {
    /// Roots (threads that wait for nobody in the tree) first, each with the threads that
    /// wait for it below it; then each cycle, named, with its members and their waiters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parent = self.parents();
        let mut children: HashMap<u64, Vec<u64>> = HashMap::new();
        for n in &self.nodes {
            if let Some(p) = parent.get(&n.id) {
                children.entry(*p).or_default().push(n.id);
            }
        }
        writeln!(f, "wait tree: {} guest threads", self.nodes.len())?;
        let mut done = HashSet::new();
        for n in self.nodes.iter().filter(|n| !parent.contains_key(&n.id)) {
            self.print(f, &children, n.id, 0, &mut done)?;
        }
        for cycle in self.cycles() {
            let names: Vec<String> = cycle
                .iter()
                .chain(cycle.first())
                .filter_map(|id| self.node(*id).map(|n| n.name.clone()))
                .collect();
            writeln!(f, "deadlock: cycle {}", names.join(" -> "))?;
            for id in &cycle {
                done.remove(id);
            }
            self.print(f, &children, cycle[0], 1, &mut done)?;
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn node(id: u64, name: &str, state: State, holders: Vec<u64>) -> Node {
        Node {
            id,
            name: name.into(),
            priority: 44,
            lent: None,
            mask: 1,
            state,
            for_ns: Some(1_000_000),
            holders,
        }
    }

    #[test]
    fn waiters_print_under_their_holder_and_a_cycle_is_named() {
        let waits = |w: &str| State::Waiting { what: w.into() };
        let t = WaitTree {
            nodes: vec![
                node(1, "Main", State::Running { core: 0 }, vec![]),
                node(2, "Worker", waits("mutex::Lock 0x10"), vec![1]),
                node(3, "A", waits("mutex::Lock 0x20"), vec![4]),
                node(4, "B", waits("mutex::Lock 0x30"), vec![3]),
            ],
            recorded: true,
        };
        assert_eq!(t.cycles(), vec![vec![3, 4]]);
        let lent = WaitTree {
            nodes: vec![Node {
                lent: Some(28),
                ..node(1, "Holder", State::Running { core: 0 }, vec![])
            }],
            recorded: true,
        };
        assert!(
            lent.to_string()
                .contains("Holder (priority 44, runs at 28 lent, mask 0x1) runs"),
            "{lent}"
        );
        let s = t.to_string();
        assert!(s.contains("runs on vcore 0 for 1.000 ms\n└ Worker"), "{s}");
        assert!(s.contains("deadlock: cycle A -> B -> A"), "{s}");
        assert!(s.contains("held by B"), "{s}");
    }
}
