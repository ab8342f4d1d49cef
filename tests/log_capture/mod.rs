//! Captures what the process's tracing subscriber writes, for the tests of the log switches
//! (HOS_TLS_TRACE, HOS_SLEEP_LOG). Each such test is its own binary: the subscriber is global.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// What the subscriber wrote so far.
#[derive(Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    /// Installs the process's subscriber, writing plain text here.
    pub(crate) fn install() -> Log {
        let log = Log::default();
        let writer = log.clone();
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .init();
        log
    }

    /// The lines written so far that contain `needle`.
    pub(crate) fn lines_with(&self, needle: &str) -> Vec<String> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .filter(|l| l.contains(needle))
            .map(String::from)
            .collect()
    }
}
