//! The bounded soak: 96 guest threads and 8 async host tasks hand 60,000 tokens on through
//! every kind of object, with random timeouts, cancellations, yields, priority and core
//! changes; every token is counted exactly once, no wait ends early, no core leaks, and a
//! watchdog names a stalled thread. `examples/soak` runs the full size (load in
//! `examples/soak/load.rs`). `HOS_SOAK_SEED` picks another workload seed.

#[path = "../examples/soak/load.rs"]
mod load;
#[path = "../examples/soak/stations.rs"]
mod stations;

#[test]
fn sixty_thousand_handoffs_over_every_object_kind_lose_nothing() {
    let seed = std::env::var("HOS_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let p = load::Params::ci(seed);
    match load::run(&p) {
        Ok(f) => {
            assert!(f.handoffs >= p.handoffs, "{f}");
            println!("{f}");
        }
        Err(e) => panic!("{e}"),
    }
}
