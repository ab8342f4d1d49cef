//! From events to states: each thread's events folded into spans (running on a virtual core,
//! waiting for one, waiting on objects, spinning, parked, sleeping), and the edges between
//! threads (the wake that ended a wait, the kick that made a holder give its core up).
//!
//! Invariant: the spans of one thread nest: a span begins and ends inside any span of a
//! smaller depth that is open at its beginning (a thread releases its core before it waits or
//! sleeps, so a core span never overlaps them). A span still open when the events end is
//! closed at the snapshot's end and marked open. The writer, the critical path and the wait
//! tree all read spans made here, so they agree on every state.

use super::event::{Event, Failed, Kind, SpinEnd, WaitOn, NO_CORE};
use crate::stats::SleepPath;
use std::collections::HashMap;

/// Who a thread is, for its track's name and the wait tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// The thread's name now.
    pub name: String,
    /// The runtime it is a guest thread of (0: a host thread).
    pub runtime: u64,
    /// Its guest id, priority, core mask and ideal core, if a guest thread.
    pub guest: Option<Guest>,
}

/// A guest thread's identity on its track.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Guest {
    /// The runtime's id of the thread.
    pub id: u64,
    /// Horizon priority.
    pub priority: u8,
    /// Allowed virtual cores.
    pub mask: u64,
    /// Preferred virtual core.
    pub ideal: i32,
}

/// What a session's threads recorded.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// When the session started (`sys::now()` ns).
    pub start: u64,
    /// When the snapshot was taken.
    pub end: u64,
    /// Events the collector dropped (its limit), oldest first.
    pub dropped: u64,
    /// Every thread's events.
    pub threads: Vec<ThreadTrace>,
}

/// One thread's events.
#[derive(Clone, Debug, Default)]
pub struct ThreadTrace {
    /// Its trace id.
    pub tid: u64,
    /// Who it is now.
    pub meta: Meta,
    /// Its events, oldest first.
    pub events: Vec<Event>,
}

/// An object a wait registered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Object {
    /// Its address.
    pub addr: u64,
    /// Its label's number (`event::label_name`).
    pub label: u64,
    /// The trace id of the thread that held it when the wait registered (0: none).
    pub holder: u64,
}

/// What a span is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum What {
    /// Running guest code on virtual core `slot` (or `ESCAPED`, beside the slots).
    Core {
        /// The slot.
        slot: u64,
    },
    /// Waiting for a virtual core.
    CoreWait,
    /// A wait in `block_on`.
    Wait {
        /// What for.
        on: WaitOn,
        /// The objects it registered with.
        objects: Vec<Object>,
        /// Its deadline, if any.
        deadline: Option<u64>,
        /// Why it ended without completing.
        failed: Option<Failed>,
    },
    /// Spinning before a park.
    Spin,
    /// Parked.
    Park,
    /// A sleep.
    Sleep {
        /// Nanoseconds asked.
        asked: u64,
        /// A guest sleep (else a host sleep).
        guest: bool,
        /// How it was served (once it ended).
        path: Option<SleepPath>,
        /// Nanoseconds past its deadline.
        late: u64,
        /// Whether it held a poller slot.
        polled: bool,
    },
}

/// One state of one thread over a time.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Span {
    /// Begin, `sys::now()` ns.
    pub begin: u64,
    /// End.
    pub end: u64,
    /// Nesting depth on its track (0: outermost).
    pub depth: u8,
    /// What.
    pub what: What,
    /// Still open when the events ended.
    pub open: bool,
    /// For a wait: when it first registered (a wake from then on may have ended it).
    pub since: u64,
    /// The wake that ended it: (trace id of the waker, time).
    pub woken_by: Option<(u64, u64)>,
}

/// A wait being folded.
struct OpenWait {
    begin: u64,
    since: u64,
    depth: u8,
    on: WaitOn,
    objects: Vec<Object>,
    deadline: Option<u64>,
    failed: Option<Failed>,
    /// The spin or park in progress: (is a spin, since). A phase that no spin end closes
    /// was a park from its start (no spin is recorded as no event).
    phase: Option<(bool, u64)>,
}

fn span(begin: u64, end: u64, depth: u8, what: What) -> Span {
    Span {
        begin,
        end,
        depth,
        what,
        open: false,
        since: begin,
        woken_by: None,
    }
}

/// Folds one thread's events into its spans (sorted by begin, outer first), closing what is
/// still open at `end`.
pub(crate) fn fold(events: &[Event], end: u64) -> Vec<Span> {
    let mut out = Vec::new();
    let mut core: Option<(u64, u64)> = None;
    let mut core_wait: Option<u64> = None;
    let mut sleep: Option<(u64, u64, bool)> = None;
    let mut wait: Option<OpenWait> = None;
    let mut pending: (Vec<Object>, Option<u64>, Option<u64>) = (Vec::new(), None, None);
    let close_phase = |w: &mut OpenWait, t: u64, out: &mut Vec<Span>| {
        if let Some((spin, since)) = w.phase.take() {
            let what = if spin { What::Spin } else { What::Park };
            out.push(span(since, t, w.depth + 1, what));
        }
    };
    for e in events {
        match e.kind {
            Kind::Blocked => {
                let o = Object {
                    addr: e.a,
                    label: e.x,
                    holder: e.b,
                };
                match &mut wait {
                    Some(w) => w.objects.push(o),
                    None => {
                        pending.0.push(o);
                        pending.2.get_or_insert(e.t);
                    }
                }
            }
            Kind::Deadline => match &mut wait {
                Some(w) => w.deadline = Some(e.a),
                None => pending.1 = Some(e.a),
            },
            Kind::WaitBegin => {
                let depth = u8::from(sleep.is_some() || core_wait.is_some());
                let on = WaitOn::from_x(e.x);
                let (objects, deadline, since) = std::mem::take(&mut pending);
                wait = Some(OpenWait {
                    begin: e.t,
                    since: since.unwrap_or(e.t).min(e.t),
                    depth,
                    on,
                    objects,
                    deadline,
                    failed: None,
                    phase: Some((false, e.t)),
                });
            }
            Kind::SpinEnd => {
                if let Some(w) = &mut wait {
                    let how = e.x;
                    let spun = how == SpinEnd::Caught as u64 || how == SpinEnd::Missed as u64;
                    let since = w.phase.take().map_or(e.t, |(_, s)| s);
                    if spun {
                        out.push(span(since, e.t, w.depth + 1, What::Spin));
                    }
                    if how != SpinEnd::Caught as u64 {
                        w.phase = Some((false, e.t));
                    }
                }
            }
            Kind::Repoll => {
                if let Some(w) = &mut wait {
                    close_phase(w, e.t, &mut out);
                    w.phase = Some((false, e.t));
                }
            }
            Kind::WaitFailed => {
                if let Some(w) = &mut wait {
                    w.failed = Some(if e.x == Failed::Cancelled as u64 {
                        Failed::Cancelled
                    } else {
                        Failed::TimedOut
                    });
                }
            }
            Kind::WaitEnd => {
                if let Some(mut w) = wait.take() {
                    close_phase(&mut w, e.t, &mut out);
                    out.push(close_wait(w, e.t, false));
                }
            }
            Kind::CoreQueued => {
                if let Some((slot, since)) = core.take() {
                    out.push(span(since, e.t, 0, What::Core { slot }));
                }
                core_wait.get_or_insert(e.t);
            }
            Kind::Core => {
                if let Some((slot, since)) = core.take() {
                    out.push(span(since, e.t, 0, What::Core { slot }));
                }
                if let Some(since) = core_wait.take() {
                    out.push(span(since, e.t, 0, What::CoreWait));
                }
                if e.x != NO_CORE {
                    core = Some((e.x, e.t));
                }
            }
            Kind::SleepBegin => sleep = Some((e.t, e.a, e.x == 1)),
            Kind::SleepEnd => {
                if let Some((since, asked, guest)) = sleep.take() {
                    out.push(span(
                        since,
                        e.t,
                        0,
                        What::Sleep {
                            asked,
                            guest,
                            path: Some(e.sleep_path()),
                            late: e.a,
                            polled: e.x & 0x100 != 0,
                        },
                    ));
                }
            }
            _ => {}
        }
    }
    let mut open = Vec::new();
    if let Some(mut w) = wait {
        close_phase(&mut w, end, &mut open);
        open.push(close_wait(w, end, true));
    }
    if let Some((slot, since)) = core {
        open.push(span(since, end, 0, What::Core { slot }));
    }
    if let Some(since) = core_wait {
        open.push(span(since, end, 0, What::CoreWait));
    }
    if let Some((since, asked, guest)) = sleep {
        let what = What::Sleep {
            asked,
            guest,
            path: None,
            late: 0,
            polled: false,
        };
        open.push(span(since, end, 0, what));
    }
    for s in &mut open {
        s.open = true;
    }
    out.extend(open);
    out.sort_by_key(|s| (s.begin, s.depth));
    out
}

fn close_wait(w: OpenWait, t: u64, open: bool) -> Span {
    Span {
        begin: w.begin,
        end: t,
        depth: w.depth,
        what: What::Wait {
            on: w.on,
            objects: w.objects,
            deadline: w.deadline,
            failed: w.failed,
        },
        open,
        since: w.since,
        woken_by: None,
    }
}

/// An edge between two threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flow {
    /// A wake (else a kick).
    pub wake: bool,
    /// (trace id, time) where it starts: the wake, or the kick.
    pub from: (u64, u64),
    /// (trace id, time) where it ends: the end of the wait it ended, or the checkpoint that
    /// gave the core up.
    pub to: (u64, u64),
}

/// Every thread's spans, with the edges between them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Timelines {
    /// Each thread's trace id and spans, in the snapshot's order.
    pub spans: Vec<(u64, Vec<Span>)>,
    /// Wake and kick edges, in time order.
    pub flows: Vec<Flow>,
}

impl Timelines {
    /// Folds every thread of `snap` and pairs the edges: a wait (an object or a sleep's
    /// wait) or a virtual-core wait was ended by the last wake of its thread between its
    /// registration and its end; a kick ends at the victim's next core change if that change
    /// is a give-up at a checkpoint.
    pub(crate) fn of(snap: &Snapshot) -> Timelines {
        let mut wakes: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
        let mut guests: HashMap<u64, u64> = HashMap::new();
        for t in &snap.threads {
            if let Some(g) = t.meta.guest {
                guests.insert(g.id, t.tid);
            }
            for e in t.events.iter().filter(|e| e.kind == Kind::Wake) {
                wakes.entry(e.a).or_default().push((e.t, t.tid));
            }
        }
        for w in wakes.values_mut() {
            w.sort_unstable();
        }
        let mut flows = Vec::new();
        let mut spans = Vec::new();
        for t in &snap.threads {
            let mut mine = fold(&t.events, snap.end);
            let list = wakes.get(&t.tid).map_or(&[][..], Vec::as_slice);
            for s in mine.iter_mut().filter(|s| !s.open && wakeable(&s.what)) {
                let upto = list.partition_point(|&(at, _)| at <= s.end);
                if let Some(&(at, from)) = list[..upto].last().filter(|(at, _)| *at >= s.since) {
                    s.woken_by = Some((from, at));
                    flows.push(Flow {
                        wake: true,
                        from: (from, at),
                        to: (t.tid, s.end),
                    });
                }
            }
            spans.push((t.tid, mine));
        }
        let by_tid: HashMap<u64, &ThreadTrace> = snap.threads.iter().map(|t| (t.tid, t)).collect();
        for t in &snap.threads {
            for k in t.events.iter().filter(|e| e.kind == Kind::Kick) {
                let Some(victim) = guests.get(&k.a).and_then(|v| by_tid.get(v)) else {
                    continue;
                };
                let next = victim
                    .events
                    .iter()
                    .find(|e| e.t >= k.t && matches!(e.kind, Kind::CoreQueued | Kind::Core));
                if let Some(e) = next.filter(|e| e.kind == Kind::CoreQueued) {
                    flows.push(Flow {
                        wake: false,
                        from: (t.tid, k.t),
                        to: (victim.tid, e.t),
                    });
                }
            }
        }
        flows.sort_by_key(|f| (f.from.1, f.to.1));
        Timelines { spans, flows }
    }
}

/// Whether a wake can end a span of this kind (a virtual-core wait's own `block_on` wait is
/// inside its `CoreWait`, which takes the edge).
fn wakeable(w: &What) -> bool {
    match w {
        What::CoreWait => true,
        What::Wait { on, .. } => *on != WaitOn::Vcore,
        _ => false,
    }
}
