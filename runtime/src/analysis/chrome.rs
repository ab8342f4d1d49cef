//! The Chrome trace-event JSON writer: what Perfetto UI (ui.perfetto.dev) and
//! chrome://tracing open.
//!
//! Invariant: the file is one JSON object whose `traceEvents` hold, per thread, a
//! `thread_name` record and complete slices (`"ph":"X"`, begin and duration, so every begin
//! has its end) that nest on their track as the spans of [`super::timeline`] do; instants
//! (`"ph":"i"`) for the other events; each edge as a pair of zero-length slices tied by a
//! flow (`bind_id`, `flow_out` at the source, `flow_in` at the target); counters
//! (`"ph":"C"`) for the virtual cores busy, the guest threads ready and the active pollers;
//! and the host's frame marks as global instants. Times are microseconds from the first
//! event, with three decimals (nanoseconds exact).

use super::timeline::{Flow, Span, Timelines, What};
use crate::trace::event::{
    label_name, Event, Failed, Kind, WaitFor, ESCAPED, MASK_BITS, NOT_LENT, REVOKED, UNTIMED,
};
use crate::trace::{Snapshot, ThreadTrace};
use std::collections::HashMap;
use std::fmt::Write as _;

/// A JSON string literal.
pub(crate) fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A track's name: the guest name with its priority and core mask.
pub(crate) fn track_name(t: &ThreadTrace) -> String {
    match t.meta.guest {
        Some(g) => format!(
            "{} (priority {}, mask {:#x})",
            t.meta.name, g.priority, g.mask
        ),
        None => format!("{} (host)", t.meta.name),
    }
}

/// Writes `snap` as trace-event JSON to the file `path` (buffered, a record at a time);
/// `notes` go into `otherData` (a dump's reason, the wait tree) as strings.
pub(crate) fn write_file(
    path: &std::path::Path,
    snap: &Snapshot,
    notes: &[(&str, String)],
) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    write(&mut f, snap, notes)?;
    f.into_inner()
        .map_err(std::io::IntoInnerError::into_error)?;
    Ok(())
}

/// Writes `snap` as trace-event JSON to `out`; `notes` go into `otherData` as strings.
pub(crate) fn write(
    out: &mut impl std::io::Write,
    snap: &Snapshot,
    notes: &[(&str, String)],
) -> std::io::Result<()> {
    let lines = Timelines::of(snap);
    let origin = snap
        .threads
        .iter()
        .filter_map(|t| t.events.first().map(|e| e.t))
        .min()
        .unwrap_or(snap.start)
        .min(snap.start);
    let w = Writer {
        pid: std::process::id(),
        origin,
        names: snap
            .threads
            .iter()
            .map(|t| (t.tid, t.meta.name.clone()))
            .collect(),
        guests: snap
            .threads
            .iter()
            .filter_map(|t| Some((t.meta.guest?.id, (t.meta.name.clone(), t.tid))))
            .collect(),
        runtime: snap.runtime,
        edge_starts: lines
            .flows
            .iter()
            .filter(|f| f.wake)
            .map(|f| ((f.from.0, f.stamp, f.to.0), f.from.1))
            .collect(),
    };
    write!(
        out,
        "{{\"traceEvents\":[\n{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":\"hos\"}}}}",
        w.pid
    )?;
    let mut put = |line: String| write!(out, ",\n{line}");
    for t in &snap.threads {
        put(format!(
            r#"{{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}}"#,
            w.pid,
            t.tid,
            string(&track_name(t))
        ))?;
    }
    for (tid, spans) in &lines.spans {
        for x in spans.iter().filter_map(|s| w.slice(*tid, s)) {
            put(x)?;
        }
    }
    for t in &snap.threads {
        for i in t.events.iter().filter_map(|e| w.instant(t.tid, e)) {
            put(i)?;
        }
    }
    for (n, f) in lines.flows.iter().enumerate() {
        for end in w.flow(n as u64 + 1, f) {
            put(end)?;
        }
    }
    for c in w.counters(&lines) {
        put(c)?;
    }
    let mut other = vec![("dropped_events".to_string(), snap.dropped.to_string())];
    other.extend(notes.iter().map(|(k, v)| (k.to_string(), string(v))));
    let other: Vec<String> = other
        .iter()
        .map(|(k, v)| format!("{}:{v}", string(k)))
        .collect();
    writeln!(
        out,
        "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{{{}}}}}",
        other.join(",")
    )
}

struct Writer {
    pid: u32,
    origin: u64,
    names: HashMap<u64, String>,
    /// The runtime's guest threads by guest id: name and trace id.
    guests: HashMap<u64, (String, u64)>,
    runtime: u64,
    /// Where each wake edge starts, by (waker, the wake's stamp, target): an untimed wake's
    /// instant is drawn there, beside the edge's `signal` end, not at its stamp (its thread's
    /// event before it, which may lie in an earlier slice).
    edge_starts: HashMap<(u64, u64, u64), u64>,
}

impl Writer {
    fn ts(&self, t: u64) -> String {
        let d = t.saturating_sub(self.origin);
        format!("{}.{:03}", d / 1000, d % 1000)
    }

    fn dur(a: u64, b: u64) -> String {
        let d = b.saturating_sub(a);
        format!("{}.{:03}", d / 1000, d % 1000)
    }

    fn name_of(&self, tid: u64) -> String {
        self.names
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| format!("thread {tid}"))
    }

    fn guest(&self, id: u64) -> String {
        self.guests
            .get(&id)
            .map_or_else(|| format!("guest {id}"), |(name, _)| name.clone())
    }

    fn x(&self, tid: u64, b: u64, e: u64, cat: &str, name: &str, args: &str) -> String {
        format!(
            r#"{{"ph":"X","pid":{},"tid":{tid},"ts":{},"dur":{},"cat":"{cat}","name":{},"args":{{{args}}}}}"#,
            self.pid,
            self.ts(b),
            Self::dur(b, e),
            string(name)
        )
    }

    /// A span as a slice; a virtual-core wait's own `block_on` wait is not one (its spin and
    /// park are inside the `waiting for a vcore` slice).
    fn slice(&self, tid: u64, s: &Span) -> Option<String> {
        let open = if s.open { r#""open":true"# } else { "" };
        let (cat, name, args) = match &s.what {
            What::Core { slot } if *slot == ESCAPED => (
                "core",
                "escaped: runs beside the vcores".into(),
                String::new(),
            ),
            What::Core { slot } => ("core", format!("vcore {slot}"), String::new()),
            What::CoreWait => ("core_wait", "waiting for a vcore".into(), String::new()),
            What::Wait {
                on: WaitFor::Vcore, ..
            } => return None,
            What::Wait {
                on,
                objects,
                deadline,
                failed,
            } => {
                let name = match (on, objects.as_slice()) {
                    (WaitFor::Sleep, _) => "timer wait".to_string(),
                    (_, [o]) => format!("wait {}", label_name(o.label)),
                    (_, []) => "wait".to_string(),
                    (_, many) => format!("wait_any ({} objects)", many.len()),
                };
                let end = match (failed, s.open) {
                    (_, true) => "waiting",
                    (Some(Failed::TimedOut), _) => "timed out",
                    (Some(Failed::Cancelled), _) => "cancelled",
                    (None, _) => "completed",
                };
                let mut args = format!(r#""end":"{end}""#);
                for (i, o) in objects.iter().enumerate() {
                    let _ = write!(args, r#","object{i}":"{:#x}""#, o.addr);
                    if o.holder != 0 {
                        let _ = write!(args, r#","holder{i}":{}"#, string(&self.name_of(o.holder)));
                    }
                }
                if let Some(d) = deadline {
                    let _ = write!(args, r#","deadline_us":{}"#, self.ts(*d));
                }
                if let Some((holder, addr)) = s.moved_to {
                    let _ = write!(
                        args,
                        r#","moved_to":{},"mutex":"{addr:#x}""#,
                        string(&self.name_of(holder))
                    );
                }
                if let Some((from, _)) = s.woken_by {
                    let _ = write!(args, r#","woken_by":{}"#, string(&self.name_of(from)));
                }
                ("wait", name, args)
            }
            What::Spin => ("spin", "spin".into(), String::new()),
            What::Park => ("park", "parked".into(), String::new()),
            What::Sleep {
                asked,
                guest,
                path,
                late,
                polled,
            } => {
                let args = format!(
                    r#""asked_ns":{asked},"guest":{guest},"path":"{}","late_ns":{late},"poller":{polled}"#,
                    path.map_or("unfinished", |p| p.name())
                );
                ("sleep", format!("sleep {}", human(*asked)), args)
            }
        };
        let args = match (args.is_empty(), open.is_empty()) {
            (_, true) => args,
            (true, false) => open.to_string(),
            (false, false) => format!("{args},{open}"),
        };
        Some(self.x(tid, s.begin, s.end, cat, &name, &args))
    }

    /// The events that are no part of a span, as instants; a change of a guest thread, on
    /// that thread's track (none for another runtime's thread).
    fn instant(&self, tid: u64, e: &Event) -> Option<String> {
        let changed = matches!(
            e.kind,
            Kind::Rename | Kind::Priority | Kind::Affinity | Kind::Lent
        );
        let tid = match (changed, self.guests.get(&e.b)) {
            (false, _) => tid,
            (true, _) if e.a != self.runtime => return None,
            (true, Some((_, its))) => *its,
            (true, None) => tid,
        };
        let at = match e.kind {
            Kind::Wake if e.x == UNTIMED => self
                .edge_starts
                .get(&(tid, e.t, e.a))
                .copied()
                .unwrap_or(e.t),
            _ => e.t,
        };
        let (name, scope) = match e.kind {
            Kind::ThreadStart => ("thread start".to_string(), "t"),
            Kind::ThreadExit => ("thread exit".to_string(), "t"),
            Kind::Rename => ("renamed".to_string(), "t"),
            Kind::Priority => (format!("priority {}", e.x), "t"),
            Kind::Affinity => (
                format!(
                    "cores: ideal {}, mask {:#x}",
                    (e.x >> MASK_BITS) as u32 as i32,
                    e.x & ((1 << MASK_BITS) - 1)
                ),
                "t",
            ),
            Kind::Lent if e.x == NOT_LENT => ("lent priority taken back".to_string(), "t"),
            Kind::Lent => (format!("priority {} lent", e.x), "t"),
            Kind::Moved => (
                format!(
                    "{} now waits for {} (mutex {:#x})",
                    self.name_of(e.a),
                    self.name_of(e.b),
                    e.x
                ),
                "t",
            ),
            Kind::Wake => (format!("wake {}", self.name_of(e.a)), "t"),
            Kind::Kick if e.b == REVOKED => (
                format!("take vcore {} from {} (grace over)", e.x, self.guest(e.a)),
                "t",
            ),
            Kind::Kick => (format!("kick {} off vcore {}", self.guest(e.a), e.x), "t"),
            Kind::Yield => (
                format!(
                    "yield({}){}",
                    -(e.x as i64),
                    if e.a == 1 { ": handed over" } else { ": kept" }
                ),
                "t",
            ),
            Kind::Frame => (format!("frame {}", e.a), "g"),
            Kind::Decision => (format!("decision {} (vt {} ns)", e.a, e.b), "t"),
            Kind::Softlock if e.x == 0 => (
                format!("softlock: deadlock at decision {}, vt {} ns", e.a, e.b),
                "g",
            ),
            Kind::Softlock => (
                format!(
                    "softlock: guest {} held the token at decision {}, vt {} ns",
                    e.x, e.a, e.b
                ),
                "g",
            ),
            _ => return None,
        };
        Some(format!(
            r#"{{"ph":"i","s":"{scope}","pid":{},"tid":{tid},"ts":{},"cat":"event","name":{}}}"#,
            self.pid,
            self.ts(at),
            string(&name)
        ))
    }

    /// An edge: a zero-length slice at each end, tied by `bind_id`.
    fn flow(&self, id: u64, f: &Flow) -> [String; 2] {
        let (cat, out_name, in_name) = if f.wake {
            (
                "wake",
                "signal",
                format!("woken by {}", self.name_of(f.from.0)),
            )
        } else {
            ("kick", "kick", "gave the vcore up".to_string())
        };
        let end = |(tid, t): (u64, u64), name: &str, dir: &str| {
            format!(
                r#"{{"ph":"X","pid":{},"tid":{tid},"ts":{},"dur":0,"cat":"{cat}","name":{},"bind_id":{id},"{dir}":true,"args":{{}}}}"#,
                self.pid,
                self.ts(t),
                string(name)
            )
        };
        [
            end(f.from, out_name, "flow_out"),
            end(f.to, &in_name, "flow_in"),
        ]
    }

    /// The three counters, one record at each change.
    fn counters(&self, lines: &Timelines) -> Vec<String> {
        let mut changes: Vec<(u64, i64, usize)> = Vec::new();
        for (_, spans) in &lines.spans {
            for s in spans {
                let which = match &s.what {
                    What::Core { slot } if *slot != ESCAPED => 0,
                    What::CoreWait => 1,
                    What::Sleep { polled: true, .. } => 2,
                    _ => continue,
                };
                changes.push((s.begin, 1, which));
                changes.push((s.end, -1, which));
            }
        }
        // Ends before begins at one instant: a hand-over is not two holders.
        changes.sort_unstable_by_key(|&(t, d, w)| (t, d, w));
        let names = ["vcores busy", "guest threads ready", "active pollers"];
        let mut now = [0i64; 3];
        changes
            .into_iter()
            .map(|(t, d, w)| {
                now[w] += d;
                format!(
                    r#"{{"ph":"C","pid":{},"tid":0,"ts":{},"name":"{}","args":{{"value":{}}}}}"#,
                    self.pid,
                    self.ts(t),
                    names[w],
                    now[w]
                )
            })
            .collect()
    }
}

/// A duration for a slice's name: `20 us`, `1.5 ms`.
pub(crate) fn human(ns: u64) -> String {
    match ns {
        0..=9_999 => format!("{ns} ns"),
        10_000..=9_999_999 => format!("{} us", ns / 1000),
        _ => format!("{:.1} ms", ns as f64 / 1e6),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::trace::event::SpinEnd;
    use crate::trace::{Guest, Meta};

    fn ev(t: u64, kind: Kind, x: u64, a: u64, b: u64) -> Event {
        Event { t, kind, x, a, b }
    }

    #[test]
    fn a_change_of_a_guest_thread_shows_on_its_own_track() {
        let guest = |tid: u64, id: u64, name: &str, events: Vec<Event>| ThreadTrace {
            tid,
            meta: Meta {
                name: name.into(),
                runtime: 1,
                guest: Some(Guest {
                    id,
                    priority: 59,
                    mask: 1,
                    ideal: 0,
                }),
            },
            events,
        };
        // The waiter (tid 3) lends the holder (guest 7, tid 2) its priority and sets its cores;
        // a host thread (tid 4) changes guest 7 of another runtime, which is in no track here.
        let waiter = vec![
            ev(10, Kind::Lent, 28, 1, 7),
            ev(11, Kind::Affinity, 0b11 | 1 << MASK_BITS, 1, 7),
            ev(20, Kind::Lent, NOT_LENT, 1, 7),
        ];
        let host = ThreadTrace {
            tid: 4,
            meta: Meta {
                name: "host".into(),
                ..Meta::default()
            },
            events: vec![ev(12, Kind::Priority, 3, 2, 7)],
        };
        let snap = Snapshot {
            runtime: 1,
            start: 0,
            end: 30,
            dropped: 0,
            threads: vec![
                guest(2, 7, "Holder", vec![ev(5, Kind::ThreadStart, 0, 0, 7)]),
                guest(3, 8, "Waiter", waiter),
                host,
            ],
        };
        let mut out = Vec::new();
        write(&mut out, &snap, &[]).unwrap();
        let text = String::from_utf8(out).unwrap();
        for (name, at) in [
            ("priority 28 lent", "0.010"),
            ("cores: ideal 1, mask 0x3", "0.011"),
            ("lent priority taken back", "0.020"),
        ] {
            let want = format!(r#""tid":2,"ts":{at},"cat":"event","name":"{name}""#);
            assert!(text.contains(&want), "{want} in {text}");
        }
        assert!(!text.contains("priority 3"), "{text}");
    }

    #[test]
    fn an_untimed_wake_is_drawn_where_its_edge_starts() {
        let thread = |tid: u64, name: &str, events: Vec<Event>| ThreadTrace {
            tid,
            meta: Meta {
                name: name.into(),
                ..Meta::default()
            },
            events,
        };
        let object = WaitFor::Object as u64 | 7 << 8;
        // Both wakes are stamped 10 (the waker's event before them) and happened before 40;
        // the one to the waiter ended its wait (20 to 30), so its edge starts at 20.
        let waker = vec![
            ev(10, Kind::ThreadStart, 0, 0, 0),
            ev(10, Kind::Wake, UNTIMED, 2, 0),
            ev(10, Kind::Wake, UNTIMED, 9, 0),
            ev(40, Kind::ThreadExit, 0, 0, 0),
        ];
        let waiter = vec![
            ev(20, Kind::WaitBegin, object, 0xA0, 0),
            ev(30, Kind::WaitEnd, SpinEnd::Caught as u64, 0, 0),
        ];
        let snap = Snapshot {
            runtime: 1,
            start: 0,
            end: 50,
            dropped: 0,
            threads: vec![thread(1, "Waker", waker), thread(2, "Waiter", waiter)],
        };
        let mut out = Vec::new();
        write(&mut out, &snap, &[]).unwrap();
        let text = String::from_utf8(out).unwrap();
        for want in [
            r#""tid":1,"ts":0.020,"cat":"event","name":"wake Waiter""#,
            r#""tid":1,"ts":0.020,"dur":0,"cat":"wake","name":"signal""#,
            r#""tid":1,"ts":0.010,"cat":"event","name":"wake thread 9""#,
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
    }
}
