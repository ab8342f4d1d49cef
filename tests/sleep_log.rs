//! HOS_SLEEP_LOG: every guest sleep is traced (thread, asked, mode, path, lateness); host
//! sleeps are not, and nothing is traced with the switch off. Its own binary: it installs the
//! process's global subscriber.

use hos::{Calibration, Runtime};
use std::time::Duration;

mod log_capture;
use log_capture::Log;

fn run(sleep_log: bool) {
    let rt = Runtime::builder()
        .config(hos::Config {
            sleep_log,
            vcores: false,
            ..Default::default()
        })
        .calibration(Calibration::default())
        .build()
        .unwrap();
    rt.thread()
        .name("ModuleSystemWorker3")
        .spawn(|| {
            hos::svc::sleep_thread(20_000);
            hos::svc::sleep_thread(-7);
        })
        .unwrap()
        .join()
        .unwrap();
    rt.host_sleep(Duration::from_micros(30));
    rt.shutdown();
}

#[test]
fn sleep_log_traces_guest_sleeps_only_when_on() {
    let log = Log::install();
    let lines = || log.lines_with("guest sleep");
    run(false);
    assert!(lines().is_empty(), "switch off, yet {:?}", lines());
    run(true);
    let got = lines();
    assert_eq!(
        got.len(),
        1,
        "one guest sleep (not the bad one, not the host's): {got:?}"
    );
    for part in [
        "ModuleSystemWorker3",
        "asked_ns=20000",
        "mode=Reactor",
        "path=",
        "late_ns=",
    ] {
        assert!(got[0].contains(part), "{part} missing from {:?}", got[0]);
    }
}
