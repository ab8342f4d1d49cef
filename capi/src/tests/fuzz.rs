//! The stable fuzzer of the C boundary: cases of the `calls` interpreter from a seeded
//! generator, in a process of its own (the handle table and the host threads' default
//! runtime are process-wide, and a panic across `extern "C"` aborts: the parent reports it).
//!
//! `HOS_FUZZ_CASES` (default [`CASES`]) cases from `HOS_FUZZ_SEED` (default: the clock);
//! case `i` of seed `s` is case 0 of seed `s + i`, so a failing case reruns alone. Each case
//! runs under a watchdog ([`CASE_LIMIT`]): a hang prints every thread's calls and fails. The
//! end prints the executions and the coverage proxy (each function with each code it
//! returned) and checks that the run reached every function and the codes in [`MUST_REACH`].

use crate::calls::{self, SplitMix};
use crate::event::hos_event_create;
use crate::result::*;
use crate::svc::hos_svc_close_handle;
use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Cases of a default run: 20 to 30 s on a 2-core machine in release.
const CASES: u64 = 1500;
/// The longest one case may take before it is a hang.
const CASE_LIMIT: Duration = Duration::from_secs(60);
/// The longest the whole child may take before the parent kills it.
const RUN_LIMIT: Duration = Duration::from_secs(30 * 60);
/// The handle table's size (`HOS_RESULT_OUT_OF_HANDLES`'s doc).
const HANDLES: usize = 1024;

/// Codes a default run must reach (each from some function), so the fuzzer cannot silently
/// degenerate into calls that all fail the same way.
const MUST_REACH: [hos_result; 17] = [
    HOS_RESULT_SUCCESS,
    HOS_RESULT_INVALID_POINTER,
    HOS_RESULT_INVALID_HANDLE,
    HOS_RESULT_TIMED_OUT,
    HOS_RESULT_CANCELLED,
    HOS_RESULT_OUT_OF_RANGE,
    HOS_RESULT_INVALID_SIZE,
    HOS_RESULT_INVALID_PRIORITY,
    HOS_RESULT_INVALID_CORE_ID,
    HOS_RESULT_INVALID_ADDRESS,
    HOS_RESULT_INVALID_CURRENT_MEMORY,
    HOS_RESULT_INVALID_ENUM_VALUE,
    HOS_RESULT_INVALID_STATE,
    HOS_RESULT_INVALID_UTF8,
    HOS_RESULT_UNKNOWN_KEY,
    HOS_RESULT_INVALID_VALUE,
    HOS_RESULT_INVALID_COMBINATION,
];

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?}: expected an integer")),
    )
}

#[test]
fn the_c_boundary_holds_under_fuzzed_calls_from_several_threads() {
    let exe = std::env::current_exe().expect("the test binary");
    let mut child = Command::new(exe)
        .args(["tests::fuzz::cases", "--exact", "--ignored", "--nocapture"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the fuzzer's process");
    let out = child.stdout.take().expect("piped");
    let echo = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            // Captured by the test harness: shown on failure or with --nocapture.
            println!("{line}");
            all += &line;
            all.push('\n');
        }
        all
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("the fuzzer's status") {
            break s;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            panic!("the fuzzer ran past {RUN_LIMIT:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let all = echo.join().expect("the echo thread");
    // The run's figures in every test log, captured or not.
    for line in all.lines() {
        if line.starts_with("executions:") || line.starts_with("coverage:") {
            use std::io::Write;
            let _ = writeln!(std::io::stdout(), "C boundary fuzz: {line}");
        }
    }
    assert!(
        status.success() && all.contains("test result: ok. 1 passed"),
        "the fuzzer failed ({status}); its output is above"
    );
}

/// The case the watchdog watches: its seed, and when it started (ms since the run's start;
/// `u64::MAX`: none).
static CASE_SEED: AtomicU64 = AtomicU64::new(0);
static CASE_START_MS: AtomicU64 = AtomicU64::new(u64::MAX);
static RUN_START: Mutex<Option<Instant>> = Mutex::new(None);

fn now_ms() -> u64 {
    let start = *RUN_START.lock().unwrap();
    start.map_or(0, |s| s.elapsed().as_millis() as u64)
}

/// Ends the process with a report when a case runs past [`CASE_LIMIT`].
fn watchdog() {
    loop {
        std::thread::sleep(Duration::from_millis(500));
        // Relaxed: the values are only reported; a stale one is off by a case at most.
        let started = CASE_START_MS.load(Ordering::Relaxed);
        if started != u64::MAX && now_ms().saturating_sub(started) > CASE_LIMIT.as_millis() as u64 {
            let seed = CASE_SEED.load(Ordering::Relaxed);
            println!(
                "HANG: a case ran past {CASE_LIMIT:?}; rerun it alone with HOS_FUZZ_SEED={seed} \
                 HOS_FUZZ_CASES=1\ncalls:\n{}",
                calls::in_progress().unwrap_or_default()
            );
            std::process::exit(3);
        }
    }
}

/// The bytes of the case of seed `seed`: 64 to 2047 of them.
fn case_bytes(seed: u64) -> Vec<u8> {
    let mut g = SplitMix(seed);
    let len = 64 + (g.next_u64() % 1984) as usize;
    g.bytes(len)
}

#[test]
#[ignore = "run by the_c_boundary_holds_under_fuzzed_calls_from_several_threads, in a process of its own"]
fn cases() {
    let seed = env_u64("HOS_FUZZ_SEED").unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        t.map_or(1, |d| d.as_nanos() as u64)
    });
    let cases = env_u64("HOS_FUZZ_CASES").unwrap_or(CASES);
    println!("fuzzing the C boundary: {cases} cases from HOS_FUZZ_SEED={seed}");
    *RUN_START.lock().unwrap() = Some(Instant::now());
    std::thread::spawn(watchdog);
    let start = Instant::now();
    for i in 0..cases {
        let case_seed = seed.wrapping_add(i);
        // Relaxed: read by the watchdog, which reports them only.
        CASE_SEED.store(case_seed, Ordering::Relaxed);
        CASE_START_MS.store(now_ms(), Ordering::Relaxed);
        if let Err(report) = calls::run(&case_bytes(case_seed)) {
            panic!(
                "case {i} broke a rule; rerun it alone with HOS_FUZZ_SEED={case_seed} \
                 HOS_FUZZ_CASES=1\n{report}"
            );
        }
    }
    CASE_START_MS.store(u64::MAX, Ordering::Relaxed);
    let elapsed = start.elapsed();
    let reached = calls::reached();
    println!(
        "executions: {cases} cases, {} calls in {elapsed:.1?} ({:.0} calls/s)",
        calls::calls(),
        calls::calls() as f64 / elapsed.as_secs_f64()
    );
    report(&reached);
    assert_no_handle_leaked();
    if cases >= CASES {
        check_coverage(&reached);
    }
}

/// Prints the coverage proxy: each function with the codes it returned and their counts.
fn report(reached: &BTreeMap<(&'static str, hos_result), u64>) {
    let mut by_fn: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for ((f, code), n) in reached {
        let name = name(*code).to_string_lossy();
        by_fn.entry(f).or_default().push(format!("{name} {n}"));
    }
    println!(
        "coverage: {} (function, code) pairs over {} functions",
        reached.len(),
        by_fn.len()
    );
    for (f, codes) in by_fn {
        println!("  {f}: {}", codes.join(", "));
    }
}

/// Every function of the table reached, and every code of [`MUST_REACH`].
fn check_coverage(reached: &BTreeMap<(&'static str, hos_result), u64>) {
    let functions: BTreeSet<&str> = reached.keys().map(|(f, _)| *f).collect();
    let missed: Vec<&str> = calls::CALLS
        .iter()
        .map(|c| c.name)
        .filter(|n| !functions.contains(n))
        .collect();
    assert!(missed.is_empty(), "functions never called: {missed:?}");
    let codes: BTreeSet<hos_result> = reached.keys().map(|(_, c)| *c).collect();
    let missed: Vec<_> = MUST_REACH
        .iter()
        .filter(|c| !codes.contains(c))
        .map(|c| name(*c))
        .collect();
    assert!(missed.is_empty(), "codes never returned: {missed:?}");
}

/// The handle table is empty after the cases: all of it can be filled, and no more.
fn assert_no_handle_leaked() {
    let mut made = Vec::new();
    loop {
        let mut h = 0;
        // SAFETY: a valid out-pointer.
        match unsafe { hos_event_create(0, &mut h) } {
            HOS_RESULT_SUCCESS => made.push(h),
            HOS_RESULT_OUT_OF_HANDLES => break,
            r => panic!("hos_event_create -> {r:#x}"),
        }
        assert!(made.len() <= HANDLES, "more than {HANDLES} handles");
    }
    for h in &made {
        assert_eq!(hos_svc_close_handle(*h), HOS_RESULT_SUCCESS);
    }
    assert_eq!(made.len(), HANDLES, "handles left open by the cases");
}
