//! A wait's mailbox: where the table puts the result of a wait it ends, so that the waiting
//! thread takes it without the arbiter's lock.
//!
//! Invariant: a mailbox is filled at most once, under the arbiter's lock, by the operation
//! that ends its wait and takes it out of the table, at that operation's end, after its last
//! write to a guest word (a waiter may return the moment its result is there, and must find
//! the word handed over); it is emptied once, by the wait's own future. So, read under the
//! lock, an empty mailbox means the wait is still in the table under its key, and a full one
//! that the key is spent (its slot may hold another wait by then): the future looks at the
//! mailbox before it hands the key to the table, and a woken waiter that finds its result
//! there returns without the lock. That keeps the arbiter's one lock off the path of a
//! hand-off's waiter, where it would wait for the signaller's next registration (docs/svc.md,
//! "One lock").
//!
//! The table keeps the mailboxes of ended waits as [`Spares`] and gives one to a new wait once
//! nothing else holds it, so that a wait allocates none (and a waiter never frees what its
//! signaller allocated, or the other way round).
//!
//! Before its result, a lock wait's mailbox may be marked the heir's (`heir.rs`): the table
//! marks it, under the lock, when it wakes the wait ahead of its hand-off, so that the woken
//! waiter spins for the result instead of parking again. The mark is a hint: the result's put
//! keeps it beside the result (the take then says the hand-off found its heir still marked),
//! a take that finds it alone returns no result and leaves it, and the heir's own future
//! takes it off when its spin gives up.

use crate::result::ResultCode;
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::sync::Arc;

/// The spare mailboxes kept: more than the waits that end before their waiters return, in a
/// hand-off or a broadcast to a few; a longer broadcast's extra mailboxes are freed.
const SPARES: usize = 16;

/// No result yet.
const EMPTY: u32 = 0;
/// The heir's mark (module doc): the top bit, alone before the result, beside it after (the
/// result's put keeps it, so that the heir's own take counts the hand-off its wake was for).
const HEIR: u32 = 1 << 31;
/// Success: every bit but the mark's. Every other result is an error's result code, which is
/// never 0 (0 is success on Horizon, never an error) and leaves the top ten bits clear (the
/// module and description fields are 22 bits), so neither reaches the mark's bit or success.
const OK: u32 = !HEIR;

/// A result taken from a mailbox, and whether its wait was its mutex's marked heir when it
/// came (the hand-off the heir's wake was for: `heir.rs` counts it caught if its spin took
/// it, late if the wait key's take did).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Taken {
    pub result: Result<(), ResultCode>,
    pub heir: bool,
}

/// The result of one wait, once it ended.
#[derive(Debug, Default)]
pub(crate) struct Mailbox(AtomicU32);

impl Mailbox {
    /// Puts `r` in the mailbox, beside the heir's mark if there is one. Called under the
    /// arbiter's lock, once.
    pub(crate) fn put(&self, r: Result<(), ResultCode>) {
        let v = match r {
            Ok(()) => OK,
            Err(code) => code.0,
        };
        debug_assert!(v != EMPTY && v & HEIR == 0, "an error result of {v:#x}");
        // Release: what the ending operation did (a mutex word handed over, a lent priority
        // taken back) happens before the waiter that takes the result returns. An or, not a
        // store: the word holds nothing but the mark before, which it keeps.
        let old = self.0.fetch_or(v, Ordering::Release);
        debug_assert!(old & !HEIR == EMPTY, "a wait ended twice: {old:#x}");
    }

    /// Marks the wait its mutex's heir (module doc). Called under the arbiter's lock, before
    /// the result.
    pub(crate) fn mark_heir(&self) {
        // Relaxed: the heir reads it after the wake that follows (the wake's token orders it);
        // a stale read costs only a park or a spin. Never over a result: both are written
        // under the arbiter's lock, the result last. A swap, not a store: every write of the
        // word is then a read-modify-write, which loom 0.7 keeps whole (it lets a plain store
        // fall inside another thread's read-modify-write, tokio-rs/loom#254, which no
        // hardware does, and a model then ran without end).
        let _ = self.0.swap(HEIR, Ordering::Relaxed);
    }

    /// Whether the wait is marked its mutex's heir (and has no result yet).
    pub(crate) fn is_heir(&self) -> bool {
        // Relaxed: a hint (module doc); the result itself is taken with Acquire.
        self.0.load(Ordering::Relaxed) == HEIR
    }

    /// Takes the heir's mark off, unless the result came. Called by the wait's own future.
    /// Returns whether it did (else the result is there, for `take`).
    pub(crate) fn unmark_heir(&self) -> bool {
        // Relaxed (both): a hint; a failed exchange leaves the result for `take`.
        self.0
            .compare_exchange(HEIR, EMPTY, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the result, if the wait ended (a heir's mark stays: no result).
    pub(crate) fn take(&self) -> Option<Taken> {
        // Acquire: pairs with `put`'s Release. A swap, not a load first: the result is the
        // future's once, as the table's entry was (only `put` writes a result, once), and a
        // load before it would cost the waiter a second transfer of the line its signaller
        // just wrote, on every hand-off.
        let v = self.0.swap(EMPTY, Ordering::Acquire);
        if v == HEIR {
            // The mark alone: put back. Relaxed: the mark is a hint, and a result put since
            // the swap stays beside it for the next take (its wake brings one), which reads
            // it through this read-modify-write (the put's release sequence).
            self.0.fetch_or(HEIR, Ordering::Relaxed);
        }
        let result = match v & !HEIR {
            EMPTY => return None,
            OK => Ok(()),
            code => Err(ResultCode(code)),
        };
        Some(Taken {
            result,
            heir: v & HEIR != 0,
        })
    }

    /// Whether a result is there, without taking it: what a heir's spin reads each round (a
    /// load, so that the spin writes nothing to the line its owner's hand-off will write).
    pub(crate) fn has_result(&self) -> bool {
        // Relaxed: the result itself is then taken with `take`'s Acquire.
        self.0.load(Ordering::Relaxed) & !HEIR != EMPTY
    }
}

/// Mailboxes of ended waits, kept for new ones (under the arbiter's lock, as the table is).
#[derive(Debug, Default)]
pub(crate) struct Spares(Vec<Arc<Mailbox>>);

impl Spares {
    /// An empty mailbox for a new wait: a spare that nothing else holds, else a new one.
    pub(crate) fn take(&mut self) -> Arc<Mailbox> {
        for i in 0..self.0.len() {
            // `get_mut` succeeds once no key holds it: its waiter's last use of it (the take
            // of its result) happened before, by the count's Release decrement.
            if let Some(m) = Arc::get_mut(&mut self.0[i]) {
                // Emptied: a key dropped with its result still there leaves it full.
                *m = Mailbox::default();
                return self.0.swap_remove(i);
            }
        }
        Arc::new(Mailbox::default())
    }

    /// Keeps the mailbox of a wait that ended (its result put), if there is room.
    pub(crate) fn keep(&mut self, m: Arc<Mailbox>) {
        if self.0.len() < SPARES {
            self.0.push(m);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_result_is_taken_once_as_it_was_put() {
        for r in [
            Ok(()),
            Err(ResultCode::TIMED_OUT),
            Err(ResultCode::CANCELLED),
            Err(ResultCode::INVALID_STATE),
            Err(ResultCode::INVALID_HANDLE),
            Err(ResultCode::TERMINATION_REQUESTED),
        ] {
            let m = Mailbox::default();
            assert_eq!(m.take(), None, "empty at first");
            m.put(r);
            assert_eq!(
                m.take(),
                Some(Taken {
                    result: r,
                    heir: false
                })
            );
            assert_eq!(m.take(), None, "{r:?} taken twice");
            m.mark_heir();
            assert_eq!(m.take(), None, "a mark is no result");
            m.put(r);
            assert_eq!(
                m.take(),
                Some(Taken {
                    result: r,
                    heir: true
                })
            );
            assert_eq!(m.take(), None, "{r:?} taken twice after a mark");
        }
    }

    #[test]
    fn a_spare_goes_to_a_new_wait_empty_once_no_key_holds_it() {
        let mut spares = Spares::default();
        let first = spares.take();
        first.put(Ok(()));
        spares.keep(first.clone());
        // Its key still holds it: a new wait gets another.
        let second = spares.take();
        assert!(!Arc::ptr_eq(&first, &second));
        // The key is dropped with its result never taken: the spare comes back empty.
        let at = Arc::as_ptr(&first);
        drop(first);
        let third = spares.take();
        assert_eq!(Arc::as_ptr(&third), at, "the spare is reused");
        assert_eq!(third.take(), None, "and emptied");
        for _ in 0..SPARES + 4 {
            spares.keep(Arc::new(Mailbox::default()));
        }
        assert_eq!(spares.0.len(), SPARES, "kept up to the bound");
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;

    /// The heir's own future against the hand-off's put: its first take (which puts a lone
    /// mark back), then its spin's give-up (the mark's removal), race the put. The result is
    /// taken once, and it says heir exactly when the mark was still there at the put: the
    /// take's putting back never loses the mark beside a result put in between, nor adds one.
    #[test]
    fn loom_a_result_put_beside_the_mark_is_taken_once_and_says_so() {
        loom::model(|| {
            let mail = Arc::new(Mailbox::default());
            mail.mark_heir();
            let putter = {
                let mail = mail.clone();
                loom::thread::spawn(move || mail.put(Ok(())))
            };
            let first = mail.take();
            let unmarked = first.is_none() && mail.unmark_heir();
            putter.join().unwrap();
            let taken = first.or_else(|| mail.take()).expect("the result");
            assert_eq!(mail.take(), None, "taken once");
            let heir = !unmarked;
            assert_eq!(
                taken,
                Taken {
                    result: Ok(()),
                    heir
                }
            );
        });
    }
}
