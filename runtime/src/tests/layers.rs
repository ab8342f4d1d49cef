//! The layers of the crate doc, kept: every source file (the tests aside) is placed in the
//! order below, and imports only files placed before it. So a leaf never reaches up to a
//! decision or to the runtime, and no two files import each other, even within a layer.

mod check;

use std::path::Path;

/// Every file, leaves first, then primitives, decisions, waiting and composition (the crate
/// doc's layers), each after everything it may import.
const ORDER: &[&str] = &[
    // leaves
    "sync",
    "report",
    "time",
    "det/rng",
    "det/witness",
    "det/decisions",
    "det/history",
    "det/softlock",
    "det/selector",
    "det/guide",
    "det/clock",
    "det/post",
    "det/record",
    "det/verifier",
    "det/feed",
    "det/journal",
    "det",
    "sys",
    "entropy",
    "spawn",
    "chaos",
    "wheel",
    "machine",
    "stats",
    "vcore/step",
    "vcore/rank",
    "vcore/table",
    "vcore/escape",
    "vcore/card",
    "vcore/kick",
    "vcore/line",
    "vcore/cells",
    "vcore/seat",
    "trace/event",
    "trace/ring",
    "trace/snapshot",
    "trace/tracy",
    "trace/recorder",
    "trace",
    "analysis/timeline",
    "analysis/chrome",
    "analysis/critical",
    "analysis/tree",
    "analysis",
    // primitives
    "parker",
    "config",
    "config/unknown",
    "role",
    "build_error",
    "activity",
    // decisions
    "calibration",
    "reactor",
    "spin_gate",
    "policy",
    // waiting
    "token",
    "det_run",
    "pollers",
    "block_on",
    "poll",
    "vcore",
    "vcore/wait",
    "vcore/claim",
    "vcore/fast",
    "pause",
    "thread",
    // composition
    "runtime",
    "stuck",
    "context",
    "posting",
    "verify",
    "sleep",
    "watchdog",
    "builder",
    "observe",
];

/// The files that are part of their parent's unit: the kicks' grace (`impl Table` of the
/// virtual cores' table, which reads its constants), the token's yields and softlocks (`impl
/// State`, `impl Token`), the switches' rules (each `Switch` writes a field of `Config`).
const JOINED: &[&str] = &[
    "vcore/table/grace",
    "vcore/table/lend",
    "token/yielding",
    "token/softlock",
    "config/switch",
];

/// The crate's layers, for the checker all crates share.
const LAYERS: check::Layers = check::Layers {
    order: ORDER,
    // The OS layer: one contract (`sys/mod.rs`), a file or folder for each OS.
    whole: &["sys"],
    joined: JOINED,
    tests: &["tests", "analysis/timeline/tests"],
    macros: &[("warn", "report"), ("error", "report")],
    knots: &[],
};

#[test]
fn every_file_imports_only_files_below_it() {
    LAYERS.check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
}

#[test]
fn the_check_sees_an_upward_import() {
    assert_eq!(
        LAYERS.imports("stats", "use crate::runtime::Runtime;"),
        ["runtime"]
    );
    assert_eq!(
        LAYERS.imports("vcore/table", "use super::step::{Clock};"),
        ["vcore/step"]
    );
    assert_eq!(
        LAYERS.imports("vcore", "use table::Table;"),
        ["vcore/table"]
    );
    assert_eq!(
        LAYERS.imports("thread", "use crate::vcore::table::Table;"),
        ["vcore/table"]
    );
    assert_eq!(
        LAYERS.imports("thread", "use crate::vcore::{Seat, Who};"),
        ["vcore"]
    );
    assert_eq!(
        LAYERS.imports("builder", "crate::warn!(\"{n}\");"),
        ["report"]
    );
    assert!(LAYERS
        .imports("report", "$crate::internal::report::emit(")
        .is_empty());
    assert_eq!(LAYERS.unit_of("sys/linux.rs"), "sys");
    assert_eq!(LAYERS.unit_of("vcore/mod.rs"), "vcore");
    assert_eq!(LAYERS.unit_of("vcore/table/grace.rs"), "vcore/table");
    assert_eq!(
        LAYERS.imports("vcore/table/grace", "use crate::vcore::step::{Clock};"),
        ["vcore/step"]
    );
    assert_eq!(LAYERS.unit_of("trace/ring.rs"), "trace/ring");
    assert_eq!(
        LAYERS.imports("trace/ring", "use super::event::Event;"),
        ["trace/event"]
    );
    assert_eq!(
        LAYERS.imports("context", "use crate::trace::recorder::Session;"),
        ["trace/recorder"]
    );
    // An item of the parent (its facade) is the parent; in an inline module, `super` is the
    // file itself.
    assert_eq!(LAYERS.imports("vcore/table", "use super::Seat;"), ["vcore"]);
    assert_eq!(
        LAYERS.names("vcore/rank", true, "use super::*;"),
        ["vcore/rank"]
    );
}
