//! HOS_TLS_TRACE: each guest thread logs its name, priority, ideal core and mask when it
//! starts. Its own binary: it installs the process's global subscriber.

use hos::{Calibration, Runtime};
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn tls_trace_logs_each_thread_start() {
    let buf = Buf::default();
    let writer = buf.clone();
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .init();
    let rt = Runtime::builder()
        .config(hos_runtime::Config {
            tls_trace: true,
            ..Default::default()
        })
        .calibration(Calibration::default())
        .build()
        .unwrap();
    rt.thread()
        .name("Presentation Thread")
        .priority(17)
        .core_mask(0b1010)
        .spawn(|| ())
        .unwrap()
        .join()
        .unwrap();
    rt.shutdown();
    let log = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("guest thread starts"))
        .unwrap_or_else(|| panic!("no start line in {log:?}"));
    for part in [
        "Presentation Thread",
        "priority=17",
        "ideal_core=1",
        "core_mask=0xa",
    ] {
        assert!(line.contains(part), "{part} missing from {line:?}");
    }
}
