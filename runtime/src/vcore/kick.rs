//! Kick words: one `u32` per guest thread, non-zero while its checkpoint has something to do
//! (a kick, a turn asked for, an escape to end), for code that tests for a kick inline (a
//! JIT's or a recompiler's loop heads) and calls the checkpoint only when the word is set.
//!
//! # Invariant
//!
//! A word is `'static` and has one owner at a time, the [`KickWord`] of one thread's seat: its
//! address is stable for that thread's life and readable forever after (a pointer a host kept
//! never dangles). Words are recycled: a word whose owner dropped goes back to a process-wide
//! pool, zeroed, and the next seat made takes it. Only the virtual cores write a word, under
//! their lock (`vcore/mod.rs`, "Ground rules"); its owner reads it without a lock as a hint.
//! The words are std atomics, not loom's: they outlive any model, and a model checks the
//! table's decisions, which never read them. Each word has a cache line of its own: its owner
//! reads it at every loop head of its guest code, and a write to another thread's word must
//! not take that line away from it.

use crate::sync::lock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Words made and not owned now. Process bookkeeping behind a std lock, taken once when a
/// thread's record is made and once when it is dropped.
static POOL: Mutex<Vec<&'static AtomicU32>> = Mutex::new(Vec::new());

/// How many words one allocation makes when the pool is empty (64 cache lines).
const CHUNK: usize = 64;

/// A word alone on its cache line (module invariant).
#[repr(align(64))]
struct Line(AtomicU32);

/// A thread's kick word, owned (module invariant).
#[derive(Debug)]
pub(crate) struct KickWord(&'static AtomicU32);

impl KickWord {
    /// A word from the pool (a new chunk if it is empty), 0.
    pub(crate) fn new() -> Self {
        let mut pool = lock(&POOL);
        if pool.is_empty() {
            // Leaked on purpose: a word lives as long as the process (module invariant).
            let chunk: &'static [Line] = Box::leak(
                (0..CHUNK)
                    .map(|_| Line(AtomicU32::new(0)))
                    .collect::<Box<[_]>>(),
            );
            pool.extend(chunk.iter().map(|line| &line.0));
        }
        KickWord(pool.pop().expect("the pool was refilled"))
    }

    /// The word, for readers: non-zero while the thread's checkpoint has something to do.
    pub(crate) fn get(&self) -> &'static AtomicU32 {
        self.0
    }
}

impl Drop for KickWord {
    fn drop(&mut self) {
        store(self.0, false);
        lock(&POOL).push(self.0);
    }
}

/// Whether a word is set: its owner's checkpoint may have something to do.
#[inline]
pub(crate) fn is_set(word: &AtomicU32) -> bool {
    // Relaxed: a hint (module invariant).
    word.load(Ordering::Relaxed) != 0
}

/// Sets or clears a word (the virtual cores, under their lock; a dropped word, by its owner).
/// A word that already says so is not written, so its owner's cache line stays its own.
pub(crate) fn store(word: &AtomicU32, on: bool) {
    let value = u32::from(on);
    // Relaxed: a hint for its owner's fast path; the virtual cores' lock orders every decision
    // (module invariant), and only writers under it (or the owner, dropping) change it.
    if word.load(Ordering::Relaxed) != value {
        word.store(value, Ordering::Relaxed);
    }
}
