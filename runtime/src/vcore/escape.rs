//! The report of an escape: a waiter waited past HOS_VCORE_ESCAPE_MS and runs beside the
//! slots; the report says who held each core then, for the log line that names them.
//!
//! Invariant: the holders are read under the table lock at the instant of the escape; names
//! are not: the semaphore keeps ids only, and the caller (the runtime, which keeps its
//! threads' names) supplies them when it describes the report, after the lock is dropped.

use super::table::Table;
use crate::sys::TickScale;

/// A core's holder when a waiter escaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) id: u64,
    pub(crate) priority: u8,
    pub(crate) held_ns: u64,
}

impl Held {
    /// Each slot's holder at stamp `now` (the table's stamps map to ns by `scale`), in slot
    /// order.
    pub(crate) fn each(table: &Table, now: u64, scale: &TickScale) -> Vec<Option<Held>> {
        (0..table.cores())
            .map(|s| {
                let (who, since) = table.holder(s)?;
                Some(Held {
                    id: who.id,
                    priority: who.traits.priority,
                    held_ns: scale.span_ns(now.saturating_sub(since)),
                })
            })
            .collect()
    }
}

/// Who held each core when a waiter escaped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "an escape report is the caller's to log"]
pub struct Escape {
    held: Vec<Option<Held>>,
    escape_ns: u64,
}

impl Escape {
    pub(crate) fn new(held: Vec<Option<Held>>, escape_ns: u64) -> Self {
        Escape { held, escape_ns }
    }

    /// The escape time the waiter passed, in milliseconds.
    pub fn escape_ms(&self) -> u64 {
        self.escape_ns / 1_000_000
    }

    /// Each core's holder in order, named by `name` (a thread id to its name):
    /// `0: MainThread (priority 44, held 2.003 s); 1: free`.
    pub fn holders(&self, name: impl Fn(u64) -> String) -> String {
        self.held
            .iter()
            .enumerate()
            .map(|(s, h)| match h {
                Some(h) => format!(
                    "{s}: {} (priority {}, held {:.3} s)",
                    name(h.id),
                    h.priority,
                    h.held_ns as f64 / 1e9
                ),
                None => format!("{s}: free"),
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn holders_read_in_slot_order_with_their_names() {
        let e = Escape::new(
            vec![
                Some(Held {
                    id: 7,
                    priority: 44,
                    held_ns: 2_003_000_000,
                }),
                None,
            ],
            2_000_000_000,
        );
        assert_eq!(e.escape_ms(), 2000);
        assert_eq!(
            e.holders(|id| format!("T{id}")),
            "0: T7 (priority 44, held 2.003 s); 1: free"
        );
    }
}
