//! A bounded randomized stress with a fixed seed: 10^5 hand-offs among 32 guest threads
//! through queues (send and jam), a shared mutex and events (`stress_load`). A lost wakeup
//! shows as a hang, which the watchdog turns into a failure; the run stops by itself either
//! way.

mod stress_load;

use hos::{Calibration, Runtime};
use std::sync::atomic::Ordering;
use std::time::Duration;
use stress_load::Load;

const HANDOFFS: u64 = 100_000;

#[test]
fn hundred_thousand_handoffs_among_32_threads() {
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .unwrap();
    let load = Load::new(HANDOFFS);
    let workers = load.start(&rt);
    let finished = load
        .done
        .wait_async()
        .timeout(Duration::from_secs(120))
        .block();
    load.stop();
    assert_eq!(
        finished,
        Ok(()),
        "lost wakeup: {} hand-offs",
        load.hops.load(Ordering::Relaxed)
    );
    for w in workers {
        w.join().unwrap();
    }
    load.check();
    rt.shutdown();
}
