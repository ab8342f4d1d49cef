//! Each frame's critical path: from the host's frame marks and the wake edges, walk back
//! from each mark to the one before it and say what the frame's time on that path was spent
//! on (the reference host's critical-chain measurement, docs/design.md section 8).
//!
//! Invariant: the walk attributes every nanosecond of a frame exactly once, so a frame's
//! parts add up to its time. At time `t` on thread `T` it looks at what `T` was doing just
//! before `t` (its outermost span): running guest code counts as guest code; a virtual-core
//! wait as a vcore wait; a sleep as the time asked plus its lateness (an idle poll that a
//! wake promoted, from the promotion only, and the walk goes on from the promoter); a wait
//! that a wake ended counts from the wake to its end as an object wait, and the walk goes on
//! from the waker at the wake; a wait nobody woke (timed out, cancelled) counts whole as an object
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
                // A promoted idle poll counts from its promotion, and the walk goes on from
                // the promoter: before it the poller was waiting for work, not late.
                let promoted = s
                    .woken_by
                    .filter(|&(_, at)| at < t && at >= s.begin)
                    .map(|(waker, at)| (waker, at.max(start)));
                let since = promoted.map_or(from, |(_, at)| at);
                let deadline = s.begin.saturating_add(*asked);
                let late_from = deadline.clamp(since, t);
                b.sleep_late += t - late_from;
                b.sleep += late_from - since;
                match promoted {
                    Some((waker, at)) => (tid, t) = (waker, at),
                    None => t = from,
                }
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::stats::SleepPath;
    use crate::trace::event::WaitFor;

    fn span(begin: u64, end: u64, what: What, woken_by: Option<(u64, u64)>) -> Span {
        Span {
            begin,
            end,
            depth: 0,
            what,
            open: false,
            woken_by,
            moved_to: None,
        }
    }

    fn core(begin: u64, end: u64) -> Span {
        span(begin, end, What::Core { slot: 0 }, None)
    }

    fn idle_poll(begin: u64, end: u64, asked: u64, promoted: Option<(u64, u64)>) -> Span {
        let what = What::Sleep {
            asked,
            guest: true,
            path: Some(SleepPath::IdlePoll),
            late: 0,
            polled: false,
        };
        span(begin, end, what, promoted)
    }

    /// The frame 0..300 of thread 1, whose wait the worker (2) ended at 280 after the job it
    /// took at its idle poll's end (260); `promoted`: the poster (3) promoted the poll at 240.
    fn frame(promoted: Option<(u64, u64)>) -> Breakdown {
        let wait = What::Wait {
            on: WaitFor::Object,
            objects: Vec::new(),
            deadline: None,
            failed: None,
        };
        let spans: HashMap<u64, Vec<Span>> = HashMap::from([
            (1, vec![core(0, 100), span(100, 300, wait, Some((2, 280)))]),
            (2, vec![idle_poll(150, 260, 20, promoted), core(260, 300)]),
            (3, vec![core(0, 300)]),
        ]);
        let outer = spans
            .iter()
            .map(|(tid, s)| (*tid, s.iter().collect()))
            .collect();
        walk(&outer, 1, 0, 300)
    }

    #[test]
    fn a_promoted_idle_poll_counts_from_its_promotion_and_the_walk_goes_to_the_promoter() {
        let b = frame(Some((3, 240)));
        assert_eq!(b.object_wait, 20, "{b:?}");
        // The worker's job (260..280), then the poster's code up to its send (0..240).
        assert_eq!(b.guest, 20 + 240, "{b:?}");
        // Past the deadline (170) the promotion came at 240: 240..260 is late, not 170..260.
        assert_eq!((b.sleep, b.sleep_late), (0, 20), "{b:?}");
        assert_eq!(b.total(), b.frame);
    }

    #[test]
    fn an_idle_poll_nobody_promoted_counts_whole() {
        let b = frame(None);
        assert_eq!((b.sleep, b.sleep_late), (20, 90), "{b:?}");
        // Before the poll (0..150) the worker's track is empty: host time.
        assert_eq!((b.guest, b.host), (20, 150), "{b:?}");
        assert_eq!(b.total(), b.frame);
    }
}
