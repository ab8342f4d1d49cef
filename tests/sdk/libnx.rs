//! libnx's kernel-object clients (switchbrew/libnx `nx/source/kernel/`): `mutex.c`,
//! `condvar.c`, `rwlock.c`, `barrier.c`, `semaphore.c`. The fields a C struct keeps as plain
//! integers under its mutex are relaxed atomics here (Rust has no unsynchronized shared
//! integer); the mutex orders them as it does in C.

use super::me;
use hos::svc::{self, Handle, WAITERS};
use hos::ResultCode;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

/// `Mutex` (a u32 tag word, 0 when free).
#[derive(Debug, Default)]
pub(crate) struct Mutex(pub AtomicU32);

impl Mutex {
    pub(crate) const fn new() -> Self {
        Mutex(AtomicU32::new(0))
    }

    /// `mutexLock`.
    pub(crate) fn lock(&self) {
        let me = me();
        let mut v = self.0.load(Acquire);
        loop {
            if v == 0 {
                // Free: try to take it.
                match self.0.compare_exchange_weak(0, me, Acquire, Acquire) {
                    Ok(_) => break,
                    Err(now) => {
                        v = now;
                        continue;
                    }
                }
            }
            if v & WAITERS == 0 {
                // Owned, no waiters flagged yet: flag them.
                if let Err(now) = self
                    .0
                    .compare_exchange_weak(v, v | WAITERS, Acquire, Acquire)
                {
                    v = now;
                    continue;
                }
            }
            let r = svc::arbitrate_lock(Handle(v & !WAITERS), &self.0, me);
            assert_eq!(r, Ok(()), "svcArbitrateLock: svcBreak");
            v = self.0.load(Acquire);
            if v & !WAITERS == me {
                // The kernel handed it over.
                break;
            }
        }
    }

    /// `mutexTryLock`: never a svc, never the waiters bit.
    pub(crate) fn try_lock(&self) -> bool {
        loop {
            let v = self.0.load(Acquire);
            if v != 0 {
                return false;
            }
            if self
                .0
                .compare_exchange_weak(0, me(), Acquire, Acquire)
                .is_ok()
            {
                return true;
            }
        }
    }

    /// `mutexUnlock`.
    pub(crate) fn unlock(&self) {
        let me = me();
        let mut v = self.0.load(Relaxed);
        loop {
            if v != me {
                // Waiters flagged (or not ours): no store.
                break;
            }
            match self.0.compare_exchange_weak(me, 0, Release, Relaxed) {
                Ok(_) => break,
                Err(now) => v = now,
            }
        }
        if v & WAITERS != 0 {
            let r = svc::arbitrate_unlock(&self.0);
            assert_eq!(r, Ok(()), "svcArbitrateUnlock: svcBreak");
        }
    }

    /// `mutexIsLockedByCurrentThread`.
    pub(crate) fn is_locked_by_current_thread(&self) -> bool {
        self.0.load(Relaxed) & !WAITERS == me()
    }
}

/// `CondVar` (a u32 the kernel keeps; never read here).
#[derive(Debug, Default)]
pub(crate) struct CondVar(pub AtomicU32);

impl CondVar {
    pub(crate) const fn new() -> Self {
        CondVar(AtomicU32::new(0))
    }

    /// `condvarWaitTimeout`: `u64::MAX` waits without limit. On TimedOut the mutex is taken
    /// again here (the kernel does not); other errors are returned without it.
    pub(crate) fn wait_timeout(&self, m: &Mutex, timeout_ns: u64) -> Result<(), ResultCode> {
        let rc = svc::wait_process_wide_key_atomic(&m.0, &self.0, me(), timeout_ns as i64);
        if rc == Err(ResultCode::TIMED_OUT) {
            m.lock();
        }
        rc
    }

    /// `condvarWait`.
    pub(crate) fn wait(&self, m: &Mutex) -> Result<(), ResultCode> {
        self.wait_timeout(m, u64::MAX)
    }

    /// `condvarWake`: `n` waiters, -1 all.
    pub(crate) fn wake(&self, n: i32) {
        svc::signal_process_wide_key(&self.0, n);
    }

    /// `condvarWakeOne`.
    pub(crate) fn wake_one(&self) {
        self.wake(1);
    }

    /// `condvarWakeAll`.
    pub(crate) fn wake_all(&self) {
        self.wake(-1);
    }
}

/// `RwLock`: writers preferred; a writer keeps the mutex for its whole write section.
#[derive(Debug, Default)]
pub(crate) struct RwLock {
    mutex: Mutex,
    condvar_reader_wait: CondVar,
    condvar_writer_wait: CondVar,
    read_lock_count: AtomicU32,
    read_waiter_count: AtomicU32,
    write_lock_count: AtomicU32,
    write_waiter_count: AtomicU32,
    write_owner_tag: AtomicU32,
}

/// Reads and writes a field the mutex protects (a plain integer in C).
fn get(f: &AtomicU32) -> u32 {
    f.load(Relaxed)
}

fn set(f: &AtomicU32, v: u32) {
    f.store(v, Relaxed);
}

impl RwLock {
    pub(crate) fn new() -> Self {
        RwLock::default()
    }

    /// `rwlockReadLock`.
    pub(crate) fn read_lock(&self) {
        if get(&self.write_owner_tag) == me() {
            set(&self.read_lock_count, get(&self.read_lock_count) + 1);
        } else {
            self.mutex.lock();
            while get(&self.write_waiter_count) > 0 {
                set(&self.read_waiter_count, get(&self.read_waiter_count) + 1);
                let _ = self.condvar_reader_wait.wait(&self.mutex);
                set(&self.read_waiter_count, get(&self.read_waiter_count) - 1);
            }
            set(&self.read_lock_count, get(&self.read_lock_count) + 1);
            self.mutex.unlock();
        }
    }

    /// `rwlockTryReadLock`.
    pub(crate) fn try_read_lock(&self) -> bool {
        if get(&self.write_owner_tag) == me() {
            set(&self.read_lock_count, get(&self.read_lock_count) + 1);
            return true;
        }
        if !self.mutex.try_lock() {
            return false;
        }
        let got = get(&self.write_waiter_count) == 0;
        if got {
            set(&self.read_lock_count, get(&self.read_lock_count) + 1);
        }
        self.mutex.unlock();
        got
    }

    /// `rwlockReadUnlock`.
    pub(crate) fn read_unlock(&self) {
        if get(&self.write_owner_tag) == me() {
            set(&self.read_lock_count, get(&self.read_lock_count) - 1);
            if get(&self.read_lock_count) == 0 && get(&self.write_lock_count) == 0 {
                self.hand_on();
            }
        } else {
            self.mutex.lock();
            set(&self.read_lock_count, get(&self.read_lock_count) - 1);
            if get(&self.read_lock_count) == 0 && get(&self.write_waiter_count) > 0 {
                self.condvar_writer_wait.wake_one();
            }
            self.mutex.unlock();
        }
    }

    /// `rwlockWriteLock`: returns holding the mutex.
    pub(crate) fn write_lock(&self) {
        if get(&self.write_owner_tag) == me() {
            set(&self.write_lock_count, get(&self.write_lock_count) + 1);
            return;
        }
        self.mutex.lock();
        while get(&self.read_lock_count) > 0 {
            set(&self.write_waiter_count, get(&self.write_waiter_count) + 1);
            let _ = self.condvar_writer_wait.wait(&self.mutex);
            set(&self.write_waiter_count, get(&self.write_waiter_count) - 1);
        }
        set(&self.write_lock_count, 1);
        set(&self.write_owner_tag, me());
    }

    /// `rwlockTryWriteLock`.
    pub(crate) fn try_write_lock(&self) -> bool {
        if get(&self.write_owner_tag) == me() {
            set(&self.write_lock_count, get(&self.write_lock_count) + 1);
            return true;
        }
        if !self.mutex.try_lock() {
            return false;
        }
        if get(&self.read_lock_count) > 0 {
            self.mutex.unlock();
            return false;
        }
        set(&self.write_lock_count, 1);
        set(&self.write_owner_tag, me());
        true
    }

    /// `rwlockWriteUnlock`.
    pub(crate) fn write_unlock(&self) {
        set(&self.write_lock_count, get(&self.write_lock_count) - 1);
        if get(&self.read_lock_count) == 0 && get(&self.write_lock_count) == 0 {
            self.hand_on();
        }
    }

    /// The end of a write section (shared by both unlocks in C): one writer, else every
    /// reader, then the writer's mutex goes.
    fn hand_on(&self) {
        set(&self.write_owner_tag, 0);
        if get(&self.write_waiter_count) > 0 {
            self.condvar_writer_wait.wake_one();
        } else if get(&self.read_waiter_count) > 0 {
            self.condvar_reader_wait.wake_all();
        }
        self.mutex.unlock();
    }
}

/// `Barrier`: one wait a generation, no loop (the kernel's condvar never wakes spuriously).
#[derive(Debug, Default)]
pub(crate) struct Barrier {
    count: AtomicU64,
    total: u64,
    mutex: Mutex,
    condvar: CondVar,
}

impl Barrier {
    /// `barrierInit(b, n)`.
    pub(crate) fn new(n: u64) -> Self {
        Barrier {
            total: n - 1,
            ..Barrier::default()
        }
    }

    /// `barrierWait`.
    pub(crate) fn wait(&self) {
        self.mutex.lock();
        let count = self.count.load(Relaxed);
        self.count.store(count + 1, Relaxed);
        if count == self.total {
            self.count.store(0, Relaxed);
            self.condvar.wake(self.total as i32);
        } else {
            let _ = self.condvar.wait(&self.mutex);
        }
        self.mutex.unlock();
    }
}

/// `Semaphore`.
#[derive(Debug, Default)]
pub(crate) struct Semaphore {
    condvar: CondVar,
    mutex: Mutex,
    count: AtomicU64,
}

impl Semaphore {
    /// `semaphoreInit`.
    pub(crate) fn new(count: u64) -> Self {
        Semaphore {
            count: AtomicU64::new(count),
            ..Semaphore::default()
        }
    }

    /// `semaphoreSignal`.
    pub(crate) fn signal(&self) {
        self.mutex.lock();
        self.count.store(self.count.load(Relaxed) + 1, Relaxed);
        self.condvar.wake_one();
        self.mutex.unlock();
    }

    /// `semaphoreWait`.
    pub(crate) fn wait(&self) {
        self.mutex.lock();
        while self.count.load(Relaxed) == 0 {
            let _ = self.condvar.wait(&self.mutex);
        }
        self.count.store(self.count.load(Relaxed) - 1, Relaxed);
        self.mutex.unlock();
    }

    /// `semaphoreTryWait`.
    pub(crate) fn try_wait(&self) -> bool {
        self.mutex.lock();
        let c = self.count.load(Relaxed);
        let ok = c > 0;
        if ok {
            self.count.store(c - 1, Relaxed);
        }
        self.mutex.unlock();
        ok
    }
}
