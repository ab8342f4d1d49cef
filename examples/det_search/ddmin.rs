//! Delta debugging's ddmin (Zeller and Hildebrandt, "Simplifying and Isolating
//! Failure-Inducing Input", TSE 2002), as Choi and Zeller apply it to thread schedules
//! ("Isolating Failure-Inducing Thread Schedules", ISSTA 2002): the smallest subset of a
//! failing set that still fails, found by testing its chunks and their complements at finer
//! and finer granularity, within a budget of tests.
//!
//! Invariant: the subset returned is one that `fails` said fails (the whole set, which the
//! caller has seen fail, if no smaller one did), `fails` is called at most `budget` times and
//! never twice for one subset, and when the budget did not run out the subset is 1-minimal:
//! removing any one of its items makes `fails` say no.

use std::collections::BTreeMap;

/// What ddmin found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Minimised<T> {
    /// The smallest failing subset found, in the items' order.
    pub(crate) items: Vec<T>,
    /// The tests it took.
    pub(crate) tests: usize,
    /// Whether it is 1-minimal (false: the budget ran out first).
    pub(crate) minimal: bool,
}

/// The subset of `items` (which fail) that ddmin finds, asking `fails` at most `budget` times.
pub(crate) fn ddmin<T: Clone + Ord>(
    items: Vec<T>,
    budget: usize,
    mut fails: impl FnMut(&[T]) -> bool,
) -> Minimised<T> {
    let mut seen: BTreeMap<Vec<T>, bool> = BTreeMap::new();
    let mut tests = 0;
    // `None`: the budget ran out before `set` could be tested.
    let mut test = |set: Vec<T>| -> Option<bool> {
        if let Some(&f) = seen.get(&set) {
            return Some(f);
        }
        if tests == budget {
            return None;
        }
        tests += 1;
        let f = fails(&set);
        seen.insert(set, f);
        Some(f)
    };
    let mut c = items;
    let mut n = 2;
    'granularity: while c.len() >= 2 {
        let chunks = split(&c, n);
        // Chunks first, then (where they differ from the chunks) their complements.
        let complements = (n > 2).then(|| {
            (0..chunks.len()).map(|i| {
                let rest: Vec<T> = (0..chunks.len())
                    .filter(|&j| j != i)
                    .flat_map(|j| chunks[j].iter().cloned())
                    .collect();
                (rest, n - 1)
            })
        });
        let tries = chunks
            .iter()
            .map(|ch| (ch.clone(), 2))
            .chain(complements.into_iter().flatten());
        for (subset, next_n) in tries {
            match test(subset.clone()) {
                None => {
                    return Minimised {
                        items: c,
                        tests,
                        minimal: false,
                    }
                }
                Some(true) => {
                    c = subset;
                    n = next_n.max(2);
                    continue 'granularity;
                }
                Some(false) => {}
            }
        }
        if n >= c.len() {
            break;
        }
        n = (2 * n).min(c.len());
    }
    Minimised {
        items: c,
        tests,
        minimal: true,
    }
}

/// `c` in `n` chunks as even as can be, in order.
fn split<T: Clone>(c: &[T], n: usize) -> Vec<Vec<T>> {
    let (size, extra) = (c.len() / n, c.len() % n);
    let mut at = 0;
    (0..n)
        .map(|i| {
            let len = size + usize::from(i < extra);
            let chunk = c[at..at + len].to_vec();
            at += len;
            chunk
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_finds_the_two_that_fail_together() {
        let m = ddmin((0..40).collect(), 1_000, |s| {
            s.contains(&3) && s.contains(&29)
        });
        assert_eq!(m.items, [3, 29]);
        assert!(m.minimal && m.tests < 60, "{m:?}");
    }

    #[test]
    fn what_it_returns_is_1_minimal() {
        // Fails with at least three of the multiples of 5: many answers, each 1-minimal.
        let fails = |s: &[u32]| s.iter().filter(|&&x| x % 5 == 0).count() >= 3;
        let m = ddmin((0..30).collect(), 1_000, fails);
        assert!(fails(&m.items) && m.minimal, "{m:?}");
        for i in 0..m.items.len() {
            let mut less = m.items.clone();
            less.remove(i);
            assert!(!fails(&less), "{less:?} still fails");
        }
        assert_eq!(m.items.len(), 3);
    }

    #[test]
    fn the_budget_bounds_the_tests_and_the_answer_still_fails() {
        let mut calls = 0;
        let m = ddmin((0..64).collect(), 5, |s| {
            calls += 1;
            s.contains(&7) && s.contains(&50)
        });
        assert_eq!((calls, m.tests, m.minimal), (5, 5, false));
        assert!(m.items.contains(&7) && m.items.contains(&50), "{m:?}");
        assert_eq!(ddmin(vec![1], 0, |_| true).items, [1]);
    }

    #[test]
    fn split_keeps_order_and_evens_sizes() {
        assert_eq!(split(&[1, 2, 3, 4, 5], 2), [vec![1, 2, 3], vec![4, 5]]);
        assert_eq!(split(&[1, 2, 3], 3), [vec![1], vec![2], vec![3]]);
    }
}
