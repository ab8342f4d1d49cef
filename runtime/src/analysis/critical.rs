//! Each frame's critical path: from the host's frame marks and the wake edges, walk back
//! from each mark to the one before it and say what the frame's time on that path was spent
//! on (the reference host's critical-chain measurement, docs/design.md section 8).
//!
//! Invariant: the walk attributes every nanosecond of a frame exactly once, so a frame's
//! parts add up to its time. At time `t` on thread `T` it looks at what `T` was doing just
//! before `t` (its outermost span): running guest code counts as guest code; a virtual-core
//! wait as a vcore wait; a sleep as the time asked plus its lateness; a wait that a wake
//! ended counts from the wake to its end as an object wait, and the walk goes on from the
//! waker at the wake; a wait nobody woke (timed out, cancelled) counts whole as an object
//! wait; anything else (a host thread's own code, the runtime between two spans) is host
//! time.

use super::timeline::{Span, Timelines, What};
use crate::trace::event::{Kind, ESCAPED};
use crate::trace::Snapshot;
use std::collections::HashMap;

/// Where one frame's time went on its critical path, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// The frame's time (mark to mark).
    pub frame: u64,
    /// Guest code on a virtual core (or escaped beside them).
    pub guest: u64,
    /// Waiting for a virtual core.
    pub vcore_wait: u64,
    /// Waiting on objects: from the wake to the waiter's return, or a whole wait nobody woke.
    pub object_wait: u64,
    /// Sleeps, the time asked (a frame limiter's pacing, a guest's sleep).
    pub sleep: u64,
    /// Sleeps, the time past their deadline.
    pub sleep_late: u64,
    /// Host time: a host thread's own code, and the runtime between two states.
    pub host: u64,
}

impl Breakdown {
    /// The parts, named, in report order.
    pub fn parts(&self) -> [(&'static str, u64); 6] {
        [
            ("guest", self.guest),
            ("vcore_wait", self.vcore_wait),
            ("object_wait", self.object_wait),
            ("sleep", self.sleep),
            ("sleep_late", self.sleep_late),
            ("host", self.host),
        ]
    }

    /// The sum of its parts (equal to `frame` for a walked frame).
    pub fn total(&self) -> u64 {
        self.parts().iter().map(|(_, v)| v).sum()
    }

    /// The mean of `frames`, part by part.
    pub fn mean(frames: &[Breakdown]) -> Breakdown {
        let n = frames.len().max(1) as u64;
        let sum = |f: fn(&Breakdown) -> u64| frames.iter().map(f).sum::<u64>() / n;
        Breakdown {
            frame: sum(|b| b.frame),
            guest: sum(|b| b.guest),
            vcore_wait: sum(|b| b.vcore_wait),
            object_wait: sum(|b| b.object_wait),
            sleep: sum(|b| b.sleep),
            sleep_late: sum(|b| b.sleep_late),
            host: sum(|b| b.host),
        }
    }
}

/// A walk longer than this many steps stops, the rest counted as host time (a guard: each
/// step moves back in time or to an earlier waker).
const MAX_STEPS: usize = 1 << 20;

/// The critical path of each frame of `snap`: one [`Breakdown`] per pair of consecutive
/// frame marks, in order.
pub(crate) fn frames(snap: &Snapshot) -> Vec<Breakdown> {
    let lines = Timelines::of(snap);
    let outer: HashMap<u64, Vec<&Span>> = lines
        .spans
        .iter()
        .map(|(tid, spans)| (*tid, spans.iter().filter(|s| s.depth == 0).collect()))
        .collect();
    let mut marks: Vec<(u64, u64)> = snap
        .threads
        .iter()
        .flat_map(|t| {
            t.events
                .iter()
                .filter(|e| e.kind == Kind::Frame)
                .map(move |e| (e.t, t.tid))
        })
        .collect();
    marks.sort_unstable();
    marks
        .windows(2)
        .map(|w| walk(&outer, w[1].1, w[0].0, w[1].0))
        .collect()
}

/// Walks back from `end` on thread `tid` to `start`.
fn walk(outer: &HashMap<u64, Vec<&Span>>, tid: u64, start: u64, end: u64) -> Breakdown {
    let mut b = Breakdown {
        frame: end - start,
        ..Breakdown::default()
    };
    let (mut tid, mut t) = (tid, end);
    let mut steps = 0;
    while t > start {
        steps += 1;
        if steps > MAX_STEPS {
            b.host += t - start;
            break;
        }
        let spans = outer.get(&tid).map_or(&[][..], Vec::as_slice);
        // The last outer span that began before `t`.
        let i = spans.partition_point(|s| s.begin < t);
        let Some(s) = i.checked_sub(1).map(|i| spans[i]) else {
            b.host += t - start;
            break;
        };
        if s.end < t {
            // A gap between states: host time.
            let from = s.end.max(start);
            b.host += t - from;
            t = from;
            continue;
        }
        let from = s.begin.max(start);
        match &s.what {
            What::Core { slot } => {
                debug_assert!(*slot < 8 || *slot == ESCAPED, "slot {slot}");
                b.guest += t - from;
                t = from;
            }
            What::CoreWait => {
                b.vcore_wait += t - from;
                t = from;
            }
            What::Sleep { asked, .. } => {
                let deadline = s.begin.saturating_add(*asked);
                let late_from = deadline.clamp(from, t);
                b.sleep_late += t - late_from;
                b.sleep += late_from - from;
                t = from;
            }
            What::Wait { .. } => match s.woken_by {
                Some((waker, at)) if at < t && at >= s.begin => {
                    let at = at.max(start);
                    b.object_wait += t - at;
                    (tid, t) = (waker, at);
                }
                _ => {
                    b.object_wait += t - from;
                    t = from;
                }
            },
            What::Spin | What::Park => {
                b.host += t - from;
                t = from;
            }
        }
    }
    debug_assert_eq!(b.total(), b.frame, "a frame's parts must add up: {b:?}");
    b
}
