//! What the kernel does to a guest word: its atomic read-modify-writes (the LL/SC loops of
//! mesosphère's user-memory accessors) and the arithmetic of SignalAndModifyByWaitingCountIfEqual.
//!
//! Invariant: every function here is one atomic operation on the word (or none), so a guest
//! thread's own atomics on the same word see it whole, as they see the console kernel's. The
//! arbiter calls them under its lock, which makes each one atomic with respect to every other
//! arbiter operation too. Orderings: read-modify-writes are AcqRel (the kernel's
//! `ldaxr`/`stlxr` pair), loads Acquire and stores Release (the kernel's DMB before a store).

use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Reads the word (a plain 32-bit read in the kernel).
pub(crate) fn load(w: &AtomicU32) -> u32 {
    // Acquire: what the guest published before its store is seen by whoever we wake.
    w.load(Ordering::Acquire)
}

/// Reads a 64-bit word (WaitIfEqual64).
pub(crate) fn load64(w: &AtomicU64) -> u64 {
    // Acquire: as `load`.
    w.load(Ordering::Acquire)
}

/// Writes the word (a plain 32-bit store after a barrier in the kernel).
pub(crate) fn store(w: &AtomicU32, v: u32) {
    // Release: the next owner, which may take the word in user space, sees what we saw.
    w.store(v, Ordering::Release);
}

/// UpdateLockAtomic: `old == 0` becomes `if_zero`, anything else gets `or_mask` set.
/// Returns the old value.
pub(crate) fn update_lock(w: &AtomicU32, if_zero: u32, or_mask: u32) -> u32 {
    let update = |old: u32| Some(if old == 0 { if_zero } else { old | or_mask });
    // AcqRel: the kernel's ldaxr/stlxr; the closure never refuses, so this cannot fail.
    match w.fetch_update(Ordering::AcqRel, Ordering::Acquire, update) {
        Ok(old) | Err(old) => old,
    }
}

/// DecrementIfLessThan: the word is decremented (wrapping) only if it is less than `value`
/// (signed). Returns the old value (mesosphère's rule; Ryujinx decrements always).
pub(crate) fn decrement_if_less_than(w: &AtomicU32, value: i32) -> i32 {
    let update = |old: u32| ((old as i32) < value).then(|| (old as i32).wrapping_sub(1) as u32);
    // AcqRel: the kernel's ldaxr/stlxr; a refusal leaves the word untouched.
    match w.fetch_update(Ordering::AcqRel, Ordering::Acquire, update) {
        Ok(old) | Err(old) => old as i32,
    }
}

/// UpdateIfEqual: a compare-and-swap `value -> new`. Returns the old value.
pub(crate) fn update_if_equal(w: &AtomicU32, value: i32, new: i32) -> i32 {
    // AcqRel: the kernel's ldaxr/stlxr.
    match w.compare_exchange(
        value as u32,
        new as u32,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(old) | Err(old) => old as i32,
    }
}

/// The value SignalAndModifyByWaitingCountIfEqual writes in place of `value`, given the
/// number of threads waiting on the address (`waiters`) and the signal's `count` (`<= 0`:
/// all). Wrapping, as the kernel's s32 arithmetic is on the console.
///
/// | count | waiters | new value |
/// | --- | --- | --- |
/// | any | 0 | value + 1 |
/// | <= 0 | >= 1 | value - 1 |
/// | > 0 | 1..=count (every waiter is woken) | value - 1 |
/// | > 0 | > count (waiters remain) | value |
///
/// Mesosphère is followed where Ryujinx differs: Ryujinx (and 2021 yuzu) give value - 2 for
/// `count <= 0` with waiters (a 7.x firmware's rule that mesosphère dropped in 2022), and
/// leave the value unchanged when waiters == count (mesosphère: value - 1).
pub(crate) fn modified_value(value: i32, count: i32, waiters: usize) -> i32 {
    if waiters == 0 {
        value.wrapping_add(1)
    } else if count <= 0 || waiters <= count as usize {
        value.wrapping_sub(1)
    } else {
        value
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::svc::arbitration::WAITERS;

    #[test]
    fn update_lock_takes_a_free_word_and_marks_a_held_one() {
        let w = AtomicU32::new(0);
        assert_eq!(update_lock(&w, 0x8123, WAITERS), 0);
        assert_eq!(load(&w), 0x8123);
        assert_eq!(update_lock(&w, 0x9999, WAITERS), 0x8123);
        assert_eq!(load(&w), 0x8123 | WAITERS);
        assert_eq!(update_lock(&w, 0x9999, WAITERS), 0x8123 | WAITERS);
        assert_eq!(load(&w), 0x8123 | WAITERS);
    }

    #[test]
    fn decrement_if_less_than_only_below_and_wrapping() {
        for (old, value, new) in [
            (4, 5, 3),
            (5, 5, 5),
            (6, 5, 6),
            (-1, 0, -2),
            (0, 0, 0),
            (i32::MIN, 0, i32::MAX),
            (i32::MAX, i32::MAX, i32::MAX),
            (i32::MAX - 1, i32::MAX, i32::MAX - 2),
        ] {
            let w = AtomicU32::new(old as u32);
            assert_eq!(decrement_if_less_than(&w, value), old, "{old} < {value}");
            assert_eq!(load(&w) as i32, new, "{old} < {value}");
        }
    }

    #[test]
    fn update_if_equal_is_a_compare_and_swap() {
        let w = AtomicU32::new(7);
        assert_eq!(update_if_equal(&w, 6, 100), 7);
        assert_eq!(load(&w), 7);
        assert_eq!(update_if_equal(&w, 7, -1), 7);
        assert_eq!(load(&w), u32::MAX);
    }

    /// Every count and waiter number in a small square, against the table in the doc read
    /// row by row; an off-by-one in either comparison changes a cell.
    #[test]
    fn modified_value_is_the_table() {
        for count in -2..=4i32 {
            for waiters in 0..=5usize {
                let want = match (count, waiters) {
                    (_, 0) => 11,
                    (c, _) if c <= 0 => 9,
                    (c, w) if w <= c as usize => 9,
                    _ => 10,
                };
                assert_eq!(
                    modified_value(10, count, waiters),
                    want,
                    "{count} {waiters}"
                );
            }
        }
        assert_eq!(modified_value(i32::MAX, 1, 0), i32::MIN);
        assert_eq!(modified_value(i32::MIN, 1, 1), i32::MAX);
    }
}
