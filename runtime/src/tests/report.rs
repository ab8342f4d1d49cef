//! No warning goes nowhere (docs/switches.md, "What hos tells"): with no `tracing` subscriber
//! the warnings `build` gives (a `HOS_*` name that is no switch, a boolean that is no boolean
//! word, an environment value the code's wins over) and the runtime's own reach stderr, each
//! line starting `hos: `; HOS_LOG_STDERR=0 and `log_stderr(false)` keep them off; a subscriber
//! takes them instead; an HOS_TRACE file that cannot be written is a build error.
//!
//! What reaches stderr is watched from a child process: this test binary run again, as the
//! one test, with its own environment (setting process variables while tests run in parallel
//! is unsound), its stderr read whole.

use super::common::Messages;
use crate::runtime::Runtime;
use crate::{BuildError, Builder, Calibration};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The marker of a child run (a name hos's tests read, so never warned about).
const CHILD: &str = "HOS_TEST_ALONE";

/// In the parent run: runs `test` in a child with `vars` as extra environment, asserts it
/// passed, and returns its stderr. In the child: `None` (the test then does its part).
fn child_stderr(test: &str, vars: &[(&str, &str)]) -> Option<String> {
    if std::env::var_os(CHILD).is_some() {
        return None;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &format!("tests::report::{test}"),
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child {test}:\n{stdout}\n{stderr}"
    );
    Some(stderr)
}

/// A builder that starts quickly (a pinned calibration).
fn quick() -> Builder<Runtime> {
    Builder::new().calibration(Calibration::default())
}

/// Builds and shuts down at once.
fn build(b: Builder<Runtime>) {
    b.build().expect("a runtime").shutdown();
}

#[test]
fn without_a_subscriber_warnings_reach_stderr() {
    if let Some(stderr) = child_stderr(
        "without_a_subscriber_warnings_reach_stderr",
        &[
            ("HOS_FLIGH", "0"),
            ("HOS_FLIGHT", "garbage"),
            ("HOS_CORES", "3"),
            ("HOS_CHAOS_SEEDS", "1..2"),
        ],
    ) {
        for line in [
            "hos: unknown switch HOS_FLIGH=0 (did you mean HOS_FLIGHT?)\n",
            "hos: HOS_FLIGHT=garbage is no boolean word: taken as on (off: 0, false, off, no or \
             empty; on: 1, true, on, yes)\n",
            "hos: HOS_CORES=3 ignored: the host set it in code to 5 (env_overrides() lets the \
             environment win)\n",
            "hos: the runtime's own warning path=/x\n",
            "hos: error: and its error\n",
        ] {
            assert_eq!(
                stderr.matches(line).count(),
                1,
                "{line:?} once in:\n{stderr}"
            );
        }
        assert!(
            !stderr.contains("HOS_CHAOS_SEEDS"),
            "a test's own name: {stderr}"
        );
        assert!(
            !stderr.contains("HOS_TEST_ALONE"),
            "a test's own name: {stderr}"
        );
        return;
    }
    build(quick().vcores(5).env());
    crate::warn!(path = "/x", "the runtime's own warning");
    crate::error!("and its error");
}

#[test]
fn log_stderr_off_keeps_stderr_quiet_and_the_newest_build_decides() {
    if let Some(stderr) = child_stderr(
        "log_stderr_off_keeps_stderr_quiet_and_the_newest_build_decides",
        &[("HOS_FLIGH", "0"), ("HOS_LOG_STDERR", "0")],
    ) {
        assert!(!stderr.contains("HOS_FLIGH="), "HOS_LOG_STDERR=0: {stderr}");
        assert!(!stderr.contains("in code"), "log_stderr(false): {stderr}");
        assert!(
            stderr.contains("hos: HOS_FLIGHT=loud is no boolean word"),
            "{stderr}"
        );
        assert!(!stderr.contains("quiet again"), "{stderr}");
        return;
    }
    build(quick().env());
    crate::warn!("quiet again");
    build(
        quick()
            .log_stderr(false)
            .flight(true)
            .env_vars([("HOS_FLIGHT", "0")]),
    );
    build(quick().env_vars([("HOS_FLIGHT", "loud")]));
}

#[test]
fn a_subscriber_takes_the_warnings_instead_of_stderr() {
    let test = "a_subscriber_takes_the_warnings_instead_of_stderr";
    if let Some(stderr) = child_stderr(test, &[]) {
        assert!(!stderr.contains("hos: "), "{stderr}");
        return;
    }
    let log = Arc::new(Messages(Mutex::new(Vec::new())));
    tracing::subscriber::with_default(log.clone(), || {
        build(quick().vcores(2).env_vars([
            ("HOS_CORES", "4"),
            ("hos_vcore_grace", "7"),
            ("HOS_BLESS", "1"),
            ("HOS_VCORE_CLAIM", "maybe"),
            ("hos_vcore_grace", "8"),
        ]));
    });
    let seen = log.0.lock().unwrap().clone();
    let has = |part: &str| seen.iter().filter(|m| m.contains(part)).count();
    assert_eq!(
        has("unknown switch hos_vcore_grace=8 (did you mean HOS_VCORE_GRACE_US?)"),
        1,
        "{seen:?}"
    );
    assert_eq!(has("HOS_CORES=4 ignored: the host set it in code to 2"), 1);
    assert_eq!(has("HOS_VCORE_CLAIM=maybe is no boolean word"), 1);
    assert_eq!(
        has("hos_vcore_grace"),
        1,
        "a name given twice, told once: {seen:?}"
    );
    assert_eq!(has("HOS_BLESS"), 0, "a test's own name");
}

#[test]
fn env_from_cannot_be_listed_so_only_switches_are_read() {
    let c = Builder::<Runtime>::new()
        .env_from(|n| (n == "HOS_CORES").then(|| "4".to_string()))
        .resolve()
        .unwrap();
    assert_eq!(c.cores, 4);
    let c = Builder::<Runtime>::new()
        .env_vars([("HOS_CORES", "2"), ("HOS_CORES", "3"), ("HOS_NOPE", "1")])
        .resolve()
        .unwrap();
    assert_eq!(c.cores, 3, "the later pair wins");
}

/// A folder of its own under the temp folder, removed first.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hos-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn an_unwritable_trace_file_is_a_build_error_naming_it() {
    let dir = scratch("unwritable");
    let missing = dir.join("no-such-folder").join("t.json");
    for b in [
        quick().trace(&missing),
        quick().env_vars([("HOS_TRACE", missing.to_str().unwrap())]),
    ] {
        match b.build() {
            Err(e @ BuildError::Trace { .. }) => {
                let BuildError::Trace { path, error } = &e else {
                    unreachable!()
                };
                assert_eq!(
                    (path, error.kind()),
                    (&missing, std::io::ErrorKind::NotFound)
                );
                let text = e.to_string();
                assert!(text.contains(missing.to_str().unwrap()), "{text}");
                assert!(text.contains("HOS_TRACE"), "{text}");
                assert!(std::error::Error::source(&e).is_some());
            }
            other => panic!("expected a trace error, got {other:?}"),
        }
    }
    // A folder is no file either.
    let err = quick().trace(&dir).build().unwrap_err();
    assert!(matches!(err, BuildError::Trace { .. }), "{err:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_writable_trace_file_is_made_at_build_and_written_at_shutdown() {
    let dir = scratch("writable");
    let path = dir.join("t.json");
    let rt = quick().trace(&path).build().expect("a runtime");
    assert!(path.exists(), "opened at build");
    rt.shutdown();
    rt.end_trace();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("traceEvents"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
