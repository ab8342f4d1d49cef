//! The sleeping pollers of guest words: for each word that a guest thread polled with a
//! zero-timeout WaitForAddress and found calling for a wait, the runtime's [`PollSite`], which
//! SignalToAddress readies (docs/design.md section 4, "Idle pollers").
//!
//! Invariant: a word's site is looked up, made, readied and swept only under the arbiter's
//! lock, so a poll's generation and a signal's readiness of one word are ordered as the table
//! orders the poll and the signal. A site that only the map holds (no thread's mark, no
//! sleeping poller's sleep) is swept once the map reaches [`SWEEP_AT`] words, and made afresh
//! at the word's next poll.

use super::hasher::WordHash;
use hos_runtime::internal::{poll_missed, promotions, PollSite};
use std::collections::HashMap;
use std::sync::Arc;

/// The words the map keeps before it sweeps the sites nothing else holds (a game's words
/// polled at once are far fewer).
const SWEEP_AT: usize = 1024;

/// The sites of the polled words, by address.
#[derive(Debug, Default)]
pub(crate) struct WordPollers {
    sites: HashMap<usize, Arc<PollSite>, WordHash>,
}

impl WordPollers {
    /// The calling thread polled the word at `addr` and found it calling for a wait: its next
    /// short sleep, unless it waits first, is an idle poll of the word.
    pub(crate) fn missed(&mut self, addr: usize) {
        if self.sites.len() >= SWEEP_AT && !self.sites.contains_key(&addr) {
            // A count of 1 is the map's own: nothing else can reach the site but through the
            // map, under the lock held here.
            self.sites.retain(|_, s| Arc::strong_count(s) > 1);
        }
        let site = self
            .sites
            .entry(addr)
            .or_insert_with(|| Arc::new(PollSite::word()));
        poll_missed(site);
    }

    /// A signal to the word at `addr` told `told` waiters (`usize::MAX`: all) and woke `woken`
    /// of them: the site and the count to promote once the lock is dropped, if any poller
    /// sleeps on the word.
    pub(crate) fn ready(
        &self,
        addr: usize,
        told: usize,
        woken: usize,
    ) -> Option<(Arc<PollSite>, usize)> {
        let site = self.sites.get(&addr)?;
        let n = promotions(told, woken);
        site.ready(n).then(|| (site.clone(), n))
    }

    /// Words with a site now.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.sites.len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use hos_runtime::internal::poll_found;

    #[test]
    fn a_word_nothing_holds_is_swept_past_the_bound() {
        let mut w = WordPollers::default();
        for addr in 0..SWEEP_AT {
            w.missed(addr * 4);
        }
        assert_eq!(w.len(), SWEEP_AT, "no sweep below the bound");
        // The marks of this thread held some of them; now only the map holds any.
        poll_found();
        w.missed(4);
        assert_eq!(w.len(), SWEEP_AT, "a known word sweeps nothing");
        w.missed(SWEEP_AT * 4);
        assert_eq!(
            w.len(),
            1 + 1,
            "the mark of word 4 kept it, the new word came"
        );
        poll_found();
    }

    #[test]
    fn a_signal_readies_only_a_polled_word_for_what_no_waiter_took() {
        let mut w = WordPollers::default();
        assert!(w.ready(8, 1, 0).is_none(), "nobody polled it");
        w.missed(8);
        // No sleeper is linked: the readiness is counted, nobody is to promote.
        assert!(w.ready(8, 1, 0).is_none());
        assert!(w.ready(8, 2, 2).is_none());
        poll_found();
    }
}
