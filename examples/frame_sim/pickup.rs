//! Pickup latency: how long a piece of work waits between its post (the main thread's
//! `send`) and the moment a thread starts it, for jobs and for executor messages.
//!
//! Invariant: a latency is recorded only for posts of measured frames (the frames presented
//! inside the window, by the main thread's frame number), once, by the thread that starts the
//! work; each thread records into its own histogram and merges it into the run's when it
//! ends, so recording takes no lock and costs two clock reads a post.

use hdrhistogram::Histogram;
use hos::internal::{lock, nanos};
use std::sync::Mutex;
use std::time::Instant;

/// What the main thread sends: the frame and when it was posted.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Post {
    /// The main thread's frame number, from 0.
    pub(crate) frame: u64,
    /// When `send` was called.
    pub(crate) at: Instant,
}

impl Post {
    /// A post of `frame`, now.
    pub(crate) fn now(frame: u64) -> Post {
        Post {
            frame,
            at: Instant::now(),
        }
    }
}

/// Which work a latency is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A job from the shared queue, started by a worker.
    Job,
    /// A message to an executor, started by that executor.
    Exec,
}

/// A latency histogram in nanoseconds, 1 ns to 100 s at 3 significant digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("constant bounds are valid")
}

/// The run's latencies, merged from every thread that recorded some.
pub(crate) struct Pickups {
    /// The frames whose posts count: `[first, end)`.
    frames: [u64; 2],
    jobs: Mutex<Histogram<u64>>,
    exec: Mutex<Histogram<u64>>,
}

impl Pickups {
    /// Counts posts of main-thread frames `first..end`.
    pub(crate) fn new(first: u64, end: u64) -> Pickups {
        Pickups {
            frames: [first, end],
            jobs: Mutex::new(histogram()),
            exec: Mutex::new(histogram()),
        }
    }

    /// A recorder for one thread's pickups of `kind`; it merges into `self` when dropped.
    pub(crate) fn recorder(&self, kind: Kind) -> Recorder<'_> {
        Recorder {
            pickups: self,
            kind,
            local: histogram(),
        }
    }

    /// The quantiles `qs` of `kind`'s latencies, in microseconds (NaN where none was recorded).
    pub(crate) fn quantiles_us(&self, kind: Kind, qs: [f64; 2]) -> [f64; 2] {
        let h = lock(match kind {
            Kind::Job => &self.jobs,
            Kind::Exec => &self.exec,
        });
        qs.map(|q| {
            if h.is_empty() {
                f64::NAN
            } else {
                h.value_at_quantile(q) as f64 / 1e3
            }
        })
    }
}

/// One thread's pickups of one kind.
pub(crate) struct Recorder<'a> {
    pickups: &'a Pickups,
    kind: Kind,
    local: Histogram<u64>,
}

impl Recorder<'_> {
    /// This thread starts the work of `post` now.
    pub(crate) fn started(&mut self, post: Post) {
        let [first, end] = self.pickups.frames;
        if (first..end).contains(&post.frame) {
            let ns = nanos(post.at.elapsed()).max(1);
            self.local.saturating_record(ns);
        }
    }
}

impl Drop for Recorder<'_> {
    fn drop(&mut self) {
        let shared = match self.kind {
            Kind::Job => &self.pickups.jobs,
            Kind::Exec => &self.pickups.exec,
        };
        // Both have the same bounds, so adding cannot fail on range; a failure would only
        // drop this thread's samples from the figure.
        let _ = lock(shared).add(&self.local);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_measured_frames_count_and_threads_merge() {
        let p = Pickups::new(2, 4);
        let old = Instant::now()
            .checked_sub(Duration::from_millis(5))
            .unwrap();
        for frame in 1..=4 {
            // One recorder a thread, as the workers do; each merges when dropped.
            p.recorder(Kind::Job).started(Post { frame, at: old });
        }
        let [p50, p99] = p.quantiles_us(Kind::Job, [0.5, 0.99]);
        // At least the 5 ms since the post; how much more depends on the machine's load.
        assert!(p50 >= 5000.0, "{p50}");
        assert!(p99 >= p50);
        assert_eq!(lock(&p.jobs).len(), 2, "frames 2 and 3 only");
        assert!(p.quantiles_us(Kind::Exec, [0.5, 0.99])[0].is_nan());
    }
}
