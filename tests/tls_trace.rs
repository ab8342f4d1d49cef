//! HOS_TLS_TRACE: each guest thread logs its name, role, priority, ideal core and mask when
//! it starts. Its own binary: it installs the process's global subscriber.

use hos::{Calibration, Runtime};

mod log_capture;
use log_capture::Log;

#[test]
fn tls_trace_logs_each_thread_start() {
    let log = Log::install();
    let rt = Runtime::builder()
        .config(hos::Config {
            tls_trace: true,
            ..Default::default()
        })
        .calibration(Calibration::default())
        .build()
        .unwrap();
    rt.thread()
        .name("Presentation Thread")
        .role(hos::thread::Role::SerialFirst)
        .priority(17)
        .core_mask(0b1010)
        .spawn(|| ())
        .unwrap()
        .join()
        .unwrap();
    rt.shutdown();
    let lines = log.lines_with("guest thread starts");
    let line = lines
        .first()
        .unwrap_or_else(|| panic!("no start line in the log"));
    for part in [
        "Presentation Thread",
        "serial-first",
        "priority=17",
        "ideal_core=1",
        "core_mask=0xa",
    ] {
        assert!(line.contains(part), "{part} missing from {line:?}");
    }
}
