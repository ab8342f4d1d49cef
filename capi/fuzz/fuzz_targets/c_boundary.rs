//! libFuzzer's target: each input is one case of capi's call interpreter (`hos_capi::calls`):
//! a config, a runtime, host and guest threads calling the C functions with good and bad
//! arguments at once, a shutdown that must end every wait, everything closed and freed. A
//! broken rule panics with every thread's calls (libFuzzer keeps the input as a crash).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(report) = hos_capi::calls::run(data) {
        panic!("the C boundary broke a rule:\n{report}");
    }
});
