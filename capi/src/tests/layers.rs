//! The layers of the C ABI, kept: every source file (the tests aside) is placed in the order
//! below, and imports only files placed before it. So the boundary's rules stay beneath every
//! call, and no two files import each other. The checker is hos-runtime's, shared by every
//! crate of the workspace.

#[path = "../../../runtime/src/tests/layers/check.rs"]
mod check;

use std::path::Path;

/// Every unit, leaves first, each after everything it may import.
const ORDER: &[&str] = &[
    // leaves: the version and the result codes
    "version",
    "result",
    // the boundary: pointers, strings, versioned structs, timeouts, panics
    "boundary",
    // what needs only the boundary
    "reaper",
    "config",
    "log",
    "tick",
    "exit",
    // a handle's object, and a runtime
    "object",
    "runtime",
    // what a runtime or a handle gives
    "stats",
    "det",
    "softlock",
    "det_post",
    "det_check",
    "wait_tree",
    "trace",
    "role",
    "svc",
    "activity",
    "arbiter",
    "kernel_event",
    "event",
    "timer_event",
    "queue",
    "semaphore",
    "mutex",
    "rwlock",
    "barrier",
    // what those give
    "guest_state",
    "thread",
    "condvar",
    // what those give
    "shutdown",
    "attach",
    // the fuzz driver (tests and fuzzing only): its random draws, its world, its calls
    "calls/draw",
    "calls/world",
    "calls",
];

/// The crate's layers, for the checker all crates share. The fuzz driver's table of calls,
/// the context they run on and the case that drives them are one unit with `calls/mod.rs`:
/// a call is a `fn(&mut Ctx)`, and a context plays the table.
const LAYERS: check::Layers = check::Layers {
    order: ORDER,
    whole: &[],
    joined: &["calls/case", "calls/ctx", "calls/table"],
    tests: &["tests"],
    macros: &[],
    knots: &[],
};

#[test]
fn every_file_imports_only_files_below_it() {
    LAYERS.check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
}

#[test]
fn the_check_sees_an_upward_import() {
    assert_eq!(
        LAYERS.imports("boundary", "use crate::object::{self, hos_handle};"),
        ["object"]
    );
    assert_eq!(
        LAYERS.imports("object", "crate::reaper::reap_ended();"),
        ["reaper"]
    );
    // A function named as its own module is no module of it.
    assert!(LAYERS
        .imports(
            "rwlock",
            "object::with(rwlock, \"lock\", self::rwlock, |l| {"
        )
        .is_empty());
    assert_eq!(LAYERS.unit_of("calls/table.rs"), "calls");
}
