//! Kick words: one `u32` per guest thread, non-zero while its checkpoint has something to do
//! (a kick, a turn asked for, an escape to end, a slot taken from it after a kick's grace),
//! for code that tests for a kick inline (a JIT's or a recompiler's loop heads) and calls the
//! checkpoint only when the word is set.
//!
//! A word's step bits are [`CLEAR`], [`SET`] or [`REVOKED`]: its slot was taken from it after
//! a kick's grace (HOS_VCORE_GRACE_US, docs/design.md section 8), so the slot its seat names
//! is no longer its own and its checkpoint must take the lock whatever that slot's flag says.
//! Beside them, the [`PAUSE`] bit: a pause is asked of the thread (`pause.rs`), so that its
//! next checkpoint stops it; the word is non-zero while either says something.
//!
//! # Invariant
//!
//! A word lives on its owner's line (`line.rs`, which says why it is `'static` and recycled).
//! Only the virtual cores write a word's step bits, under their lock (`vcore/mod.rs`, "Ground
//! rules"), and only a pause's asker its pause bit, under that pause's lock; each writes its
//! bits with a read-modify-write that leaves the others as they are. Its owner reads it without
//! a lock as a hint. The words are std atomics, not loom's: they outlive any model, and a model
//! checks the table's decisions, which never read them.

use std::sync::atomic::{AtomicU32, Ordering};

/// Nothing for the checkpoint to do.
pub(super) const CLEAR: u32 = 0;
/// The checkpoint has something to do: its slot's flag asks, or the thread runs by escape.
const SET: u32 = 1;
/// The thread's slot was taken from it after a kick's grace: its next checkpoint, yield or
/// release finds that it holds nothing.
const REVOKED: u32 = 2;
/// The step bits: what the virtual cores say.
const STEP: u32 = 3;
/// A pause is asked of the thread: its next checkpoint stops it (`pause.rs`).
const PAUSE: u32 = 4;

/// Whether a word is set ([`SET`], [`REVOKED`] or [`PAUSE`]): its owner's checkpoint may
/// have something to do.
#[inline]
pub(crate) fn is_set(word: &AtomicU32) -> bool {
    // Relaxed: a hint (module invariant).
    word.load(Ordering::Relaxed) != CLEAR
}

/// Whether a word is [`REVOKED`]: its owner's slot was taken after a kick's grace. Only the
/// owner's own steps clear that value, so a `true` read by the owner is never stale.
#[inline]
pub(crate) fn is_revoked(word: &AtomicU32) -> bool {
    // Relaxed: written under the virtual cores' lock; the owner's own step (under that lock,
    // which orders it) is the only one that changes it back.
    word.load(Ordering::Relaxed) & STEP == REVOKED
}

/// Whether a word's [`PAUSE`] bit is set: a pause is asked of its owner.
#[inline]
pub(crate) fn is_pause_asked(word: &AtomicU32) -> bool {
    // Relaxed: a hint; `pause.rs` says what orders it where it matters.
    word.load(Ordering::Relaxed) & PAUSE != 0
}

/// Sets or clears a word's [`PAUSE`] bit (a pause's asker, under that pause's lock).
pub(crate) fn ask_pause(word: &AtomicU32, on: bool) {
    // Relaxed: the pause's lock orders the asks; an RMW keeps the step bits (module
    // invariant), which the virtual cores may write at the same time.
    if on {
        word.fetch_or(PAUSE, Ordering::Relaxed);
    } else {
        word.fetch_and(!PAUSE, Ordering::Relaxed);
    }
}

/// Sets or clears a word's step bits (the virtual cores, under their lock).
pub(crate) fn store(word: &AtomicU32, on: bool) {
    put(word, if on { SET } else { CLEAR });
}

/// Marks a word [`REVOKED`] (the virtual cores, under their lock, when they take its owner's
/// slot after a kick's grace).
pub(crate) fn revoke(word: &AtomicU32) {
    put(word, REVOKED);
}

/// Writes the step bits `value` unless the word already says so, so its owner's cache line
/// stays its own; the pause bit is left as it is.
fn put(word: &AtomicU32, value: u32) {
    // Relaxed: a hint for its owner's fast path; the virtual cores' lock orders every decision
    // (module invariant). Only writers under that lock change the step bits, so they do not
    // change between the load and the XOR, which flips exactly the bits that differ and
    // leaves a pause bit set or cleared meanwhile as it is.
    let now = word.load(Ordering::Relaxed) & STEP;
    if now != value {
        word.fetch_xor(now ^ value, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Every step value with and without the pause bit: each side's writes keep the other's.
    #[test]
    fn step_and_pause_bits_keep_each_other() {
        let word = AtomicU32::new(CLEAR);
        for pause in [false, true] {
            for step in [CLEAR, SET, REVOKED] {
                ask_pause(&word, pause);
                put(&word, step);
                assert_eq!(
                    is_pause_asked(&word),
                    pause,
                    "step {step} cleared the pause"
                );
                assert_eq!(is_revoked(&word), step == REVOKED);
                assert_eq!(is_set(&word), pause || step != CLEAR);
                ask_pause(&word, !pause);
                assert_eq!(
                    word.load(Ordering::Relaxed) & STEP,
                    step,
                    "the pause moved the step"
                );
                ask_pause(&word, pause);
            }
        }
        ask_pause(&word, false);
        store(&word, false);
        assert!(!is_set(&word));
    }
}
