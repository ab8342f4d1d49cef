//! A runtime that cannot start is an error the host handles, never a panic: the OS refusing
//! the reactor thread, or refusing the calibration's helper (a calibration that cannot
//! measure). The tests play the refusing OS through the runtime's one spawn function.

use crate::build_error::BuildError;
use crate::runtime::Runtime;
use crate::spawn;
use crate::{Calibration, Config};
use std::io;
use std::thread::JoinHandle;

fn refused(name: &'static str) -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        format!("{name} refused by the test"),
    )
}

fn refuse_all(name: &'static str, _: Box<dyn FnOnce() + Send>) -> io::Result<JoinHandle<()>> {
    Err(refused(name))
}

fn refuse_helper(name: &'static str, f: Box<dyn FnOnce() + Send>) -> io::Result<JoinHandle<()>> {
    match name {
        "hos-calibrate" => Err(refused(name)),
        _ => spawn::os(name, f),
    }
}

#[test]
fn a_refused_reactor_thread_is_a_build_error_naming_it() {
    let pinned = Config {
        calibration: Some(Calibration::default()),
        ..Config::default()
    };
    let err = Runtime::start_with(pinned, refuse_all).expect_err("no reactor, no runtime");
    match &err {
        BuildError::Thread { name, error } => {
            assert_eq!(*name, "hos-reactor");
            assert_eq!(error.kind(), io::ErrorKind::WouldBlock);
        }
        other => panic!("expected a thread error, got {other:?}"),
    }
    assert!(err.to_string().contains("hos-reactor"), "{err}");
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn a_calibration_that_cannot_measure_is_a_build_error() {
    let measuring = Config {
        calibration: None,
        ..Config::default()
    };
    let err = Runtime::start_with(measuring.clone(), refuse_helper).expect_err("no helper");
    assert!(matches!(err, BuildError::Calibration(_)), "{err:?}");
    assert!(
        err.to_string().contains("helper thread could not start"),
        "{err}"
    );
    // The same config starts when the OS lets it.
    let rt = Runtime::start_with(measuring, spawn::os).expect("a runtime");
    assert!(rt.calibration().timer_lateness_ns > 0 || crate::sys::KIND == "fallback");
    rt.shutdown();
}
