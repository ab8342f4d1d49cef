//! The version of the C ABI: what the header was made for and what the linked library is, so
//! a host can tell at run time that the two match.
//!
//! Invariant: `HOS_ABI_VERSION` changes with every change a caller compiled against the
//! previous header could notice other than an addition (include/hos.h's opening comment lists
//! the rules); `hos_abi_version` returns the library's, which is the constant it was built with.

/// The version of the C ABI this header describes. A host compares it with
/// `hos_abi_version()` at start: a library of another version may not match the header.
pub const HOS_ABI_VERSION: u32 = 1;

/// The version of the C ABI of the linked library (`HOS_ABI_VERSION` of the header it was
/// built with). Never fails.
#[no_mangle]
pub extern "C" fn hos_abi_version() -> u32 {
    HOS_ABI_VERSION
}
