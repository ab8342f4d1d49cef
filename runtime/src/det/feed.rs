//! The host's events on their way into a deterministic run: posted by host threads (or, in a
//! replay, read from the recording), applied at decisions, and handed to the guest threads
//! that take them.
//!
//! Invariant: a post reaches guest code only through the inbox, and enters the inbox only at
//! a decision ([`Feed::apply`]), in (virtual time, source, sequence) order; a guest thread
//! takes it from there under the token. Live, which decision applies a post depends on when
//! the host posted it (the recording keeps that); in a replay, only on the recording: the
//! decision each input was applied at and its virtual time: a replay applies each input at
//! its decision's first look, the clock moved to its time if behind (as the live run had
//! jumped it), whatever woke that decision live (a host's post to a resting token, a thread
//! that started first). So what guest code sees, and when, is part of the run's decisions,
//! never of the host's thread timing once recorded. The posts applied since the last
//! witness go into the next one ([`Feed::witness`]), however many looks the decision took.
//! A post's sequence number, as guest code sees it, is its place among its source's posts in
//! the order applied (a source that posts out of time order is renumbered), so a replay,
//! whose file keeps that order, numbers them the same.

use super::post::{Post, Posts};
use super::record::Input;
use super::witness::Fnv64;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::task::Waker;

/// Where a run's posts come from.
#[derive(Debug)]
enum Inputs {
    /// The host's threads post ([`Feed::post`]).
    Live(Posts),
    /// A recording's inputs, in the order they were applied, and how many are applied.
    Replay(Vec<Input>, usize),
}

/// The posts of one deterministic run: those waiting for their decision and those applied
/// and not taken yet.
#[derive(Debug)]
pub struct Feed {
    inputs: Inputs,
    /// Applied, waiting for a guest thread to take them, oldest first.
    inbox: VecDeque<Post>,
    /// The guest threads waiting for the inbox ([`Feed::take`]).
    wakers: Vec<Waker>,
    /// Each source's posts applied so far: the next one's sequence number.
    applied: BTreeMap<u32, u64>,
    /// What the posts applied since the last witness put in the next one.
    unwitnessed: Fnv64,
    unwitnessed_count: u32,
}

/// What a decision applied: the witness's object and result (module invariant: the hash
/// covers every post's time, source, sequence and payload).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// FNV-1a 64 over the posts applied, in order.
    pub digest: u64,
    /// How many.
    pub count: u32,
}

impl Feed {
    /// A live run's feed: the host posts.
    pub fn live() -> Feed {
        Feed::with(Inputs::Live(Posts::new()))
    }

    /// A replay's feed: `inputs`, each at its recorded decision. Live posts are refused.
    pub fn replay(inputs: Vec<Input>) -> Feed {
        Feed::with(Inputs::Replay(inputs, 0))
    }

    fn with(inputs: Inputs) -> Feed {
        Feed {
            inputs,
            inbox: VecDeque::new(),
            wakers: Vec::new(),
            applied: BTreeMap::new(),
            unwitnessed: Fnv64::new(),
            unwitnessed_count: 0,
        }
    }

    /// Queues `payload` from `source`, due at virtual time `at` (`None`: at the next
    /// decision); its sequence number among `source`'s posts.
    ///
    /// # Errors
    /// [`PostError::Replaying`]: a replay takes its inputs from the recording.
    pub fn post(&self, source: u32, at: Option<u64>, payload: Vec<u8>) -> Result<u64, PostError> {
        match &self.inputs {
            Inputs::Live(posts) => Ok(match at {
                Some(vt) => posts.post_at(source, vt, payload),
                None => posts.post(source, payload),
            }),
            Inputs::Replay(..) => Err(PostError::Replaying),
        }
    }

    /// At decision `decision`, virtual time `vt`: moves the posts due into the inbox, each
    /// numbered among its source's posts applied (module invariant), and wakes the guest
    /// threads waiting for it. The posts, in the order applied. Live, a post is due once `vt`
    /// reaches its time; in a replay, at its recorded decision (the caller moves the clock
    /// to its time).
    pub fn apply(&mut self, decision: u64, vt: u64) -> Vec<Post> {
        let mut due = match &mut self.inputs {
            Inputs::Live(posts) => posts.take_due(vt),
            Inputs::Replay(inputs, next) => {
                let from = *next;
                while inputs.get(*next).is_some_and(|i| i.decision <= decision) {
                    *next += 1;
                }
                inputs[from..*next].iter().map(|i| i.post.clone()).collect()
            }
        };
        for p in &mut due {
            let next = self.applied.entry(p.source).or_insert(0);
            p.seq = *next;
            *next += 1;
            self.unwitnessed.u64(p.vt);
            self.unwitnessed.u32(p.source);
            self.unwitnessed.u64(p.seq);
            self.unwitnessed.u64(p.payload.len() as u64);
            self.unwitnessed.bytes(&p.payload);
            self.unwitnessed_count += 1;
        }
        if !due.is_empty() {
            self.inbox.extend(due.iter().cloned());
            self.wakers.drain(..).for_each(Waker::wake);
        }
        due
    }

    /// The virtual time of the next live post: where the clock jumps when nothing can run.
    /// `None` in a replay, whose inputs are applied at their decision's first look.
    pub fn next_due(&self) -> Option<u64> {
        match &self.inputs {
            Inputs::Live(posts) => posts.next_due(),
            Inputs::Replay(..) => None,
        }
    }

    /// What the posts applied since the last call put in the coming witness.
    pub fn witness(&mut self) -> Applied {
        let applied = match self.unwitnessed_count {
            0 => Applied::default(),
            count => Applied {
                digest: self.unwitnessed.finish(),
                count,
            },
        };
        self.unwitnessed = Fnv64::new();
        self.unwitnessed_count = 0;
        applied
    }

    /// Whether a post waits for a decision (live or recorded).
    pub fn pending(&self) -> bool {
        match &self.inputs {
            Inputs::Live(posts) => !posts.is_empty(),
            Inputs::Replay(inputs, next) => *next < inputs.len(),
        }
    }

    /// The oldest applied post, taken; else `None`, and `waker` is woken when a decision
    /// applies one (or [`Feed::wake_all`]).
    pub fn take(&mut self, waker: &Waker) -> Option<Post> {
        let post = self.inbox.pop_front();
        if post.is_none() && !self.wakers.iter().any(|w| w.will_wake(waker)) {
            self.wakers.push(waker.clone());
        }
        post
    }

    /// Wakes every guest thread waiting for the inbox (the mode stops: their waits end).
    pub fn wake_all(&mut self) {
        self.wakers.drain(..).for_each(Waker::wake);
    }
}

/// Why a post or a take was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PostError {
    /// The runtime does not run in the deterministic mode (HOS_DET is off): a host event
    /// goes to the guest by the host's own means (signal the object).
    Off,
    /// The mode stopped (a shutdown, or a selector that could not pick).
    Stopped,
    /// The run replays a recording, which supplies every post: a live post would be a
    /// second copy of one the recording holds, at a decision of the host's timing.
    Replaying,
    /// Posts are taken by guest threads of the runtime (under the token), never by a host
    /// thread, whose timing would decide what it sees.
    NotAGuest,
    /// A take's virtual timeout passed with no post applied.
    TimedOut,
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PostError::Off => "post: the runtime is not in the deterministic mode (HOS_DET is off)",
            PostError::Stopped => "post: the deterministic mode stopped (shutdown or a selector error)",
            PostError::Replaying => {
                "post: the run replays a recording, which supplies every post (live posts are refused)"
            }
            PostError::NotAGuest => {
                "post: posts are taken by a guest thread of this runtime, not a host thread"
            }
            PostError::TimedOut => "post: no post came before the virtual timeout",
        })
    }
}

impl std::error::Error for PostError {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn post(vt: u64, source: u32, seq: u64) -> Post {
        Post {
            vt,
            source,
            seq,
            payload: vec![seq as u8],
        }
    }

    #[test]
    fn a_live_post_reaches_the_inbox_at_its_decision_and_wakes_the_taker() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut f = Feed::live();
        assert_eq!(f.take(&waker), None);
        assert_eq!(f.take(&waker), None, "one registration a waker");
        assert_eq!(f.post(3, Some(500), vec![7]), Ok(0));
        assert_eq!(f.post(3, None, vec![8]), Ok(1));
        assert!(f.pending());
        assert_eq!(f.next_due(), Some(0));
        let due = f.apply(0, 100);
        assert_eq!(due.len(), 1, "the post at 500 is not due at 100");
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(f.next_due(), Some(500));
        let first = f.witness();
        assert_eq!(first.count, 1);
        assert_eq!(f.witness(), Applied::default(), "each post in one witness");
        assert_eq!(
            f.take(&waker).map(|p| (p.payload, p.seq)),
            Some((vec![8], 0))
        );
        f.apply(1, 500);
        assert_eq!(
            f.take(&waker).map(|p| p.seq),
            Some(1),
            "numbered in the order applied"
        );
        assert!(!f.pending());
        let second = f.witness();
        assert_eq!(second.count, 1);
        assert_ne!(second.digest, first.digest);
    }

    #[test]
    fn a_replay_applies_each_input_at_its_recorded_decision() {
        let inputs = vec![
            Input {
                decision: 2,
                post: post(10, 1, 0),
            },
            Input {
                decision: 2,
                post: post(10, 2, 0),
            },
            Input {
                decision: 5,
                post: post(90, 1, 1),
            },
        ];
        let mut f = Feed::replay(inputs);
        assert_eq!(f.post(1, None, vec![]), Err(PostError::Replaying));
        assert!(f.apply(1, 1_000).is_empty(), "not before its decision");
        assert_eq!(f.next_due(), None);
        assert_eq!(
            f.apply(2, 0).len(),
            2,
            "at its decision, whatever the clock"
        );
        assert_eq!(f.witness().count, 2);
        assert!(f.pending());
        assert_eq!(f.apply(7, 0), [post(90, 1, 1)]);
        assert!(!f.pending());
    }
}
