//! The layers of the crate doc, kept: every source file (the tests aside) is placed in the
//! order below, and imports only files placed before it, with the one knot the crate doc
//! names. So an nn::os object never reaches the svcs or a facade, and the vocabulary they
//! share (a handle, the svc entry, the arbitration types, the runtime) is a leaf of its own.
//! The checker is hos-runtime's, shared by every crate of the workspace.

#[path = "../../runtime/src/tests/layers/check.rs"]
mod check;

use std::path::Path;

/// Every unit, leaves first, each after everything it may import.
const ORDER: &[&str] = &[
    // leaves: the vocabulary
    "sync",
    "result",
    "entry",
    "machine",
    "svc/handle",
    "svc/arbitration",
    "svc/timeout",
    // the one wait of every object
    "os/waiters",
    "os/waiting",
    "os/wait_any",
    // the arbiter's pure table
    "svc/arbiter/hasher",
    "svc/arbiter/word",
    "svc/arbiter/mailbox",
    "svc/arbiter/heir",
    "svc/arbiter/pollers",
    "svc/arbiter/census",
    "svc/arbiter/hints",
    "svc/arbiter/table",
    // the nn::os objects
    "os/event",
    "os/timer_event",
    "os/semaphore",
    "os/message_queue",
    "os/mutex",
    "os/condvar",
    "os/rwlock",
    "os/barrier",
    "os",
    // the runtime
    "guests",
    "runtime",
    "builder",
    "shutdown",
    // guest threads and the svcs
    "svc/exit",
    "svc/handles",
    "svc/cancel",
    "svc/arbiter",
    "thread",
    "svc/tick",
    "svc/event",
    "svc/info",
    "svc/lock",
    "svc/address",
    "svc/activity",
    "svc",
];

/// The files that are part of their parent's unit: each an `impl` of its parent's type, split
/// off (attaching a host thread, the handle table's per-thread cache, the arbiter's lent
/// mutex word, the arbiter table's invariant checks, drains, heirs and priority inheritance).
const JOINED: &[&str] = &[
    "thread/attach",
    "svc/handles/cache",
    "svc/arbiter/lent",
    "svc/arbiter/table/check",
    "svc/arbiter/table/drain",
    "svc/arbiter/table/heirs",
    "svc/arbiter/table/priority",
];

/// The crate's layers, for the checker all crates share.
const LAYERS: check::Layers = check::Layers {
    order: ORDER,
    whole: &[],
    joined: JOINED,
    tests: &[
        "tests",
        "svc/arbiter/tests",
        "svc/arbiter/tests/heirs",
        "svc/arbiter/loom",
        "svc/handles/cache/tests",
    ],
    macros: &[],
    // The one deliberate mutual dependency (the crate doc says why): the handle table names
    // guest threads, whose own handles it holds; the arbiter lends priorities to guest
    // threads, which tell it when theirs change or they end.
    knots: &[("svc/handles", "thread"), ("svc/arbiter", "thread")],
};

#[test]
fn every_file_imports_only_files_below_it() {
    LAYERS.check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
}

#[test]
fn the_check_sees_an_upward_import() {
    // An object reaching a facade for what a leaf has.
    assert_eq!(LAYERS.imports("os/mutex", "crate::svc::entry();"), ["svc"]);
    assert_eq!(
        LAYERS.imports("os/mutex", "use crate::entry::entry;"),
        ["entry"]
    );
    assert_eq!(
        LAYERS.imports("svc/cancel", "use super::{entry, Handle};"),
        ["svc"]
    );
    assert_eq!(
        LAYERS.imports("svc/cancel", "use super::handle::Handle;"),
        ["svc/handle"]
    );
    // A root re-export is no unit: the checker asks for the file's own path.
    assert_eq!(
        LAYERS.imports("os/event", "use crate::ResultCode;"),
        ["ResultCode"]
    );
    // The parts joined to their parent, and a parent's own children.
    assert_eq!(LAYERS.unit_of("thread/attach.rs"), "thread");
    assert_eq!(LAYERS.unit_of("svc/arbiter/mod.rs"), "svc/arbiter");
    assert_eq!(
        LAYERS.unit_of("svc/arbiter/table/check.rs"),
        "svc/arbiter/table"
    );
    assert_eq!(
        LAYERS.imports("svc/arbiter", "use pollers::WordPollers;"),
        ["svc/arbiter/pollers"]
    );
    assert_eq!(
        LAYERS.imports("svc/arbiter/table", "use super::word;"),
        ["svc/arbiter/word"]
    );
    assert_eq!(
        LAYERS.imports("svc/arbiter/table/check", "use super::{Place, Table};"),
        ["svc/arbiter/table"]
    );
}
