//! A guest thread's role: what the host says the thread is, and the one decision of what the
//! policies make of it (docs/design.md section 7 has the table).
//!
//! Invariant: [`Role::flags`] is the only place that decides whether a guest thread is serial
//! and whether it ranks first on the virtual cores. An explicit role decides both whatever the
//! thread is named; only [`Role::Auto`] reads the name, by the reference host's rule (the
//! HOS_SERIAL and HOS_VCORE_FIRST parts), so a rename changes nothing else.

use crate::config::Config;

/// What a guest thread is, as its host declares it. The policies distinguish two kinds of
/// guest thread (docs/design.md section 7): serial threads, on the frame's critical chain, and
/// workers; and among serial threads, those that rank first on the virtual cores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Role {
    /// Decided by the thread's name, at its start and at every rename: serial if a HOS_SERIAL
    /// part (default `MainThread`, `Presentation`) is in it, first if a HOS_VCORE_FIRST part
    /// is. The default, and the reference host's rule.
    #[default]
    Auto,
    /// A job worker: the short spin, relaxed long sleeps and timed waits, counted by the poller
    /// cap, its short sleeps after an empty poll are idle polls; the wake slice only by its
    /// priority.
    Worker,
    /// On the frame's critical chain (a game's main thread): the full spin, precise deadlines,
    /// never capped, never an idle poller, the wake slice at any priority.
    Serial,
    /// Serial, and ranks first on the virtual cores against threads of its priority or worse
    /// (what HOS_VCORE_FIRST names: the reference host's Presentation Thread).
    SerialFirst,
}

/// What a role makes of a thread: what the policies read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Flags {
    /// Serial: the frame's critical chain.
    pub(crate) serial: bool,
    /// Ranks first on the virtual cores.
    pub(crate) first: bool,
}

impl Role {
    /// Its name in logs and traces: `auto`, `worker`, `serial` or `serial-first`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Auto => "auto",
            Role::Worker => "worker",
            Role::Serial => "serial",
            Role::SerialFirst => "serial-first",
        }
    }

    /// The decision: what this role makes of a thread named `name` under `config`'s name parts
    /// (case-sensitive substrings, the name read whole).
    pub(crate) fn flags(self, name: &str, config: &Config) -> Flags {
        let named = |parts: &[String]| {
            parts
                .iter()
                .any(|p| !p.is_empty() && name.contains(p.as_str()))
        };
        match self {
            Role::Auto => Flags {
                serial: named(&config.serial),
                first: named(&config.vcore_first),
            },
            Role::Worker => Flags::default(),
            Role::Serial => Flags {
                serial: true,
                first: false,
            },
            Role::SerialFirst => Flags {
                serial: true,
                first: true,
            },
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn flags(role: Role, name: &str) -> (bool, bool) {
        let config = Config {
            vcore_first: vec!["Presentation".into()],
            ..Config::default()
        };
        let f = role.flags(name, &config);
        (f.serial, f.first)
    }

    #[test]
    fn auto_reads_the_name_and_explicit_roles_ignore_it() {
        let t = (true, true);
        let f = (false, false);
        assert_eq!(flags(Role::Auto, "MainThread"), (true, false));
        assert_eq!(flags(Role::Auto, "Presentation Thread"), t);
        assert_eq!(flags(Role::Auto, "ModuleSystemWorker0"), f);
        assert_eq!(flags(Role::Auto, "mainthread"), f, "case-sensitive");
        for name in ["MainThread", "Presentation Thread", "Job", ""] {
            assert_eq!(flags(Role::Worker, name), f, "{name}");
            assert_eq!(flags(Role::Serial, name), (true, false), "{name}");
            assert_eq!(flags(Role::SerialFirst, name), t, "{name}");
        }
    }

    #[test]
    fn empty_parts_name_nothing() {
        let config = Config {
            serial: vec![String::new()],
            ..Config::default()
        };
        assert_eq!(Role::Auto.flags("Anything", &config), Flags::default());
    }

    #[test]
    fn roles_have_names_and_auto_is_the_default() {
        let all = [Role::Auto, Role::Worker, Role::Serial, Role::SerialFirst];
        let names: Vec<_> = all.iter().map(|r| r.name()).collect();
        assert_eq!(names, ["auto", "worker", "serial", "serial-first"]);
        assert_eq!(Role::default(), Role::Auto);
    }
}
