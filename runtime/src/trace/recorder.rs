//! The recorder: every OS thread's track (its ring of events and who it is), the counts that
//! say whether events are kept, the collector of full traces, and one session a runtime.
//!
//! # Ground rules
//! - An event is kept only while some session records ([`ACTIVE`] > 0): the event sites load
//!   that count (relaxed) and do nothing more when it is 0.
//! - A thread writes only its own ring, with no lock, no allocation and no system call (its
//!   ring is made when it records its first event; the time is a `sys::ticks()` reading). An
//!   event's whole path is the count, the thread-local track, the clock read (where the event reads
//!   one: see the next rules) and five plain stores to lines only its thread writes (the ring's
//!   counters, one slot): no read-modify-write, no line another thread writes; the clock read is
//!   most of its cost. While a session collects a full trace ([`COLLECTING`] > 0), each thread
//!   hands what its ring holds past the last hand-over to the collector at every [`CHUNK`]th event
//!   (the count its push returns; the ring holds four chunks): one lock and one allocation per
//!   chunk, never per event, and before the ring could overwrite them.
//! - Readers (snapshots, dumps, the wait tree) read rings without a lock; they take the
//!   collector's lock while they read what was handed over and each ring's `drained`, so no
//!   event is read twice or missed between the two. A reading maps every tick to `sys::now()`
//!   by one `sys::tick_scale()`.
//! - A wake of a thread that is not parked (a spinning waiter, a thread not waiting yet) is
//!   stamped with its thread's last event's time, no clock read ([`super::UNTIMED`]); the
//!   wait end it leads to reads the clock after it, so the pair stays in order, and the
//!   reading pairs the wake with that wait by the interval it knows it in
//!   (`analysis/timeline.rs`). A wake of a parked thread reads the clock: its futex call
//!   costs a thousand times more.
//! - A blocking wait is recorded in as few events as its states need: its first registration
//!   with an object begins it (one event: the object, its holder), a caught spin is said by the
//!   poll after it, the core it gives up is implied by its begin, and a core granted at once
//!   after it is stamped with its end's time (no clock read). The thread's [`Phase`] tells the
//!   registration whether it begins a wait. The kernel's arbiter registers a wait before its
//!   `block_on`, under the arbiter's lock: that registration begins the wait.
//! - A session sees its own runtime's guest threads and every host thread (the reactor,
//!   the host's threads); another runtime's guest threads are not in its traces.
//! - A track outlives its thread only for dumps to come: while its runtime records (a guest
//!   thread), and among the latest [`KEEP_EXITED`] exited ones ([`forget`]).
//!
//! Std's atomics and locks, not the loom shim's: the trace is bookkeeping outside the models.

use super::event::{Event, Kind, WaitFor};
use super::ring::{Ring, Words, RING};
use super::snapshot::{Guest, Meta, Snapshot, ThreadTrace};
use crate::sync::lock;
use crate::sys::{self, TickScale};
use std::cell::{Cell, OnceCell};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Sessions that keep events (flight recorder, full trace, or Tracy).
pub(crate) static ACTIVE: AtomicU32 = AtomicU32::new(0);
/// Bumped by each session start that turns keeping on ([`ACTIVE`] from 0). While nothing was
/// kept, threads skipped their waits' phase changes, so a phase set in an earlier epoch is
/// stale and reads as [`Phase::Idle`].
static EPOCH: AtomicU32 = AtomicU32::new(0);
/// Sessions that collect a full trace.
static COLLECTING: AtomicU32 = AtomicU32::new(0);
/// Events a thread hands the collector at once (a quarter of its ring).
const CHUNK: u64 = RING / 4;
/// The most events the collector keeps; past it the oldest chunks are dropped (and counted).
const COLLECT_LIMIT: usize = 1 << 20;
/// Exited threads' tracks kept for dumps (the latest ones), besides those of guest threads
/// whose runtime still records.
const KEEP_EXITED: usize = 32;

/// One OS thread's track.
#[derive(Debug)]
pub(crate) struct Track {
    /// Its events (the owner's hot counters on lines of their own).
    ring: Ring,
    pub(crate) tid: u64,
    meta: Mutex<Meta>,
    /// Events handed to the collector; written by the owner under the collector's lock.
    drained: AtomicU64,
    /// The session of the runtime this thread is a guest of.
    session: Mutex<Weak<Session>>,
    exited: AtomicBool,
}

impl Track {
    fn new(tid: u64) -> Self {
        Track {
            tid,
            ring: Ring::default(),
            meta: Mutex::new(Meta {
                name: std::thread::current()
                    .name()
                    .map_or_else(|| format!("thread {tid}"), str::to_string),
                ..Meta::default()
            }),
            drained: AtomicU64::new(0),
            session: Mutex::new(Weak::new()),
            exited: AtomicBool::new(false),
        }
    }

    /// Records an event's words (owner only); while a session collects, hands what is not
    /// handed over yet to the collector at every [`CHUNK`]th event (the ring holds four
    /// chunks, so nothing is lost between two, and the event path reads nothing more).
    #[inline]
    fn push(&self, words: Words) {
        let written = self.ring.push(words);
        // Relaxed: a count read as a hint; a chunk handed over late is still handed over.
        if written % CHUNK == 0 && COLLECTING.load(Ordering::Relaxed) > 0 {
            self.drain();
        }
    }

    /// Hands every event not yet handed over to the collector (owner only).
    fn drain(&self) {
        let mut c = lock(&COLLECTOR);
        // Relaxed: the owner's own counter, read under the lock readers take.
        let from = self.drained.load(Ordering::Relaxed);
        let (_, words) = self.ring.read(from);
        self.drained.store(self.ring.head(), Ordering::Relaxed);
        c.push(self.tid, words);
    }

    pub(crate) fn meta(&self) -> Meta {
        lock(&self.meta).clone()
    }

    /// The events its ring still holds, oldest first, their times mapped by `scale`.
    pub(crate) fn tail(&self, scale: &TickScale) -> Vec<Event> {
        decode(self.ring.read(0).1, scale)
    }
}

/// The events of `words`, their times mapped by `scale` (words that are no event dropped).
fn decode(words: Vec<Words>, scale: &TickScale) -> Vec<Event> {
    words
        .into_iter()
        .filter_map(|w| Event::from_words(w, scale))
        .collect()
}

/// What the collector holds: chunks of events' words in the order they were handed over.
#[derive(Debug, Default)]
struct Collector {
    chunks: VecDeque<(u64, Vec<Words>)>,
    events: usize,
    dropped: u64,
}

impl Collector {
    fn push(&mut self, tid: u64, events: Vec<Words>) {
        self.events += events.len();
        self.chunks.push_back((tid, events));
        while self.events > COLLECT_LIMIT {
            let Some((_, old)) = self.chunks.pop_front() else {
                break;
            };
            self.events -= old.len();
            self.dropped += old.len() as u64;
        }
    }
}

static COLLECTOR: Mutex<Collector> = Mutex::new(Collector {
    chunks: VecDeque::new(),
    events: 0,
    dropped: 0,
});
static TRACKS: Mutex<Vec<Arc<Track>>> = Mutex::new(Vec::new());
static NEXT_TID: AtomicU64 = AtomicU64::new(1);

/// Where the calling thread is in a blocking wait (`block_on`), for the registrations made
/// in its polls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// In no blocking wait (an async wait's registrations are no wait of the thread's).
    Idle,
    /// In a blocking wait's first poll: its first registration begins the wait.
    FirstPoll,
    /// In a wait that has begun.
    Begun,
    /// Registered with an object before the blocking wait it goes on to, which has begun by
    /// that registration: the wait's first poll makes it [`Phase::Begun`].
    Registered,
}

/// The calling thread's trace id, (once it recorded) its track, and its wait's phase.
struct Local {
    tid: Cell<u64>,
    track: OnceCell<Arc<Track>>,
    /// The phase and the [`EPOCH`] it was set in.
    phase: Cell<(Phase, u32)>,
}

impl Local {
    /// The thread's wait phase: idle if set in an earlier [`EPOCH`].
    fn phase(&self) -> Phase {
        self.replace_phase(None)
    }

    /// Sets the thread's wait phase in the current [`EPOCH`].
    fn set_phase(&self, phase: Phase) {
        self.replace_phase(Some(phase));
    }

    /// Sets the thread's wait phase (if `Some`) and returns the one before, with one read of
    /// the [`EPOCH`].
    fn replace_phase(&self, phase: Option<Phase>) -> Phase {
        // Relaxed: compared with the thread's own stamp; a turn raced is one wait's events.
        let now = EPOCH.load(Ordering::Relaxed);
        let (before, then) = self.phase.get();
        if let Some(phase) = phase {
            self.phase.set((phase, now));
        }
        if then == now {
            before
        } else {
            Phase::Idle
        }
    }

    fn tid(&self) -> u64 {
        if self.tid.get() == 0 {
            // Relaxed: uniqueness only.
            self.tid.set(NEXT_TID.fetch_add(1, Ordering::Relaxed));
        }
        self.tid.get()
    }

    #[inline]
    fn track(&self) -> &Arc<Track> {
        match self.track.get() {
            Some(t) => t,
            None => self.first_track(),
        }
    }

    #[cold]
    fn first_track(&self) -> &Arc<Track> {
        self.track.get_or_init(|| {
            let t = Arc::new(Track::new(self.tid()));
            lock(&TRACKS).push(t.clone());
            t
        })
    }

    /// Records an event of this thread now.
    #[inline]
    fn record(&self, kind: Kind, x: u64, a: u64, b: u64) {
        self.record_at(sys::ticks(), kind, x, a, b);
    }

    /// Records an event of this thread at `ticks`.
    #[inline]
    fn record_at(&self, ticks: u64, kind: Kind, x: u64, a: u64, b: u64) {
        let words = Event::words(ticks, kind, x, a, b);
        let track = self.track();
        track.push(words);
        #[cfg(feature = "tracy")]
        super::tracy::forward(kind, x, || track.meta().name);
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        if let Some(t) = self.track.get() {
            if COLLECTING.load(Ordering::Relaxed) > 0 {
                t.drain();
            }
            // Relaxed: read under the tracks' lock, which `forget` takes after this store.
            t.exited.store(true, Ordering::Relaxed);
            // A guest thread whose runtime no longer records is in no dump to come. (The
            // session is let go before `forget` locks: its drop may end it, which forgets too.)
            let guest = lock(&t.meta).runtime != 0;
            let over = guest && lock(&t.session).upgrade().is_none_or(|s| !s.records());
            forget(|x| over && std::ptr::eq(x, &**t));
        }
    }
}

/// Forgets the tracks of exited threads that `gone` names, and the oldest exited ones past
/// the latest [`KEEP_EXITED`] (a thread's ring is its memory: 64 KiB).
fn forget(gone: impl Fn(&Track) -> bool) {
    let mut tracks = lock(&TRACKS);
    // Relaxed: each thread's own store before it forgets; `end`'s reads are hints.
    let exited = |t: &Track| t.exited.load(Ordering::Relaxed);
    tracks.retain(|t| !(exited(t) && gone(t)));
    let mut extra = tracks
        .iter()
        .filter(|t| exited(t))
        .count()
        .saturating_sub(KEEP_EXITED);
    tracks.retain(|t| {
        let drop = extra > 0 && exited(t);
        extra -= usize::from(drop);
        !drop
    });
}

std::thread_local! {
    static LOCAL: Local = const {
        Local { tid: Cell::new(0), track: OnceCell::new(), phase: Cell::new((Phase::Idle, 0)) }
    };
}

/// The calling thread's trace id (process-unique, never 0; 0 while the thread ends).
pub(crate) fn thread_id() -> u64 {
    LOCAL.try_with(Local::tid).unwrap_or(0)
}

/// Records an event of the calling thread now (nothing while the thread ends).
#[inline]
pub(crate) fn record(kind: Kind, x: u64, a: u64, b: u64) {
    let _ = LOCAL.try_with(|l| l.record(kind, x, a, b));
}

/// Records an event of the calling thread at the time of its last event if `follows` says
/// the event follows that one at once, else now (its thread's first event reads the clock).
#[inline]
fn record_after(kind: Kind, x: u64, a: u64, b: u64, follows: impl FnOnce(&Words) -> bool) {
    let _ = LOCAL.try_with(|l| {
        let ticks = match l.track().ring.last() {
            Some(w) if follows(&w) => w[0],
            _ => sys::ticks(),
        };
        l.record_at(ticks, kind, x, a, b);
    });
}

/// Records an event of the calling thread at the time of its last event if that was a
/// wait's or a sleep's end (what the event follows at once), else now.
#[inline]
pub(crate) fn record_after_end(kind: Kind, x: u64, a: u64, b: u64) {
    let ends = [Kind::WaitEnd as u64, Kind::SleepEnd as u64];
    record_after(kind, x, a, b, |w| ends.contains(&(w[1] & 0xFF)));
}

/// Records an event of the calling thread at the time of its last event (a lower bound: no
/// clock read), else now.
#[inline]
pub(crate) fn record_after_last(kind: Kind, x: u64, a: u64, b: u64) {
    record_after(kind, x, a, b, |_| true);
}

/// Records an event of the calling thread's blocking wait (nothing outside one: an async
/// wait's deadline or failure is no wait of the thread's).
#[inline]
pub(crate) fn record_in_wait(kind: Kind, x: u64, a: u64, b: u64) {
    let _ = LOCAL.try_with(|l| {
        if l.phase() != Phase::Idle {
            l.record(kind, x, a, b);
        }
    });
}

/// The calling thread's blocking wait makes its first poll (a wait begun by a registration
/// before it has begun already).
#[inline]
pub(crate) fn first_poll() {
    let _ = LOCAL.try_with(|l| {
        let next = match l.phase() {
            Phase::Registered => Phase::Begun,
            _ => Phase::FirstPoll,
        };
        l.set_phase(next);
    });
}

/// The calling thread registered with the object at `addr` (label number `label`, holder
/// `holder`) before its blocking wait: that begins the wait.
#[inline]
pub(crate) fn registered_before_wait(addr: u64, label: u64, holder: u64) {
    let _ = LOCAL.try_with(|l| {
        l.record(
            Kind::WaitBegin,
            WaitFor::Object as u64 | label << 8,
            addr,
            holder,
        );
        l.set_phase(Phase::Registered);
    });
}

/// The calling thread registered with the object at `addr` (label number `label`, holder
/// `holder`): in a blocking wait's first poll, that begins the wait; later in the wait, it
/// is one more object; outside a blocking wait, nothing.
#[inline]
pub(crate) fn registered(addr: u64, label: u64, holder: u64) {
    let _ = LOCAL.try_with(|l| match l.phase() {
        Phase::FirstPoll => {
            l.record(
                Kind::WaitBegin,
                WaitFor::Object as u64 | label << 8,
                addr,
                holder,
            );
            l.set_phase(Phase::Begun);
        }
        Phase::Begun => l.record(Kind::Blocked, label, addr, holder),
        Phase::Idle | Phase::Registered => {}
    });
}

/// The calling thread's blocking wait found its first poll pending: records its begin
/// unless a registration did.
#[inline]
pub(crate) fn wait_begin(on: WaitFor) {
    let _ = LOCAL.try_with(|l| {
        if l.replace_phase(Some(Phase::Begun)) != Phase::Begun {
            l.record(Kind::WaitBegin, on as u64, 0, 0);
        }
    });
}

/// The calling thread's blocking wait ended (`x`: how the phase before its last poll ended);
/// also when its first poll completed after a registration began it (a wait that failed at
/// once). Nothing for a first poll that completed without beginning a wait.
#[inline]
pub(crate) fn wait_end(x: u64) {
    let _ = LOCAL.try_with(|l| {
        if l.replace_phase(Some(Phase::Idle)) == Phase::Begun {
            l.record(Kind::WaitEnd, x, 0, 0);
        }
    });
}

/// The calling thread's track, if it has recorded.
fn with_track<R>(f: impl FnOnce(&Arc<Track>) -> R) -> Option<R> {
    LOCAL.try_with(|l| f(l.track())).ok()
}

/// The tracks of `runtime`'s guest threads and of every host thread.
pub(crate) fn tracks_of(runtime: u64) -> Vec<Arc<Track>> {
    lock(&TRACKS)
        .iter()
        .filter(|t| [0, runtime].contains(&lock(&t.meta).runtime))
        .cloned()
        .collect()
}

/// Changes the meta of the guest thread `guest` of `runtime` (wherever it runs).
pub(crate) fn retitle(runtime: u64, guest: u64, f: impl FnOnce(&mut Meta)) {
    let tracks = lock(&TRACKS);
    let found = tracks.iter().find(|t| {
        let m = lock(&t.meta);
        m.runtime == runtime && m.guest.is_some_and(|g| g.id == guest)
    });
    if let Some(t) = found {
        f(&mut lock(&t.meta));
    }
}

/// What a session does, from the runtime's config.
#[derive(Clone, Debug, Default)]
pub(crate) struct Settings {
    /// Keep the flight recorder's rings.
    pub(crate) flight: bool,
    /// Collect a full trace.
    pub(crate) collect: bool,
    /// Where dumps go.
    pub(crate) dir: PathBuf,
}

/// The most dumps one session writes (an escape storm must not fill a disk).
const MAX_DUMPS: u32 = 8;

/// One runtime's recording: what it keeps and where its dumps go.
#[derive(Debug)]
pub struct Session {
    id: u64,
    start: u64,
    settings: Settings,
    counted: bool,
    ended: AtomicBool,
    dumps: AtomicU32,
    frames: AtomicU64,
}

impl Session {
    /// Starts recording for runtime `id`.
    pub(crate) fn start(id: u64, settings: Settings) -> Arc<Session> {
        let counted = settings.flight || settings.collect || cfg!(feature = "tracy");
        if counted {
            // Relaxed: a count; an event site that misses the change records one event less,
            // and a phase set as the epoch turns may read as idle (one wait's end not kept).
            if ACTIVE.fetch_add(1, Ordering::Relaxed) == 0 {
                EPOCH.fetch_add(1, Ordering::Relaxed);
            }
        }
        if settings.collect {
            COLLECTING.fetch_add(1, Ordering::Relaxed);
        }
        Arc::new(Session {
            id,
            start: sys::now(),
            settings,
            counted,
            ended: AtomicBool::new(false),
            dumps: AtomicU32::new(0),
            frames: AtomicU64::new(0),
        })
    }

    /// The runtime's id.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Whether it collects a full trace.
    pub(crate) fn collects(&self) -> bool {
        self.settings.collect
    }

    /// Whether it records at all.
    pub(crate) fn records(&self) -> bool {
        self.counted && !self.ended.load(Ordering::Relaxed)
    }

    /// Stops recording (idempotent); the collector is emptied once nobody collects.
    pub(crate) fn end(&self) {
        // AcqRel: one caller ends it.
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        if self.counted {
            ACTIVE.fetch_sub(1, Ordering::Relaxed);
        }
        if self.settings.collect && COLLECTING.fetch_sub(1, Ordering::Relaxed) == 1 {
            *lock(&COLLECTOR) = Collector::default();
        }
        forget(|t| lock(&t.meta).runtime == self.id);
    }

    /// Makes the calling thread guest `guest` of this session's runtime, named `name`.
    pub(crate) fn adopt(self: &Arc<Self>, guest: Guest, name: &str) {
        with_track(|t| {
            *lock(&t.meta) = Meta {
                name: name.to_string(),
                runtime: self.id,
                guest: Some(guest),
            };
            *lock(&t.session) = Arc::downgrade(self);
        });
    }

    /// The next frame's number.
    pub(crate) fn next_frame(&self) -> u64 {
        // Relaxed: a counter.
        self.frames.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// What the session's threads recorded: the full trace since the session started if it
    /// collects, else each ring's last events.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let tracks = tracks_of(self.id);
        let scale = sys::tick_scale();
        let c = lock(&COLLECTOR);
        let collect = self.settings.collect;
        let threads = tracks
            .iter()
            .map(|t| {
                let mut events: Vec<Event> = Vec::new();
                if collect {
                    for (tid, chunk) in &c.chunks {
                        if *tid == t.tid {
                            let chunk = chunk.iter().filter_map(|w| Event::from_words(*w, &scale));
                            events.extend(chunk.filter(|e| e.t >= self.start));
                        }
                    }
                }
                // Relaxed: written under the lock held here.
                let from = if collect {
                    t.drained.load(Ordering::Relaxed)
                } else {
                    0
                };
                let tail = decode(t.ring.read(from).1, &scale);
                events.extend(tail.into_iter().filter(|e| e.t >= self.start));
                ThreadTrace {
                    tid: t.tid,
                    meta: t.meta(),
                    events,
                }
            })
            .filter(|t| !t.events.is_empty() || t.meta.runtime == self.id)
            .collect();
        Snapshot {
            runtime: self.id,
            start: self.start,
            end: sys::now(),
            dropped: if collect { c.dropped } else { 0 },
            threads,
        }
    }

    /// Where dump number `n` goes: `hos-flight-<pid>-<runtime>-<n>.json` in the dump folder.
    pub(crate) fn dump_path(&self) -> Option<PathBuf> {
        // Relaxed: a counter.
        let n = self.dumps.fetch_add(1, Ordering::Relaxed);
        (n < MAX_DUMPS && self.settings.flight).then(|| {
            self.settings.dir.join(format!(
                "hos-flight-{}-{}-{}.json",
                std::process::id(),
                self.id,
                n + 1
            ))
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::trace::event::UNTIMED;

    #[test]
    fn a_full_trace_keeps_every_event_past_many_rings() {
        let session = Session::start(
            u64::MAX - 7,
            Settings {
                collect: true,
                ..Settings::default()
            },
        );
        let n = 5 * RING + 123;
        let tid = std::thread::spawn(move || {
            (1..=n).for_each(|i| record(Kind::Frame, 0, i, 0));
            thread_id()
        })
        .join()
        .unwrap();
        let snap = session.snapshot();
        let mine = snap
            .threads
            .iter()
            .find(|t| t.tid == tid)
            .expect("its track");
        let frames: Vec<u64> = mine
            .events
            .iter()
            .filter(|e| e.kind == Kind::Frame)
            .map(|e| e.a)
            .collect();
        assert_eq!(frames, (1..=n).collect::<Vec<_>>());
        session.end();
    }

    #[test]
    fn an_event_after_the_last_carries_its_time_and_the_first_reads_the_clock() {
        let session = Session::start(
            u64::MAX - 8,
            Settings {
                flight: true,
                ..Settings::default()
            },
        );
        let words = std::thread::spawn(|| {
            record_after_last(Kind::Wake, UNTIMED, 5, 0);
            record(Kind::Frame, 0, 1, 0);
            record_after_last(Kind::Wake, UNTIMED, 6, 0);
            std::thread::sleep(std::time::Duration::from_millis(1));
            record(Kind::Frame, 0, 2, 0);
            with_track(|t| t.ring.read(0).1).expect("its track")
        })
        .join()
        .unwrap();
        let untimed = Kind::Wake as u64 | UNTIMED << 8;
        assert_eq!(words[0][1], untimed);
        assert!(words[0][0] > 0, "a thread's first event reads the clock");
        assert_eq!(words[1][1], Kind::Frame as u64);
        assert_eq!((words[2][0], words[2][1]), (words[1][0], untimed));
        assert!(
            words[3][0] > words[2][0],
            "a recorded event reads the clock"
        );
        session.end();
    }
}
