//! Reader-writer lock (nn::os `ReaderWriterLockType`): many readers or one writer, writers
//! first, the writer's thread free to lock again and to read.
//!
//! Invariant: `owner == 0` exactly when no thread holds the write side; while a thread does,
//! every read level is its own and `writes + readers > 0`. All of it changes only under the
//! state lock. As nn::os (LibHac's port of `os_rw_lock_target_impl`): a reader waits while
//! the lock is written or a writer waits (writers first); a writer waits while anyone reads
//! or writes; the last release hands the lock to one waiting writer, else to every waiting
//! reader. A writer that stops waiting (timeout, shutdown) lets the readers it held back
//! through. Owners are threads (the calling OS thread's token, as a blocking mutex's).

use super::mutex::thread_token;
use super::waiters::{WaitSlot, Waiters, WakeBatch};
use super::waiting::{Object, Op, Timeout};
use crate::entry::entry;
use crate::result::ResultCode;
use crate::sync::Arc;
use std::time::Duration;

/// The most read levels at once, as nn::os (15 bits).
pub const READ_LOCK_COUNT_MAX: u32 = (1 << 15) - 1;

/// The state behind the lock.
#[derive(Debug)]
pub(super) struct Counts {
    /// Read levels held (the writer's own, while it writes).
    readers: u32,
    /// The writing thread's token; 0: nobody writes.
    owner: u64,
    /// Write levels the owner holds.
    writes: u32,
    readers_waiting: Waiters,
    writers_waiting: Waiters,
}

impl Counts {
    /// Nobody holds the lock any more: one waiting writer, else every waiting reader, may
    /// take it (a writer polling in a try loop is promoted as well).
    fn freed(&mut self, batch: &mut WakeBatch) {
        if self.writers_waiting.is_empty() {
            self.readers_waiting.notify_all(batch);
        }
        self.writers_waiting.notify(1, batch);
    }
}

/// A reader-writer lock, writer-preferring, as nn::os's: a handle, a cheap `Clone` (clones
/// name one lock).
///
/// ```
/// let l = hos::os::ReaderWriterLock::new();
/// l.acquire_write()?;
/// l.acquire_write()?; // the writer again
/// l.acquire_read()?; // and it may read
/// assert!(l.is_write_lock_held_by_current_thread() && l.is_read_lock_held());
/// let other = std::thread::scope(|s| s.spawn(|| l.try_acquire_read()).join().unwrap());
/// assert!(!other, "another thread may not read while it writes");
/// l.release_read()?;
/// l.release_write()?;
/// l.release_write()?;
/// assert_eq!(l.release_write(), Err(hos::ResultCode::INVALID_STATE));
/// # Ok::<(), hos::ResultCode>(())
/// ```
#[derive(Clone, Debug)]
pub struct ReaderWriterLock {
    obj: Arc<Object<Counts>>,
}

impl Default for ReaderWriterLock {
    fn default() -> Self {
        Self::new()
    }
}

impl ReaderWriterLock {
    /// A lock nobody holds.
    pub fn new() -> Self {
        ReaderWriterLock {
            obj: Arc::new(Object::new(Counts {
                readers: 0,
                owner: 0,
                writes: 0,
                readers_waiting: Waiters::new(),
                writers_waiting: Waiters::new(),
            })),
        }
    }

    /// Takes a read level, waiting while another thread writes or waits to (nn::os
    /// AcquireReadLock). The writing thread itself reads at once.
    ///
    /// # Errors
    /// Cancelled once the runtime shuts down; OutOfRange past [`READ_LOCK_COUNT_MAX`] levels.
    ///
    /// # Blocking
    /// Through the runtime's wait policy while it waits.
    pub fn acquire_read(&self) -> Result<(), ResultCode> {
        self.obj.run(Read(thread_token()), Timeout::Never)
    }

    /// Takes a read level if that needs no wait (nn::os TryAcquireReadLock).
    pub fn try_acquire_read(&self) -> bool {
        self.obj.run(Read(thread_token()), Timeout::Poll).is_ok()
    }

    /// Takes a read level, waiting at most `d`.
    ///
    /// # Errors
    /// As [`ReaderWriterLock::acquire_read`], and TimedOut (nothing taken).
    ///
    /// # Blocking
    /// As [`ReaderWriterLock::acquire_read`], at most `d`.
    pub fn acquire_read_timeout(&self, d: Duration) -> Result<(), ResultCode> {
        self.obj.run(Read(thread_token()), Timeout::from(Some(d)))
    }

    /// Gives a read level back (nn::os ReleaseReadLock): the last one lets a waiting writer
    /// in.
    ///
    /// # Errors
    /// InvalidState if nobody reads, or another thread writes (the read levels are its own);
    /// nn::os asserts instead.
    pub fn release_read(&self) -> Result<(), ResultCode> {
        entry();
        let me = thread_token();
        self.obj.with(|s, batch| {
            if s.readers == 0 || (s.owner != 0 && s.owner != me) {
                return Err(ResultCode::INVALID_STATE);
            }
            s.readers -= 1;
            if s.owner == me {
                if s.writes == 0 && s.readers == 0 {
                    s.owner = 0;
                    s.freed(batch);
                }
            } else if s.readers == 0 {
                s.writers_waiting.notify(1, batch);
            }
            Ok(())
        })
    }

    /// Takes a write level, waiting while any other thread reads or writes (nn::os
    /// AcquireWriteLock); the writing thread takes another level at once.
    ///
    /// # Errors
    /// Cancelled once the runtime shuts down; OutOfRange past 2^32-1 levels.
    ///
    /// # Blocking
    /// Through the runtime's wait policy while it waits; readers that come after it wait too.
    pub fn acquire_write(&self) -> Result<(), ResultCode> {
        self.obj.run(Write(thread_token()), Timeout::Never)
    }

    /// Takes a write level if that needs no wait (nn::os TryAcquireWriteLock).
    pub fn try_acquire_write(&self) -> bool {
        self.obj.run(Write(thread_token()), Timeout::Poll).is_ok()
    }

    /// Takes a write level, waiting at most `d`.
    ///
    /// # Errors
    /// As [`ReaderWriterLock::acquire_write`], and TimedOut (nothing taken; the readers it
    /// held back go on).
    ///
    /// # Blocking
    /// As [`ReaderWriterLock::acquire_write`], at most `d`.
    pub fn acquire_write_timeout(&self, d: Duration) -> Result<(), ResultCode> {
        self.obj.run(Write(thread_token()), Timeout::from(Some(d)))
    }

    /// Gives a write level back (nn::os ReleaseWriteLock); once the thread holds no level,
    /// write or read, one waiting writer, else every waiting reader, goes in.
    ///
    /// # Errors
    /// InvalidState if the calling thread holds no write level (nn::os asserts).
    pub fn release_write(&self) -> Result<(), ResultCode> {
        entry();
        let me = thread_token();
        self.obj.with(|s, batch| {
            if s.owner != me || s.writes == 0 {
                return Err(ResultCode::INVALID_STATE);
            }
            s.writes -= 1;
            if s.writes == 0 && s.readers == 0 {
                s.owner = 0;
                s.freed(batch);
            }
            Ok(())
        })
    }

    /// Whether any thread holds a read level (nn::os IsReadLockHeld).
    pub fn is_read_lock_held(&self) -> bool {
        self.obj.with(|s, _| s.readers > 0)
    }

    /// Whether the calling thread holds a write level (nn::os
    /// IsWriteLockHeldByCurrentThread).
    pub fn is_write_lock_held_by_current_thread(&self) -> bool {
        let me = thread_token();
        self.obj.with(|s, _| s.owner == me && s.writes > 0)
    }

    /// Whether the calling thread owns the lock: it writes, or it wrote and still reads
    /// (nn::os IsLockOwner).
    pub fn is_lock_owner(&self) -> bool {
        let me = thread_token();
        self.obj.with(|s, _| s.owner == me)
    }
}

/// The wait of a read level, by the thread with this token.
#[derive(Debug)]
struct Read(u64);

impl Op for Read {
    type State = Counts;
    type Output = Result<(), ResultCode>;
    const ON: &'static str = "reader-writer lock (read)";

    fn complete(
        &mut self,
        s: &mut Counts,
        _: &WaitSlot,
        _: &mut WakeBatch,
    ) -> Option<Self::Output> {
        let free = s.owner == 0 && s.writers_waiting.is_empty();
        if s.owner != self.0 && !free {
            return None;
        }
        if s.readers >= READ_LOCK_COUNT_MAX {
            return Some(Err(ResultCode::OUT_OF_RANGE));
        }
        s.readers += 1;
        Some(Ok(()))
    }

    fn waiters<'s>(&self, s: &'s mut Counts) -> &'s mut Waiters {
        &mut s.readers_waiting
    }

    fn fail(&mut self, code: ResultCode) -> Self::Output {
        Err(code)
    }

    fn holder(&self, s: &Counts) -> u64 {
        s.owner
    }
}

/// The wait of a write level, by the thread with this token.
#[derive(Debug)]
struct Write(u64);

impl Op for Write {
    type State = Counts;
    type Output = Result<(), ResultCode>;
    const ON: &'static str = "reader-writer lock (write)";

    fn complete(
        &mut self,
        s: &mut Counts,
        _: &WaitSlot,
        _: &mut WakeBatch,
    ) -> Option<Self::Output> {
        if s.owner == self.0 {
            s.writes = match s.writes.checked_add(1) {
                Some(w) => w,
                None => return Some(Err(ResultCode::OUT_OF_RANGE)),
            };
            return Some(Ok(()));
        }
        if s.owner != 0 || s.readers != 0 {
            return None;
        }
        s.owner = self.0;
        s.writes = 1;
        Some(Ok(()))
    }

    fn waiters<'s>(&self, s: &'s mut Counts) -> &'s mut Waiters {
        &mut s.writers_waiting
    }

    fn fail(&mut self, code: ResultCode) -> Self::Output {
        Err(code)
    }

    fn holder(&self, s: &Counts) -> u64 {
        s.owner
    }

    fn left(&self, s: &mut Counts, batch: &mut WakeBatch) {
        // The last waiting writer gone from a lock nobody writes: the readers it kept out go.
        if s.owner == 0 && s.writers_waiting.is_empty() {
            s.readers_waiting.notify_all(batch);
        }
    }
}
