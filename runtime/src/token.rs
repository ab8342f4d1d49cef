//! The deterministic mode's token (docs/determinism.md section 1): one guest thread runs at
//! a time, and each hand-off is a decision of the run's selector.
//!
//! Invariant: at most one enrolled thread is `Running`, and only the token holder (or, when
//! no one holds it, the one thread that takes a decision) changes the schedule, under the one
//! lock. A wake does not move a thread: it only leaves its parker notified, and the next
//! decision sees that and makes it ready; timers are due on the virtual clock alone. So each
//! decision's candidates, and so the run, depend only on what the threads did under the
//! token and on the selector's seed, never on the OS's timing.
//!
//! At a decision: waiting threads whose parker holds a token (or whose timeout the clock reached)
//! and sleepers whose deadline the clock reached become ready (sleepers in (deadline, insertion)
//! order, then the woken and timed out in id order, each behind the ready ones); each logical
//! core's candidate is its best ready thread not paused (lowest Horizon priority value, then first
//! ready), a thread away since a yield to any thread only when nothing else on its core is ready
//! (`token/yielding.rs`, Horizon's three yields); the selector picks among the cores; the
//! witness goes into the rolling hash. When no thread is ready the clock jumps to the next
//! sleeper's (or timed wait's) deadline; when none is pending either, nothing can run again by
//! itself (a deadlock, or a wake a host thread owes) and the token rests until such a wake.
//!
//! Softlocks (docs/determinism.md section 7) are `token/softlock.rs`'s: the decision that finds
//! nothing can run again by itself makes a report; the watchdog reads the holder's progress.
//!
//! Posted host events (`det::feed`) enter at decisions too: each decision first applies the
//! posts due by the clock, which wakes the guest threads that take them, and its witness then
//! says `Post` and covers them; when nothing can run the clock jumps to the earlier of the next
//! deadline and the next post. Every witness goes to the run's journal (`det::journal`: the
//! recording, the replay's checks, a verify's comparison).

use crate::det::clock::{Clock, Costs, Pacing};
use crate::det::feed::{Feed, PostError};
use crate::det::history::{History, Turn};
use crate::det::journal::Journal;
use crate::det::post::Post;
use crate::det::selector::{SelectError, Selector};
use crate::det::softlock::Softlock;
use crate::det::verifier::Divergence;
use crate::det::witness::{Candidate, Reason, Rolling, Witness};
use crate::parker::Parker;
use crate::sync::{lock, wait, Arc, Condvar, Mutex, MutexGuard};
use crate::sys;
use crate::vcore::step::YieldKind;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::task::Waker;
use std::time::Duration;

mod softlock;
mod yielding;

pub(crate) use softlock::{Held, Tell};

/// How often a thread waiting for a turn looks again while the token rests: a host thread's
/// wake (outside the contract) or a shutdown is then seen within it.
const RESTING_LOOK: Duration = Duration::from_millis(1);

/// What an enrolled thread is doing.
#[derive(Debug)]
enum Run {
    /// Enrolled, its OS thread not started yet: no candidate (a turn it could not take).
    Starting,
    /// Ready to run; the number orders equals on a core (first ready first).
    Ready(u64),
    /// It holds the token.
    Running,
    /// Waiting for a wake on its parker, or until a virtual deadline (a wait's timeout).
    Waiting(Arc<Parker>, Option<u64>),
    /// Sleeping to a virtual deadline; the number orders equal deadlines (insertion).
    Sleeping(u64, u64),
}

/// An enrolled guest thread.
#[derive(Debug)]
struct Slot {
    core: u8,
    priority: u8,
    run: Run,
    /// Where it waits for its turn (under the token's lock).
    turn: Arc<Condvar>,
    /// Its last turns, for a softlock's report.
    history: History,
    /// Paused (svcSetThreadActivity, `pause_guests`): no candidate until resumed.
    paused: bool,
    /// Off its core's queue since a yield to any thread (Horizon's active core -1): no
    /// candidate until its core has no other ready thread (`token/yielding.rs`).
    away: bool,
}

/// What the token's lock guards.
struct State {
    selector: Box<dyn Selector + Send>,
    clock: Clock,
    rolling: Rolling,
    threads: BTreeMap<u64, Slot>,
    holder: Option<u64>,
    /// The holder's checkpoints left in its quantum.
    left: u32,
    /// The core of the last holder, for the selector.
    last_core: Option<u8>,
    /// The next `Run::Ready` and `Run::Sleeping` order numbers.
    next_order: u64,
    /// Off: after a shutdown, or a selector error; every thread runs free.
    stopped: bool,
    /// The wall-time sleep the next holder owes its pacing.
    pace_ns: u64,
    /// Checkpoints, tick reads and hand-offs so far: the holder's progress, for the watchdog.
    progress: u64,
    /// When the holder's turn began, after its pacing's sleep (a `sys::now()` value).
    turn_start: u64,
    /// Whether this quiescence was reported (cleared when the token is handed again).
    quiet: bool,
    /// A softlock found under the lock, for the runtime's hook once the lock is dropped.
    found: Option<Softlock>,
    /// The last softlock reported, as the runtime completed it.
    report: Option<Softlock>,
    /// The posts on their way in.
    feed: Feed,
    /// Where each decision is recorded and checked.
    journal: Journal,
}

/// The token and the schedule of one runtime's guest threads in the deterministic mode.
pub(crate) struct Token {
    state: Mutex<State>,
    cores: u8,
    /// The runtime's hook for a softlock, called outside the lock.
    tell: OnceLock<Tell>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = lock(&self.state);
        f.debug_struct("Token")
            .field("cores", &self.cores)
            .field("holder", &s.holder)
            .field("decisions", &s.rolling.decisions())
            .field("vt", &s.clock.now())
            .finish_non_exhaustive()
    }
}

/// A run's figures: how far it went and the hash of its decisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DetStats {
    /// Decisions taken.
    pub decisions: u64,
    /// The rolling hash of their witnesses (FNV-1a 64, `det::witness`).
    pub hash: u64,
    /// The virtual time, in ns.
    pub vt: u64,
}

impl Token {
    /// A token over `cores` logical cores (1 to 8), picking with `selector`, its posts from
    /// `feed`, its decisions to `journal`.
    pub(crate) fn new(
        selector: Box<dyn Selector + Send>,
        cores: u8,
        pacing: Pacing,
        feed: Feed,
        journal: Journal,
    ) -> Token {
        Token {
            state: Mutex::new(State {
                selector,
                clock: Clock::new(Costs::default(), pacing),
                rolling: Rolling::new(),
                threads: BTreeMap::new(),
                holder: None,
                left: 0,
                last_core: None,
                next_order: yielding::FIRST_ORDER,
                stopped: false,
                pace_ns: 0,
                progress: 0,
                turn_start: 0,
                quiet: false,
                found: None,
                report: None,
                feed,
                journal,
            }),
            cores,
            tell: OnceLock::new(),
        }
    }

    /// The logical core of a thread with `ideal_core` and `core_mask`: the ideal core if it
    /// is one of the run's, else the mask's lowest core that is, else core 0.
    pub(crate) fn core_of(&self, ideal_core: i32, core_mask: u64) -> u8 {
        let n = u32::from(self.cores);
        match u32::try_from(ideal_core) {
            Ok(c) if c < n => c as u8,
            _ => (0..n).find(|c| core_mask & (1 << c) != 0).unwrap_or(0) as u8,
        }
    }

    /// Enrolls a new thread `id`, not yet a candidate: [`Token::started`] makes it one.
    pub(crate) fn enroll(&self, id: u64, core: u8, priority: u8) {
        lock(&self.state).threads.insert(
            id,
            Slot {
                core,
                priority,
                run: Run::Starting,
                turn: Arc::new(Condvar::new()),
                history: History::default(),
                paused: false,
                away: false,
            },
        );
    }

    /// Thread `id`'s OS thread runs (its spawner saw it start): it is ready for its first
    /// turn, and a token that rests (no holder) is handed at once.
    pub(crate) fn started(&self, id: u64) {
        let mut s = lock(&self.state);
        let order = s.order();
        match s.threads.get_mut(&id) {
            Some(t) if matches!(t.run, Run::Starting) => t.run = Run::Ready(order),
            _ => return,
        }
        if s.holder.is_none() && !s.stopped {
            self.decide(s, Reason::Start);
        }
    }

    /// Sets thread `id`'s priority, the one it runs at (a lent one included): its next
    /// candidacy uses it.
    pub(crate) fn set_priority(&self, id: u64, priority: u8) {
        if let Some(slot) = lock(&self.state).threads.get_mut(&id) {
            slot.priority = priority;
        }
    }

    /// Blocks thread `id` until it holds the token (or the mode stopped).
    ///
    /// # Blocking
    /// Until its turn.
    pub(crate) fn take_turn(&self, id: u64) {
        let mut s = lock(&self.state);
        let Some(turn) = s.threads.get(&id).map(|t| t.turn.clone()) else {
            return;
        };
        while s.holder != Some(id) && !s.stopped {
            let resting = s.holder.is_none();
            s = wait(&*turn, s, resting.then_some(RESTING_LOOK));
            // A wake a host thread gave while the token rested: the waiting thread decides.
            // A woken thread makes the decision find a candidate (or, paused, no deadlock),
            // so it finds no softlock to tell and the lock is kept for the wait.
            if s.holder.is_none() && !s.stopped && s.any_woken() {
                s.decide(Reason::Wait);
            }
        }
        let pace = std::mem::take(&mut s.pace_ns);
        let turn = (s.holder == Some(id))
            .then(|| s.threads.get(&id).and_then(|t| t.history.last()))
            .flatten();
        drop(s);
        if pace > 0 {
            std::thread::sleep(Duration::from_nanos(pace));
        }
        // The turn's marker on this thread's track: its events up to its next marker fall in
        // this decision (only here, so the mode off costs the event path nothing).
        if let Some(turn) = turn {
            crate::trace::decision(turn.decision, turn.vt);
        }
    }

    /// Thread `id` (the holder) waits for a wake on `parker`, or until the virtual time
    /// `deadline`: the token goes on by a decision, and comes back once a decision finds the
    /// parker notified (or the deadline reached) and picks it. The parker's token is consumed
    /// before it returns.
    ///
    /// # Blocking
    /// Until its next turn.
    pub(crate) fn wait(&self, id: u64, parker: &Arc<Parker>, deadline: Option<u64>) {
        self.give(id, Reason::Wait, |s| {
            s.clock.op();
            Run::Waiting(parker.clone(), deadline)
        });
        parker.try_take();
    }

    /// Thread `id` (the holder) sleeps `ns` of virtual time.
    ///
    /// # Blocking
    /// Until its next turn at or after the deadline.
    pub(crate) fn sleep(&self, id: u64, ns: u64) {
        self.give(id, Reason::Wait, |s| {
            let deadline = s.clock.op().saturating_add(ns);
            Run::Sleeping(deadline, s.order())
        });
    }

    /// Pauses (`on`) or resumes thread `id`: a paused thread is no candidate, whatever it
    /// does, until resumed (a holder asked to pause gives the token up at its next
    /// checkpoint: `Runtime::checkpoint_kicked`); a resume while the token rests hands it at
    /// once.
    pub(crate) fn set_paused(&self, id: u64, on: bool) {
        let mut s = lock(&self.state);
        let Some(t) = s.threads.get_mut(&id) else {
            return;
        };
        t.paused = on;
        if !on && s.holder.is_none() && !s.stopped {
            self.decide(s, Reason::Start);
        }
    }

    /// Whether thread `id` runs no guest code until resumed: paused and not the holder, or
    /// ended.
    pub(crate) fn is_paused_out(&self, id: u64) -> bool {
        let s = lock(&self.state);
        s.threads
            .get(&id)
            .is_none_or(|t| t.paused && s.holder != Some(id))
    }

    /// Thread `id` (the holder) yields by `kind`, as Horizon's scheduler does within a core
    /// (`token/yielding.rs`): behind its equals, or off its core's queue (`Any`).
    ///
    /// # Blocking
    /// Until its next turn.
    pub(crate) fn yield_turn(&self, id: u64, kind: YieldKind) {
        self.give(id, Reason::Yield, |s| {
            s.clock.op();
            s.yielded(id, kind)
        });
    }

    /// A checkpoint of thread `id` (the holder): the clock moves, and at the quantum's end
    /// the token goes on by a decision.
    ///
    /// # Blocking
    /// At the quantum's end, until its next turn.
    pub(crate) fn checkpoint(&self, id: u64) {
        {
            let mut s = lock(&self.state);
            if s.holder != Some(id) {
                return;
            }
            s.clock.checkpoint();
            s.progress += 1;
            s.left = s.left.saturating_sub(1);
            if s.left > 0 {
                return;
            }
        }
        self.give(id, Reason::QuantumEnd, |s| Run::Ready(s.order()));
    }

    /// Thread `id` ends: it leaves the schedule, and the token goes on if it held it.
    pub(crate) fn exit(&self, id: u64) {
        let mut s = lock(&self.state);
        s.threads.remove(&id);
        if s.holder == Some(id) {
            s.holder = None;
            self.decide(s, Reason::Exit);
        }
    }

    /// The virtual time, in ns.
    pub(crate) fn now(&self) -> u64 {
        lock(&self.state).clock.now()
    }

    /// A guest's system tick read (a checkpoint of the clock): the tick after it.
    pub(crate) fn tick(&self) -> u64 {
        let mut s = lock(&self.state);
        s.progress += 1;
        s.clock.tick()
    }

    /// Decisions so far, their hash and the virtual time.
    pub(crate) fn stats(&self) -> DetStats {
        let s = lock(&self.state);
        DetStats {
            decisions: s.rolling.decisions(),
            hash: s.rolling.hash(),
            vt: s.clock.now(),
        }
    }

    /// Ends the mode (a shutdown): every thread runs free, so its waits end as a shutdown's
    /// do; the journal is finished (the recording flushed).
    pub(crate) fn stop(&self) {
        let mut s = lock(&self.state);
        s.stopped = true;
        s.threads.values().for_each(|t| t.turn.notify_one());
        s.end_journal();
    }

    /// A host's post of `payload` from `source`, due at virtual time `at` (`None`: at the next
    /// decision); its sequence number. A token that rests (nothing could run) decides at
    /// once, so the post is applied and whoever takes it runs.
    pub(crate) fn post(
        &self,
        source: u32,
        at: Option<u64>,
        payload: Vec<u8>,
    ) -> Result<u64, PostError> {
        let s = lock(&self.state);
        if s.stopped {
            return Err(PostError::Stopped);
        }
        let seq = s.feed.post(source, at, payload)?;
        // Before the first guest thread enrolls, posts only wait: no decision has anyone
        // to give the token to, and time moves only for guests.
        if s.holder.is_none() && !s.threads.is_empty() {
            self.decide(s, Reason::Post);
        }
        Ok(seq)
    }

    /// The holder takes the oldest post applied; `None`, and `waker` is woken at the decision
    /// that applies one (or when the mode stops).
    pub(crate) fn take_post(&self, waker: &Waker) -> Result<Option<Post>, PostError> {
        let mut s = lock(&self.state);
        if s.stopped {
            return Err(PostError::Stopped);
        }
        Ok(s.feed.take(waker))
    }

    /// The first divergence from the recording replayed (or the run verified against).
    pub(crate) fn divergence(&self) -> Option<Divergence> {
        lock(&self.state).journal.divergence().cloned()
    }

    /// `f` on the run's journal, before the first decision (a verify sets it up, takes its
    /// witnesses after).
    pub(crate) fn with_journal<R>(&self, f: impl FnOnce(&mut Journal) -> R) -> R {
        f(&mut lock(&self.state).journal)
    }

    /// Whether the mode still schedules (not stopped).
    pub(crate) fn is_on(&self) -> bool {
        !lock(&self.state).stopped
    }

    /// Thread `id`, if it holds the token, becomes what `then` says and the token goes on
    /// for `reason`; then it waits for its next turn. A thread that does not hold it (the
    /// mode stopped) returns at once.
    fn give(&self, id: u64, reason: Reason, then: impl FnOnce(&mut State) -> Run) {
        {
            let mut s = lock(&self.state);
            if s.holder != Some(id) || s.stopped {
                return;
            }
            let run = then(&mut s);
            if let Some(slot) = s.threads.get_mut(&id) {
                slot.run = run;
                slot.history.end(reason);
            }
            s.holder = None;
            self.decide(s, reason);
        }
        self.take_turn(id);
    }

    /// Decides (`State::decide`), drops the lock, then hands a softlock the decision found to
    /// the hook: every decision that can find one goes through here.
    fn decide(&self, mut s: MutexGuard<'_, State>, reason: Reason) {
        s.decide(reason);
        let found = s.found.take();
        drop(s);
        if let (Some(report), Some(tell)) = (found, self.tell.get()) {
            tell(report);
        }
    }
}

impl State {
    /// The next order number.
    fn order(&mut self) -> u64 {
        self.next_order += 1;
        self.next_order
    }

    /// Whether a waiting thread's parker holds a token.
    fn any_woken(&self) -> bool {
        self.threads
            .values()
            .any(|t| matches!(&t.run, Run::Waiting(p, _) if p.is_notified()))
    }

    /// Makes the woken and the due ready, in the module doc's order.
    fn ready_due(&mut self) {
        let vt = self.clock.now();
        let mut due: Vec<(u64, u64, u64)> = self
            .threads
            .iter()
            .filter_map(|(&id, t)| match t.run {
                Run::Sleeping(d, o) if d <= vt => Some((d, o, id)),
                _ => None,
            })
            .collect();
        due.sort_unstable();
        let woken: Vec<u64> = self
            .threads
            .iter()
            .filter(|(_, t)| match &t.run {
                Run::Waiting(p, deadline) => p.is_notified() || deadline.is_some_and(|d| d <= vt),
                _ => false,
            })
            .map(|(&id, _)| id)
            .collect();
        for id in due.into_iter().map(|(_, _, id)| id).chain(woken) {
            let order = self.order();
            if let Some(t) = self.threads.get_mut(&id) {
                t.run = Run::Ready(order);
            }
        }
    }

    /// Each core's best ready thread, in core order.
    fn candidates(&self) -> Vec<Candidate> {
        let mut best: BTreeMap<u8, (u8, u64, u64)> = BTreeMap::new();
        for (&id, t) in self.threads.iter().filter(|(_, t)| !t.paused && !t.away) {
            if let Run::Ready(order) = t.run {
                let key = (t.priority, order, id);
                let e = best.entry(t.core).or_insert(key);
                if key < *e {
                    *e = key;
                }
            }
        }
        best.into_iter()
            .map(|(core, (priority, _, thread))| Candidate {
                core,
                thread,
                priority,
            })
            .collect()
    }

    /// The decision (module doc): hands the token to the selector's pick, or rests it.
    fn decide(&mut self, mut reason: Reason) {
        debug_assert!(self.holder.is_none(), "a decision while the token is held");
        loop {
            let due = self.feed.apply(self.rolling.decisions(), self.clock.now());
            due.iter().for_each(|p| self.journal.input(p));
            // A replayed input's time, as the live run had jumped to it (`det::feed`).
            if let Some(vt) = due.iter().map(|p| p.vt).max() {
                self.clock.jump_to(vt);
            }
            self.ready_due();
            self.return_away();
            let candidates = self.candidates();
            if candidates.is_empty() {
                // A thread about to start is one that will run: time waits for it.
                if self
                    .threads
                    .values()
                    .any(|t| matches!(t.run, Run::Starting))
                {
                    return;
                }
                let next = self
                    .threads
                    .values()
                    .filter_map(|t| match t.run {
                        Run::Sleeping(d, _) | Run::Waiting(_, Some(d)) => Some(d),
                        _ => None,
                    })
                    .chain(self.feed.next_due())
                    .min();
                match next {
                    Some(d) => {
                        self.clock.jump_to(d);
                        reason = Reason::Timer;
                        continue;
                    }
                    // Nothing can run by itself: the token rests.
                    None => return self.quiesce(),
                }
            }
            // The reference was cut here by its host: take no decision it never took, and
            // wait for this run's host to stop it too (`Journal::holds_at`).
            if self.journal.holds_at() == Some(self.rolling.decisions()) {
                return;
            }
            let posted = self.feed.witness();
            if posted.count > 0 {
                reason = Reason::Post;
            }
            let pick = match self.selector.next(&candidates, self.last_core, reason) {
                Ok(p) => p,
                Err(e) => return self.fail(&e),
            };
            let Some(chosen) = candidates.get(pick.choice as usize).copied() else {
                return self.fail(&SelectError::OutOfRange {
                    decision: self.rolling.decisions(),
                    recorded: pick.choice,
                    candidates: candidates.len(),
                });
            };
            let witness = Witness {
                decision: self.rolling.decisions(),
                vt: self.clock.now(),
                candidates,
                pick,
                reason,
                object: posted.digest,
                result: posted.count,
            };
            self.rolling.push(&witness);
            self.journal.decision(&witness, self.last_core);
            self.holder = Some(chosen.thread);
            self.last_core = Some(chosen.core);
            self.left = pick.quantum.max(1);
            let now = sys::now();
            self.pace_ns = self.clock.pace(now);
            self.turn_start = now.saturating_add(self.pace_ns);
            self.progress += 1;
            self.quiet = false;
            if let Some(t) = self.threads.get_mut(&chosen.thread) {
                t.run = Run::Running;
                t.history.push(Turn {
                    decision: witness.decision,
                    vt: witness.vt,
                    given: reason,
                    candidates: witness.candidates.len() as u32,
                    ended: None,
                });
                t.turn.notify_one();
            }
            return;
        }
    }

    /// The selector could not pick: the mode stops (every thread runs free), said loudly.
    fn fail(&mut self, e: &SelectError) {
        crate::error!(
            decision = self.rolling.decisions(),
            vt_ns = self.clock.now(),
            "the deterministic mode stops: {e}; guest threads run free"
        );
        self.stopped = true;
        self.threads.values().for_each(|t| t.turn.notify_one());
        self.end_journal();
    }

    /// The mode ends: the journal is finished and the guest threads waiting for a post see
    /// the end.
    fn end_journal(&mut self) {
        let vt = self.clock.now();
        let cut = !self.at_rest();
        self.journal.finish(vt, cut);
        self.feed.wake_all();
    }

    /// Whether the run had come to rest: no holder, and no thread that could run now or
    /// later by itself (ready, starting, woken, or due at a deadline or a post). Otherwise a
    /// stop now cuts it (`Recording::cut`).
    fn at_rest(&self) -> bool {
        self.holder.is_none()
            && self.feed.next_due().is_none()
            && !self.any_woken()
            && self.threads.values().all(|t| match t.run {
                Run::Waiting(_, deadline) => deadline.is_none(),
                Run::Starting | Run::Ready(_) | Run::Running | Run::Sleeping(..) => false,
            })
    }
}

impl Drop for Token {
    /// A runtime dropped without a shutdown still leaves a whole recording.
    fn drop(&mut self) {
        lock(&self.state).end_journal();
    }
}
