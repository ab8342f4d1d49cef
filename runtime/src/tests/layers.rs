//! The layers of the crate doc, kept: every source file (the tests aside) is placed in the
//! order below, and imports only files placed before it. So a leaf never reaches up to a
//! decision or to the runtime, and no two files import each other, even within a layer.

use std::path::Path;

/// Every file, leaves first, then primitives, decisions, waiting and composition (the crate
/// doc's layers), each after everything it may import.
const ORDER: &[&str] = &[
    // leaves
    "sync",
    "report",
    "time",
    "sys",
    "spawn",
    "chaos",
    "wheel",
    "machine",
    "stats",
    "vcore/step",
    "vcore/rank",
    "vcore/table",
    "vcore/table/grace",
    "vcore/table/lend",
    "vcore/escape",
    "vcore/card",
    "vcore/kick",
    "vcore/cells",
    "vcore/seat",
    "trace/event",
    "trace/ring",
    "trace/timeline",
    "trace/chrome",
    "trace/critical",
    "trace/tree",
    "trace/tracy",
    "trace/recorder",
    "trace",
    // primitives
    "parker",
    "config",
    "role",
    "build_error",
    // decisions
    "calibration",
    "reactor",
    "policy",
    // waiting
    "block_on",
    "pollers",
    "poll",
    "vcore",
    "vcore/claim",
    "vcore/fast",
    "pause",
    "thread",
    // composition
    "runtime",
    "context",
    "sleep",
    "builder",
    "observe",
];

/// The macros exported at the crate's root (`crate::warn!`), with the unit that defines them.
const MACROS: [(&str, &str); 2] = [("warn", "report"), ("error", "report")];

/// The folders whose files are units of their own (`vcore/table.rs` is `vcore/table`; the
/// folder's `mod.rs` is the folder's unit), with those files.
const PARTED: [(&str, &[&str]); 2] = [
    (
        "vcore",
        &[
            "step", "rank", "table", "escape", "card", "kick", "cells", "seat", "claim", "fast",
        ],
    ),
    (
        "trace",
        &[
            "event", "ring", "timeline", "chrome", "critical", "tree", "recorder", "tracy",
        ],
    ),
];

/// The parts of folder `dir`, if it is parted.
fn parts_of(dir: &str) -> &'static [&'static str] {
    PARTED
        .iter()
        .find(|(d, _)| *d == dir)
        .map_or(&[], |(_, p)| p)
}

/// The unit a source file belongs to: `sys/linux.rs` is `sys`, `vcore/table.rs` is
/// `vcore/table`, `vcore/table/grace.rs` (a part of `table`'s own) is `vcore/table/grace`,
/// `vcore/mod.rs` is `vcore`.
fn unit_of(rel: &str) -> String {
    let rel = rel.trim_end_matches(".rs");
    match rel.split_once('/') {
        Some(("sys", _)) => "sys".into(),
        Some((dir, "mod")) => dir.into(),
        Some((dir, part)) => format!("{dir}/{part}"),
        _ => rel.into(),
    }
}

/// The units a line of `unit`'s code names: `crate::x`, and inside a parted folder its parts
/// by `super::x` or a bare `x::`.
fn imports(unit: &str, line: &str) -> Vec<String> {
    let word = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (i, _) in line.match_indices("crate::") {
        // `$crate::` is a macro's own path (report's `warn!`), named where it expands.
        if line[..i].ends_with('$') {
            continue;
        }
        let rest = &line[i + "crate::".len()..];
        let mut m = word(rest);
        if let Some((_, unit)) = MACROS.iter().find(|(name, _)| *name == m) {
            m = (*unit).to_string();
        }
        let part = rest
            .strip_prefix(&format!("{m}::"))
            .map(word)
            .filter(|p| parts_of(&m).contains(&p.as_str()));
        out.push(match part {
            Some(p) => format!("{m}/{p}"),
            None => m,
        });
    }
    let dir = unit.split('/').next().unwrap_or(unit);
    for part in parts_of(dir) {
        let named = line.contains(&format!("super::{part}"))
            || line.trim_start().starts_with(&format!("use {part}::"))
            || line.trim_start().starts_with(&format!("pub use {part}::"));
        if named {
            out.push(format!("{dir}/{part}"));
        }
    }
    out
}

fn sources(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if path.is_dir() {
            if rel != "tests" {
                sources(&path, root, out);
            }
        } else if rel.ends_with(".rs") && rel != "lib.rs" {
            out.push((rel, std::fs::read_to_string(&path).expect("a source file")));
        }
    }
}

#[test]
fn every_file_imports_only_files_below_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    assert!(files.len() > 20, "found {} files", files.len());
    let rank = |u: &str| ORDER.iter().position(|o| *o == u);
    for (rel, text) in &files {
        let unit = unit_of(rel);
        let me = rank(&unit).unwrap_or_else(|| panic!("{rel} is in no layer: add it to ORDER"));
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for dep in imports(&unit, line) {
                if dep == unit {
                    continue;
                }
                let at = rank(&dep).unwrap_or_else(|| panic!("{rel}:{}: unknown `{dep}`", n + 1));
                assert!(
                    at < me,
                    "{rel}:{}: `{unit}` imports `{dep}`, which is not below it: {line}",
                    n + 1
                );
            }
        }
    }
}

#[test]
fn the_check_sees_an_upward_import() {
    assert_eq!(
        imports("stats", "use crate::runtime::Runtime;"),
        ["runtime"]
    );
    assert_eq!(
        imports("vcore/table", "use super::step::{Clock};"),
        ["vcore/step"]
    );
    assert_eq!(imports("vcore", "use table::Table;"), ["vcore/table"]);
    assert_eq!(
        imports("thread", "use crate::vcore::table::Table;"),
        ["vcore/table"]
    );
    assert_eq!(
        imports("thread", "use crate::vcore::{Seat, Who};"),
        ["vcore"]
    );
    assert_eq!(imports("builder", "crate::warn!(\"{n}\");"), ["report"]);
    assert!(imports("report", "$crate::internal::report::emit(").is_empty());
    assert_eq!(unit_of("sys/linux.rs"), "sys");
    assert_eq!(unit_of("vcore/mod.rs"), "vcore");
    assert_eq!(unit_of("vcore/table/grace.rs"), "vcore/table/grace");
    assert_eq!(
        imports("vcore/table/grace", "use crate::vcore::step::{Clock};"),
        ["vcore/step"]
    );
    assert_eq!(unit_of("trace/ring.rs"), "trace/ring");
    assert_eq!(
        imports("trace/ring", "use super::event::Event;"),
        ["trace/event"]
    );
    assert_eq!(
        imports("context", "use crate::trace::recorder::Session;"),
        ["trace/recorder"]
    );
}
