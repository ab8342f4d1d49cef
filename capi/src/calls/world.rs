//! What the threads of one case share: the runtime, the handles made and closed, the guest
//! words, each thread's trace, and what went wrong; and, process-wide, what every case
//! reached (the coverage proxy: each function with each code it returned).
//!
//! Invariant: a handle is in `live` from the call that made it until a close of that value
//! succeeded, then in `closed`; every handle a case made is closed by the case's end, so the
//! process-wide handle table is empty between cases.

use crate::result::{self, hos_result};
use crate::runtime::hos_runtime;
use hos_rs::internal::lock;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One thread's calls: those done with their codes, and the one in progress.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    /// "name(args) -> Code", in order.
    pub done: Vec<String>,
    /// The call being made: its name and the arguments drawn so far.
    pub now: String,
}

/// The state the threads of one case share.
#[derive(Debug)]
pub(crate) struct World {
    /// The case's runtime; NULL while there is none.
    pub rt: AtomicPtr<hos_runtime>,
    /// Handles made and not closed.
    pub live: Mutex<Vec<u32>>,
    /// Handles closed in this case.
    pub closed: Mutex<Vec<u32>>,
    /// Guest words, 8-aligned: the 32-bit svcs use their halves.
    pub words: [AtomicU64; 4],
    /// Program threads still running their calls.
    pub running: AtomicUsize,
    /// Each program thread's trace, by thread.
    pub traces: Mutex<Vec<(String, Arc<Mutex<Trace>>)>>,
    /// What broke a rule, with the call.
    pub findings: Mutex<Vec<String>>,
}

/// Handles closed by earlier cases of this process: stale handles for later ones.
static STALE: Mutex<Vec<u32>> = Mutex::new(Vec::new());
const STALE_MAX: usize = 256;

/// Each function with each code it returned, and how often, over every case of the process.
static REACHED: Mutex<BTreeMap<(&'static str, hos_result), u64>> = Mutex::new(BTreeMap::new());
/// Calls made, over every case of the process.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Calls made so far by every case of the process.
pub fn calls() -> u64 {
    // Relaxed: a counter read after the threads that add to it were joined.
    CALLS.load(Ordering::Relaxed)
}

/// Each (function, code) pair reached so far, with its count.
pub fn reached() -> BTreeMap<(&'static str, hos_result), u64> {
    lock(&REACHED).clone()
}

impl World {
    pub(crate) fn new() -> World {
        World {
            rt: AtomicPtr::default(),
            live: Mutex::default(),
            closed: Mutex::default(),
            words: Default::default(),
            running: AtomicUsize::new(0),
            traces: Mutex::default(),
            findings: Mutex::default(),
        }
    }

    /// The case's runtime (NULL: none).
    pub(crate) fn rt(&self) -> *mut hos_runtime {
        // Acquire: pairs with the Release store of the runtime made before the threads ran.
        self.rt.load(Ordering::Acquire)
    }

    /// A new thread's trace, kept for the report.
    pub(crate) fn trace(&self, who: String) -> Arc<Mutex<Trace>> {
        let t = Arc::new(Mutex::new(Trace::default()));
        lock(&self.traces).push((who, t.clone()));
        t
    }

    /// Keeps a broken rule.
    pub(crate) fn finding(&self, what: String) {
        lock(&self.findings).push(what);
    }

    /// A handle made by a successful call.
    pub(crate) fn made(&self, h: u32) {
        lock(&self.live).push(h);
    }

    /// A handle closed by a successful close.
    pub(crate) fn closed(&self, h: u32) {
        lock(&self.live).retain(|l| *l != h);
        lock(&self.closed).push(h);
    }

    /// The live handle at `i` (modulo), else a stale one, else `i` itself.
    pub(crate) fn live_at(&self, i: usize) -> u32 {
        pick(&lock(&self.live), i).unwrap_or_else(|| self.stale_at(i))
    }

    /// A handle closed in this case or an earlier one at `i` (modulo), else `i` itself.
    pub(crate) fn stale_at(&self, i: usize) -> u32 {
        pick(&lock(&self.closed), i)
            .or_else(|| pick(&lock(&STALE), i))
            .unwrap_or(i as u32)
    }

    /// Counts the call's code and checks it: a code with a name, one the function documents,
    /// never Success where a required pointer was bad, never a failure without a message.
    pub(crate) fn record(
        &self,
        name: &'static str,
        code: hos_result,
        documented: &[hos_result],
        bad_pointer: bool,
        call: &str,
    ) {
        // Relaxed: a counter (see `calls`).
        CALLS.fetch_add(1, Ordering::Relaxed);
        *lock(&REACHED).entry((name, code)).or_default() += 1;
        let named = result::name(code).to_str().unwrap_or("?");
        if code != 0 && (named == "Unknown" || !documented.contains(&code)) {
            self.finding(format!(
                "{call} -> {code:#x} ({named}): not a code it documents"
            ));
        }
        if code == 0 && bad_pointer {
            self.finding(format!(
                "{call} -> Success with a NULL or misaligned pointer"
            ));
        }
        if code != 0 && message().is_empty() {
            self.finding(format!("{call} -> {named} with no hos_last_error_message"));
        }
    }

    /// The traces of every thread, for a report.
    pub(crate) fn describe(&self) -> String {
        let mut s = String::new();
        for (who, t) in lock(&self.traces).iter() {
            let t = lock(t);
            s += &format!("  {who}:\n");
            for c in &t.done {
                s += &format!("    {c}\n");
            }
            if !t.now.is_empty() {
                s += &format!("    {} ... (in progress)\n", t.now);
            }
        }
        s
    }

    /// Ends the case: its closed handles become stale ones for later cases.
    pub(crate) fn retire(&self) {
        let mut stale = lock(&STALE);
        stale.extend(lock(&self.closed).drain(..));
        let over = stale.len().saturating_sub(STALE_MAX);
        stale.drain(..over);
    }
}

fn pick(v: &[u32], i: usize) -> Option<u32> {
    (!v.is_empty()).then(|| v[i % v.len()])
}

/// The calling thread's `hos_last_error_message`.
pub(crate) fn message() -> String {
    // SAFETY: never NULL; a static or thread-local string valid until this thread's next
    // failing call, read before it.
    unsafe { std::ffi::CStr::from_ptr(result::hos_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}
