//! The watchdog: a guest wait past HOS_FLIGHT_WAIT_MS is dumped once, by the watchdog, under
//! the guest's own name; a host's pause is no wait; the watchdog ends with its runtime.

use super::common::{guest, wait_until};
use crate::runtime::Runtime;
use crate::{Builder, Calibration, Config};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A fresh dump folder for test `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hos-watchdog-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A runtime that dumps into `dir` any guest wait of 20 ms or more.
fn runtime(dir: &Path) -> Runtime {
    Builder::<Runtime>::new()
        .config(Config {
            flight: true,
            flight_dir: Some(dir.to_path_buf()),
            flight_wait_ms: 20,
            calibration: Some(Calibration::default()),
            ..Config::default()
        })
        .build()
        .expect("valid config")
}

/// The dumps in `dir`, by name.
fn dumps(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out
}

#[test]
fn a_guest_wait_past_the_bound_is_dumped_once_under_the_guests_name() {
    let dir = scratch("once");
    let rt = runtime(&dir);
    // The guest's OS thread has no name: the dump names it by its guest name all the same.
    guest(&rt, "Dozer", || crate::sleep::sleep_current(300_000_000));
    let files = dumps(&dir);
    assert_eq!(files.len(), 1, "one wait, one dump: {files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.contains("Dozer waited past HOS_FLIGHT_WAIT_MS"),
        "{text}"
    );
    assert!(text.contains("wait_tree"), "the dump holds the wait tree");
    rt.shutdown();
}

#[test]
fn a_dump_folder_that_is_missing_is_made() {
    let dir = scratch("made").join("made").join("here");
    let rt = runtime(&dir);
    guest(&rt, "Dozer", || crate::sleep::sleep_current(100_000_000));
    assert_eq!(dumps(&dir).len(), 1, "dumped into the folder it made");
    rt.shutdown();
}

#[test]
fn the_watchdog_ends_with_its_runtime() {
    let dir = scratch("ends");
    let rt = runtime(&dir);
    let state = rt.reactor().shared_weak();
    drop(rt);
    // The watchdog's timer holds the reactor's state: it is gone once the watchdog ended.
    wait_until(|| state.strong_count() == 0);
    assert!(dumps(&dir).is_empty());
}

#[test]
fn a_paused_thread_is_no_overlong_wait() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = scratch("paused");
    let rt = runtime(&dir);
    let rec = rt.register_thread(&crate::thread::ThreadSpec {
        name: "Paused".into(),
        priority: 44,
        core_mask: 0b11_1111,
        ideal_core: 0,
        role: crate::role::Role::Auto,
    });
    let stop = Arc::new(AtomicBool::new(false));
    let guest = {
        let (rt, rec, stop) = (rt.clone(), rec.clone(), stop.clone());
        std::thread::spawn(move || {
            let _ctx = crate::context::enter(&rt, rec.clone());
            // Relaxed: a flag; the join orders everything else.
            while !stop.load(Ordering::Relaxed) {
                rt.pause_point(&rec);
                std::thread::yield_now();
            }
        })
    };
    assert!(rt.ask_pause(&rec));
    assert!(rt.wait_paused(&rec, None));
    // Five bounds and more: a wait this long would be dumped.
    std::thread::sleep(Duration::from_millis(120));
    assert!(rt.lift_pause(&rec));
    stop.store(true, Ordering::Relaxed);
    guest.join().unwrap();
    assert!(dumps(&dir).is_empty(), "{:?}", dumps(&dir));
    rt.shutdown();
}
