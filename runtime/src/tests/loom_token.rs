//! Loom models of the deterministic mode's token (`token.rs`): a guest's wake of a waiting
//! guest, a host's wake (a parker's unpark, then a post) racing with the holder's own wait,
//! exits handing the token on while the other threads start, and a quantum's end at a
//! checkpoint. Each checks that at most one thread is inside a turn at any time and that no
//! turn is lost (a lost turn leaves a thread waiting for it for ever, which loom reports).
//!
//! The models cover the schedules the contract keeps: a wake a guest gives under the token,
//! or a host's wake that a post makes the token look at. A bare host unpark while the token
//! rests is seen only by the waiting thread's timed look (`RESTING_LOOK`), which loom's
//! `wait_timeout` never ends (`sync.rs`), so no model gives one.
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p hos-runtime --release --lib`
#![cfg(loom)]

use crate::det::clock::Pacing;
use crate::det::feed::Feed;
use crate::det::journal::Journal;
use crate::det::selector::Stable;
use crate::parker::Parker;
use crate::token::Token;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// A token over `cores` cores, round-robin, a turn of `quantum` checkpoints, with threads
/// 1..=`threads` enrolled on cores 0, 1, ... (wrapping), all of one priority, none started.
fn token(cores: u8, quantum: u32, threads: u64) -> Arc<Token> {
    let token = Token::new(
        Box::new(Stable::new(quantum)),
        cores,
        Pacing::Free,
        Feed::live(),
        Journal::new(quantum),
    );
    for id in 1..=threads {
        token.enroll(id, ((id - 1) % u64::from(cores)) as u8, 44);
    }
    Arc::new(token)
}

/// Counts the threads inside a turn: [`Inside::enter`] when one begins, [`Inside::leave`]
/// before the thread gives the token up.
#[derive(Default)]
struct Inside(AtomicUsize);

impl Inside {
    /// A turn begins: no other thread may be inside one.
    fn enter(&self) {
        // SeqCst: the count is the model's check, not the token's ordering.
        assert_eq!(
            self.0.fetch_add(1, Ordering::SeqCst),
            0,
            "two turns at once"
        );
    }

    /// A turn ends (before the wait, yield or exit that gives the token up).
    fn leave(&self) {
        // SeqCst: as in `enter`.
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Guest 1 waits on its parker; guest 2, started on its own, sets a flag and unparks it
/// under its turn, then exits. Whichever starts first, guest 1 gets the token back, sees
/// the flag, and the two turns never overlap.
#[test]
fn a_guest_wake_gives_the_turn_back() {
    loom::model(|| {
        let token = token(2, 4, 2);
        let inside = Arc::new(Inside::default());
        let flag = Arc::new(AtomicBool::new(false));
        let parker = Arc::new(Parker::new());
        let waker = {
            let (token, inside, flag, parker) =
                (token.clone(), inside.clone(), flag.clone(), parker.clone());
            loom::thread::spawn(move || {
                token.started(2);
                token.take_turn(2);
                inside.enter();
                // Relaxed: the unpark's Release, the decision and the turn order it.
                flag.store(true, Ordering::Relaxed);
                parker.unpark();
                inside.leave();
                token.exit(2);
            })
        };
        token.started(1);
        token.take_turn(1);
        inside.enter();
        inside.leave();
        token.wait(1, &parker, None);
        inside.enter();
        // Relaxed: as the store.
        assert!(
            flag.load(Ordering::Relaxed),
            "the wait ended without the wake"
        );
        assert!(!parker.is_notified(), "the wake's token was not consumed");
        inside.leave();
        token.exit(1);
        waker.join().unwrap();
    });
}

/// The holder waits while a host thread unparks its parker and posts: the unpark may land
/// before the wait's decision, between it and the post's, or after both, and the holder
/// always gets the token back with the host's write seen. (A post's decision is how a
/// host's wake reaches a token that rests; without it the wait would need the timed look.)
#[test]
fn a_host_wake_racing_the_wait_is_seen() {
    loom::model(|| {
        let token = token(1, 4, 1);
        let flag = Arc::new(AtomicBool::new(false));
        let parker = Arc::new(Parker::new());
        token.started(1);
        let host = {
            let (token, flag, parker) = (token.clone(), flag.clone(), parker.clone());
            loom::thread::spawn(move || {
                // Relaxed: the unpark's Release orders it.
                flag.store(true, Ordering::Relaxed);
                parker.unpark();
                token.post(0, None, Vec::new()).unwrap();
            })
        };
        token.take_turn(1);
        token.wait(1, &parker, None);
        // Relaxed: as the store.
        assert!(
            flag.load(Ordering::Relaxed),
            "the wait ended without the wake"
        );
        token.exit(1);
        host.join().unwrap();
    });
}

/// Three guests start in any order, each takes one turn and exits: every exit hands the
/// token on (or leaves it to the next start while the rest are starting), each gets exactly
/// one turn, never two at once, and the run takes one decision a turn.
#[test]
fn an_exit_hands_the_token_on() {
    loom::model(|| {
        let token = token(2, 4, 3);
        let inside = Arc::new(Inside::default());
        let guests: Vec<_> = (1..=3)
            .map(|id| {
                let (token, inside) = (token.clone(), inside.clone());
                loom::thread::spawn(move || {
                    token.started(id);
                    token.take_turn(id);
                    inside.enter();
                    inside.leave();
                    token.exit(id);
                })
            })
            .collect();
        guests.into_iter().for_each(|g| g.join().unwrap());
        assert_eq!(token.stats().decisions, 3);
    });
}

/// Two guests on one core with a quantum of one checkpoint: each checkpoint hands the token
/// to the other (or back, while the other is starting), the turns never overlap, and the
/// last exit leaves nothing waiting.
#[test]
fn a_quantum_end_hands_the_token_on() {
    loom::model(|| {
        let token = token(1, 1, 2);
        let inside = Arc::new(Inside::default());
        let guests: Vec<_> = (1..=2)
            .map(|id| {
                let (token, inside) = (token.clone(), inside.clone());
                loom::thread::spawn(move || {
                    token.started(id);
                    token.take_turn(id);
                    inside.enter();
                    inside.leave();
                    token.checkpoint(id);
                    inside.enter();
                    inside.leave();
                    token.exit(id);
                })
            })
            .collect();
        guests.into_iter().for_each(|g| g.join().unwrap());
    });
}
