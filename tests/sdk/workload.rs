//! The two contended workloads that `tests/sdk_clients.rs` checks and `benches/sdk_lock.rs`
//! times, on the SDK's clients (libnx's mutex and condition variable on hos's svcs) and on
//! std's (pthread's futex mutex and condition variable) as the peer: threads counting under
//! one mutex ([`Counter`]), and producers and consumers through a bounded queue of one mutex
//! and two condition variables ([`Queue`]).

use super::libnx;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex, MutexGuard};

/// A mutex as the counting workload uses it.
pub trait Lock: Default + Send + Sync + 'static {
    /// Runs `f` holding the lock.
    fn hold(&self, f: impl FnOnce());
}

impl Lock for libnx::Mutex {
    fn hold(&self, f: impl FnOnce()) {
        self.lock();
        f();
        self.unlock();
    }
}

impl Lock for Mutex<()> {
    fn hold(&self, f: impl FnOnce()) {
        let _held = self.lock().expect("never poisoned");
        f();
    }
}

/// A counter behind a mutex: a load then a store, so two holders at once lose an increment.
#[derive(Default)]
pub struct Counter<L> {
    lock: L,
    value: AtomicU64,
}

impl<L: Lock> Counter<L> {
    /// `rounds` lock, increment, unlock (one thread's part).
    pub fn count(&self, rounds: u64) {
        for _ in 0..rounds {
            self.hold_and(|| {});
        }
    }

    /// One lock, increment, `also`, unlock.
    pub fn hold_and(&self, also: impl FnOnce()) {
        self.lock.hold(|| {
            // Relaxed: the lock orders the holders.
            self.value.store(self.value.load(Relaxed) + 1, Relaxed);
            also();
        });
    }

    /// The increments made.
    pub fn value(&self) -> u64 {
        self.value.load(Relaxed)
    }
}

/// A bounded FIFO of items, as the producer/consumer workload uses it.
pub trait Queue: Send + Sync + 'static {
    /// A queue that holds at most `cap` items.
    fn with_capacity(cap: usize) -> Self;
    /// Puts `v` at the back, waiting while the queue is full.
    fn send(&self, v: u64);
    /// Takes the front item, waiting while the queue is empty.
    fn receive(&self) -> u64;
    /// The items in it now.
    fn len(&self) -> usize;
}

/// [`Queue`] on libnx's mutex and two condition variables (`not_empty`, `not_full`). The items
/// sit in a std mutex only because Rust has no unsynchronized shared deque: the libnx mutex is
/// held around every use, so it is never contended.
pub struct LibnxQueue {
    m: libnx::Mutex,
    not_empty: libnx::CondVar,
    not_full: libnx::CondVar,
    items: Mutex<VecDeque<u64>>,
    cap: usize,
}

impl LibnxQueue {
    fn items(&self) -> MutexGuard<'_, VecDeque<u64>> {
        self.items.lock().expect("never poisoned")
    }
}

impl Queue for LibnxQueue {
    fn with_capacity(cap: usize) -> Self {
        LibnxQueue {
            m: libnx::Mutex::new(),
            not_empty: libnx::CondVar::new(),
            not_full: libnx::CondVar::new(),
            items: Mutex::new(VecDeque::with_capacity(cap)),
            cap,
        }
    }

    fn send(&self, v: u64) {
        self.m.lock();
        while self.items().len() == self.cap {
            assert_eq!(self.not_full.wait(&self.m), Ok(()));
        }
        self.items().push_back(v);
        self.not_empty.wake_one();
        self.m.unlock();
    }

    fn receive(&self) -> u64 {
        self.m.lock();
        while self.items().is_empty() {
            assert_eq!(self.not_empty.wait(&self.m), Ok(()));
        }
        let v = self.items().pop_front().expect("not empty");
        self.not_full.wake_one();
        self.m.unlock();
        v
    }

    fn len(&self) -> usize {
        self.items().len()
    }
}

/// [`Queue`] on std's mutex and two condition variables: the same algorithm.
pub struct StdQueue {
    items: Mutex<VecDeque<u64>>,
    not_empty: Condvar,
    not_full: Condvar,
    cap: usize,
}

impl Queue for StdQueue {
    fn with_capacity(cap: usize) -> Self {
        StdQueue {
            items: Mutex::new(VecDeque::with_capacity(cap)),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            cap,
        }
    }

    fn send(&self, v: u64) {
        let mut items = self.items.lock().expect("never poisoned");
        while items.len() == self.cap {
            items = self.not_full.wait(items).expect("never poisoned");
        }
        items.push_back(v);
        self.not_empty.notify_one();
    }

    fn receive(&self) -> u64 {
        let mut items = self.items.lock().expect("never poisoned");
        while items.is_empty() {
            items = self.not_empty.wait(items).expect("never poisoned");
        }
        let v = items.pop_front().expect("not empty");
        self.not_full.notify_one();
        v
    }

    fn len(&self) -> usize {
        self.items.lock().expect("never poisoned").len()
    }
}
