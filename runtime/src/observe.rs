//! What a host sees of its runtime's threads: the trace file, frame marks, the flight
//! recorder's dumps, the wait tree, each frame's critical path, and the escape report that
//! prints them (docs/design.md section 17).
//!
//! Invariant: everything here reads; nothing decides. The wait tree reads the virtual cores'
//! table under its lock and each thread's ring without one, once, at the call.

use crate::analysis::timeline::{fold, mark_moves, moves, Span, What};
use crate::analysis::tree::{Node, State, WaitTree};
use crate::analysis::{chrome, critical, Breakdown};
use crate::runtime::Runtime;
use crate::sys;
use crate::thread::ThreadRecord;
use crate::trace::event::{label_name, WaitFor, ESCAPED, MASK_BITS};
use crate::trace::recorder::tracks_of;
use crate::trace::{self, Guest, Kind, Session};
use crate::vcore::{Escape, Place};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

impl Runtime {
    /// Writes what the trace holds to `path` as Chrome trace-event JSON (open it in
    /// ui.perfetto.dev): the full trace since the runtime started if it collects one
    /// (HOS_TRACE, `Builder::trace`), else the flight recorder's last events of each thread.
    ///
    /// # Errors
    /// The file could not be written.
    pub fn write_trace(&self, path: &Path) -> std::io::Result<()> {
        chrome::write_file(path, &self.session().snapshot(), &[])
    }

    /// Marks a host frame (call it at each present): the trace shows it, and each pair of
    /// marks is a frame for [`Runtime::critical_path`].
    pub fn frame_mark(&self) {
        trace::frame(self.session().next_frame());
    }

    /// Dumps the flight recorder now, with `reason` in the file; returns its path (`None`
    /// when the recorder is off, past the dumps a runtime writes, or on a write error).
    pub fn dump_flight(&self, reason: &str) -> Option<PathBuf> {
        dump(
            self.session(),
            reason,
            vec![("wait_tree", self.wait_tree().to_string())],
        )
    }

    /// Each frame's critical path, from the frame marks and the wake edges of the full
    /// trace (empty unless the runtime collects one and marked two frames or more).
    pub fn critical_path(&self) -> Vec<Breakdown> {
        if !self.session().collects() {
            return Vec::new();
        }
        critical::frames(&self.session().snapshot())
    }

    /// Writes the HOS_TRACE file (once) and ends this runtime's recording; the `hos` crate
    /// calls it at the end of its shutdown, once its guest threads have ended.
    pub fn end_trace(&self) {
        let path = self.config().trace.clone();
        if let (Some(path), true) = (path, self.take_trace_file()) {
            match self.write_trace(&path) {
                Ok(()) => tracing::info!(path = %path.display(), "hos trace written"),
                Err(e) => {
                    crate::warn!(path = %path.display(), error = %e, "hos trace not written");
                }
            }
        }
        self.session().end();
    }

    /// Every guest thread now: what it does or waits on, since when, and who holds what it
    /// waits for (a mutex's owner, a kernel mutex's owner as of its last hand-off, the
    /// virtual cores' holders); `Display` prints it as a tree and names any cycle (a
    /// deadlock). Waits on objects are known while the flight recorder (or a trace) records.
    pub fn wait_tree(&self) -> WaitTree {
        let now = sys::now();
        let scale = sys::tick_scale();
        let tracks: Vec<_> = tracks_of(self.session().id())
            .into_iter()
            .map(|t| {
                let events = t.tail(&scale);
                (t, events)
            })
            .collect();
        let moved = moves(tracks.iter().map(|(_, e)| e.as_slice()));
        let mut by_guest = HashMap::new();
        let mut guest_of_tid = HashMap::new();
        for (t, events) in &tracks {
            let meta = t.meta();
            if let Some(g) = meta.guest.filter(|_| meta.runtime == self.session().id()) {
                by_guest.insert(g.id, (t.tid, events));
                guest_of_tid.insert(t.tid, g.id);
            }
        }
        let records = self.threads();
        let cores = self.vcores().view(&records);
        let nodes = records
            .iter()
            .zip(cores)
            .map(|(r, core)| {
                let spans = by_guest
                    .get(&r.id())
                    .map(|(tid, events)| {
                        let mut spans = fold(events, now);
                        mark_moves(&mut spans, moved.get(tid).map_or(&[][..], Vec::as_slice));
                        spans
                    })
                    .unwrap_or_default();
                node(r, core, &spans, now, &guest_of_tid)
            })
            .collect();
        WaitTree {
            nodes,
            recorded: self.session().records(),
        }
    }

    /// Records that the calling thread becomes the guest thread `rec` of this runtime.
    pub(crate) fn trace_thread_start(&self, rec: &ThreadRecord) {
        trace::thread_start(self.session(), guest(rec), &rec.name());
    }

    /// Records a change of `rec`'s name, priority or cores (`kind`), and updates its track.
    pub(crate) fn trace_retitle(&self, rec: &ThreadRecord, kind: Kind) {
        let (g, name) = (guest(rec), rec.name());
        let x = match kind {
            Kind::Priority => u64::from(g.priority),
            Kind::Affinity => {
                debug_assert!(
                    g.mask >> MASK_BITS == 0,
                    "a mask of 16 cores: {:#x}",
                    g.mask
                );
                g.mask | u64::from(g.ideal as u32) << MASK_BITS
            }
            _ => 0,
        };
        trace::retitle(self.session().id(), g.id, kind, x, |m| {
            m.name = name.to_string();
            m.guest = Some(g);
        });
    }

    /// Logs an escape of `rec` with each core's holder by name and the wait tree, and dumps
    /// the flight recorder.
    pub(crate) fn log_escape(&self, rec: &ThreadRecord, escape: Option<Escape>) {
        let Some(escape) = escape else { return };
        let threads = self.threads();
        let name = |id: u64| match threads.iter().find(|t| t.id() == id) {
            Some(t) => t.name().to_string(),
            None => format!("thread {id}"),
        };
        let holders = escape.holders(name);
        let tree = self.wait_tree().to_string();
        crate::warn!(
            thread = %rec.name(),
            priority = rec.running_priority(),
            escape_ms = escape.escape_ms(),
            holders = %holders,
            "waited past HOS_VCORE_ESCAPE_MS for a virtual core: runs without one, so more \
             threads than cores run guest code until it blocks\n{tree}",
        );
        let reason = format!(
            "escape: {} waited past HOS_VCORE_ESCAPE_MS ({} ms) for a virtual core; holders: {holders}",
            rec.name(),
            escape.escape_ms()
        );
        dump(self.session(), &reason, vec![("wait_tree", tree)]);
    }
}

/// Writes `session`'s flight recorder (or its trace so far) to its next dump file, with
/// `reason` and `notes` in the file, making its folder if it is missing; returns the path, or
/// `None` past the session's dumps or on a write error (logged).
fn dump(session: &Session, reason: &str, notes: Vec<(&str, String)>) -> Option<PathBuf> {
    let path = session.dump_path()?;
    if let Some(dir) = path.parent() {
        // A folder that cannot be made fails the write below, which is logged.
        let _ = std::fs::create_dir_all(dir);
    }
    let mut all = vec![("reason", reason.to_string())];
    all.extend(notes);
    match chrome::write_file(&path, &session.snapshot(), &all) {
        Ok(()) => {
            crate::warn!(path = %path.display(), reason, "hos flight recorder dumped");
            Some(path)
        }
        Err(e) => {
            crate::warn!(path = %path.display(), error = %e, "hos flight recorder: dump failed");
            None
        }
    }
}

/// `rec` as its track names it.
fn guest(rec: &ThreadRecord) -> Guest {
    Guest {
        id: rec.id(),
        priority: rec.priority(),
        mask: rec.core_mask(),
        ideal: rec.ideal_core(),
    }
}

/// One thread's node: the table's word on its core, else its latest open span.
fn node(
    r: &ThreadRecord,
    core: Place,
    spans: &[Span],
    now: u64,
    guest_of_tid: &HashMap<u64, u64>,
) -> Node {
    let open = spans.iter().filter(|s| s.open).min_by_key(|s| s.depth);
    let (state, since, holders) = match (core, open) {
        (Place::Holds { slot, since }, _) => {
            (State::Running { core: slot as u8 }, Some(since), vec![])
        }
        (Place::Escaped, _) => (State::Escaped, None, vec![]),
        (Place::Revoked, _) => (State::Revoked, None, vec![]),
        (Place::Queued { holders }, s) => (State::WaitingForCore, s.map(|s| s.begin), holders),
        (Place::Nowhere, Some(s)) => match &s.what {
            What::Wait {
                on: WaitFor::Object,
                objects,
                ..
            } => {
                let mut what: Vec<String> = objects
                    .iter()
                    .map(|o| format!("{} {:#x}", label_name(o.label), o.addr))
                    .collect();
                let holders = match s.moved_to {
                    Some((holder, addr)) => {
                        if objects.iter().all(|o| o.addr != addr) {
                            what.push(format!("then the mutex {addr:#x}"));
                        }
                        guest_of_tid.get(&holder).copied().into_iter().collect()
                    }
                    None => objects
                        .iter()
                        .filter_map(|o| guest_of_tid.get(&o.holder).copied())
                        .collect(),
                };
                let what = what.join(", ");
                (State::Waiting { what }, Some(s.begin), holders)
            }
            What::Sleep { asked, .. } => {
                (State::Sleeping { asked_ns: *asked }, Some(s.begin), vec![])
            }
            What::Core { slot } if *slot == ESCAPED => (State::Escaped, Some(s.begin), vec![]),
            _ => (State::Other, None, vec![]),
        },
        (Place::Nowhere, None) => (State::Other, None, vec![]),
    };
    Node {
        id: r.id(),
        name: r.name().to_string(),
        priority: r.priority(),
        lent: r.lent_priority().filter(|&p| p < r.priority()),
        mask: r.core_mask(),
        state,
        for_ns: since.map(|s| now.saturating_sub(s)),
        holders,
    }
}
