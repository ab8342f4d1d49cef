//! The stress suite's load (`stress_load`: 32 guest threads, queues, a mutex, events) in the
//! deterministic mode: one selector and seed give the same decisions, hash, virtual time and
//! counts run after run, whatever the OS does (issue 30's verify of the stress suite). CI
//! runs 3 runs of 5,000 passes; `HOS_DET_STRESS_RUNS` and `HOS_DET_STRESS_PASSES` size it up
//! (BENCHMARKS.md: 100 runs of the stress suite's 100,000).

#[allow(dead_code)] // the scenes' softlock parts are other tests'
mod det_scenes;
mod stress_load;

use hos::det::clock::Pacing;
use hos::det::selector::Spec;
use hos::{Calibration, DetStats, Runtime};
use std::sync::atomic::Ordering;
use stress_load::Load;

/// A size from the environment, else `default`.
fn size(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One run of `passes` under `spec`: its figures and its pass count.
fn run(spec: Spec, passes: u64) -> (DetStats, u64) {
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .det(Some(spec))
        .det_pace(Pacing::Free)
        .build()
        .expect("a runtime in the deterministic mode");
    let load = Load::new(passes);
    let main = det_scenes::main_thread(&rt, {
        let load = load.clone();
        move |rt| {
            // Not joined: a guest's OS join would hold the token; the last worker to stop
            // signals `ended`, and their OS threads end by themselves.
            drop(load.start(rt));
            load.done.wait().expect("the goal is reached");
            load.stop();
            load.ended.wait().expect("every worker stops");
        }
    });
    main.join().expect("main did not panic");
    load.check();
    let stats = rt.det_stats().expect("the mode is on");
    assert_eq!(rt.det_softlock(), None, "a load that goes on by itself");
    rt.shutdown();
    (stats, load.hops.load(Ordering::Relaxed))
}

#[test]
fn the_stress_load_runs_the_same_every_time() {
    let runs = size("HOS_DET_STRESS_RUNS", 3);
    let passes = size("HOS_DET_STRESS_PASSES", 5_000);
    let spec = Spec::Random { seed: 7 };
    let first = run(spec.clone(), passes);
    assert!(first.0.decisions > passes / 2, "{first:?}");
    for i in 1..runs {
        assert_eq!(run(spec.clone(), passes), first, "run {i} of {runs}");
    }
    println!(
        "det stress: {runs} of {runs} runs alike, {passes} passes: {} decisions, hash {:#018x}, \
         vt {:.3} s",
        first.0.decisions,
        first.0.hash,
        first.0.vt as f64 / 1e9
    );
}
