//! Each guest thread's poll marks: the waiter lists (of hos objects or guest words) it polled
//! empty since its last wait, each with the generation it saw, and its run of quiet short
//! sleeps; its next guest sleep takes them, and `policy::polled` says what they make of it
//! (docs/design.md section 4, "Idle pollers"). The sleeping pollers of a list are
//! `pollers.rs`.
//!
//! Invariant: a thread's marks live in a thread-local that only the thread itself touches; a
//! wait, or a poll that found something, clears them, and a sleep takes them, so they only
//! ever describe what came since the thread's last wait or sleep.

use crate::policy::{polled, Marked, Polled};
use crate::pollers::PollSite;
use crate::sync::{thread_local, Arc};
use std::cell::RefCell;

/// The most objects one sleep can be linked to: wait_any's limit. A thread that polled more
/// since its last wait sleeps as if it had polled nothing.
pub(crate) const MAX_MARKS: usize = 64;

/// What a thread did since its last wait, as far as idle polling goes.
#[derive(Debug, Default)]
struct Marks {
    /// Sites it polled empty, with the generation each showed (the latest poll's).
    sites: Vec<(Arc<PollSite>, u64)>,
    /// It polled more than [`MAX_MARKS`] sites: none can be trusted to cover its work.
    overflow: bool,
    /// Svc and nn::os calls made (checkpoints), for the blind-poller rule.
    calls: u64,
    /// `calls` when its last guest sleep ended.
    calls_at_sleep: u64,
    /// Short sleeps in a row with no other call between them.
    quiet_sleeps: u32,
}

thread_local! {
    static MARKS: RefCell<Marks> = RefCell::new(Marks::default());
}

/// The calling thread polled `site` (one waiter list of an hos object) and found nothing: its
/// next short sleep, unless it waits first, is an idle poll of that object. Call it under the
/// object's lock. (A host thread's marks are never used: its sleeps are never idle polls.)
pub fn missed(site: &Arc<PollSite>) {
    let gen = site.gen();
    MARKS.with(|m| {
        let m = &mut *m.borrow_mut();
        if let Some(mark) = m.sites.iter_mut().find(|(s, _)| Arc::ptr_eq(s, site)) {
            mark.1 = gen;
        } else if m.sites.len() < MAX_MARKS {
            m.sites.push((site.clone(), gen));
        } else {
            m.overflow = true;
        }
    });
}

/// The calling thread waited, or a poll of an hos object found something: it is no idle
/// poller now.
pub fn clear() {
    MARKS.with(|m| {
        let m = &mut *m.borrow_mut();
        m.sites.clear();
        m.overflow = false;
    });
}

/// The calling thread entered an svc or an nn::os call (not a loop head's checkpoint, which
/// is no call): the blind-poller rule counts these between sleeps.
#[inline]
pub fn note_call() {
    MARKS.with(|m| m.borrow_mut().calls += 1);
}

/// What came before the calling thread's guest sleep: the objects it polled empty (taken:
/// the sleep consumes them), or how many short sleeps in a row it made with no other call
/// between them, this one included when `short`.
pub(crate) fn take(short: bool) -> (Polled, Vec<(Arc<PollSite>, u64)>) {
    MARKS.with(|m| {
        let m = &mut *m.borrow_mut();
        let sites = std::mem::take(&mut m.sites);
        let marked = Marked {
            lists: sites.len(),
            words: sites.iter().any(|(s, _)| s.is_word()),
            overflow: std::mem::take(&mut m.overflow),
            calls: m.calls - m.calls_at_sleep,
        };
        let (what, quiet) = polled(marked, short, m.quiet_sleeps);
        m.quiet_sleeps = quiet;
        (what, sites)
    })
}

/// The calling thread's guest sleep ended (the blind-poller rule counts calls from here).
pub(crate) fn slept() {
    MARKS.with(|m| {
        let m = &mut *m.borrow_mut();
        m.calls_at_sleep = m.calls;
    });
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn marks_are_taken_once_and_cleared_by_a_wait() {
        clear();
        let (a, b) = (Arc::new(PollSite::new()), Arc::new(PollSite::new()));
        missed(&a);
        missed(&b);
        missed(&a);
        let (polled, sites) = take(true);
        assert_eq!(polled, Polled::Objects);
        assert_eq!(sites.len(), 2, "a site polled twice is marked once");
        slept();
        assert_eq!(take(true).0, Polled::Quiet(1), "the marks were taken");
        slept();
        missed(&a);
        clear();
        assert_eq!(take(true).0, Polled::Quiet(2), "a wait cleared them");
        slept();
    }

    #[test]
    fn a_word_among_the_marks_makes_the_sleep_a_word_poll() {
        clear();
        let (a, w) = (Arc::new(PollSite::new()), Arc::new(PollSite::word()));
        missed(&a);
        missed(&w);
        let (polled, sites) = take(true);
        assert_eq!(polled, Polled::Words);
        assert_eq!(sites.len(), 2);
        slept();
    }

    #[test]
    fn too_many_marks_are_no_marks() {
        clear();
        let sites: Vec<_> = (0..=MAX_MARKS).map(|_| Arc::new(PollSite::new())).collect();
        sites.iter().for_each(missed);
        assert_eq!(take(true).0, Polled::Nothing);
        slept();
    }

    #[test]
    fn a_call_between_sleeps_breaks_a_quiet_run() {
        clear();
        slept();
        assert_eq!(take(true).0, Polled::Quiet(1));
        slept();
        note_call();
        assert_eq!(take(true).0, Polled::Quiet(2), "the sleep's own svc entry");
        slept();
        note_call();
        note_call();
        assert_eq!(take(true).0, Polled::Quiet(0));
        slept();
        assert_eq!(
            take(false).0,
            Polled::Quiet(0),
            "a long sleep breaks it too"
        );
        slept();
        assert_eq!(
            take(true).0,
            Polled::Quiet(1),
            "counted from the last sleep's end"
        );
        slept();
    }
}
