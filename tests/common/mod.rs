//! Helpers shared by the guest-semantics tests.

use hos::{Calibration, Runtime};
use std::sync::OnceLock;

/// One runtime for the whole test binary, never shut down (other tests' waits use it), with
/// a pinned calibration so that no test measures the machine.
pub(crate) fn rt() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        Runtime::builder()
            .calibration(Calibration::default())
            .build()
            .expect("runtime")
    })
}
