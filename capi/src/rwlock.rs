//! Reader-writer locks (nn::os `ReaderWriterLockType`): `hos_rwlock_*`, acquired and released
//! in separate calls by the calling thread.
//!
//! Invariant: each call is hos's `ReaderWriterLock` method of the same name; the owner of a
//! write level is the calling OS thread, as nn::os's.

use crate::boundary::{self, entry, Out};
use crate::object::{self, hos_handle, Object};
use crate::result::hos_result;
use hos_rs::os::ReaderWriterLock;

pub(crate) fn rwlock(o: &Object) -> Option<&ReaderWriterLock> {
    match o {
        Object::RwLock(l) => Some(l),
        _ => None,
    }
}

/// Creates a reader-writer lock nobody holds.
///
/// Errors: InvalidPointer for a NULL or misaligned `out`; OutOfHandles.
///
/// # Safety
/// `out` is NULL or points to a writable `hos_handle`.
#[no_mangle]
pub unsafe extern "C" fn hos_rwlock_create(out: *mut hos_handle) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        object::create(Object::RwLock(ReaderWriterLock::new()), out)
    })
}

/// Takes a read level, waiting while another thread writes or waits to write (writers
/// first); the writing thread itself reads at once. `timeout_ns`: negative waits without
/// limit, 0 tries once.
///
/// Errors: InvalidHandle; TimedOut; Cancelled once the runtime shuts down; OutOfRange past
/// 32767 read levels.
#[no_mangle]
pub extern "C" fn hos_rwlock_acquire_read(rwlock: hos_handle, timeout_ns: i64) -> hos_result {
    entry(|| {
        object::with(rwlock, "reader-writer lock", self::rwlock, |l| {
            let out = match boundary::timeout(timeout_ns) {
                None => l.acquire_read(),
                Some(d) => l.acquire_read_timeout(d),
            };
            Ok(out?)
        })
    })
}

/// Gives a read level back; the last one lets a waiting writer in.
///
/// Errors: InvalidHandle; InvalidState if nobody reads or another thread writes.
#[no_mangle]
pub extern "C" fn hos_rwlock_release_read(rwlock: hos_handle) -> hos_result {
    entry(|| {
        object::with(rwlock, "reader-writer lock", self::rwlock, |l| {
            Ok(l.release_read()?)
        })
    })
}

/// Takes a write level, waiting while any other thread reads or writes; the writing thread
/// takes another level at once. `timeout_ns`: negative waits without limit, 0 tries once.
///
/// Errors: InvalidHandle; TimedOut; Cancelled once the runtime shuts down; OutOfRange past
/// 2^32-1 levels.
#[no_mangle]
pub extern "C" fn hos_rwlock_acquire_write(rwlock: hos_handle, timeout_ns: i64) -> hos_result {
    entry(|| {
        object::with(rwlock, "reader-writer lock", self::rwlock, |l| {
            let out = match boundary::timeout(timeout_ns) {
                None => l.acquire_write(),
                Some(d) => l.acquire_write_timeout(d),
            };
            Ok(out?)
        })
    })
}

/// Gives a write level back; once the thread holds no level, one waiting writer, else every
/// waiting reader, goes in.
///
/// Errors: InvalidHandle; InvalidState if the calling thread holds no write level.
#[no_mangle]
pub extern "C" fn hos_rwlock_release_write(rwlock: hos_handle) -> hos_result {
    entry(|| {
        object::with(rwlock, "reader-writer lock", self::rwlock, |l| {
            Ok(l.release_write()?)
        })
    })
}

/// Who holds the lock, as seen by the calling thread: into `*read_held` whether any thread
/// reads, `*write_held` whether the calling thread writes, `*owner` whether it owns the lock
/// (writes, or wrote and still reads); 1 or 0 each (nn::os IsReadLockHeld,
/// IsWriteLockHeldByCurrentThread, IsLockOwner).
///
/// Errors: InvalidPointer for a NULL or misaligned out-pointer; InvalidHandle.
///
/// # Safety
/// Each out-pointer is NULL or points to a writable `int32_t`.
#[no_mangle]
pub unsafe extern "C" fn hos_rwlock_held(
    rwlock: hos_handle,
    read_held: *mut i32,
    write_held: *mut i32,
    owner: *mut i32,
) -> hos_result {
    entry(|| {
        // SAFETY: forwarded from the caller.
        let (read_out, write_out, owner_out) = unsafe {
            (
                Out::new(read_held, "read_held")?,
                Out::new(write_held, "write_held")?,
                Out::new(owner, "owner")?,
            )
        };
        object::with(rwlock, "reader-writer lock", self::rwlock, |l| {
            read_out.write(i32::from(l.is_read_lock_held()));
            write_out.write(i32::from(l.is_write_lock_held_by_current_thread()));
            owner_out.write(i32::from(l.is_lock_owner()));
            Ok(())
        })
    })
}
