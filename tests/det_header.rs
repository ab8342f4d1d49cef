//! What a deterministic recording's header pins (docs/determinism.md section 6): the host's
//! build id (HOS_DET_BUILD_ID, builder `det_build_id`) is folded into the build hash, so a
//! replay on another build is refused naming both ids; and the guest's entropy
//! (svcGetInfo RandomEntropy) is drawn from the seed the header records, so one seed gives the
//! same words, another seed others, and a replay the recorded ones.

use hos::det::clock::Pacing;
use hos::det::record::{RecordError, Recording};
use hos::det::selector::Spec;
use hos::svc::{self, Handle};
use hos::{BuildError, Calibration, ResultCode, Runtime, RuntimeBuilder};
use std::path::{Path, PathBuf};

/// A scratch file for one test's recording.
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "hos-det-header-{}-{name}.hosrec",
        std::process::id()
    ))
}

fn builder(spec: Spec, build_id: Option<&str>) -> RuntimeBuilder {
    Runtime::builder()
        .calibration(Calibration::default())
        .det(Some(spec))
        .det_pace(Pacing::Free)
        .det_quantum(4)
        .det_build_id(build_id.map(str::to_string))
}

/// The four entropy words a guest thread of `rt` reads, after a few turns' worth of work.
fn guest_entropy(rt: &Runtime) -> [u64; 4] {
    let words = rt
        .thread()
        .name("MainThread")
        .spawn(|| {
            svc::sleep_thread(1_000);
            std::array::from_fn(|i| {
                svc::get_info(svc::INFO_TYPE_RANDOM_ENTROPY, Handle::INVALID, i as u64)
                    .expect("an entropy word")
            })
        })
        .expect("the main guest thread")
        .join()
        .expect("main did not panic");
    rt.shutdown();
    words
}

/// Records a run under `spec` with `build_id` to `path`; the guest's entropy.
fn record(path: &Path, spec: Spec, build_id: Option<&str>) -> [u64; 4] {
    let rt = builder(spec, build_id)
        .det_record(Some(path.to_path_buf()))
        .build()
        .expect("a recording runtime");
    guest_entropy(&rt)
}

#[test]
fn a_replay_on_another_host_build_is_refused_naming_both_ids() {
    let path = scratch("build-id");
    record(&path, Spec::Random { seed: 3 }, Some(" Game 1.0.0 "));
    let header = Recording::open(&path).expect("the recording").header;
    assert_eq!(header.build_id, "Game 1.0.0", "trimmed");
    let replay = |id| builder(Spec::Replay(path.clone()), id).build();
    for (live, named) in [(Some("Game 1.0.1"), "\"Game 1.0.1\""), (None, "none")] {
        let err = replay(live).expect_err("another build");
        let BuildError::Replay(RecordError::Build {
            recorded_id,
            live_id,
            ..
        }) = &err
        else {
            panic!("not a build mismatch: {err}");
        };
        assert_eq!(recorded_id, "Game 1.0.0");
        assert_eq!(live_id, live.unwrap_or(""));
        let text = err.to_string();
        assert!(
            text.contains("\"Game 1.0.0\"") && text.contains(named),
            "{text}"
        );
    }
    let rt = replay(Some("Game 1.0.0")).expect("the same build replays");
    guest_entropy(&rt);
    assert_eq!(rt.det_divergence(), None);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn the_guest_entropy_follows_the_recorded_seed() {
    let path = scratch("entropy");
    let recorded = record(
        &path,
        Spec::Pct {
            depth: 2,
            seed: 11,
            steps: 50,
        },
        None,
    );
    assert_eq!(Recording::open(&path).unwrap().header.entropy_seed, 11);
    let again = guest_entropy(&builder(Spec::Random { seed: 11 }, None).build().unwrap());
    assert_eq!(
        again, recorded,
        "one seed, one set of words, whatever the selector"
    );
    let other = guest_entropy(&builder(Spec::Random { seed: 12 }, None).build().unwrap());
    assert_ne!(other, recorded);
    let replayed = builder(Spec::Replay(path.clone()), None).build().unwrap();
    assert_eq!(
        guest_entropy(&replayed),
        recorded,
        "the replay draws the recorded words"
    );
    assert_eq!(replayed.det_divergence(), None);
    let stable = || guest_entropy(&builder(Spec::Stable, None).build().unwrap());
    assert_eq!(stable(), stable());
    let off = || {
        let rt = Runtime::builder()
            .calibration(Calibration::default())
            .build()
            .unwrap();
        guest_entropy(&rt)
    };
    assert_ne!(off(), off(), "with the mode off, the OS's");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn entropy_is_asked_as_the_kernel_checks_it() {
    let rt = builder(Spec::Stable, None).build().unwrap();
    let got = rt
        .thread()
        .spawn(|| {
            let ty = svc::INFO_TYPE_RANDOM_ENTROPY;
            [
                svc::get_info(ty, Handle::CURRENT_THREAD, 0),
                svc::get_info(ty, Handle::INVALID, 4),
                svc::get_info(ty, Handle::CURRENT_THREAD, 4),
            ]
        })
        .unwrap()
        .join()
        .unwrap();
    rt.shutdown();
    let (h, c) = (ResultCode::INVALID_HANDLE, ResultCode::INVALID_COMBINATION);
    assert_eq!(got, [Err(h), Err(c), Err(h)], "the handle is checked first");
}
