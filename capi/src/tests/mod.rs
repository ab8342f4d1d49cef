//! The boundary's rules that only Rust can provoke (a panic inside a call, struct versions,
//! the log sink's threads and locks), calling the entry points as C would.

mod boundary;
mod fuzz;
mod layers;
mod log_sink;

use crate::config::{hos_config, hos_config_free, hos_config_new, hos_config_set};
use crate::result::HOS_RESULT_SUCCESS;
use crate::runtime::{hos_runtime, hos_runtime_new};
use std::ffi::CString;

/// A runtime booted through the ABI with `switches`.
fn runtime(switches: &[(&str, &str)]) -> *mut hos_runtime {
    let mut cfg: *mut hos_config = std::ptr::null_mut();
    let mut rt: *mut hos_runtime = std::ptr::null_mut();
    // SAFETY: valid out-pointers and NUL-terminated strings; the config is freed once.
    unsafe {
        assert_eq!(hos_config_new(&mut cfg), HOS_RESULT_SUCCESS);
        for (k, v) in switches {
            let (k, v) = (CString::new(*k).unwrap(), CString::new(*v).unwrap());
            assert_eq!(
                hos_config_set(cfg, k.as_ptr(), v.as_ptr()),
                HOS_RESULT_SUCCESS
            );
        }
        assert_eq!(hos_runtime_new(cfg, &mut rt), HOS_RESULT_SUCCESS);
        hos_config_free(cfg);
    }
    rt
}
