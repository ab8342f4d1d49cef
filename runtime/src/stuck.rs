//! What the runtime tells of a stuck deterministic run (docs/determinism.md section 7): the
//! token's softlock report, completed from the wait tree (names, objects, holders, cycles)
//! and the config (the selector), then told: to the log (an error for a deadlock, a warning
//! for a token held too long), to the trace (a `Softlock` event with the decision index), to
//! a flight recorder dump, and kept for [`Runtime::det_softlock`].
//!
//! Invariant: a report is completed and told outside the token's lock, by the thread whose
//! decision found the deadlock (`Token::on_softlock`'s hook) or by the watchdog (a token held
//! too long, `watchdog.rs`), once for each; nothing here decides anything for the run.

use crate::analysis::tree::State;
use crate::det::softlock::{Cause, Softlock};
use crate::runtime::Runtime;
use crate::thread::Activity;
use crate::token::Token;

impl Runtime {
    /// Hands the token (in the deterministic mode) the hook that completes and tells its
    /// softlocks; weak, so the token keeps its runtime no more alive than it was.
    pub(crate) fn hook_softlocks(&self) {
        let Some(token) = self.token() else { return };
        let weak = self.downgrade();
        token.on_softlock(Box::new(move |report| {
            if let Some(rt) = weak.upgrade() {
                rt.tell_softlock(report);
            }
        }));
    }

    /// The deterministic mode's last softlock: a deadlock found at virtual quiescence (no
    /// thread can run, no timer and no post pending), or a token held past
    /// HOS_DET_WATCHDOG_MS without a checkpoint; `None` if none was, or the mode is off. A
    /// deadlock is reported once a quiescence, when the decision finds it; the run then rests
    /// (a host thread's wake, outside the contract, could still end it) and this keeps the
    /// report.
    pub fn det_softlock(&self) -> Option<Softlock> {
        self.token().and_then(Token::softlock)
    }

    /// Completes `report` from the wait tree now and tells it (module doc).
    pub(crate) fn tell_softlock(&self, mut report: Softlock) {
        let Some(token) = self.token() else { return };
        let tree = self.wait_tree();
        let records = self.threads();
        for t in &mut report.threads {
            if let Some(n) = tree.node(t.id) {
                t.name.clone_from(&n.name);
                t.lent = n.lent;
                t.holders.clone_from(&n.holders);
                if let State::Waiting { what } = &n.state {
                    t.waits_on.clone_from(what);
                }
            }
            // Without the flight recorder, the wait's kind alone (its thread's activity).
            let activity = records
                .iter()
                .find(|r| r.id() == t.id)
                .map(|r| r.activity());
            if let (true, Some(Activity::Waiting { on, .. })) = (t.waits_on.is_empty(), activity) {
                t.waits_on = on.to_string();
            }
        }
        let ids: Vec<u64> = report.threads.iter().map(|t| t.id).collect();
        report.cycles = tree
            .cycles()
            .into_iter()
            .filter(|c| c.iter().all(|id| ids.contains(id)))
            .collect();
        report.selector = self
            .config()
            .det
            .as_ref()
            .map_or_else(String::new, ToString::to_string);
        let text = report.to_string();
        let (decision, vt_ns) = (report.decision, report.vt);
        let held = match report.cause {
            Cause::Deadlock => {
                crate::error!(decision, vt_ns, "{text}");
                None
            }
            Cause::Held { thread, .. } => {
                crate::warn!(decision, vt_ns, "{text}");
                Some(thread)
            }
        };
        crate::trace::softlock(decision, vt_ns, held);
        let first = text.lines().next().unwrap_or_default();
        self.dump_flight(first);
        token.keep(report);
    }
}
