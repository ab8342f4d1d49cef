//! The warning for an environment variable that looks like a switch of hos and is none.
//!
//! Invariant: a name is told about only if it starts with `HOS_` (any case) and is neither a
//! switch ([`Switch::ALL`]) nor a name hos's own tests and tools read ([`TOOLS`]); the
//! warning names the closest of those within three edits, else docs/switches.md.

use super::Switch;

/// `HOS_*` names that are no switch but that hos's own tests and tools read, so never warned
/// about: the header test's bless (capi/tests/header.rs), the chaos test's seeds
/// (tests/chaos.rs), the soak's seed (tests/soak.rs), the runtime's tests' child marker
/// (runtime/src/tests/common.rs), and the Windows simulation's switches (read by the OS layer
/// of a `--cfg hos_winsim` build, sys/winsim.rs; docs/switches.md).
pub(crate) const TOOLS: [&str; 7] = [
    "HOS_BLESS",
    "HOS_CHAOS_SEEDS",
    "HOS_SOAK_SEED",
    "HOS_TEST_ALONE",
    "HOS_WINSIM_PROFILE",
    "HOS_WINSIM_SEED",
    "HOS_WINSIM_CPU",
];

/// The warning for the environment variable `name`, if it looks like a switch of hos
/// (`HOS_`, any case) and is none (nor a name of [`TOOLS`]): it names the closest switch
/// when one is at most three edits away (case aside).
pub(crate) fn unknown(name: &str, value: &str) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    let known = |n: &str| n == name;
    if !upper.starts_with("HOS_")
        || Switch::ALL.iter().any(|s| known(s.env()))
        || TOOLS.iter().any(|t| known(t))
    {
        return None;
    }
    let closest = Switch::ALL
        .iter()
        .map(|s| s.env())
        .chain(TOOLS)
        .map(|n| (edits(&upper, n), n))
        .min()
        .filter(|(d, _)| *d <= 3);
    Some(match closest {
        Some((_, n)) => format!("unknown switch {name}={value} (did you mean {n}?)"),
        None => format!("unknown switch {name}={value} (docs/switches.md lists the switches)"),
    })
}

/// The edit distance of `a` and `b` (insertions, deletions and substitutions of bytes).
fn edits(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_are_told_with_the_closest_switch() {
        let told = |name: &str| unknown(name, "0");
        assert_eq!(
            told("HOS_FLIGH").as_deref(),
            Some("unknown switch HOS_FLIGH=0 (did you mean HOS_FLIGHT?)")
        );
        assert!(told("hos_vcore_grace")
            .unwrap()
            .contains("HOS_VCORE_GRACE_US?"));
        // HOS_X is three edits from HOS_DET: a name far from every switch.
        assert!(told("HOS_XYZZYQ").unwrap().contains("docs/switches.md"));
        for quiet in [
            "HOS_FLIGHT",
            "HOS_LOG_STDERR",
            "HOS_BLESS",
            "HOS_TEST_ALONE",
            "PATH",
        ] {
            assert_eq!(told(quiet), None, "{quiet}");
        }
        assert_eq!((edits("", "ab"), edits("kitten", "sitting")), (2, 3));
    }

    #[cfg(all(target_os = "linux", hos_winsim, not(hos_force_fallback)))]
    #[test]
    fn the_windows_simulations_switches_are_known() {
        use crate::sys::{CPU_SWITCH, PROFILE_SWITCH, SEED_SWITCH};
        for name in [PROFILE_SWITCH, SEED_SWITCH, CPU_SWITCH] {
            assert_eq!(unknown(name, "1"), None, "{name}");
        }
    }
}
