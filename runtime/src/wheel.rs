//! INTERFACE PLACEHOLDER: replaced by the hierarchical wheel (see the wheel helper's task).
//! The API below is the contract the reactor uses.

use std::collections::BTreeMap;

/// A stable handle to one pending entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key(u64);

/// Timer wheel over nanosecond ticks.
pub struct Wheel<T> {
    map: BTreeMap<(u64, u64), T>,
    seq: u64,
    elapsed: u64,
}

impl<T> Default for Wheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Wheel<T> {
    /// An empty wheel at tick 0.
    pub fn new() -> Self {
        Wheel {
            map: BTreeMap::new(),
            seq: 0,
            elapsed: 0,
        }
    }
    /// Inserts `value` to fire at tick `deadline`.
    pub fn insert(&mut self, deadline: u64, value: T) -> Key {
        self.seq += 1;
        let d = deadline.max(self.elapsed);
        self.map.insert((d, self.seq), value);
        Key(self.seq)
    }
    /// Removes a pending entry.
    pub fn remove(&mut self, key: Key) -> Option<T> {
        let k = *self.map.keys().find(|k| k.1 == key.0)?;
        self.map.remove(&k)
    }
    /// Earliest pending deadline.
    pub fn next_deadline(&self) -> Option<u64> {
        self.map.keys().next().map(|k| k.0)
    }
    /// Moves to `now`, pushing every entry with deadline <= now into `out`.
    pub fn poll(&mut self, now: u64, out: &mut Vec<T>) {
        self.elapsed = self.elapsed.max(now);
        while let Some(e) = self.map.first_entry() {
            if e.key().0 > now {
                break;
            }
            out.push(e.remove());
        }
    }
    /// Pending entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }
    /// No entry pending.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// The tick the wheel has been polled to.
    pub fn elapsed(&self) -> u64 {
        self.elapsed
    }
}
