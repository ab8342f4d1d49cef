//! Embedding hos at boot: build a runtime, spawn a named guest thread that sleeps, read stats.

use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = hos::Runtime::builder().build()?;
    let worker = rt
        .thread()
        .name("ModuleSystemWorker0")
        .priority(44)
        .core_mask(0b11_1111)
        .ideal_core(0)
        .spawn(|| {
            for _ in 0..1000 {
                hos::svc::sleep_thread(20_000);
            }
            42
        })?;
    rt.host_sleep(Duration::from_micros(500));
    assert_eq!(worker.join().ok(), Some(42));
    let s = rt.stats();
    println!("calibration: {:?}", s.calibration);
    for (path, l) in &s.sleeps {
        if l.count > 0 {
            println!(
                "{:>16}: {:>6} sleeps, mean late {:?}, p99 late <= {:?}",
                path.name(),
                l.count,
                l.mean(),
                l.quantile_upper(0.99)
            );
        }
    }
    rt.shutdown();
    Ok(())
}
