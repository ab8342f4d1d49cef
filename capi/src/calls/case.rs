//! One case: a config built with good and bad calls, a runtime booted from it, one to three
//! program threads (host threads, which may attach themselves, and guest threads spawned
//! through `hos_thread_spawn`) calling the C functions at once, then a shutdown without limit
//! that must end every wait, and the case's handles closed and its runtime freed.
//!
//! Invariant: a case leaves nothing behind: every thread it started has ended, every
//! handle it made is closed, its runtime is freed; so cases are independent and a process
//! can run any number of them (libFuzzer runs them back to back).

use super::ctx::{Ctx, Kind};
use super::draw::Draw;
use super::table::{sink_findings, Call, CALLS};
use super::world::{message, World};
use crate::config::*;
use crate::result::*;
use crate::runtime::hos_runtime_shutdown;
use crate::runtime::{hos_runtime, hos_runtime_cores, hos_runtime_free, hos_runtime_new};
use crate::thread::{hos_thread_params, hos_thread_spawn};
use hos_rs::internal::lock;
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The case in progress, for a watchdog's report.
static CURRENT: Mutex<Option<Arc<World>>> = Mutex::new(None);

/// The traces of the case in progress, if one is.
pub fn in_progress() -> Option<String> {
    lock(&CURRENT).as_ref().map(|w| w.describe())
}

/// How long the driver waits for the programs before it shuts the runtime down: long enough
/// for most to finish, short enough that waits nobody ends are ended by the shutdown.
const SETTLE_MAX: Duration = Duration::from_millis(25);

/// The calls that build the config, made by the driver (main thread) before the runtime.
static SETUP: &[Call] = &[
    Call {
        name: "hos_config_new",
        codes: &[HOS_RESULT_INVALID_POINTER],
        run: |c| {
            let out = c.out::<*mut hos_config>();
            // SAFETY: as in `call!`; a config made here is freed at once.
            unsafe {
                let r = hos_config_new(out);
                if r == 0 {
                    hos_config_free(out.read());
                }
                r
            }
        },
    },
    Call {
        name: "hos_config_set",
        codes: &[
            HOS_RESULT_INVALID_POINTER,
            HOS_RESULT_INVALID_UTF8,
            HOS_RESULT_UNKNOWN_KEY,
            HOS_RESULT_INVALID_VALUE,
        ],
        // SAFETY: as in `call!`; the strings are static and NUL-terminated.
        run: |c| unsafe { hos_config_set(c.config(false), c.key(), c.value()) },
    },
    Call {
        name: "hos_config_logical_processors",
        codes: &[HOS_RESULT_INVALID_POINTER],
        // SAFETY: as in `call!`.
        run: |c| unsafe { hos_config_logical_processors(c.config(false), c.u32()) },
    },
    Call {
        name: "hos_config_calibration",
        codes: &[
            HOS_RESULT_INVALID_POINTER,
            HOS_RESULT_INVALID_SIZE,
            HOS_RESULT_INVALID_VALUE,
        ],
        // SAFETY: as in `call!`; the struct is the context's own.
        run: |c| unsafe { hos_config_calibration(c.config(false), c.calibration()) },
    },
    Call {
        name: "hos_config_read_env",
        codes: &[HOS_RESULT_INVALID_POINTER, HOS_RESULT_INVALID_VALUE],
        // SAFETY: as in `call!`.
        run: |c| unsafe { hos_config_read_env(c.config(false)) },
    },
    Call {
        name: "hos_config_free",
        codes: &[],
        run: |_| {
            // SAFETY: NULL is ignored.
            unsafe { hos_config_free(std::ptr::null_mut()) };
            0
        },
    },
    Call {
        name: "hos_runtime_new",
        codes: &[
            HOS_RESULT_INVALID_POINTER,
            HOS_RESULT_INVALID_VALUE,
            HOS_RESULT_INVALID_STATE,
        ],
        run: |c| {
            let cfg = c.config(true);
            let out = c.out::<*mut hos_runtime>();
            // SAFETY: as in `call!`.
            let r = unsafe { hos_runtime_new(cfg, out) };
            if r == 0 {
                // SAFETY: the runtime just made.
                let rt = unsafe { out.read() };
                if let Err(extra) = c.world.rt.compare_exchange(
                    std::ptr::null_mut(),
                    rt,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    // A second runtime: not the case's; shut down and freed at once.
                    // SAFETY: made above, freed once.
                    unsafe { hos_runtime_free(extra) };
                }
            }
            r
        },
    },
];

/// A program thread's run: its calls, then its end counted.
fn program(mut ctx: Ctx) {
    let world = ctx.world.clone();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ctx.play(CALLS)));
    if ran.is_err() {
        world.finding("the fuzzer's own code panicked on a program thread".into());
    }
    // Release: the driver's Acquire load sees the program's findings and handles.
    world.running.fetch_sub(1, Ordering::Release);
}

/// The entry of a guest program thread: `arg` is its boxed context.
extern "C-unwind" fn guest(arg: *mut c_void) {
    // SAFETY: boxed by `run` for this thread alone.
    let ctx = unsafe { Box::from_raw(arg.cast::<Ctx>()) };
    program(*ctx);
}

/// Runs the case `bytes` describe (any bytes do); its broken rules, each with the calls of
/// every thread, if any.
pub fn run(bytes: &[u8]) -> Result<(), String> {
    let world = Arc::new(World::new());
    *lock(&CURRENT) = Some(world.clone());
    let mut main = Ctx::new(Draw::new(bytes), world.clone(), Kind::Host, "driver".into());
    let hosts = 1 + main.draw().below(2);
    let guests = main.draw().below(3);
    let settle = SETTLE_MAX * u32::from(main.draw().byte()) / 255;
    let unbounded = main.draw().below(2) == 0;

    setup(&mut main);
    let rt = world.rt();
    let mut draws = main.take_draw().split(hosts + guests).into_iter();
    let mut host_threads = Vec::new();
    for i in 0..hosts {
        let ctx = Ctx::new(
            draws.next().unwrap_or(Draw::new(&[])),
            world.clone(),
            Kind::Host,
            format!("host {i}"),
        );
        // Relaxed: the count is read by this thread, and the program's decrement is Release.
        world.running.fetch_add(1, Ordering::Relaxed);
        host_threads.push(std::thread::spawn(move || program(ctx)));
    }
    for i in 0..guests {
        let draw = draws.next().unwrap_or(Draw::new(&[]));
        spawn_guest(&world, rt, draw, i);
    }

    let start = Instant::now();
    // Acquire: see `program`.
    while world.running.load(Ordering::Acquire) > 0 && start.elapsed() < settle {
        std::thread::sleep(Duration::from_micros(200));
    }
    if !rt.is_null() {
        shut_down(&mut main, rt, unbounded);
    }
    for t in host_threads {
        if t.join().is_err() {
            world.finding("a host program thread panicked".into());
        }
    }
    // A program's own bounded shutdown may have detached guest threads: they end by
    // themselves, soon (every wait of theirs ends at once now).
    if !settled(|| world.running.load(Ordering::Acquire) == 0) {
        world.finding("a guest program thread still runs after the shutdown".into());
    }
    for h in std::mem::take(&mut *lock(&world.live)) {
        let r = crate::svc::hos_svc_close_handle(h);
        world.record(
            "hos_svc_close_handle",
            r,
            &[],
            false,
            &format!("close at the end ({h:#x})"),
        );
        lock(&world.closed).push(h);
    }
    if !rt.is_null() {
        // SAFETY: the case's runtime, freed once; no thread of the case uses it any more.
        unsafe { hos_runtime_free(rt) };
    }
    world.retire();
    for f in sink_findings() {
        world.finding(f);
    }
    *lock(&CURRENT) = None;
    let findings = std::mem::take(&mut *lock(&world.findings));
    match findings.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "{}\ncalls:\n{}",
            findings.join("\n"),
            world.describe()
        )),
    }
}

/// Builds the config with the fuzzed calls and boots the case's runtime from it (or not:
/// then the programs run with no runtime).
fn setup(main: &mut Ctx) {
    let world = main.world.clone();
    let mut cfg = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    let r = unsafe { hos_config_new(&mut cfg) };
    world.record("hos_config_new", r, &[], false, "hos_config_new(out=ok)");
    main.cfg = cfg;
    for _ in 0..main.draw().below(6) {
        let i = main.draw().below(SETUP.len() - 1);
        main.call(&SETUP[i]);
    }
    // No flight recorder dumps into the temp folder from the fuzzer's runtimes.
    // SAFETY: the case's config and static strings.
    let r = unsafe { hos_config_set(cfg, c"HOS_FLIGHT".as_ptr(), c"0".as_ptr()) };
    world.record(
        "hos_config_set",
        r,
        &[],
        false,
        "hos_config_set(HOS_FLIGHT=0)",
    );
    let runtime_new = &SETUP[SETUP.len() - 1];
    main.call(runtime_new);
    if world.rt().is_null() && main.draw().below(4) != 0 {
        main.call(runtime_new);
    }
    // SAFETY: made above, freed once; the runtime does not need it.
    unsafe { hos_config_free(cfg) };
    main.cfg = std::ptr::null_mut();
}

/// Spawns a guest program thread through `hos_thread_spawn`.
fn spawn_guest(world: &Arc<World>, rt: *mut hos_runtime, mut draw: Draw, i: usize) {
    let mut cores = 1;
    // SAFETY: the case's runtime (or NULL: InvalidPointer, and one core assumed).
    let _ = unsafe { hos_runtime_cores(rt, &mut cores) };
    let params = hos_thread_params {
        size: std::mem::size_of::<hos_thread_params>() as u32,
        name: c"FuzzGuest".as_ptr(),
        priority: i32::from(draw.byte() % 64),
        ideal_core: -2,
        core_mask: (1 << cores) - 1,
        role: crate::role::HOS_ROLE_AUTO,
    };
    let ctx = Box::new(Ctx::new(
        draw,
        world.clone(),
        Kind::Guest,
        format!("guest {i}"),
    ));
    let arg = Box::into_raw(ctx).cast::<c_void>();
    // Relaxed: as for the host threads.
    world.running.fetch_add(1, Ordering::Relaxed);
    let mut h = 0;
    // SAFETY: the case's runtime (or NULL), valid params and out-pointer; `guest` takes
    // `arg` over if the spawn succeeds.
    let r = unsafe { hos_thread_spawn(rt, &params, Some(guest), arg, &mut h) };
    // No runtime, a runtime with fewer cores, or one a program shut down already.
    let codes = [
        HOS_RESULT_INVALID_POINTER,
        HOS_RESULT_INVALID_CORE_ID,
        HOS_RESULT_INVALID_STATE,
    ];
    world.record(
        "hos_thread_spawn",
        r,
        &codes,
        false,
        "spawn a guest program",
    );
    match r {
        0 => world.made(h),
        _ => {
            // SAFETY: not taken over: the entry never runs on a refused spawn.
            drop(unsafe { Box::from_raw(arg.cast::<Ctx>()) });
            world.running.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// How long the threads a program's bounded shutdown detached may take to end.
const DETACHED_END: Duration = Duration::from_secs(10);

/// Whether `done` holds within [`DETACHED_END`].
fn settled(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > DETACHED_END {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// The case's shutdown: it must end every wait and leave no thread behind.
fn shut_down(main: &mut Ctx, rt: *mut hos_runtime, unbounded: bool) {
    let world = main.world.clone();
    let timeout = if unbounded { -1 } else { 10_000_000_000 };
    // SAFETY: the case's runtime, not freed.
    let r = unsafe { hos_runtime_shutdown(rt, timeout) };
    let text = format!("hos_runtime_shutdown(t={timeout}) at the end");
    world.record("hos_runtime_shutdown", r, &[], false, &text);
    if r != 0 {
        world.finding(format!("the shutdown left threads behind: {}", message()));
    }
}
