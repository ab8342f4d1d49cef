//! A hierarchical timer wheel over nanosecond ticks, after Varghese and Lauck, "Hashed and
//! Hierarchical Timing Wheels" (SOSP 1987).
//!
//! # Invariant
//!
//! Every pending entry with deadline `d` is linked into level `L = level_for(elapsed, w)`, slot
//! `slot_for(w, L)`, where `w = max(d, elapsed)`; `elapsed` never moves past the start of an
//! occupied slot without emptying that slot first. The entry keeps its true `d`: nothing is rounded,
//! so [`Wheel::poll`]`(now)` never returns an entry whose deadline is later than `now`.
//!
//! `level_for` picks the level that holds the highest bit in which `w` differs from `elapsed`.
//! So every entry of level `L` agrees with `elapsed` on all bits above level `L` and is greater in
//! level `L`'s 6 bits, `w >> 6L > elapsed >> 6L`; every entry of a lower level agrees with
//! `elapsed` on all bits from level `L` up, `w >> 6L == elapsed >> 6L`. Hence **a lower level always
//! holds earlier deadlines than a higher one**, and the earliest deadline sits in the first occupied
//! slot, counting from `elapsed`, of the lowest occupied level. A level-0 slot ahead of `elapsed`
//! holds exactly one deadline, its start; any other slot is scanned for its minimum.
//!
//! # Levels
//!
//! 64 slots a level, 6 bits of the tick each; 11 levels cover every `u64` (66 bits, of which the
//! top level uses 4: 16 slots).
//!
//! | level | slot span  | level span                         |
//! | ----- | ---------- | ---------------------------------- |
//! | 0     | 1 ns       | 64 ns                              |
//! | 1     | 64 ns      | 4.1 us                             |
//! | 2     | 4.1 us     | 262 us                             |
//! | 3     | 262 us     | 16.8 ms                            |
//! | 4     | 16.8 ms    | 1.07 s                             |
//! | 5     | 1.07 s     | 68.7 s                             |
//! | 6     | 68.7 s     | 73.3 min                           |
//! | 7     | 73.3 min   | 3.26 days                          |
//! | 8     | 3.26 days  | 208 days                           |
//! | 9     | 208 days   | 36.5 years                         |
//! | 10    | 36.5 years | 585 years (2^64 ns; 16 slots used) |
//!
//! When `elapsed` reaches the start of a slot above level 0, its entries are cascaded: each fires
//! if its deadline has passed, or is re-linked by `level_for` into a lower level.
//!
//! # Ground rules
//!
//! - A plain data structure: no threads, no clock, no `unsafe`. The owner calls it through
//!   `&mut self` (the reactor, under its own lock); there is no interior mutability.
//! - A tick is one nanosecond of the caller's monotonic clock. Converting an `Instant` or a
//!   `Duration` to ticks, rounding up, is the caller's business, done in one place.
//! - `elapsed` only moves forward: a `poll` with `now < elapsed` does nothing.
//! - A [`WheelKey`] is a slab index plus a generation taken from a wrapping `u32` counter: a stale key
//!   could only alias a new entry at the same index after 2^32 further inserts.

use slab::Slab;
use std::num::NonZeroU32;

/// Bits of the tick a level resolves.
const SLOT_BITS: u32 = 6;
/// Slots per level.
const SLOTS: usize = 1 << SLOT_BITS;
const SLOT_MASK: u64 = SLOTS as u64 - 1;
/// `ceil(64 / 6)`: enough levels for every `u64` deadline.
const LEVELS: usize = 11;

/// A handle to one entry of a [`Wheel`], returned by [`Wheel::insert`].
///
/// Once the entry has fired or been removed the key is stale: [`Wheel::remove`] returns `None`
/// for it, even when the slab index has been reused by a newer entry.
///
/// ```
/// use hos_runtime::internal::Wheel;
///
/// let mut wheel = Wheel::new();
/// let key = wheel.insert(10, "a");
/// assert_eq!(wheel.remove(key), Some("a"));
/// let _other = wheel.insert(10, "b"); // reuses the slab index
/// assert_eq!(wheel.remove(key), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WheelKey {
    index: usize,
    generation: u32,
}

/// A slab index in 4 bytes, stored as `index + 1` so that `Option<Link>` is 4 bytes too: small
/// entries keep more of a large wheel in cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Link(NonZeroU32);

impl Link {
    fn new(index: usize) -> Link {
        let raw = u32::try_from(index + 1).ok().and_then(NonZeroU32::new);
        Link(raw.expect("a wheel holds at most u32::MAX entries"))
    }

    fn index(self) -> usize {
        (self.0.get() - 1) as usize
    }
}

struct Entry<T> {
    /// The true deadline, never rounded.
    deadline: u64,
    value: T,
    generation: u32,
    prev: Option<Link>,
    next: Option<Link>,
    /// Where the entry is linked; `(level, slot)` of the list that holds it.
    level: u8,
    slot: u8,
}

#[derive(Clone, Copy)]
struct Level {
    /// # Invariant
    /// Bit `s` is set iff `heads[s]` is `Some`, and no bit below `slot_for(elapsed, level)` is set.
    occupied: u64,
    /// The head of each slot's doubly linked list of slab indices.
    heads: [Option<Link>; SLOTS],
}

impl Level {
    const EMPTY: Level = Level {
        occupied: 0,
        heads: [None; SLOTS],
    };

    /// The first occupied slot at or after `elapsed`'s slot in this level.
    fn next_slot(&self, elapsed: u64, level: usize) -> Option<usize> {
        let current = slot_for(elapsed, level);
        debug_assert!(
            self.occupied & !(u64::MAX << current) == 0,
            "level {level}: occupied {:#018x} has a slot behind elapsed {elapsed} (slot {current})",
            self.occupied
        );
        let ahead = self.occupied & (u64::MAX << current);
        (ahead != 0).then(|| ahead.trailing_zeros() as usize)
    }
}

/// The level that holds tick `when` seen from `elapsed`: the level of the highest bit in which they
/// differ (level 0 when they are equal).
fn level_for(elapsed: u64, when: u64) -> usize {
    debug_assert!(when >= elapsed, "when {when} is before elapsed {elapsed}");
    let significant = 63 - ((elapsed ^ when) | SLOT_MASK).leading_zeros();
    (significant / SLOT_BITS) as usize
}

/// The slot of tick `when` in `level`.
fn slot_for(when: u64, level: usize) -> usize {
    ((when >> (SLOT_BITS as usize * level)) & SLOT_MASK) as usize
}

/// The first tick of `slot` of `level`, in the level span that contains `elapsed`.
fn slot_start(elapsed: u64, level: usize, slot: usize) -> u64 {
    let shift = SLOT_BITS * level as u32;
    debug_assert!(
        slot < SLOTS && (level < LEVELS - 1 || slot < 16),
        "level {level} slot {slot}"
    );
    let above = u64::MAX.checked_shl(shift + SLOT_BITS).unwrap_or(0);
    (elapsed & above) | ((slot as u64) << shift)
}

/// A hierarchical timer wheel: O(1) insert and remove, exact [`next_deadline`](Wheel::next_deadline),
/// and a [`poll`](Wheel::poll) that jumps from occupied slot to occupied slot.
///
/// The module doc of `wheel.rs` gives the invariant and the levels.
///
/// ```
/// use hos_runtime::internal::Wheel;
///
/// let mut wheel = Wheel::new();
/// wheel.insert(1_500, "late");
/// wheel.insert(1_000, "early");
/// assert_eq!(wheel.next_deadline(), Some(1_000));
///
/// let mut fired = Vec::new();
/// wheel.poll(999, &mut fired);
/// assert!(fired.is_empty());
/// wheel.poll(2_000, &mut fired);
/// fired.sort();
/// assert_eq!(fired, ["early", "late"]);
/// assert!(wheel.is_empty());
/// ```
pub struct Wheel<T> {
    entries: Slab<Entry<T>>,
    levels: Box<[Level; LEVELS]>,
    /// # Invariant
    /// Every occupied slot starts at or after `elapsed` (see the module documentation).
    elapsed: u64,
    /// The generation the next inserted entry gets.
    generation: u32,
}

impl<T> std::fmt::Debug for Wheel<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wheel")
            .field("len", &self.len())
            .field("elapsed", &self.elapsed)
            .field("next_deadline", &self.next_deadline())
            .finish_non_exhaustive()
    }
}

impl<T> Default for Wheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Wheel<T> {
    /// An empty wheel with `elapsed` 0.
    ///
    /// ```
    /// let wheel = hos_runtime::internal::Wheel::<()>::new();
    /// assert_eq!((wheel.len(), wheel.elapsed(), wheel.next_deadline()), (0, 0, None));
    /// ```
    pub fn new() -> Self {
        Wheel {
            entries: Slab::new(),
            levels: Box::new([Level::EMPTY; LEVELS]),
            elapsed: 0,
            generation: 0,
        }
    }

    /// Inserts `value` to fire once the wheel is polled at or past `deadline`, in O(1).
    ///
    /// A deadline at or before [`elapsed`](Wheel::elapsed) fires on the next `poll(now)` with
    /// `now >= elapsed`.
    ///
    /// # Panics
    ///
    /// When the wheel already holds `u32::MAX` entries (links are 4-byte slab indices).
    ///
    /// ```
    /// use hos_runtime::internal::Wheel;
    ///
    /// let mut wheel = Wheel::new();
    /// wheel.poll(100, &mut Vec::new());
    /// wheel.insert(50, "overdue");
    /// assert_eq!(wheel.next_deadline(), Some(50));
    /// let mut fired = Vec::new();
    /// wheel.poll(100, &mut fired);
    /// assert_eq!(fired, ["overdue"]);
    /// ```
    pub fn insert(&mut self, deadline: u64, value: T) -> WheelKey {
        // Fail before any change when the slab index would not fit a `Link`.
        Link::new(self.entries.vacant_key());
        let generation = self.generation;
        self.generation = generation.wrapping_add(1);
        let index = self.entries.insert(Entry {
            deadline,
            value,
            generation,
            prev: None,
            next: None,
            level: 0,
            slot: 0,
        });
        self.link(index, deadline.max(self.elapsed));
        WheelKey { index, generation }
    }

    /// Removes the entry of `key` in O(1) and returns its value, or `None` when the key is stale
    /// (its entry already fired or was removed).
    ///
    /// ```
    /// use hos_runtime::internal::Wheel;
    ///
    /// let mut wheel = Wheel::new();
    /// let key = wheel.insert(5, 'x');
    /// assert_eq!(wheel.remove(key), Some('x'));
    /// assert_eq!(wheel.remove(key), None);
    /// ```
    pub fn remove(&mut self, key: WheelKey) -> Option<T> {
        if self.entries.get(key.index)?.generation != key.generation {
            return None;
        }
        self.unlink(key.index);
        Some(self.entries.remove(key.index).value)
    }

    /// The earliest pending deadline, exactly; `None` when the wheel is empty.
    ///
    /// It may be before [`elapsed`](Wheel::elapsed) when an overdue entry was inserted.
    ///
    /// # Cost
    ///
    /// O(levels) when the earliest entry sits in a level-0 slot ahead of `elapsed`; otherwise a
    /// scan of that one slot's list (the entries that share the earliest entry's slot).
    ///
    /// ```
    /// use hos_runtime::internal::Wheel;
    ///
    /// let mut wheel = Wheel::new();
    /// wheel.insert(10_000_007, ());
    /// wheel.insert(10_000_003, ());
    /// assert_eq!(wheel.next_deadline(), Some(10_000_003));
    /// ```
    pub fn next_deadline(&self) -> Option<u64> {
        let (level, slot, start) = self.next_occupied()?;
        if level == 0 && start > self.elapsed {
            let head = self.levels[0].heads[slot]
                .expect("occupied slot has a head")
                .index();
            debug_assert_eq!(
                self.entries[head].deadline, start,
                "level-0 slot {slot} holds another deadline"
            );
            return Some(start);
        }
        let mut cursor = self.levels[level].heads[slot];
        let mut earliest = u64::MAX;
        while let Some(link) = cursor {
            let entry = &self.entries[link.index()];
            earliest = earliest.min(entry.deadline);
            cursor = entry.next;
        }
        debug_assert!(
            level == 0 || earliest >= start,
            "level {level} slot {slot}: deadline {earliest} before the slot start {start}"
        );
        Some(earliest)
    }

    /// Pushes every entry whose deadline is at or before `now` onto `out` (in no particular order),
    /// then sets [`elapsed`](Wheel::elapsed) to `max(elapsed, now)`.
    ///
    /// It visits only occupied slots, through the occupied bit fields, so a jump far ahead costs
    /// the slots and cascades it passes over, not the ticks. `now < elapsed` is a no-op.
    ///
    /// ```
    /// use hos_runtime::internal::Wheel;
    ///
    /// let mut wheel = Wheel::new();
    /// wheel.insert(u64::MAX, "end of time");
    /// let mut fired = Vec::new();
    /// wheel.poll(u64::MAX - 1, &mut fired);
    /// assert!(fired.is_empty());
    /// wheel.poll(u64::MAX, &mut fired);
    /// assert_eq!(fired, ["end of time"]);
    /// ```
    pub fn poll(&mut self, now: u64, out: &mut Vec<T>) {
        if now < self.elapsed {
            return;
        }
        while let Some((level, slot, start)) = self.next_occupied() {
            if start > now {
                break;
            }
            debug_assert!(
                start >= self.elapsed,
                "slot start {start} behind elapsed {}",
                self.elapsed
            );
            self.elapsed = start;
            let mut cursor = self.levels[level].heads[slot].take();
            self.levels[level].occupied &= !(1 << slot);
            while let Some(link) = cursor {
                let index = link.index();
                let entry = &self.entries[index];
                cursor = entry.next;
                let deadline = entry.deadline;
                if deadline <= now {
                    out.push(self.entries.remove(index).value);
                } else {
                    self.link(index, deadline);
                    debug_assert!(
                        usize::from(self.entries[index].level) < level,
                        "deadline {deadline} cascaded from level {level} to level {} (elapsed {start})",
                        self.entries[index].level
                    );
                }
            }
        }
        self.elapsed = now;
    }

    /// The number of pending entries.
    ///
    /// ```
    /// let mut wheel = hos_runtime::internal::Wheel::new();
    /// wheel.insert(1, ());
    /// assert_eq!(wheel.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is pending.
    ///
    /// ```
    /// assert!(hos_runtime::internal::Wheel::<()>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tick the wheel has been polled to: the largest `now` passed to [`poll`](Wheel::poll).
    ///
    /// ```
    /// let mut wheel = hos_runtime::internal::Wheel::<()>::new();
    /// wheel.poll(42, &mut Vec::new());
    /// wheel.poll(7, &mut Vec::new());
    /// assert_eq!(wheel.elapsed(), 42);
    /// ```
    pub fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// `(level, slot, slot start)` of the earliest occupied slot: the first one of the lowest
    /// occupied level.
    fn next_occupied(&self) -> Option<(usize, usize, u64)> {
        self.levels.iter().enumerate().find_map(|(level, lv)| {
            let slot = lv.next_slot(self.elapsed, level)?;
            Some((level, slot, slot_start(self.elapsed, level, slot)))
        })
    }

    /// Links entry `index` at the head of the slot of tick `when` (`when >= elapsed`).
    fn link(&mut self, index: usize, when: u64) {
        let level = level_for(self.elapsed, when);
        let slot = slot_for(when, level);
        let lv = &mut self.levels[level];
        let head = lv.heads[slot].replace(Link::new(index));
        lv.occupied |= 1 << slot;
        if let Some(head) = head {
            self.entries[head.index()].prev = Some(Link::new(index));
        }
        let entry = &mut self.entries[index];
        entry.prev = None;
        entry.next = head;
        entry.level = level as u8;
        entry.slot = slot as u8;
    }

    /// Unlinks entry `index` from its slot's list, clearing the occupied bit of an emptied slot.
    fn unlink(&mut self, index: usize) {
        let entry = &self.entries[index];
        let (prev, next) = (entry.prev, entry.next);
        let (level, slot) = (usize::from(entry.level), usize::from(entry.slot));
        match prev {
            Some(prev) => self.entries[prev.index()].next = next,
            None => {
                let lv = &mut self.levels[level];
                debug_assert_eq!(
                    lv.heads[slot],
                    Some(Link::new(index)),
                    "entry {index} is not the head of {level}/{slot}"
                );
                lv.heads[slot] = next;
                if next.is_none() {
                    lv.occupied &= !(1 << slot);
                }
            }
        }
        if let Some(next) = next {
            self.entries[next.index()].prev = prev;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Below bit `b`, all ones.
    fn low(b: u32) -> u64 {
        (1u64 << b) - 1
    }

    const BASES: [u64; 6] = [
        0,
        u64::MAX,
        0xAAAA_AAAA_AAAA_AAAA,
        0x5555_5555_5555_5555,
        0x0123_4567_89AB_CDEF,
        1 << 40,
    ];

    #[test]
    fn level_for_every_bit() {
        for base in BASES {
            assert_eq!(level_for(base, base), 0, "base {base:#x}");
            for b in 0..64u32 {
                let expected = (b / SLOT_BITS) as usize;
                let elapsed = base & !(1 << b);
                // The smallest and the largest tick whose highest bit differing from elapsed is b.
                let smallest = (elapsed | 1 << b) & !low(b);
                let largest = elapsed | 1 << b | low(b);
                assert_eq!(
                    level_for(elapsed, smallest),
                    expected,
                    "elapsed {elapsed:#x} bit {b}"
                );
                assert_eq!(
                    level_for(elapsed, largest),
                    expected,
                    "elapsed {elapsed:#x} bit {b}"
                );
            }
        }
    }

    #[test]
    fn level_for_boundaries() {
        for level in 1..LEVELS {
            let first = 1u64 << (SLOT_BITS * level as u32);
            assert_eq!(level_for(0, first - 1), level - 1, "tick {first} - 1");
            assert_eq!(level_for(0, first), level, "tick {first}");
            assert_eq!(level_for(first - 1, first), level, "from {first} - 1");
            assert_eq!(level_for(first, first + 1), 0, "from {first}");
        }
        assert_eq!(level_for(0, u64::MAX), LEVELS - 1);
        assert_eq!(level_for(u64::MAX - 1, u64::MAX), 0);
        assert_eq!(level_for(u64::MAX, u64::MAX), 0);
    }

    #[test]
    fn slot_for_every_slot() {
        for level in 0..LEVELS {
            let shift = SLOT_BITS * level as u32;
            let slots = if level == LEVELS - 1 { 16 } else { SLOTS };
            for slot in 0..slots {
                for base in BASES {
                    let above = u64::MAX.checked_shl(shift + SLOT_BITS).unwrap_or(0);
                    let tick = (base & (above | low(shift))) | (slot as u64) << shift;
                    assert_eq!(slot_for(tick, level), slot, "tick {tick:#x} level {level}");
                    let start = slot_start(tick, level, slot);
                    assert_eq!(
                        start,
                        tick & !low(shift),
                        "start of tick {tick:#x} level {level}"
                    );
                    assert!(
                        level_for(start, tick) < level || tick == start,
                        "tick {tick:#x}"
                    );
                }
            }
        }
    }

    impl<T> Wheel<T> {
        /// Walks every list and checks the invariant of the module documentation.
        fn check(&self) {
            let mut seen = 0;
            for (level, lv) in self.levels.iter().enumerate() {
                for slot in 0..SLOTS {
                    assert_eq!(
                        lv.occupied >> slot & 1 == 1,
                        lv.heads[slot].is_some(),
                        "{level}/{slot}"
                    );
                    let mut prev = None;
                    let mut cursor = lv.heads[slot];
                    while let Some(link) = cursor {
                        let e = &self.entries[link.index()];
                        let when = e.deadline.max(self.elapsed);
                        assert_eq!(
                            (e.prev, usize::from(e.level), usize::from(e.slot)),
                            (prev, level, slot)
                        );
                        assert_eq!(
                            level_for(self.elapsed, when),
                            level,
                            "deadline {} elapsed {}",
                            e.deadline,
                            self.elapsed
                        );
                        assert_eq!(slot_for(when, level), slot, "deadline {}", e.deadline);
                        seen += 1;
                        prev = cursor;
                        cursor = e.next;
                    }
                }
            }
            assert_eq!(seen, self.len());
        }
    }

    fn poll(wheel: &mut Wheel<u64>, now: u64) -> Vec<u64> {
        let mut out = Vec::new();
        wheel.poll(now, &mut out);
        wheel.check();
        out.sort_unstable();
        out
    }

    #[test]
    fn fires_exactly_at_deadline() {
        let mut wheel = Wheel::new();
        let deadlines = [
            0,
            1,
            63,
            64,
            65,
            4095,
            4096,
            1_000_000,
            1 << 30,
            (1 << 36) + 17,
            1 << 63,
            u64::MAX,
        ];
        for d in deadlines {
            wheel.insert(d, d);
        }
        wheel.check();
        assert_eq!(poll(&mut wheel, 0), [0]);
        for d in &deadlines[1..] {
            assert_eq!(wheel.next_deadline(), Some(*d));
            assert_eq!(poll(&mut wheel, d - 1), [], "early before {d}");
            assert_eq!(poll(&mut wheel, *d), [*d]);
        }
        assert!(wheel.is_empty());
        assert_eq!((wheel.next_deadline(), wheel.elapsed()), (None, u64::MAX));
    }

    #[test]
    fn overdue_fires_on_next_poll() {
        let mut wheel = Wheel::new();
        assert_eq!(poll(&mut wheel, 1_000), []);
        wheel.insert(3, 3);
        wheel.insert(1_000, 1_000);
        wheel.insert(1_001, 1_001);
        wheel.check();
        assert_eq!(wheel.next_deadline(), Some(3));
        assert_eq!(poll(&mut wheel, 10), [], "now behind elapsed is a no-op");
        assert_eq!(wheel.elapsed(), 1_000);
        assert_eq!(poll(&mut wheel, 1_000), [3, 1_000]);
        assert_eq!(wheel.next_deadline(), Some(1_001));
    }

    #[test]
    fn stale_keys() {
        let mut wheel = Wheel::new();
        let a = wheel.insert(10, 10);
        let b = wheel.insert(10, 11);
        assert_eq!(wheel.remove(a), Some(10));
        let c = wheel.insert(20, 20); // reuses a's slab index
        assert_eq!(a.index, c.index);
        assert_eq!(wheel.remove(a), None);
        wheel.check();
        assert_eq!(poll(&mut wheel, 10), [11]);
        assert_eq!(wheel.remove(b), None, "fired");
        assert_eq!(wheel.remove(c), Some(20));
        assert_eq!(wheel.remove(c), None);
        assert!(wheel.is_empty());
    }

    #[test]
    fn remove_middle_of_slot_list() {
        let mut wheel = Wheel::new();
        let keys: Vec<WheelKey> = (0..5).map(|i| wheel.insert(1 << 20, i)).collect();
        for i in [2, 0, 4] {
            assert_eq!(wheel.remove(keys[i]), Some(i as u64));
            wheel.check();
        }
        assert_eq!(poll(&mut wheel, 1 << 20), [1, 3]);
        assert_eq!(wheel.levels.iter().map(|lv| lv.occupied).sum::<u64>(), 0);
    }

    #[test]
    fn next_deadline_scans_a_high_slot() {
        let mut wheel = Wheel::new();
        for d in [5_000_000_123, 5_000_000_100, 5_000_000_999, 6_000_000_000] {
            wheel.insert(d, d);
        }
        assert_eq!(wheel.next_deadline(), Some(5_000_000_100));
        assert_eq!(poll(&mut wheel, 5_000_000_000), []);
        assert_eq!(wheel.next_deadline(), Some(5_000_000_100));
        assert_eq!(
            poll(&mut wheel, 5_000_000_123),
            [5_000_000_100, 5_000_000_123]
        );
        assert_eq!(wheel.next_deadline(), Some(5_000_000_999));
    }

    #[test]
    fn far_jump_visits_only_occupied_slots() {
        let mut wheel = Wheel::new();
        for b in 0..64 {
            wheel.insert(1 << b, b);
            wheel.insert((1 << b) | 1, b + 100);
        }
        let fired = poll(&mut wheel, u64::MAX);
        assert_eq!(fired.len(), 128);
        assert_eq!(wheel.elapsed(), u64::MAX);
        wheel.insert(7, 7);
        wheel.insert(u64::MAX, 8);
        assert_eq!(poll(&mut wheel, u64::MAX), [7, 8]);
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// Deadline `elapsed + offset` (saturating).
        InsertAfter(u64),
        InsertAt(u64),
        /// Index into every key handed out so far, live or stale.
        Remove(usize),
        /// `now = elapsed + jump` (saturating).
        PollAfter(u64),
        PollBefore(u64),
    }

    /// Offsets spread over every magnitude, from 0 to `u64::MAX`.
    fn offset() -> impl Strategy<Value = u64> {
        prop_oneof![
            0u64..130,
            (any::<u64>(), 0u32..64).prop_map(|(x, shift)| x >> shift)
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => offset().prop_map(Op::InsertAfter),
            1 => prop_oneof![Just(0), Just(u64::MAX), any::<u64>()].prop_map(Op::InsertAt),
            3 => any::<usize>().prop_map(Op::Remove),
            4 => offset().prop_map(Op::PollAfter),
            1 => offset().prop_map(Op::PollBefore),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn matches_btreemap_model(ops in proptest::collection::vec(op(), 1..300)) {
            let mut wheel = Wheel::new();
            let mut model = BTreeMap::new();
            let mut keys: Vec<(WheelKey, u64, u64)> = Vec::new();
            for (seq, op) in (0u64..).zip(ops) {
                match op {
                    Op::InsertAfter(_) | Op::InsertAt(_) => {
                        let deadline = match op {
                            Op::InsertAfter(offset) => wheel.elapsed().saturating_add(offset),
                            Op::InsertAt(at) => at,
                            _ => unreachable!(),
                        };
                        keys.push((wheel.insert(deadline, seq), deadline, seq));
                        model.insert((deadline, seq), seq);
                    }
                    Op::Remove(i) if !keys.is_empty() => {
                        let (key, deadline, id) = keys[i % keys.len()];
                        prop_assert_eq!(wheel.remove(key), model.remove(&(deadline, id)));
                    }
                    Op::Remove(_) => {}
                    Op::PollAfter(_) | Op::PollBefore(_) => {
                        let before = wheel.elapsed();
                        let now = match op {
                            Op::PollAfter(jump) => before.saturating_add(jump),
                            Op::PollBefore(jump) => before.saturating_sub(jump),
                            _ => unreachable!(),
                        };
                        let fired = poll(&mut wheel, now);
                        let mut expected = Vec::new();
                        while now >= before && model.first_key_value().is_some_and(|(k, _)| k.0 <= now) {
                            expected.push(model.pop_first().unwrap().1);
                        }
                        expected.sort_unstable();
                        prop_assert_eq!(fired, expected, "now {}", now);
                        prop_assert_eq!(wheel.elapsed(), before.max(now));
                    }
                }
                wheel.check();
                prop_assert_eq!(wheel.next_deadline(), model.keys().next().map(|k| k.0));
                prop_assert_eq!(wheel.len(), model.len());
            }
        }
    }
}
