//! What the C ABI costs next to the Rust API, in one run: an event ping-pong between a host
//! thread and a guest thread through `libhos.so` (loaded with `dlopen`, called through its C
//! symbols as a C host does), the same ping-pong through the `hos` crate, the ping-pong between
//! two guest threads both ways, and `hos_checkpoint`
//! on a guest thread that nobody kicks, through `libhos.so`, from C linked against `libhos.a`
//! (`checkpoint.c`, a child process), and through the Rust API.
//!
//! `cargo bench -p hos-capi --bench abi` (it builds `libhos.so` and `libhos.a` with cargo, and
//! `checkpoint.c` with the system's `cc`, first). Where there is no cargo (a machine the
//! bench is carried to), `HOS_BENCH_PREBUILT=DIR` names a folder that holds a prebuilt
//! `libhos.so` and `checkpoint-bench`, and nothing is built. `capi/benches/bundle.sh DIR`
//! makes such a folder that runs on another x86_64 Linux whatever its C library (with the
//! loader and libraries from here; `checkpoint.c` linked static); `DIR/run --bench` runs it.
//!
//! | bench | what |
//! | --- | --- |
//! | `pingpong/abi` | host signals `ping`, guest waits for it and signals `pong`, host waits: one round trip, every call through the C ABI (handle lookups included) |
//! | `pingpong/rust` | the same round trip with `hos::os::Event`s and a `hos` guest thread |
//! | `pingpong/alternated` | the two, alternated round by round (41 rounds of 2,000 round trips): the ratio BENCHMARKS.md reads |
//!
//! For `pingpong/alternated` the host thread and both guests are pinned, the host to one
//! processor and the guests to one of another physical core, so that both arms run between
//! the same two processors: where the OS puts the threads of a spinning round trip moves it
//! by more than the boundary costs (unpinned, one build on the 16-core machine read 1.24x
//! and 1.43x in two runs). It prints each arm's waits a round trip too (spins caught, missed
//! and skipped, parks, virtual-core waits): a ratio between a spinning arm and a parking one
//! measures the spin gate, not the boundary.
//! | `guests/abi` | two guest threads: one signals `ping` and waits for `pong`, the other answers; one round trip, every call through the C ABI, each wait giving the virtual core back and taking it again |
//! | `guests/rust` | the same two guest threads through the `hos` crate |
//! | `checkpoint/abi` | `hos_checkpoint()` through `libhos.so` on a guest thread with no waiter for its core |
//! | `checkpoint/abi-static` | the same from C linked against `libhos.a` (an attached thread) |
//! | `checkpoint/kick-flag` | the inline test of generated code there: a load of the kick flag, no call |
//! | `checkpoint/rust` | `hos::svc::checkpoint()` on a guest thread |
//!
//! A shared library reaches its thread-locals through `__tls_get_addr`; a static one linked
//! into the executable does not, which is most of the difference between the two.
//!
//! Figures: BENCHMARKS.md.

#[path = "../../benches/alternate/mod.rs"]
mod alternate;

use alternate::{alternate, filtered_in, mean_trip_ns, print_waits, waits_of, Waits};
use criterion::{criterion_group, criterion_main, Criterion};
use std::ffi::{c_char, c_void, CStr};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::{Duration, Instant};

type Result_ = u32;
type Entry = unsafe extern "C" fn(*mut c_void);

/// The C symbols the bench calls, resolved from `libhos.so`.
struct Abi {
    runtime_new: unsafe extern "C" fn(*const c_void, *mut *mut c_void) -> Result_,
    runtime_shutdown: unsafe extern "C" fn(*mut c_void, i64) -> Result_,
    event_create: unsafe extern "C" fn(i32, *mut u32) -> Result_,
    event_signal: extern "C" fn(u32) -> Result_,
    event_wait: extern "C" fn(u32, i64) -> Result_,
    thread_spawn: unsafe extern "C" fn(
        *mut c_void,
        *const c_void,
        Option<Entry>,
        *mut c_void,
        *mut u32,
    ) -> Result_,
    thread_join: extern "C" fn(u32, i64) -> Result_,
    checkpoint: extern "C" fn(),
    stats_get: unsafe extern "C" fn(*const c_void, *mut StatsHead) -> Result_,
}

/// The head of `hos_stats` up to the wait counters, with room for the rest: a caller built
/// against an older header reads the fields it knows (`size` says how many bytes it has).
#[repr(C)]
struct StatsHead {
    size: u32,
    threads: u32,
    sleeps: [[u64; 4]; 5],
    bad_sleeps: u64,
    yields: u64,
    spins_caught: u64,
    spins_missed: u64,
    spins_skipped: u64,
    parks: u64,
    vcore_waits: u64,
    rest: [u64; 48],
}

/// The ABI runtime's wait counters.
fn abi_waits(rt: *mut c_void) -> Waits {
    // SAFETY: plain integers; zero is a valid value of each.
    let mut s: StatsHead = unsafe { std::mem::zeroed() };
    s.size = std::mem::size_of::<StatsHead>() as u32;
    // SAFETY: the live ABI runtime; `s` has `s.size` writable bytes.
    assert_eq!(unsafe { (abi().stats_get)(rt, &mut s) }, 0);
    waits_of!(s)
}

/// The thread id of the caller, for [`pin`].
fn tid() -> i32 {
    // SAFETY: a system call without arguments.
    unsafe { libc::gettid() }
}

/// The thread id a guest writes into `slot` as it starts, once it has.
fn started(slot: &AtomicI32) -> i32 {
    loop {
        match slot.load(Ordering::Acquire) {
            0 => std::thread::yield_now(),
            tid => return tid,
        }
    }
}

/// The processors the caller may run on.
fn affinity() -> libc::cpu_set_t {
    // SAFETY: a zeroed set, filled by the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set),
            0
        );
        set
    }
}

/// Keeps thread `tid` on the processors of `set`.
fn set_affinity(tid: i32, set: &libc::cpu_set_t) {
    // SAFETY: the call reads the set.
    assert_eq!(
        unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(set), set) },
        0
    );
}

/// Keeps thread `tid` on processor `cpu`.
fn pin(tid: i32, cpu: usize) {
    // SAFETY: a zeroed set is empty; CPU_SET writes within it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE (it came from a set).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set_affinity(tid, &set);
}

/// Two processors this process may run on, on different physical cores where there are such:
/// the host thread's and the guests', so that both ping-pongs run between the same two
/// processors (where the OS happens to put a thread moves a spinning round trip by more than
/// the boundary costs). None on a machine with one processor.
fn two_processors() -> Option<(usize, usize)> {
    let set = affinity();
    let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` < CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    let host = *allowed.first()?;
    let siblings = std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{host}/topology/thread_siblings_list"
    ))
    .unwrap_or_default();
    let sibling = |c: usize| {
        siblings
            .trim()
            .split(',')
            .any(|part| match part.split_once('-') {
                Some((a, b)) => {
                    a.parse().is_ok_and(|a: usize| a <= c) && b.parse().is_ok_and(|b: usize| c <= b)
                }
                None => part.parse() == Ok(c),
            })
    };
    let guest = allowed.iter().copied().find(|&c| c != host && !sibling(c));
    Some((host, guest.or_else(|| allowed.get(1).copied())?))
}

/// The profile directory of this bench's build (`target/release`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("bench executable");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_path_buf()
}

/// The function `name` of `lib`, as the function pointer type `F`.
///
/// # Safety
/// `F` is a function pointer type matching the symbol's C signature.
unsafe fn sym<F: Copy>(lib: *mut c_void, name: &CStr) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: a symbol of the loaded library, by its C name.
    let p = unsafe { libc::dlsym(lib, name.as_ptr() as *const c_char) };
    assert!(!p.is_null(), "{name:?} missing");
    // SAFETY: a function pointer of the caller's type (the caller's promise), same size.
    unsafe { std::mem::transmute_copy(&p) }
}

/// The folder of prebuilt `libhos.so` and `checkpoint-bench` (HOS_BENCH_PREBUILT), if named.
fn prebuilt() -> Option<PathBuf> {
    std::env::var_os("HOS_BENCH_PREBUILT").map(PathBuf::from)
}

/// The prebuilt `libhos.so`, else one built now with cargo (with `libhos.a`); its path.
fn shared_library() -> PathBuf {
    if let Some(dir) = prebuilt() {
        return dir.join("libhos.so");
    }
    let profile = profile_dir();
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "hos-capi",
            "--lib",
            "--target-dir",
        ])
        .arg(profile.parent().expect("target directory"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo build -p hos-capi");
    profile.join("libhos.so")
}

/// Loads `libhos.so` (see [`shared_library`]) and resolves the bench's symbols, once.
fn abi() -> &'static Abi {
    static ABI: OnceLock<Abi> = OnceLock::new();
    ABI.get_or_init(|| {
        let path = shared_library();
        let path = std::ffi::CString::new(path.to_str().expect("UTF-8 path")).expect("no NUL");
        // SAFETY: loading libhos (built now, or prebuilt from this checkout); it stays loaded
        // for the process.
        let lib = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!lib.is_null(), "dlopen libhos.so");
        // SAFETY (each use): the symbol has the signature hos.h declares for it, which is
        // the field's type.
        unsafe {
            Abi {
                runtime_new: sym(lib, c"hos_runtime_new"),
                runtime_shutdown: sym(lib, c"hos_runtime_shutdown"),
                event_create: sym(lib, c"hos_event_create"),
                event_signal: sym(lib, c"hos_event_signal"),
                event_wait: sym(lib, c"hos_event_wait"),
                thread_spawn: sym(lib, c"hos_thread_spawn"),
                thread_join: sym(lib, c"hos_thread_join"),
                checkpoint: sym(lib, c"hos_checkpoint"),
                stats_get: sym(lib, c"hos_stats_get"),
            }
        }
    })
}

/// What a guest thread spawned through the ABI is told: the events, and the stop flag; it
/// writes its thread id.
struct PingPong {
    ping: u32,
    pong: u32,
    stop: AtomicBool,
    tid: AtomicI32,
}

unsafe extern "C" fn abi_guest(arg: *mut c_void) {
    // SAFETY: the bench's PingPong, alive until this thread is joined.
    let p = unsafe { &*(arg as *const PingPong) };
    p.tid.store(tid(), Ordering::Release);
    let abi = abi();
    while (abi.event_wait)(p.ping, -1) == 0 && !p.stop.load(Ordering::Acquire) {
        (abi.event_signal)(p.pong);
    }
}

/// What the driving guest thread of `guests/abi` is told: the events, and its jobs.
struct Driver {
    pp: &'static PingPong,
    jobs: mpsc::Receiver<Job>,
}

unsafe extern "C" fn abi_driver(arg: *mut c_void) {
    // SAFETY: the bench's Driver, alive until this thread is joined.
    let d = unsafe { &*(arg as *const Driver) };
    let abi = abi();
    while let Ok((n, answer)) = d.jobs.recv() {
        let t0 = Instant::now();
        for _ in 0..n {
            (abi.event_signal)(d.pp.ping);
            (abi.event_wait)(d.pp.pong, -1);
        }
        let _ = answer.send(t0.elapsed());
    }
}

/// The ABI runtime and its handles, made once.
struct AbiRig {
    rt: *mut c_void,
    pp: &'static PingPong,
}

fn abi_rig() -> AbiRig {
    let abi = abi();
    let mut rt = std::ptr::null_mut();
    let (mut ping, mut pong) = (0, 0);
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!((abi.runtime_new)(std::ptr::null(), &mut rt), 0);
        assert_eq!((abi.event_create)(1, &mut ping), 0);
        assert_eq!((abi.event_create)(1, &mut pong), 0);
    }
    let pp: &'static PingPong = Box::leak(Box::new(PingPong {
        ping,
        pong,
        stop: AtomicBool::new(false),
        tid: AtomicI32::new(0),
    }));
    AbiRig { rt, pp }
}

fn pingpong(c: &mut Criterion) {
    let abi = abi();
    let mut g = c.benchmark_group("pingpong");
    g.measurement_time(Duration::from_secs(5));

    let rig = abi_rig();
    let mut guest = 0;
    // SAFETY: the runtime, default params (NULL), a Rust entry with a live argument.
    let arg = rig.pp as *const PingPong as *mut c_void;
    assert_eq!(
        unsafe { (abi.thread_spawn)(rig.rt, std::ptr::null(), Some(abi_guest), arg, &mut guest) },
        0
    );
    let abi_trip = || {
        (abi.event_signal)(rig.pp.ping);
        (abi.event_wait)(rig.pp.pong, -1)
    };

    let rt = hos_rs::Runtime::builder().build().expect("runtime");
    let ping = Arc::new(hos_rs::os::Event::new(hos_rs::os::ClearMode::Auto));
    let pong = Arc::new(hos_rs::os::Event::new(hos_rs::os::ClearMode::Auto));
    let stop = Arc::new(AtomicBool::new(false));
    let rust_tid = Arc::new(AtomicI32::new(0));
    let (gping, gpong, gstop, gtid) = (ping.clone(), pong.clone(), stop.clone(), rust_tid.clone());
    let rust_guest = rt
        .thread()
        .spawn(move || {
            gtid.store(tid(), Ordering::Release);
            while gping.wait().is_ok() && !gstop.load(Ordering::Acquire) {
                gpong.signal();
            }
        })
        .expect("guest");
    let rust_trip = || {
        ping.signal();
        pong.wait().is_ok()
    };

    g.bench_function("abi", |b| b.iter(abi_trip));
    g.bench_function("rust", |b| b.iter(rust_trip));
    g.finish();
    let case = "pingpong/alternated";
    if filtered_in(case) {
        let (abi_tid, rust_tid) = (started(&rig.pp.tid), started(&rust_tid));
        let unpinned = affinity();
        if let Some((host, guest)) = two_processors() {
            pin(tid(), host);
            pin(abi_tid, guest);
            pin(rust_tid, guest);
            eprintln!(
                "pingpong/alternated: the host thread on processor {host}, the guests on {guest}"
            );
        }
        let (abi0, rust0) = (abi_waits(rig.rt), waits_of!(rt.stats()));
        alternate(case, ["rust", "abi"], 41, |i| {
            if i == 0 {
                mean_trip_ns(2_000, || {
                    let _ = rust_trip();
                })
            } else {
                mean_trip_ns(2_000, || {
                    let _ = abi_trip();
                })
            }
        });
        let trips = 41 * 2_500;
        print_waits(case, "rust", rust0, waits_of!(rt.stats()), trips);
        print_waits(case, "abi", abi0, abi_waits(rig.rt), trips);
        for t in [tid(), abi_tid, rust_tid] {
            set_affinity(t, &unpinned);
        }
    }

    rig.pp.stop.store(true, Ordering::Release);
    (abi.event_signal)(rig.pp.ping);
    assert_eq!((abi.thread_join)(guest, -1), 0);
    stop.store(true, Ordering::Release);
    ping.signal();
    rust_guest.join().expect("joined");

    guests(c, &rt);
    checkpoint(c, &rig, &rt);
    // SAFETY: the ABI runtime, shut down once (it is never freed: the rig is static).
    unsafe { (abi.runtime_shutdown)(rig.rt, -1) };
    rt.shutdown();
}

/// A request to a timing guest thread: run `n` checkpoints (or round trips), answer the time
/// they took.
type Job = (u64, mpsc::Sender<Duration>);

/// `guests/abi` and `guests/rust`: a driving guest thread times `n` round trips with an
/// answering one, on a runtime of its own for the ABI and on `rt` for the crate.
fn guests(c: &mut Criterion, rt: &hos_rs::Runtime) {
    let abi = abi();
    let mut g = c.benchmark_group("guests");
    g.measurement_time(Duration::from_secs(5));

    let rig = abi_rig();
    let (jobs, rx) = mpsc::channel::<Job>();
    let driver: &'static Driver = Box::leak(Box::new(Driver {
        pp: rig.pp,
        jobs: rx,
    }));
    let (mut answerer, mut driving) = (0, 0);
    let pp = rig.pp as *const PingPong as *mut c_void;
    let d = driver as *const Driver as *mut c_void;
    // SAFETY: the runtime, default params (NULL), Rust entries with live arguments.
    unsafe {
        assert_eq!(
            (abi.thread_spawn)(rig.rt, std::ptr::null(), Some(abi_guest), pp, &mut answerer),
            0
        );
        assert_eq!(
            (abi.thread_spawn)(rig.rt, std::ptr::null(), Some(abi_driver), d, &mut driving),
            0
        );
    }
    g.bench_function("abi", |b| b.iter_custom(|n| timed(&jobs, n)));
    drop(jobs);
    assert_eq!((abi.thread_join)(driving, -1), 0);
    rig.pp.stop.store(true, Ordering::Release);
    (abi.event_signal)(rig.pp.ping);
    assert_eq!((abi.thread_join)(answerer, -1), 0);
    // SAFETY: this rig's runtime, shut down once (never freed: the rig is leaked).
    unsafe { (abi.runtime_shutdown)(rig.rt, -1) };

    let ping = Arc::new(hos_rs::os::Event::new(hos_rs::os::ClearMode::Auto));
    let pong = Arc::new(hos_rs::os::Event::new(hos_rs::os::ClearMode::Auto));
    let stop = Arc::new(AtomicBool::new(false));
    let answerer = {
        let (ping, pong, stop) = (ping.clone(), pong.clone(), stop.clone());
        rt.thread()
            .spawn(move || {
                while ping.wait().is_ok() && !stop.load(Ordering::Acquire) {
                    pong.signal();
                }
            })
            .expect("answering guest")
    };
    let (jobs, rx) = mpsc::channel::<Job>();
    let driving = {
        let (ping, pong) = (ping.clone(), pong.clone());
        rt.thread()
            .spawn(move || {
                while let Ok((n, answer)) = rx.recv() {
                    let t0 = Instant::now();
                    for _ in 0..n {
                        ping.signal();
                        let _ = pong.wait();
                    }
                    let _ = answer.send(t0.elapsed());
                }
            })
            .expect("driving guest")
    };
    g.bench_function("rust", |b| b.iter_custom(|n| timed(&jobs, n)));
    drop(jobs);
    driving.join().expect("joined");
    stop.store(true, Ordering::Release);
    ping.signal();
    answerer.join().expect("joined");
    g.finish();
}

unsafe extern "C" fn abi_timer(arg: *mut c_void) {
    // SAFETY: the bench's receiver, alive until this thread is joined.
    let jobs = unsafe { &*(arg as *const mpsc::Receiver<Job>) };
    let checkpoint = abi().checkpoint;
    while let Ok((n, answer)) = jobs.recv() {
        let t0 = Instant::now();
        for _ in 0..n {
            checkpoint();
        }
        let _ = answer.send(t0.elapsed());
    }
}

/// Times `n` checkpoints on a guest thread through `jobs`.
fn timed(jobs: &mpsc::Sender<Job>, n: u64) -> Duration {
    let (tx, rx) = mpsc::channel();
    jobs.send((n, tx)).expect("timer thread");
    rx.recv().expect("timed")
}

fn checkpoint(c: &mut Criterion, rig: &AbiRig, rt: &hos_rs::Runtime) {
    let abi = abi();
    let mut g = c.benchmark_group("checkpoint");

    let (jobs, rx) = mpsc::channel::<Job>();
    let rx: &'static mpsc::Receiver<Job> = Box::leak(Box::new(rx));
    let mut guest = 0;
    let arg = rx as *const mpsc::Receiver<Job> as *mut c_void;
    // SAFETY: as for the ping-pong guest.
    assert_eq!(
        unsafe { (abi.thread_spawn)(rig.rt, std::ptr::null(), Some(abi_timer), arg, &mut guest) },
        0
    );
    g.bench_function("abi", |b| b.iter_custom(|n| timed(&jobs, n)));
    drop(jobs);
    assert_eq!((abi.thread_join)(guest, -1), 0);

    let (jobs, rx) = mpsc::channel::<Job>();
    let guest = rt
        .thread()
        .spawn(move || {
            while let Ok((n, answer)) = rx.recv() {
                let t0 = Instant::now();
                for _ in 0..n {
                    hos_rs::svc::checkpoint();
                }
                let _ = answer.send(t0.elapsed());
            }
        })
        .expect("guest");
    g.bench_function("rust", |b| b.iter_custom(|n| timed(&jobs, n)));
    drop(jobs);
    guest.join().expect("joined");

    let mut c_side = StaticSide::start();
    g.bench_function("abi-static", |b| b.iter_custom(|n| c_side.timed(0, n)));
    g.bench_function("kick-flag", |b| b.iter_custom(|n| c_side.timed(1, n)));
    g.finish();
}

/// `checkpoint.c`, built against `libhos.a` and running: it times loops on request.
struct StaticSide {
    child: std::process::Child,
    answers: BufReader<std::process::ChildStdout>,
}

/// Builds `checkpoint.c` against `libhos.a` with the system's `cc`; its path.
fn build_checkpoint_bench() -> PathBuf {
    let profile = profile_dir();
    let exe = profile.join("checkpoint-bench");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let status = Command::new("cc")
        .args(["-std=c11", "-O2", "-pthread", "-I"])
        .arg(format!("{root}/include"))
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/benches/checkpoint.c"))
        .arg(profile.join("libhos.a"))
        .args([
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
            "-lc",
            "-o",
        ])
        .arg(&exe)
        .status()
        .expect("cc runs");
    assert!(status.success(), "compiling checkpoint.c");
    exe
}

impl StaticSide {
    fn start() -> StaticSide {
        let exe = prebuilt().map_or_else(build_checkpoint_bench, |d| d.join("checkpoint-bench"));
        let mut child = Command::new(exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("checkpoint-bench starts");
        let answers = BufReader::new(child.stdout.take().expect("stdout"));
        StaticSide { child, answers }
    }

    /// Times `n` iterations of `mode` in the child.
    fn timed(&mut self, mode: u32, n: u64) -> Duration {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{mode} {n}").expect("request");
        stdin.flush().expect("flush");
        let mut line = String::new();
        self.answers.read_line(&mut line).expect("answer");
        Duration::from_nanos(line.trim().parse().expect("nanoseconds"))
    }
}

impl Drop for StaticSide {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// The group criterion_main! runs (criterion_group! makes a public fn no doc comment reaches).
mod group {
    use super::*;
    criterion_group!(benches, pingpong);
}
criterion_main!(group::benches);
