//! Where an invocation's files go: a directory of its own under the cargo target directory,
//! or `--out` as given.
//!
//! Invariant: without `--out`, every invocation writes into a new directory,
//! `<target>/frame_sim/<UTC time>-<pid>/`, so no run overwrites another's files, and
//! `<target>/frame_sim/latest` points at the newest (where links can be made); the target
//! directory is the one cargo built this executable into, else `CARGO_TARGET_DIR`, else
//! `./target`. With `--out DIR` the files go into DIR itself (a fit's check writes there).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The cargo target directory of the executable at `exe`: the nearest folder above it that
/// holds cargo's `CACHEDIR.TAG` (`target/release/examples/frame_sim` gives `target`, and so
/// does `target/<triple>/release/examples/frame_sim`).
fn target_of_exe(exe: &Path) -> Option<PathBuf> {
    exe.ancestors()
        .skip(1)
        .take(4)
        .find(|d| d.join("CACHEDIR.TAG").is_file())
        .map(Path::to_path_buf)
}

/// The target directory: the executable's, else `env_dir` (`CARGO_TARGET_DIR`), else
/// `./target`.
fn target_dir(exe: Option<&Path>, env_dir: Option<PathBuf>) -> PathBuf {
    exe.and_then(target_of_exe)
        .or(env_dir.filter(|d| !d.as_os_str().is_empty()))
        .unwrap_or_else(|| PathBuf::from("target"))
}

/// `secs` after the Unix epoch as `YYYYMMDDTHHMMSSZ` (UTC; the civil calendar).
fn utc_stamp(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (H. Hinnant's algorithm), eras of 400 years from 0000-03-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3_600,
        rem / 60 % 60,
        rem % 60
    )
}

/// This invocation's output directory, made: `out` if given, else a new one under the
/// target directory, with `latest` pointed at it.
///
/// # Errors
/// The directory could not be made (the message names it).
pub fn resolve(out: Option<&Path>) -> Result<PathBuf, String> {
    let dir = match out {
        Some(dir) => dir.to_path_buf(),
        None => {
            let exe = std::env::current_exe().ok();
            let base = target_dir(
                exe.as_deref(),
                std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from),
            )
            .join("frame_sim");
            let secs = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            base.join(format!("{}-{}", utc_stamp(secs), std::process::id()))
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    if out.is_none() {
        link_latest(&dir);
    }
    Ok(dir)
}

/// Where repeat `repeat` of `repeats` writes under `dir`: `dir` itself for a lone run (the
/// paths of a run without `--repeat`), else `dir/repeat<R>`.
pub fn repeat_dir(dir: &Path, repeat: usize, repeats: usize) -> PathBuf {
    if repeats > 1 {
        dir.join(format!("repeat{repeat}"))
    } else {
        dir.to_path_buf()
    }
}

/// Points `latest` beside `dir` at it (a relative link); where links cannot be made, or
/// another run replaces it meanwhile, the printed path is the record.
fn link_latest(dir: &Path) {
    #[cfg(unix)]
    if let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) {
        let latest = parent.join("latest");
        let _ = std::fs::remove_file(&latest);
        let _ = std::os::unix::fs::symlink(name, &latest);
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps_are_civil_dates() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        assert_eq!(utc_stamp(1_798_806_896), "20270101T123456Z");
        assert_eq!(utc_stamp(1_709_251_199), "20240229T235959Z");
    }

    #[test]
    fn repeats_write_beside_each_other_and_a_lone_run_where_it_did() {
        let d = Path::new("out");
        assert_eq!(repeat_dir(d, 1, 1), d);
        assert_eq!(repeat_dir(d, 1, 3), d.join("repeat1"));
        assert_eq!(repeat_dir(d, 3, 3), d.join("repeat3"));
    }

    #[test]
    fn the_target_directory_is_the_executables_then_the_environments() {
        let root = std::env::temp_dir().join(format!("frame_sim_out_{}", std::process::id()));
        let target = root.join("tgt");
        let examples = target.join("x86_64-unknown-linux-gnu/release/examples");
        std::fs::create_dir_all(&examples).unwrap();
        std::fs::write(target.join("CACHEDIR.TAG"), "Signature").unwrap();
        let exe = examples.join("frame_sim");
        let env = Some(PathBuf::from("/elsewhere"));
        assert_eq!(target_dir(Some(&exe), env.clone()), target);
        let copied = root.join("frame_sim");
        assert_eq!(target_dir(Some(&copied), env.clone()), env.clone().unwrap());
        assert_eq!(
            target_dir(None, Some(PathBuf::new())),
            PathBuf::from("target")
        );
        assert_eq!(target_dir(None, None), PathBuf::from("target"));

        let given = root.join("given");
        assert_eq!(resolve(Some(&given)).unwrap(), given);
        assert!(given.is_dir() && !root.join("latest").exists());
        let _ = std::fs::remove_dir_all(&root);
    }
}
