//! What a reading of the trace holds: each thread's events and who the thread is, as of the
//! reading.
//!
//! Invariant: plain data, made by the recorder (`Session::snapshot`) and read by the
//! analyses (`analysis/`); nothing in it refers back to the live tracks.

use super::event::Event;

/// Who a thread is, for its track's name and the wait tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// The thread's name now.
    pub name: String,
    /// The runtime it is a guest thread of (0: a host thread).
    pub runtime: u64,
    /// Its guest id, priority, core mask and ideal core, if a guest thread.
    pub guest: Option<Guest>,
}

/// A guest thread's identity on its track.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Guest {
    /// The runtime's id of the thread.
    pub id: u64,
    /// Horizon priority.
    pub priority: u8,
    /// Allowed virtual cores.
    pub mask: u64,
    /// Preferred virtual core.
    pub ideal: i32,
}

/// What a session's threads recorded.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The id of the session's runtime (what its guest threads' tracks and the changes made
    /// to them name).
    pub runtime: u64,
    /// When the session started (`sys::now()` ns).
    pub start: u64,
    /// When the snapshot was taken.
    pub end: u64,
    /// Events the collector dropped (its limit), oldest first.
    pub dropped: u64,
    /// Every thread's events.
    pub threads: Vec<ThreadTrace>,
}

/// One thread's events.
#[derive(Clone, Debug, Default)]
pub struct ThreadTrace {
    /// Its trace id.
    pub tid: u64,
    /// Who it is now.
    pub meta: Meta,
    /// Its events, oldest first.
    pub events: Vec<Event>,
}
