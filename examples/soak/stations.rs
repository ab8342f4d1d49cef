//! The soak's stations: places a token waits in between two hand-offs, one kind of nn::os
//! object each, and the ways a guest thread sends to and receives from them (blocking, timed
//! with a random timeout, a poll, through wait_any).
//!
//! Every receive that ends without a token says why; every timed one checks that it did not
//! end before its timeout ("early"). Tokens are `u64` ids below [`PILL`]; a pill tells one
//! home receiver to stop.

use hos::internal::lock;
use hos::os::{
    wait_any, ClearMode, ConditionVariable, Event, MessageQueue, Mutex, Semaphore, Waitable,
};
use hos::ResultCode;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What ends a home receiver.
pub(crate) const PILL: u64 = u64::MAX;

/// xorshift64*: the soak's one generator, seeded per thread.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64, stream: u64) -> Self {
        Rng((seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let x = &mut self.0;
        *x ^= *x >> 12;
        *x ^= *x << 25;
        *x ^= *x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// A wait's limit: none (half the time), a poll, or 1 us to 2 ms.
    pub(crate) fn limit(&mut self) -> Limit {
        match self.below(8) {
            0..=3 => Limit::Never,
            4 => Limit::Poll,
            _ => Limit::After(Duration::from_micros(1 + self.below(2_000))),
        }
    }
}

/// How long one wait may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    Never,
    Poll,
    After(Duration),
}

/// Counters every station and thread adds to.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Waits that ended TimedOut (or found nothing to poll).
    pub timeouts: AtomicU64,
    /// Timed waits that ended before their timeout: must stay 0.
    pub early: AtomicU64,
    /// Broken promises other than early waits (a count not conserved, two holders of a
    /// lock's data): must stay 0. Each also leaves its line in `faults`.
    pub broken: AtomicU64,
    pub faults: std::sync::Mutex<Vec<String>>,
}

impl Tally {
    pub(crate) fn fault(&self, what: String) {
        self.broken.fetch_add(1, Ordering::Relaxed);
        let mut f = lock(&self.faults);
        if f.len() < 16 {
            f.push(what);
        }
    }

    /// Notes a wait that ended without its operation: TimedOut must not be early.
    fn missed(&self, limit: Limit, start: Instant, code: ResultCode) {
        if code != ResultCode::TIMED_OUT {
            self.fault(format!("a wait ended {code}, not TimedOut"));
            return;
        }
        self.timeouts.fetch_add(1, Ordering::Relaxed);
        if let Limit::After(d) = limit {
            if start.elapsed() < d {
                self.early.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A std lock that the station's hos object already excludes: taking it must never wait.
/// A failed `try_lock` is two holders of the hos object at once.
fn exclusive<'a, T>(
    m: &'a std::sync::Mutex<T>,
    tally: &Tally,
    what: &str,
) -> std::sync::MutexGuard<'a, T> {
    match m.try_lock() {
        Ok(g) => g,
        Err(_) => {
            tally.fault(format!("two holders of the {what}'s lock"));
            lock(m)
        }
    }
}

fn bag() -> std::sync::Mutex<VecDeque<u64>> {
    std::sync::Mutex::new(VecDeque::new())
}

/// One station.
pub(crate) enum Station {
    /// A bounded queue: timed sends (a full queue makes its sender wait), receives of every form.
    Queue(MessageQueue<u64>),
    /// A mutex and a condition variable over a list (`len` mirrors it for the watchdog,
    /// which must not take the list's lock: that lock checks the mutex excludes).
    Mailbox {
        mutex: Mutex,
        cv: ConditionVariable,
        list: std::sync::Mutex<VecDeque<u64>>,
        len: AtomicUsize,
    },
    /// A semaphore counting a bag's tokens.
    Counted {
        sem: Semaphore,
        bag: std::sync::Mutex<VecDeque<u64>>,
    },
    /// An auto-clear event over a bag (a receiver that leaves tokens behind passes the signal on).
    Bell {
        ev: Event,
        bag: std::sync::Mutex<VecDeque<u64>>,
    },
}

/// The station kinds, in the order `Station::new` deals them.
pub(crate) const KINDS: u64 = 4;

impl Station {
    /// Station number `i`: its kind by `i % 4`. A queue holds `capacity` tokens.
    pub(crate) fn new(i: usize, capacity: usize) -> Station {
        match i as u64 % KINDS {
            0 => Station::Queue(MessageQueue::new(capacity)),
            1 => Station::Mailbox {
                mutex: Mutex::new(false),
                cv: ConditionVariable::new(),
                list: bag(),
                len: AtomicUsize::new(0),
            },
            2 => Station::Counted {
                sem: Semaphore::new(0, u32::MAX),
                bag: bag(),
            },
            _ => Station::Bell {
                ev: Event::new(ClearMode::Auto),
                bag: bag(),
            },
        }
    }

    /// The queue, if it is one (async host tasks use those).
    pub(crate) fn queue(&self) -> Option<&MessageQueue<u64>> {
        match self {
            Station::Queue(q) => Some(q),
            _ => None,
        }
    }

    /// Puts `token` in. Only a queue can refuse (full within `limit`): the token comes back.
    pub(crate) fn send(
        &self,
        token: u64,
        limit: Limit,
        rng: &mut Rng,
        tally: &Tally,
    ) -> Result<(), u64> {
        match self {
            Station::Queue(q) => {
                let start = Instant::now();
                let front = rng.below(4) == 0;
                let sent = match (limit, front) {
                    (Limit::Never, false) => q.send(token),
                    (Limit::Never, true) => q.jam(token),
                    (Limit::Poll, _) => q.try_send(token),
                    (Limit::After(d), false) => q.send_timeout(token, d),
                    (Limit::After(d), true) => q.jam_timeout(token, d),
                };
                sent.map_err(|e| {
                    tally.missed(limit, start, e.code);
                    e.value
                })
            }
            Station::Mailbox {
                mutex,
                cv,
                list,
                len,
            } => {
                // Only a shutdown (a failed soak) fails the lock: the token comes back.
                let Ok(g) = mutex.lock().or_else(hos::os::LockError::recover) else {
                    return Err(token);
                };
                let mut l = exclusive(list, tally, "mailbox");
                l.push_back(token);
                len.store(l.len(), Ordering::Relaxed);
                drop(l);
                if rng.below(4) == 0 {
                    cv.broadcast();
                } else {
                    cv.signal();
                }
                drop(g);
                Ok(())
            }
            Station::Counted { sem, bag } => {
                lock(bag).push_back(token);
                if let Err(code) = sem.release(1) {
                    tally.fault(format!("a semaphore release failed: {code}"));
                }
                Ok(())
            }
            Station::Bell { ev, bag } => {
                lock(bag).push_back(token);
                ev.signal();
                Ok(())
            }
        }
    }

    /// Takes a token, waiting within `limit`; `None` when the limit passed first.
    pub(crate) fn receive(&self, limit: Limit, rng: &mut Rng, tally: &Tally) -> Option<u64> {
        let start = Instant::now();
        match self {
            Station::Queue(q) => {
                let got = match (limit, rng.below(3)) {
                    (Limit::Never, 0) => q.receive(),
                    (Limit::Poll, _) => q.try_receive().ok_or(ResultCode::TIMED_OUT),
                    (Limit::After(d), 0) => q.receive_async().timeout(d).block(),
                    // Through wait_any, which takes nothing: then a poll that may lose the
                    // race to another receiver (not a timeout: no token, no fault).
                    (limit, _) => {
                        let objects: [&dyn Waitable; 1] = [q];
                        let timeout = match limit {
                            Limit::After(d) => Some(d),
                            _ => None,
                        };
                        match wait_any(&objects, timeout) {
                            Ok(_) => return q.try_receive(),
                            Err(code) => Err(code),
                        }
                    }
                };
                got.map_err(|code| tally.missed(limit, start, code)).ok()
            }
            Station::Mailbox {
                mutex,
                cv,
                list,
                len,
            } => {
                let pop = || {
                    let mut l = exclusive(list, tally, "mailbox");
                    let t = l.pop_front();
                    len.store(l.len(), Ordering::Relaxed);
                    t
                };
                let Ok(mut g) = mutex.lock().or_else(hos::os::LockError::recover) else {
                    return None;
                };
                loop {
                    if let Some(t) = pop() {
                        return Some(t);
                    }
                    let (back, r) = match limit {
                        Limit::Never => cv.wait(g),
                        Limit::Poll => (g, Err(ResultCode::TIMED_OUT)),
                        Limit::After(d) => cv.wait_timeout(g, d),
                    };
                    g = back;
                    if let Err(code) = r {
                        tally.missed(limit, start, code);
                        return pop();
                    }
                }
            }
            Station::Counted { sem, bag } => {
                let got = match limit {
                    Limit::Never => sem.acquire(),
                    Limit::Poll => sem.try_acquire().then_some(()).ok_or(ResultCode::TIMED_OUT),
                    Limit::After(d) => sem.acquire_timeout(d),
                };
                match got {
                    Ok(()) => {
                        let t = lock(bag).pop_front();
                        if t.is_none() {
                            tally.fault("a semaphore count without its token".into());
                        }
                        t
                    }
                    Err(code) => {
                        tally.missed(limit, start, code);
                        None
                    }
                }
            }
            Station::Bell { ev, bag } => loop {
                {
                    let mut b = lock(bag);
                    if let Some(t) = b.pop_front() {
                        if !b.is_empty() {
                            ev.signal(); // tokens left: the next receiver's turn
                        }
                        return Some(t);
                    }
                }
                let waited = match (limit, rng.below(2)) {
                    (Limit::Never, 0) => ev.wait(),
                    (Limit::Never, _) => wait_any(&[ev as &dyn Waitable], None).map(drop),
                    (Limit::Poll, _) => ev.try_wait().then_some(()).ok_or(ResultCode::TIMED_OUT),
                    (Limit::After(d), 0) => ev.wait_async().timeout(d).block(),
                    (Limit::After(d), _) => wait_any(&[ev as &dyn Waitable], Some(d)).map(drop),
                };
                if let Err(code) = waited {
                    tally.missed(limit, start, code);
                    let t = lock(bag).pop_front();
                    return t;
                }
            },
        }
    }

    /// Its kind, in words.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Station::Queue(_) => "message queue",
            Station::Mailbox { .. } => "mutex and condition variable",
            Station::Counted { .. } => "semaphore",
            Station::Bell { .. } => "event",
        }
    }

    /// Tokens in it now (a snapshot).
    pub(crate) fn len(&self) -> usize {
        match self {
            Station::Queue(q) => q.len(),
            Station::Mailbox { len, .. } => len.load(Ordering::Relaxed),
            Station::Counted { bag: b, .. } | Station::Bell { bag: b, .. } => lock(b).len(),
        }
    }

    /// Every token left in it once no thread uses it any more, and whether its count agrees.
    pub(crate) fn drain(&self, tally: &Tally) -> Vec<u64> {
        match self {
            Station::Queue(q) => std::iter::from_fn(|| q.try_receive()).collect(),
            Station::Mailbox { list, .. } => lock(list).drain(..).collect(),
            Station::Counted { sem, bag } => {
                let left: Vec<u64> = lock(bag).drain(..).collect();
                if sem.count() as usize != left.len() {
                    tally.fault(format!(
                        "a semaphore counts {} with {} tokens in its bag",
                        sem.count(),
                        left.len()
                    ));
                }
                left
            }
            Station::Bell { bag, .. } => lock(bag).drain(..).collect(),
        }
    }
}
