//! Helpers shared by the runtime's tests: a builder whose environment is a table, so no
//! test mutates the process environment, and a guest thread to run a closure on.

use crate::context;
use crate::role::Role;
use crate::runtime::Runtime;
use crate::thread::{ThreadRecord, ThreadSpec};
use crate::{Builder, Config, ConfigError};
use std::collections::HashMap;
use std::sync::Arc;

/// A builder that reads `vars` as its environment.
pub(super) fn with_env(vars: &[(&str, &str)]) -> Builder<Runtime> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Builder::new().env_from(move |name| map.get(name).cloned())
}

/// The config `vars` resolve to, or the error naming the bad switch.
pub(super) fn resolve(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    with_env(vars).resolve()
}

/// Runs `f` as a guest thread named `name` of `rt` (all six cores allowed) and returns what
/// it returns.
pub(super) fn guest<T: Send + 'static>(
    rt: &Runtime,
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    spawn_guest(rt, name, 44, f).join().expect("guest thread")
}

/// Starts `f` as a guest thread named `name` of `rt` at `priority` (all six cores allowed).
pub(super) fn spawn_guest<T: Send + 'static>(
    rt: &Runtime,
    name: &str,
    priority: u8,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    spawn_guest_on(rt, name, priority, ALL_CORES, f)
}

/// [`spawn_guest`] on the cores of `mask`.
pub(super) fn spawn_guest_on<T: Send + 'static>(
    rt: &Runtime,
    name: &str,
    priority: u8,
    mask: u64,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let rec = record_on(rt, name, priority, mask);
    let rt = rt.clone();
    std::thread::spawn(move || {
        let _ctx = context::enter(&rt, rec);
        f()
    })
}

/// All six virtual cores, as a core mask.
const ALL_CORES: u64 = 0b11_1111;

/// A guest thread's record registered with `rt`: `name`, `priority`, all six cores allowed.
pub(super) fn record(rt: &Runtime, name: &str, priority: u8) -> Arc<ThreadRecord> {
    record_on(rt, name, priority, ALL_CORES)
}

/// [`record`] on the cores of `mask`, its ideal core the first of them.
fn record_on(rt: &Runtime, name: &str, priority: u8, mask: u64) -> Arc<ThreadRecord> {
    rt.register_thread(&ThreadSpec {
        name: name.into(),
        priority,
        core_mask: mask,
        ideal_core: mask.trailing_zeros() as i32,
        role: Role::Auto,
    })
}

/// Whether the calling test runs alone, as a child process of the test binary: if not,
/// runs `test` (its full path) so, asserts that it passed there, and returns `false`, and the
/// caller returns. For tests that watch the process's log: a scoped subscriber misses events
/// of a callsite that another test thread registers meanwhile, and events on other threads.
pub(super) fn alone(test: &str) -> bool {
    const CHILD: &str = "HOS_TEST_ALONE";
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}"
    );
    false
}

/// Collects the messages of `info` events.
pub(super) struct Messages(pub(super) std::sync::Mutex<Vec<String>>);

impl tracing::Subscriber for Messages {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Visit<'a>(&'a mut String);
        impl tracing::field::Visit for Visit<'_> {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if f.name() == "message" {
                    *self.0 = format!("{v:?}");
                }
            }
        }
        let mut text = String::new();
        event.record(&mut Visit(&mut text));
        self.0.lock().unwrap().push(text);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Polls `f` every millisecond until it holds; fails the test after 5 s.
pub(super) fn wait_until(f: impl Fn() -> bool) {
    let limit = crate::sys::now() + 5_000_000_000;
    while !f() {
        assert!(crate::sys::now() < limit, "condition not reached in 5 s");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// A runtime built after the calling test's own and running until dropped, so that the test's
/// runtime is no host thread's default (the newest running, `context.rs`) meanwhile: host
/// threads of tests running beside it wait under this one, and their parks, spins, sleeps and
/// timers do not count in the stats the test asserts. Build it right after the test's runtime.
pub(super) struct Newer(Runtime);

/// See [`Newer`].
pub(super) fn newer() -> Newer {
    let rt = crate::Builder::<Runtime>::new()
        .config(Config {
            calibration: Some(crate::Calibration::default()),
            ..Config::default()
        })
        .build()
        .expect("a valid config");
    Newer(rt)
}

impl Drop for Newer {
    fn drop(&mut self) {
        self.0.shutdown();
    }
}
