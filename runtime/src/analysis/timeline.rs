//! From events to states: each thread's events folded into spans (running on a virtual core,
//! waiting for one, waiting on objects, spinning, parked, sleeping), and the edges between
//! threads (the wake that ended a wait, the kick that made a holder give its core up).
//!
//! Invariant: the spans of one thread nest: a span begins and ends inside any span of a
//! smaller depth that is open at its beginning (a thread releases its core before it waits or
//! sleeps, so a core span never overlaps them). A span still open when the events end is
//! closed at the snapshot's end and marked open. The writer, the critical path and the wait
//! tree all read spans made here, so they agree on every state.

use crate::stats::SleepPath;
use crate::trace::event::{Event, Failed, Kind, SpinEnd, WaitFor, NO_CORE, UNTIMED};
use crate::trace::{Snapshot, ThreadTrace};
use std::collections::HashMap;

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
        on: WaitFor,
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
    /// Begin, `sys::now()` ns; for a wait on objects, its registration with the first (a wake
    /// from then on may have ended it).
    pub begin: u64,
    /// End.
    pub end: u64,
    /// Nesting depth on its track (0: outermost).
    pub depth: u8,
    /// What.
    pub what: What,
    /// Still open when the events ended.
    pub open: bool,
    /// The wake that ended it (for an idle poll, the one that promoted it): (trace id of
    /// the waker, time).
    pub woken_by: Option<(u64, u64)>,
    /// For a wait on objects, the last move of it to another holder
    /// ([`Kind::Moved`]): (trace id of the holder, address of the mutex word).
    pub moved_to: Option<(u64, u64)>,
}

/// A wait being folded.
struct OpenWait {
    begin: u64,
    depth: u8,
    on: WaitFor,
    objects: Vec<Object>,
    deadline: Option<u64>,
    failed: Option<Failed>,
    /// The spin or park in progress: (is a spin, since). A phase is a park unless a spin end
    /// (missed) or the poll after it (caught) says it was a spin (no spin is no event).
    phase: Option<(bool, u64)>,
}

fn span(begin: u64, end: u64, depth: u8, what: What) -> Span {
    Span {
        begin,
        end,
        depth,
        what,
        open: false,
        woken_by: None,
        moved_to: None,
    }
}

/// Folds one thread's events into its spans (sorted by begin, outer first), closing what is
/// still open at `end`. A thread's core span ends at a core event, and where the thread
/// begins a sleep, a wait on anything but a core, or leaves: those give the core up.
pub(crate) fn fold(events: &[Event], end: u64) -> Vec<Span> {
    let mut out = Vec::new();
    let mut core: Option<(u64, u64)> = None;
    let mut core_wait: Option<u64> = None;
    let mut sleep: Option<(u64, u64, bool)> = None;
    let mut wait: Option<OpenWait> = None;
    // A deadline recorded in a wait's first poll, before the wait began.
    let mut deadline: Option<u64> = None;
    let end_core = |core: &mut Option<(u64, u64)>, t: u64, out: &mut Vec<Span>| {
        if let Some((slot, since)) = core.take() {
            out.push(span(since, t, 0, What::Core { slot }));
        }
    };
    // A repoll or a wait end closes the phase before it: a spin if it caught the wake.
    let close_phase = |w: &mut OpenWait, e: &Event, out: &mut Vec<Span>| {
        if let Some((spin, since)) = w.phase.take() {
            let spin = spin || e.x == SpinEnd::Caught as u64;
            let what = if spin { What::Spin } else { What::Park };
            out.push(span(since, e.t, w.depth + 1, what));
        }
    };
    for e in events {
        match e.kind {
            Kind::Blocked => {
                if let Some(w) = &mut wait {
                    w.objects.push(Object {
                        addr: e.a,
                        label: e.x,
                        holder: e.b,
                    });
                }
            }
            Kind::Deadline => match &mut wait {
                Some(w) => w.deadline = Some(e.a),
                None => deadline = Some(e.a),
            },
            Kind::WaitBegin => {
                let on = WaitFor::from_x(e.x & 0xFF);
                if on != WaitFor::Vcore {
                    end_core(&mut core, e.t, &mut out);
                }
                let objects = (e.a != 0).then_some(Object {
                    addr: e.a,
                    label: e.x >> 8,
                    holder: e.b,
                });
                wait = Some(OpenWait {
                    begin: e.t,
                    depth: u8::from(sleep.is_some() || core_wait.is_some()),
                    on,
                    objects: objects.into_iter().collect(),
                    deadline: deadline.take(),
                    failed: None,
                    phase: Some((false, e.t)),
                });
            }
            Kind::SpinEnd => {
                if let Some(w) = &mut wait {
                    let since = w.phase.take().map_or(e.t, |(_, s)| s);
                    if e.x == SpinEnd::Missed as u64 {
                        out.push(span(since, e.t, w.depth + 1, What::Spin));
                    }
                    w.phase = Some((false, e.t));
                }
            }
            Kind::Repoll => {
                if let Some(w) = &mut wait {
                    close_phase(w, e, &mut out);
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
                    close_phase(&mut w, e, &mut out);
                    out.push(close_wait(w, e.t, false));
                }
            }
            Kind::CoreQueued => {
                end_core(&mut core, e.t, &mut out);
                core_wait.get_or_insert(e.t);
            }
            Kind::Core => {
                end_core(&mut core, e.t, &mut out);
                if let Some(since) = core_wait.take() {
                    out.push(span(since, e.t, 0, What::CoreWait));
                }
                if e.x != NO_CORE {
                    core = Some((e.x, e.t));
                }
            }
            Kind::SleepBegin => {
                end_core(&mut core, e.t, &mut out);
                sleep = Some((e.t, e.a, e.x == 1));
            }
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
            Kind::ThreadExit => end_core(&mut core, e.t, &mut out),
            _ => {}
        }
    }
    let mut open = Vec::new();
    if let Some(mut w) = wait {
        if let Some((spin, since)) = w.phase.take() {
            let what = if spin { What::Spin } else { What::Park };
            open.push(span(since, end, w.depth + 1, what));
        }
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
        woken_by: None,
        moved_to: None,
    }
}

/// The moves of waits ([`Kind::Moved`]) in `threads`, by the trace id of the thread whose
/// wait moved: (time, holder's trace id, address), in time order.
pub(crate) fn moves<'a>(
    threads: impl IntoIterator<Item = &'a [Event]>,
) -> HashMap<u64, Vec<(u64, u64, u64)>> {
    let mut out: HashMap<u64, Vec<(u64, u64, u64)>> = HashMap::new();
    for events in threads {
        for e in events.iter().filter(|e| e.kind == Kind::Moved) {
            out.entry(e.a).or_default().push((e.t, e.b, e.x));
        }
    }
    for m in out.values_mut() {
        m.sort_unstable();
    }
    out
}

/// Sets each wait on objects of `spans` moved to the last of `moves` (one thread's, in time
/// order) made between its begin and its end: a move is recorded under the arbiter's lock
/// after the registration that begins the wait, and before the wait can end.
pub(crate) fn mark_moves(spans: &mut [Span], moves: &[(u64, u64, u64)]) {
    if moves.is_empty() {
        return;
    }
    for s in spans.iter_mut() {
        if !matches!(
            s.what,
            What::Wait {
                on: WaitFor::Object,
                ..
            }
        ) {
            continue;
        }
        let upto = moves.partition_point(|&(t, _, _)| t <= s.end);
        if let Some(&(_, holder, addr)) = moves[..upto].last().filter(|m| m.0 >= s.begin) {
            s.moved_to = Some((holder, addr));
        }
    }
}

/// An edge between two threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flow {
    /// A wake (else a kick).
    pub wake: bool,
    /// (trace id, time) where it starts: the wake, or the kick.
    pub from: (u64, u64),
    /// The time the wake or kick event carries: an untimed wake's stamp (its thread's event
    /// before it) may be before `from`'s time, which lies within the wait it ended.
    pub stamp: u64,
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
    /// wait) or a virtual-core wait was ended by the last wake of its thread that happened
    /// between its begin (a wait on objects begins at its registration) and its end (an
    /// untimed wake: whose interval meets them; the edge starts at the later of its stamp
    /// and the wait's begin); a kick ends at the victim's next core change if that change
    /// is a give-up at a checkpoint.
    pub(crate) fn of(snap: &Snapshot) -> Timelines {
        let mut wakes: HashMap<u64, Vec<(u64, u64, u64)>> = HashMap::new();
        let mut guests: HashMap<u64, u64> = HashMap::new();
        let moved = moves(snap.threads.iter().map(|t| t.events.as_slice()));
        for t in &snap.threads {
            if let Some(g) = t.meta.guest {
                guests.insert(g.id, t.tid);
            }
            for (lo, hi, target) in wake_intervals(&t.events, snap.end) {
                wakes.entry(target).or_default().push((lo, hi, t.tid));
            }
        }
        for w in wakes.values_mut() {
            w.sort_unstable();
        }
        let mut flows = Vec::new();
        let mut spans = Vec::new();
        for t in &snap.threads {
            let mut mine = fold(&t.events, snap.end);
            mark_moves(&mut mine, moved.get(&t.tid).map_or(&[][..], Vec::as_slice));
            let list = wakes.get(&t.tid).map_or(&[][..], Vec::as_slice);
            // A wake ends one wait at most: the waits take theirs in the order they ended, so
            // an untimed wake whose interval reaches past the wait it ended into the next one
            // (the next granted its core before it ever parked, by nobody's wake) is not
            // tied to both.
            let mut used = vec![false; list.len()];
            let mut ended: Vec<usize> = (0..mine.len())
                .filter(|&i| !mine[i].open && wakeable(&mine[i].what))
                .collect();
            ended.sort_by_key(|&i| mine[i].end);
            for i in ended {
                let s = &mut mine[i];
                let upto = list.partition_point(|&(lo, ..)| lo <= s.end);
                // A promoted idle poll: the first wake inside it, the promotion (a precise
                // finish after it may take the reactor's wake too). A wait: the last, which
                // ended it.
                let pick = if matches!(s.what, What::Sleep { .. }) {
                    (list.partition_point(|&(lo, ..)| lo < s.begin)..upto).find(|&k| !used[k])
                } else {
                    ended_by(list, &used, upto, s.begin, s.end)
                };
                if let Some(k) = pick {
                    used[k] = true;
                    let (lo, _, from) = list[k];
                    // An untimed wake's stamp may be before the wait's begin: it happened
                    // within the wait (it ended it), so no earlier than that.
                    let at = lo.max(s.begin);
                    s.woken_by = Some((from, at));
                    flows.push(Flow {
                        wake: true,
                        from: (from, at),
                        stamp: lo,
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
                        stamp: k.t,
                        to: (victim.tid, e.t),
                    });
                }
            }
        }
        flows.sort_by_key(|f| (f.from.1, f.to.1));
        Timelines { spans, flows }
    }
}

/// Which of the wakes `list[..upto]` (those that began by the wait's `end`, sorted) ended a
/// wait from `begin` to `end`, none `used`: the last that surely happened by `end` (a timed
/// one, or an untimed one whose interval closed by then), else the last whose interval
/// meets the wait (an untimed one reaching past its end). The candidates are the wakes
/// begun inside the wait and, before it, the untimed ones reaching into it back to the
/// first that does not.
fn ended_by(
    list: &[(u64, u64, u64)],
    used: &[bool],
    upto: usize,
    begin: u64,
    end: u64,
) -> Option<usize> {
    let mut meets = None;
    for k in (0..upto).rev() {
        let (_, hi, _) = list[k];
        if hi < begin {
            break;
        }
        if used[k] {
            continue;
        }
        if hi <= end {
            return Some(k);
        }
        meets.get_or_insert(k);
    }
    meets
}

/// The wakes among a thread's `events`, each as the interval it happened in and its target:
/// a timed wake at its time; an untimed one ([`UNTIMED`]) from its stamp (its thread's event
/// before it) to the next event of its thread that is no untimed wake (or `end`, the
/// reading's time).
fn wake_intervals(events: &[Event], end: u64) -> Vec<(u64, u64, u64)> {
    let untimed = |e: &Event| e.kind == Kind::Wake && e.x == UNTIMED;
    let mut out = Vec::new();
    for (i, e) in events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == Kind::Wake)
    {
        let hi = if untimed(e) {
            events[i + 1..]
                .iter()
                .find(|n| !untimed(n))
                .map_or(end, |n| n.t)
        } else {
            e.t
        };
        out.push((e.t, hi, e.a));
    }
    out
}

/// Whether a wake can end a span of this kind (a virtual-core wait's own `block_on` wait is
/// inside its `CoreWait`, which takes the edge).
fn wakeable(w: &What) -> bool {
    match w {
        What::CoreWait => true,
        What::Wait { on, .. } => *on != WaitFor::Vcore,
        // An idle poll is promoted by a wake from whatever made its polled object ready.
        What::Sleep { path, .. } => *path == Some(SleepPath::IdlePoll),
        _ => false,
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
