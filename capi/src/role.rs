//! Guest thread roles from C: the `HOS_ROLE_*` values (`hos_thread_params.role`), and a
//! thread's role read and declared by handle.
//!
//! Invariant: a role crosses the boundary only through [`role_of`] and [`value_of`], one
//! value each way; 0 is `HOS_ROLE_AUTO` (a zeroed struct, or one from a header older than
//! the field, keeps the name rule), and any other value that is no role is InvalidEnumValue
//! naming it, never a default.

use crate::boundary::{self, Error, Out, Result};
use crate::object::{self, hos_handle};
use crate::result::{hos_result, HOS_RESULT_INVALID_ENUM_VALUE};
use hos_rs::thread::Role;

/// A guest thread's role: one of the `HOS_ROLE_*` values.
pub type hos_role = u32;

/// Decided by the thread's name (the default, 0): serial if a HOS_SERIAL part (default
/// "MainThread", "Presentation") is in it, first on the virtual cores if a HOS_VCORE_FIRST
/// part is; a rename decides again.
pub const HOS_ROLE_AUTO: hos_role = 0;
/// A job worker, whatever its name: the short spin, relaxed long sleeps and timed waits,
/// counted by the poller cap; its short sleeps after an empty poll are idle polls.
pub const HOS_ROLE_WORKER: hos_role = 1;
/// On the frame's critical chain, whatever its name: the full spin, precise deadlines, never
/// capped, never an idle poller, the wake slice at any priority.
pub const HOS_ROLE_SERIAL: hos_role = 2;
/// Serial, and first on the virtual cores against threads of its priority or worse (what
/// HOS_VCORE_FIRST names), whatever its name.
pub const HOS_ROLE_SERIAL_FIRST: hos_role = 3;

/// The role of C value `raw`; InvalidEnumValue naming `what` and the value for any other.
pub(crate) fn role_of(raw: hos_role, what: &str) -> Result<Role> {
    match raw {
        HOS_ROLE_AUTO => Ok(Role::Auto),
        HOS_ROLE_WORKER => Ok(Role::Worker),
        HOS_ROLE_SERIAL => Ok(Role::Serial),
        HOS_ROLE_SERIAL_FIRST => Ok(Role::SerialFirst),
        _ => Err(Error::new(
            HOS_RESULT_INVALID_ENUM_VALUE,
            format!("{what} is {raw}: expected a HOS_ROLE_* value, 0..={HOS_ROLE_SERIAL_FIRST}"),
        )),
    }
}

/// The C value of `role`.
fn value_of(role: Role) -> hos_role {
    match role {
        Role::Auto => HOS_ROLE_AUTO,
        Role::Worker => HOS_ROLE_WORKER,
        Role::Serial => HOS_ROLE_SERIAL,
        Role::SerialFirst => HOS_ROLE_SERIAL_FIRST,
    }
}

/// Writes the guest thread `thread`'s declared role to `*out`: the role it was spawned or
/// attached with, or set since; `HOS_ROLE_AUTO` when its name decides.
///
/// Errors: InvalidHandle; InvalidPointer for a NULL or misaligned `out`.
///
/// # Safety
/// `out` is NULL or points to a writable `hos_role`.
#[no_mangle]
pub unsafe extern "C" fn hos_thread_get_role(thread: hos_handle, out: *mut hos_role) -> hos_result {
    boundary::entry(|| {
        // SAFETY: forwarded from the caller.
        let out = unsafe { Out::new(out, "out") }?;
        let t = object::thread(thread)?;
        out.write(value_of(t.role()));
        Ok(())
    })
}

/// Declares the guest thread `thread`'s role; `HOS_ROLE_AUTO` hands the decision back to its
/// name. It applies at once: its rank on the virtual cores, its wake slice, and its next
/// waits and sleeps.
///
/// Errors: InvalidHandle; InvalidEnumValue for a value that is no `HOS_ROLE_*`.
#[no_mangle]
pub extern "C" fn hos_thread_set_role(thread: hos_handle, role: hos_role) -> hos_result {
    boundary::entry(|| {
        let role = role_of(role, "role")?;
        object::thread(thread)?.set_role(role);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_has_its_value_and_back() {
        let pairs = [
            (Role::Auto, HOS_ROLE_AUTO),
            (Role::Worker, HOS_ROLE_WORKER),
            (Role::Serial, HOS_ROLE_SERIAL),
            (Role::SerialFirst, HOS_ROLE_SERIAL_FIRST),
        ];
        for (role, value) in pairs {
            assert_eq!(value_of(role), value);
            assert_eq!(role_of(value, "r"), Ok(role));
        }
        let err = role_of(4, "p->role").unwrap_err();
        assert_eq!(err.code, HOS_RESULT_INVALID_ENUM_VALUE);
        assert!(err.detail.unwrap().contains("p->role is 4"));
        assert!(role_of(u32::MAX, "r").is_err());
    }
}
