//! Sequences of C calls with good and bad arguments, run from several threads at once: the
//! interpreter both fuzzers of the C boundary share (the stable one in `tests::fuzz`, run by
//! `cargo test`; the libFuzzer one in `capi/fuzz`, on nightly with AddressSanitizer). Any
//! byte string is a case; docs/fuzz.md says how to run them.
//!
//! Invariant: a case checks the boundary's rules on every call (a code the function
//! documents and `hos_result_name` knows, never Success with a bad pointer, never a failure
//! without a message; no panic, which would abort) and on the case as a whole (the final
//! shutdown ends every wait and leaves no guest thread; every handle made is closed), and
//! reports each broken one with every thread's calls.
//!
//! | file | what |
//! | --- | --- |
//! | [`draw`] | the choices: bytes, and the stable fuzzer's generator |
//! | [`ctx`] | a program thread: arguments drawn good and bad, calls made and traced |
//! | [`table`] | the C functions programs call, one line each, with their documented codes |
//! | [`world`] | what a case's threads share; the coverage proxy |
//! | [`case`] | one case: config, runtime, programs, shutdown, cleanup |

mod case;
mod ctx;
mod draw;
mod table;
mod world;

pub use case::{in_progress, run};
pub use draw::{Draw, SplitMix};
pub use table::CALLS;
pub use world::{calls, reached};
