//! What is made of the trace: each thread's states and the edges between threads, the Chrome
//! trace-event file, each frame's critical path, and the wait tree (docs/design.md section
//! 17).
//!
//! Invariant: analysis reads a [`Snapshot`](crate::trace::Snapshot) (or a thread's events)
//! and makes text or values of it; it records nothing, writes nothing back to the trace, and
//! knows no runtime: what it is given is all it sees, so the same events always read the
//! same. The writer, the critical path and the wait tree all read the spans [`timeline`]
//! makes, so they agree on every state.
//!
//! | file | what |
//! | --- | --- |
//! | [`timeline`] | events folded into each thread's states, and the edges between threads |
//! | [`chrome`] | the trace-event JSON writer |
//! | [`critical`] | each frame's critical path |
//! | [`tree`] | the wait tree and its printing |

pub(crate) mod chrome;
pub(crate) mod critical;
pub(crate) mod timeline;
pub(crate) mod tree;

pub use critical::Breakdown;
pub use tree::{Node, State, WaitTree};
