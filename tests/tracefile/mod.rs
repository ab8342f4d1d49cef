//! Reading the trace files the tests make: each one is checked as Perfetto reads it.

#![allow(dead_code)] // each test binary uses a part

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A fresh folder under the target directory for one test's files.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hos-trace-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One record of a trace file.
#[derive(Clone, Debug)]
pub(crate) struct Item {
    pub tid: u64,
    pub ph: String,
    pub name: String,
    /// Nanoseconds.
    pub ts: u64,
    pub dur: u64,
    pub bind: Option<u64>,
    pub flow_in: bool,
}

fn ns(v: &Value) -> u64 {
    // Microseconds with three decimals: exact nanoseconds.
    (v.as_f64().expect("a number") * 1000.0).round() as u64
}

/// Parses `path` and checks it is trace-event JSON as Perfetto reads it: every record has a
/// phase and a pid, slices have a begin and a duration and nest on their track, every flow
/// has one source and one target, counters carry a number. Returns the records and the
/// track names.
pub(crate) fn load(path: &Path) -> (Vec<Item>, HashMap<u64, String>, Value) {
    let text = std::fs::read_to_string(path).unwrap();
    let v: Value = serde_json::from_str(&text).expect("the trace is JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let mut items = Vec::new();
    let mut names = HashMap::new();
    let mut binds: HashMap<u64, (u32, u32)> = HashMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("a phase").to_string();
        assert!(e["pid"].is_u64(), "no pid: {e}");
        match ph.as_str() {
            "M" => {
                if e["name"] == "thread_name" {
                    let name = e["args"]["name"].as_str().unwrap().to_string();
                    names.insert(e["tid"].as_u64().unwrap(), name);
                }
            }
            "X" | "i" => {
                let bind = e["bind_id"].as_u64();
                let flow_in = e["flow_in"] == Value::Bool(true);
                if let Some(b) = bind {
                    let c = binds.entry(b).or_default();
                    if flow_in {
                        c.1 += 1;
                    } else {
                        assert_eq!(e["flow_out"], Value::Bool(true), "{e}");
                        c.0 += 1;
                    }
                }
                items.push(Item {
                    tid: e["tid"].as_u64().expect("a tid"),
                    name: e["name"].as_str().expect("a name").to_string(),
                    ts: ns(&e["ts"]),
                    dur: if ph == "X" { ns(&e["dur"]) } else { 0 },
                    ph,
                    bind,
                    flow_in,
                });
            }
            "C" => assert!(e["args"]["value"].is_i64(), "{e}"),
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    for (b, (out, into)) in &binds {
        assert_eq!(
            (*out, *into),
            (1, 1),
            "flow {b} has {out} sources, {into} targets"
        );
    }
    // Slices nest: on each track, a slice that begins inside another ends inside it too.
    let mut by_tid: HashMap<u64, Vec<&Item>> = HashMap::new();
    for i in items.iter().filter(|i| i.ph == "X") {
        by_tid.entry(i.tid).or_default().push(i);
    }
    for slices in by_tid.values_mut() {
        slices.sort_by_key(|i| (i.ts, std::cmp::Reverse(i.dur)));
        let mut open: Vec<u64> = Vec::new();
        for s in slices.iter() {
            while open
                .last()
                .is_some_and(|&end| end <= s.ts && !(end == s.ts && s.dur == 0))
            {
                open.pop();
            }
            if let Some(&end) = open.last() {
                assert!(
                    s.ts + s.dur <= end,
                    "{s:?} ends after the slice it begins in"
                );
            }
            open.push(s.ts + s.dur);
        }
    }
    (items, names, v)
}

/// The records of the track named `name` (its name starts with it), by time.
pub(crate) fn track(items: &[Item], names: &HashMap<u64, String>, name: &str) -> (u64, Vec<Item>) {
    let tid = *names
        .iter()
        .find(|(_, n)| n.starts_with(name))
        .unwrap_or_else(|| panic!("no track {name}: {names:?}"))
        .0;
    let mut mine: Vec<Item> = items.iter().filter(|i| i.tid == tid).cloned().collect();
    // By time; at one instant the enclosing slice first, then the file's order (a track's
    // slices outer first, then its instants, then the flows' ends).
    mine.sort_by_key(|i| (i.ts, std::cmp::Reverse(i.dur)));
    (tid, mine)
}

/// The records' phases and names, in order.
pub(crate) fn names_of(items: &[Item]) -> Vec<String> {
    items
        .iter()
        .map(|i| format!("{} {}", i.ph, i.name))
        .collect()
}
