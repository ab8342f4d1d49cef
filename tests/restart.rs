//! A runtime can be started again: build and shut down runtimes with guest and host threads
//! blocked in every kind of wait; threads and descriptors return to where they started, and
//! resident memory stays within a few MB. One test in its own binary: it counts the process's
//! threads. `examples/restart` runs the full count with figures.

#[path = "../examples/restart/blocked.rs"]
mod blocked;
#[path = "../examples/restart/process.rs"]
mod process;

const CYCLES: usize = 40;

#[test]
fn forty_start_stop_cycles_leak_no_thread_no_descriptor() {
    let base = process::base_after(|| {
        for _ in 0..2 {
            blocked::Cycle::start(16, 2, true).stop();
        }
    });
    for i in 0..CYCLES {
        // One cycle in four measures the calibration (its helper thread joins too).
        blocked::Cycle::start(16, 2, i % 4 == 0).stop();
    }
    let end = process::settled(base);
    assert_eq!(end.threads, base.threads, "threads leaked");
    assert_eq!(end.fds, base.fds, "descriptors leaked");
    if let (Some(e), Some(b)) = (end.rss_kb, base.rss_kb) {
        assert!(e < b + 8 * 1024, "resident memory grew {} kB", e - b);
    }
}
