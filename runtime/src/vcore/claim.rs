//! Claims: the waker of a guest thread asks for its virtual core, so that a woken thread
//! outranks a worse holder at once, as a woken thread preempts on the console.
//!
//! Invariant: a claim exists only for a thread that gave its core back for a wait that a
//! wake ends (on an object, or an idle poll's sleep: its seat is `away`) and has not taken
//! one since; every claim is made before the
//! waker gives the thread its parker's token (`parker.rs`, the wake hook), so the thread, once
//! it runs, always finds it: it takes the claimed step as its own when its wait ends
//! ([`Vcores::acquire`]) or gives it back if the wait goes on ([`Vcores::unclaim`]) before it
//! parks again. So a claim never outlives the wait it was made in; a claimed core is held for
//! the thread only between its wake and the moment it runs (the price: while the OS does not
//! run it, nobody else runs guest code on that core).
//!
//! Why: the OS schedules guest threads without knowing their Horizon priority. A thread that
//! has to run to ask for its core (and to kick a worse holder) waits for a processor first,
//! and when the processors are busy with worse guest threads it waits until they block: a
//! BaseProcExecutor woken by its message at 6 processors started 330-360 us late (p50) while
//! job workers ran their jobs, against 20-30 us under `auto` (docs/journal.md, "Wake claims"). The
//! claim moves the ask to the waker: the table grants a free core or queues the thread and
//! kicks the holder it outranks, who gives its core up at its next checkpoint and blocks,
//! which frees the processor the woken thread needs.
//!
//! # Without the lock
//!
//! While slots are lent (`fast.rs`: nobody waits), a claim that finds an allowed slot free
//! takes its cell for the thread, as the thread's own fast take would, and the table, which
//! would grant that slot, need not be asked: the waker marks the thread's seat claiming
//! (compare-and-swap from away, so one claim a wait and none for a thread that came home),
//! writes the thread's card, takes the cell, and marks the seat granted with the slot, or away
//! again if no allowed slot is lent and free (then it claims under the lock). A thread that
//! comes home or gives its claim back waits out a claiming mark (a few stores), then takes a
//! granted slot as its own, or gives it back by its cell, or under the lock where a step took
//! the lent slots back meanwhile and so counts the thread the slot's holder. So a parked
//! hand-off's claim and take need the lock on neither side, and each moves two cache lines:
//! the thread's own (`line.rs`: its claim state, card and kick word) and the cells'.
//!
//! Only an unpark that finds the thread parked claims: a spinning thread is on a processor
//! already and asks for itself. Sleeps do not claim (their wake is the reactor's or their own
//! timer's), except an idle poll (`block_on::Wait::idle_poll`): its promotion is a wake by
//! the work it polled for, and a promoter that finds every core held by better threads
//! would otherwise wake a poller that can only queue (a second wake when a holder hands it
//! the core); claimed and deferred, it sleeps on until that hand-over. A promoted idle poll
//! that finishes its sleep on the precise path holds its claim for at most that rest.
//!
//! # Deferred wakes (HOS_VCORE_CLAIM_DEFER, on by default)
//!
//! A claim that finds no free core queues the thread, and the thread cannot run guest code
//! before a holder hands it a core. With the switch on (the default), such a claim also keeps the thread's
//! wake back: the queued wait gets the thread's waker ([`Occupant::waker`]) and the waker's
//! unpark gives no token (`parker.rs`), so the thread is woken once, by whoever ends the
//! queued wait: the holder that hands it the core (the grant, from a processor that is about
//! to go idle or to run a worse thread), a shutdown (the table's cancel), a sooner end of a
//! kick's grace, the give-back of the claim (`Locked::give_back_claim` wakes it: the thread
//! that gives a claim back is about to park on a wake it never got), or at the latest the
//! caller's timer at the time [`Vcores::claim`] returns (the wait's escape time, or sooner the
//! end of its kick's grace: [`Table::poll_at`](super::table::Table::poll_at)), so an escape
//! still happens. Why: the OS places a woken thread when it is woken; woken by the poster of
//! six messages at once, two executors can land on one processor while others idle (measured
//! on the 16-core device, BENCHMARKS.md), while a wake from a releaser lands where a
//! processor frees. A claim granted at once (a free core) wakes at once, as without the switch.

use super::{Effects, Inner, Locked, Now, Occupant, Seat, Step, Vcores};

impl Vcores {
    /// Gives `t`'s core back for a wait that a wake ends, after which wakers may claim one for
    /// it ([`Vcores::claim`]) until it takes one again (with HOS_VCORE_CLAIM off: a plain
    /// release). `true` if it held one. Call it on the thread `t` itself.
    pub fn step_away(&self, t: &impl Occupant) -> bool {
        match &self.inner {
            Some(inner) if t.seat().holds() => {
                inner.give_fast(t, inner.claims) || inner.release_for(t, inner.claims)
            }
            _ => false,
        }
    }

    /// Claims a core for `t`, which a waker is about to wake: a free allowed core is granted
    /// to it now, else it is queued by rank and kicks the worst holder it outranks. Nothing
    /// if `t` is not away in such a wait or a claim is already made. Any thread may call
    /// it; the semaphore's lock is taken only when `t` is away.
    ///
    /// `Some(until)`: the claim queued `t` and deferred its wake (HOS_VCORE_CLAIM_DEFER, module
    /// doc): the caller gives `t` no token now, and makes sure `t` is woken at `until` (a
    /// `sys::now()` value) if nothing ended the wait before.
    pub fn claim(&self, t: &impl Occupant) -> Option<u64> {
        let inner = self.inner.as_ref()?;
        if inner.claim_fast(t) {
            return None;
        }
        let seat = t.seat();
        // A hint; claimed by compare-and-swap under the lock (the thread may come home).
        if !seat.is_claimable() {
            return None;
        }
        let now = Now::default();
        inner.locked(|l, fx| {
            if !seat.try_claim() {
                return None;
            }
            let who = t.who();
            let step = l.table.acquire(who, &now, fx);
            l.claims.push((who.id, step));
            let Step::Queued(key) = step else {
                return None;
            };
            let waker = t.waker().filter(|_| inner.defer)?;
            l.table.wake_with(key, waker);
            Some(l.table.poll_at(key))
        })
    }

    /// `t`'s wait goes on after a wake that did not end it: a core claimed for it meanwhile
    /// goes back (to the best waiter), and it stays away. One load when nothing was claimed.
    /// Call it on the thread `t` itself.
    pub fn unclaim(&self, t: &impl Occupant) {
        let Some(inner) = &self.inner else { return };
        let seat = t.seat();
        if let Some(slot) = seat.granted() {
            inner.give_back_granted(t, slot, true);
            return;
        }
        // A hint; `take_claim` rechecks under the lock.
        if !seat.is_claimed() {
            return;
        }
        let id = t.id();
        inner.locked(|l, fx| l.give_back_claim(seat, id, true, fx));
    }
}

impl Inner {
    /// Claims a lent free slot for `t` without the lock, as its own fast take would
    /// (`fast.rs`): nobody waits while slots are lent, so the table would grant it too. `true`
    /// if the claim is decided: a slot taken for `t` (its seat says which), or `t` not away;
    /// `false`: claim under the lock (no allowed slot lent and free).
    ///
    /// The seat's compare-and-swap comes first, with no look before it, and the take's first
    /// try is a swap too (`Cells::try_take_first`): the thread's line and the cells are the
    /// thread's last (it gave its slot back and stepped away), so the claim fetches each once.
    fn claim_fast(&self, t: &impl Occupant) -> bool {
        let seat = t.seat();
        if !seat.begin_claim() {
            return true;
        }
        let slot = self.take_lent(t.who(), seat.line());
        seat.end_claim(slot);
        slot.is_some()
    }

    /// Gives back lent slot `slot`, which a waker took for `t` without the lock (`t`'s seat
    /// said so), and leaves `t` away or not: `t` takes the slot as its own, then gives it back
    /// as any holder does, by its cell, or under the lock where the table took the slot back
    /// meanwhile (and so counts `t` its holder).
    pub(super) fn give_back_granted(&self, t: &impl Occupant, slot: usize, away: bool) {
        t.seat().take(slot);
        if !self.give_fast(t, away) {
            self.release_for(t, away);
        }
    }

    /// The first step of `t`'s acquire, under the lock: the claim a waker made for it, else
    /// a fresh one; `t` came home before (`Seat::come_home`), and is home after. A claimed
    /// core taken from `t` after a kick's grace before `t` took it (`t` ran nothing on it) is
    /// asked for again, as at a checkpoint.
    pub(super) fn acquire_for(&self, t: &impl Occupant, now: &Now) -> Step {
        let line = t.seat().line();
        self.locked(|l, fx| {
            let seat = t.seat();
            let who = t.who();
            let claim = l.take_claim(seat, who.id, false);
            let step = match claim {
                Some(Step::Held { .. }) if l.table.is_revoked(who.id) => {
                    l.table.checkpoint(who.id, now, fx)
                }
                Some(step) => step,
                None => l.table.acquire(who, now, fx),
            };
            l.seat(line, None, &step);
            step
        })
    }

    /// Gives `t`'s core back, and marks it away (`away`: it waits on an object and will take
    /// one again) or not. `true` if it held one. A claim left from an earlier wait cannot
    /// exist (module invariant); one is given back all the same.
    pub(super) fn release_for(&self, t: &impl Occupant, away: bool) -> bool {
        let (line, before) = (t.seat().line(), t.seat().slot());
        let id = t.id();
        let held = self.locked(|l, fx| {
            let claimed = l.give_back_claim(t.seat(), id, away, fx);
            debug_assert!(
                !claimed,
                "thread {id} released its core with a claim pending"
            );
            let held = l.table.release(id, Now::default(), fx);
            l.seat(line, before, &Step::Cancelled);
            t.seat().set_away(away);
            held
        });
        t.seat().settle(Step::Cancelled);
        held
    }

    /// `t` leaves without a core while away (its wait unwound), with a claim pending
    /// ([`Home::Claimed`](super::seat::Home)): the claim goes back and `t` is home.
    pub(super) fn forget(&self, t: &impl Occupant) {
        let id = t.id();
        self.locked(|l, fx| l.give_back_claim(t.seat(), id, false, fx));
    }
}

impl Locked {
    /// Gives thread `id`'s claim back, if a waker made one: a claimed core to the best
    /// waiter, a claimed place in the queue to nobody; a deferred wake (the queued wait holds
    /// the thread's waker, module doc) is given now; the thread is then `away` or home.
    /// `true` if there was one.
    fn give_back_claim(&mut self, seat: &Seat, id: u64, away: bool, fx: &mut Effects) -> bool {
        let now = Now::default();
        match self.take_claim(seat, id, away) {
            Some(Step::Held { .. }) => {
                self.table.release(id, &now, fx);
            }
            Some(Step::Queued(key)) => {
                fx.wake.extend(self.table.take_waker(key));
                self.table.abandon(key, &now, fx);
            }
            Some(_) => {}
            None => return false,
        }
        true
    }

    /// Takes thread `id`'s claim out of the list, if a waker made one, and marks the thread
    /// `away` (its wait goes on) or home (it takes a core, or leaves). One store from claimed
    /// to where the thread goes: a moment away on the way home would let a waker begin a claim
    /// without the lock (`Seat::begin_claim`), which the store home then overwrote, leaving
    /// the claim's slot or place in the queue to nobody (a loom model found it).
    fn take_claim(&mut self, seat: &Seat, id: u64, away: bool) -> Option<Step> {
        // Exact under the lock (Seat invariant).
        if !seat.is_claimed() {
            return None;
        }
        seat.set_away(away);
        let i = self.claims.iter().position(|&(who, _)| who == id);
        debug_assert!(i.is_some(), "thread {id} is marked claimed without a claim");
        i.map(|i| self.claims.swap_remove(i).1)
    }
}
