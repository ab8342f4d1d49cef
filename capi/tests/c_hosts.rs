//! The C and C++ hosts, built and run as a host would: `libhos.a` is built with cargo (the
//! same profile, target directory and flags as this test), the sources are compiled with the
//! system's `cc` and `c++` against `include/`, and each program runs once plainly and once
//! under `-fsanitize=address,undefined`. A program that does not end within its limit is
//! killed and fails the test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What a host program may take, sanitizers included, on a loaded 2-core machine.
const LIMIT: Duration = Duration::from_secs(120);

/// The repository's root.
fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The profile directory this test was built in (`target/release`), from its own path.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    // target/<profile>/deps/c_hosts-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_path_buf()
}

/// `libhos.a`, built once per run of this test binary.
fn libhos() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let profile = profile_dir();
        let target = profile.parent().expect("target directory");
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args([
                "build",
                "--quiet",
                "-p",
                "hos-capi",
                "--lib",
                "--target-dir",
            ])
            .arg(target)
            .current_dir(root());
        if profile.file_name().is_some_and(|n| n != "debug") {
            cargo.arg("--release");
        }
        let status = cargo.status().expect("cargo runs");
        assert!(status.success(), "cargo build -p hos-capi failed");
        let lib = profile.join("libhos.a");
        assert!(lib.exists(), "{} was not built", lib.display());
        lib
    })
}

/// The system libraries a Rust static library needs on Linux (`--print native-static-libs`).
const SYSTEM_LIBS: [&str; 7] = [
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// Compiles `source` (relative to the repository, C or C++ by its extension) into an
/// executable; `sanitize` adds AddressSanitizer and UndefinedBehaviorSanitizer.
fn compile(source: &str, sanitize: bool) -> PathBuf {
    let source = root().join(source);
    let cpp = source.extension().is_some_and(|e| e == "cpp");
    let stem = source.file_stem().expect("file name").to_string_lossy();
    let dir = profile_dir().join("c-hosts");
    std::fs::create_dir_all(&dir).expect("output directory");
    let exe = dir.join(format!(
        "{}-{stem}{}",
        if cpp { "cpp" } else { "c" },
        if sanitize { "-san" } else { "" }
    ));
    let mut cc = Command::new(if cpp { "c++" } else { "cc" });
    cc.arg(if cpp { "-std=c++17" } else { "-std=c11" })
        .args([
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-g",
            "-O1",
            "-pthread",
        ])
        .arg("-I")
        .arg(root().join("include"));
    if sanitize {
        cc.args(["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]);
        cc.arg("-fno-sanitize-recover=undefined");
    }
    cc.arg(&source)
        .arg(libhos())
        .args(SYSTEM_LIBS)
        .arg("-o")
        .arg(&exe);
    let out = cc.output().unwrap_or_else(|e| {
        panic!("the system C/C++ compiler did not run ({e}): .ci/run installs one")
    });
    assert!(
        out.status.success(),
        "compiling {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs `exe` with `env`, killing it past [`LIMIT`].
fn run(exe: &Path, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(exe)
        .envs(env.iter().copied())
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
        .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the host program starts");
    let t0 = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{} ran past {LIMIT:?}:\n{}{}",
                exe.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Builds and runs `source`; asserts it exits 0 and returns its stdout.
fn host(source: &str, sanitize: bool, env: &[(&str, &str)]) -> String {
    let exe = compile(source, sanitize);
    let out = run(&exe, env);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{source} (sanitizers: {sanitize}) failed with {}:\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A fresh path for a trace file under the profile directory.
fn trace_path(name: &str) -> PathBuf {
    let dir = profile_dir().join("c-hosts");
    std::fs::create_dir_all(&dir).expect("output directory");
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// Asserts the file at `path` is a JSON object or array (what a trace is), by its first and
/// last characters.
fn assert_json(path: &Path) {
    let text = std::fs::read_to_string(path).expect("the trace file");
    let t = text.trim();
    assert!(
        (t.starts_with('{') && t.ends_with('}')) || (t.starts_with('[') && t.ends_with(']')),
        "{} is no JSON object or array",
        path.display()
    );
}

#[test]
fn the_c_host_does_every_job_once() {
    let trace = trace_path("c-host-trace.json");
    let out = host(
        "examples/c/host.c",
        false,
        &[("HOS_TRACE", trace.to_str().expect("UTF-8 path"))],
    );
    assert!(out.contains("60 frames, 600 jobs"), "{out}");
    // 60 marks, the first frame's start to the last frame's: 59 frames.
    assert!(out.contains("critical path of 59 frames, mean "), "{out}");
    assert!(out.contains("  frame 59: "), "{out}");
    assert!(
        out.contains("guest threads joined, none left behind"),
        "{out}"
    );
    assert_json(&trace);
}

#[test]
fn the_c_host_under_sanitizers() {
    host("examples/c/host.c", true, &[("HOS_CORES", "4")]);
}

#[test]
fn every_zero_timeout_call_is_an_idle_poll() {
    let out = host("capi/tests/c/idle_polls.c", false, &[]);
    assert!(
        out.contains("every zero-timeout call was an idle poll"),
        "{out}"
    );
}

#[test]
fn every_call_answers_its_bad_inputs_with_their_codes() {
    let out = host("capi/tests/c/bad_input.c", false, &[]);
    assert!(out.contains("every bad input answered"), "{out}");
}

#[test]
fn bad_inputs_under_sanitizers() {
    host("capi/tests/c/bad_input.c", true, &[]);
}

#[test]
fn warnings_reach_stderr_without_a_log_sink() {
    let exe = compile("capi/tests/c/warnings.c", false);
    let out = run(&exe, &[("HOS_FLIGH", "0")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("every warning told"),
        "{stdout}{stderr}"
    );
    for line in [
        "hos: unknown switch HOS_FLIGH=0 (did you mean HOS_FLIGHT?)\n",
        "hos: HOS_FLIGHT=garbage is no boolean word: taken as on",
    ] {
        assert_eq!(
            stderr.matches(line).count(),
            1,
            "{line:?} once in:\n{stderr}"
        );
    }
    assert!(
        !stderr.contains("HOS_FLIGHT=quiet"),
        "HOS_LOG_STDERR=0:\n{stderr}"
    );
    assert!(!stderr.contains("HOS_FLIGHT=sunk"), "the sink's:\n{stderr}");
}

#[test]
fn the_cpp_host_does_every_job_once() {
    let trace = trace_path("cpp-host-trace.json");
    let out = host(
        "examples/cpp/host.cpp",
        false,
        &[("HOS_TRACE", trace.to_str().expect("UTF-8 path"))],
    );
    assert!(out.contains("60 frames, 600 jobs"), "{out}");
    assert!(out.contains("wait tree: 5 guest threads\n"), "{out}");
    assert!(
        out.contains("ModuleSystemWorker0 (priority 45, mask ") && out.contains(") waits on "),
        "{out}"
    );
    assert!(out.contains("critical path of 59 frames, mean "), "{out}");
    assert!(
        out.contains("guest threads joined, none left behind"),
        "{out}"
    );
    assert_json(&trace);
}

#[test]
fn the_cpp_host_under_sanitizers() {
    host("examples/cpp/host.cpp", true, &[("HOS_CORES", "3")]);
}

#[test]
fn the_readme_example_compiles_and_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let start = readme.find("```c\n").expect("a C example in the README") + "```c\n".len();
    let len = readme[start..].find("```").expect("its end");
    let dir = profile_dir().join("c-hosts");
    std::fs::create_dir_all(&dir).expect("output directory");
    let source = dir.join("readme.c");
    std::fs::write(&source, &readme[start..start + len]).expect("write readme.c");
    let exe = compile(source.to_str().expect("UTF-8 path"), false);
    let out = run(&exe, &[]);
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn attached_threads_and_their_kick_flag() {
    let out = host("capi/tests/c/attach.c", false, &[]);
    assert!(out.contains("attached threads checked"), "{out}");
}

#[test]
fn attached_threads_under_sanitizers() {
    host("capi/tests/c/attach.c", true, &[]);
}

#[test]
fn the_sdks_words_between_c_guest_threads() {
    let out = host("capi/tests/c/svc_words.c", false, &[]);
    assert!(out.contains("the SDK's words checked"), "{out}");
}

#[test]
fn the_sdks_words_under_sanitizers() {
    host("capi/tests/c/svc_words.c", true, &[]);
}

#[test]
fn the_diagnostics_from_c() {
    let out = host("capi/tests/c/diagnostics.c", false, &[]);
    assert!(out.contains("the diagnostics checked"), "{out}");
}

#[test]
fn the_diagnostics_under_sanitizers() {
    host("capi/tests/c/diagnostics.c", true, &[]);
}

#[test]
fn rwlock_barrier_tick_exit_and_pause_from_c() {
    let out = host("capi/tests/c/objects_and_activity.c", false, &[]);
    assert!(out.contains("objects and activity checked"), "{out}");
}

#[test]
fn rwlock_barrier_tick_exit_and_pause_under_sanitizers() {
    host("capi/tests/c/objects_and_activity.c", true, &[]);
}

#[test]
fn rwlock_barrier_and_pause_from_cpp() {
    let out = host("capi/tests/c/objects.cpp", false, &[]);
    assert!(out.contains("C++ objects checked"), "{out}");
}

#[test]
fn rwlock_barrier_and_pause_from_cpp_under_sanitizers() {
    host("capi/tests/c/objects.cpp", true, &[]);
}

#[test]
fn thread_roles_from_c() {
    let out = host("capi/tests/c/roles.c", false, &[]);
    assert!(out.contains("thread roles checked"), "{out}");
}

#[test]
fn thread_roles_under_sanitizers() {
    host("capi/tests/c/roles.c", true, &[]);
}

#[test]
fn the_deterministic_mode_from_c() {
    let out = host("capi/tests/c/det.c", false, &[]);
    assert!(out.contains("deterministic mode checked"), "{out}");
}

#[test]
fn the_deterministic_yields_from_c() {
    let out = host("capi/tests/c/det_yield.c", false, &[]);
    assert!(out.contains("deterministic yields checked"), "{out}");
}

#[test]
fn the_deterministic_build_id_and_entropy_from_c() {
    let out = host("capi/tests/c/det_build.c", false, &[]);
    assert!(
        out.contains("deterministic build id and entropy checked"),
        "{out}"
    );
}

#[test]
fn the_deterministic_softlock_report_from_c() {
    let out = host("capi/tests/c/det_softlock.c", false, &[]);
    assert!(out.contains("deterministic softlock checked"), "{out}");
}

#[test]
fn a_guided_schedule_from_c() {
    let out = host("capi/tests/c/det_guided.c", false, &[]);
    assert!(
        out.contains("deterministic guided schedule checked"),
        "{out}"
    );
}

#[test]
fn recording_and_replay_from_c() {
    let out = host("capi/tests/c/det_record.c", false, &[]);
    assert!(
        out.contains("deterministic record and replay checked"),
        "{out}"
    );
}
