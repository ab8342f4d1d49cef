//! The layers checker of every crate of the workspace: each crate's `tests/layers.rs` includes
//! this file and gives it the crate's order (hos-runtime's as `mod check`, hos's and
//! hos-capi's by `#[path]`), so the three crates are kept by one reading of the sources.
//!
//! Invariant: every source file (the tests aside) is a unit in the order, and every module
//! path a line of it names (`crate::a::b`, `super::x`, a child's `x::`) lands in a unit placed
//! before its own; the only exceptions are the knots the crate names, each of which must be
//! used. A file is its own unit (its module path: `svc/handles`, `vcore/table`), unless it is
//! joined to its parent (an `impl` split off into a file) or in a folder that is one unit
//! (the OS layer: one contract, a file for each OS).

use std::path::Path;

/// One crate's layers.
pub(crate) struct Layers {
    /// Every unit, leaves first, each after everything it may import.
    pub(crate) order: &'static [&'static str],
    /// The folders whose every file is the folder's one unit (`sys/linux` is `sys`).
    pub(crate) whole: &'static [&'static str],
    /// The files that are part of their parent's unit (`vcore/table/grace` is `vcore/table`).
    pub(crate) joined: &'static [&'static str],
    /// The files and folders of tests, outside the layers.
    pub(crate) tests: &'static [&'static str],
    /// The macros exported at the crate's root (`crate::warn!`), with the unit that defines
    /// them.
    pub(crate) macros: &'static [(&'static str, &'static str)],
    /// The deliberate mutual dependencies, as (lower, upper): `lower` may import `upper`,
    /// which imports it back.
    pub(crate) knots: &'static [(&'static str, &'static str)],
}

/// A file's module path: `svc/arbiter/mod.rs` is `svc/arbiter`, `os/mutex.rs` is `os/mutex`.
fn module_of(rel: &str) -> &str {
    let m = rel.trim_end_matches(".rs");
    m.strip_suffix("/mod").unwrap_or(m)
}

/// The module `m` is declared in (`""`, the crate's root, for a top-level file).
fn parent(m: &str) -> &str {
    m.rsplit_once('/').map_or("", |(p, _)| p)
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The paths a line names: each as the byte before it and its segments (`crate::svc::{a, b}`
/// is `["crate", "svc"]`); only paths of two segments or more, or that go on with `::`.
fn paths(line: &str) -> Vec<(u8, Vec<&str>)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = (b[i].is_ascii_alphabetic() || b[i] == b'_')
            && (i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':'));
        if !starts {
            i += 1;
            continue;
        }
        let before = if i == 0 { b' ' } else { b[i - 1] };
        let mut segs = Vec::new();
        let go_on = loop {
            let s = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            segs.push(&line[s..i]);
            let go_on = line[i..].starts_with("::");
            let next = b.get(i + 2).copied().unwrap_or(b' ');
            if !go_on || !(next.is_ascii_alphabetic() || next == b'_') {
                break go_on;
            }
            i += 2;
        };
        if go_on || segs.len() > 1 {
            out.push((before, segs));
        }
    }
    out
}

impl Layers {
    /// The unit module `m` belongs to, if it is one of the crate's files.
    fn unit(&self, m: &str) -> Option<String> {
        if let Some(w) = self
            .whole
            .iter()
            .find(|w| m == **w || m.starts_with(&format!("{w}/")))
        {
            return Some(w.to_string());
        }
        if self.joined.contains(&m) {
            return Some(parent(m).to_string());
        }
        self.order.contains(&m).then(|| m.to_string())
    }

    /// The unit of a source file (its path under `src/`).
    pub(crate) fn unit_of(&self, rel: &str) -> String {
        let m = module_of(rel);
        self.unit(m).unwrap_or_else(|| m.to_string())
    }

    /// The deepest unit `base::segs[0]::segs[1]...` reaches.
    fn reach(&self, base: &str, segs: &[&str]) -> Option<String> {
        (1..=segs.len()).rev().find_map(|k| {
            let tail = segs[..k].join("/");
            let m = if base.is_empty() {
                tail
            } else {
                format!("{base}/{tail}")
            };
            self.unit(&m)
        })
    }

    /// The units a line of module `m`'s code names: `crate::x`, `super::x` (the parent itself
    /// when `x` is no module of it) and a child's bare `x::`. In an inline module (`inline`:
    /// `mod tests { .. }`) `super` is `m` itself. A `crate::` path to no unit gives the name
    /// it tried, which no order holds.
    pub(crate) fn names(&self, m: &str, inline: bool, line: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (before, segs) in paths(line) {
            // `$crate::` is a macro's own path, named where it expands.
            if before == b'$' {
                continue;
            }
            match segs[0] {
                "crate" => {
                    let first = segs.get(1).copied().unwrap_or("{");
                    let macro_unit = self.macros.iter().find(|(name, _)| *name == first);
                    out.push(match (self.reach("", &segs[1..]), macro_unit) {
                        (Some(u), _) => u,
                        (None, Some((_, u))) => u.to_string(),
                        (None, None) => first.to_string(),
                    });
                }
                "super" => {
                    let ups = segs.iter().take_while(|s| **s == "super").count();
                    let mut base = m;
                    for _ in 0..ups - usize::from(inline) {
                        base = parent(base);
                    }
                    let rest = &segs[ups..];
                    let dep = self.reach(base, rest).or_else(|| self.unit(base));
                    out.push(dep.unwrap_or_else(|| format!("the crate's root (super of {m})")));
                }
                "self" => out.extend(self.reach(m, &segs[1..])),
                _ => out.extend(self.reach(m, &segs)),
            }
        }
        out
    }

    /// [`Layers::names`] outside any inline module.
    pub(crate) fn imports(&self, m: &str, line: &str) -> Vec<String> {
        self.names(m, false, line)
    }

    /// Checks every source file under `root` (a crate's `src/`).
    pub(crate) fn check(&self, root: &Path) {
        let mut files = Vec::new();
        self.sources(root, root, &mut files);
        let units: Vec<String> = files.iter().map(|(rel, _)| self.unit_of(rel)).collect();
        for o in self.order {
            assert!(
                units.iter().any(|u| u == o),
                "`{o}` is in the order but no file"
            );
        }
        let rank = |u: &str| self.order.iter().position(|o| *o == u);
        let mut knots_used = vec![false; self.knots.len()];
        for ((rel, text), unit) in files.iter().zip(&units) {
            let me =
                rank(unit).unwrap_or_else(|| panic!("{rel} is in no layer: add it to the order"));
            let m = module_of(rel);
            // The brace depth inside an inline module, while in one.
            let mut inline: Option<i64> = None;
            for (n, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                if inline.is_none() && opens_inline_module(line) {
                    inline = Some(0);
                }
                for dep in self.names(m, inline.is_some(), line) {
                    if dep == *unit {
                        continue;
                    }
                    if let Some(k) = self.knots.iter().position(|k| k.0 == unit && k.1 == dep) {
                        knots_used[k] = true;
                        continue;
                    }
                    let at =
                        rank(&dep).unwrap_or_else(|| panic!("{rel}:{}: unknown `{dep}`", n + 1));
                    assert!(
                        at < me,
                        "{rel}:{}: `{unit}` imports `{dep}`, which is not below it: {line}",
                        n + 1
                    );
                }
                if let Some(depth) = inline.as_mut() {
                    *depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
                    if *depth <= 0 {
                        inline = None;
                    }
                }
            }
        }
        for (k, used) in self.knots.iter().zip(knots_used) {
            assert!(
                rank(k.0) < rank(k.1),
                "knot {k:?}: its first unit is the lower one"
            );
            assert!(
                used,
                "knot {k:?} is tied by no import any more: take it out"
            );
        }
    }

    /// The source files under `dir`: (path under `root`, text), the crate's root and the
    /// tests left out.
    fn sources(&self, dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).expect("src is readable") {
            let path = entry.expect("a directory entry").path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let m = module_of(&rel);
            let test = self
                .tests
                .iter()
                .any(|t| m == *t || m.starts_with(&format!("{t}/")));
            if test || rel == "lib.rs" {
                continue;
            }
            if path.is_dir() {
                self.sources(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push((rel, std::fs::read_to_string(&path).expect("a source file")));
            }
        }
    }
}

/// Whether `line` opens an inline module (`mod tests {`, `pub(crate) mod sealed {`).
fn opens_inline_module(line: &str) -> bool {
    let t = line.trim_start();
    let t = t
        .strip_prefix("pub(crate) ")
        .or_else(|| t.strip_prefix("pub "))
        .unwrap_or(t);
    t.starts_with("mod ") && t.contains('{')
}
