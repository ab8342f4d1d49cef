//! Shutdown ends every blocking svc on guest memory with Cancelled (0xEC01), blocked or
//! about to block. One test in its own binary: shutting a runtime down must not touch other
//! tests' waits.

use hos::svc::{self, ArbitrationType, WAITERS};
use hos::ResultCode;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn cancelled_ec01_at_shutdown_for_every_blocking_svc() {
    let rt = hos::Runtime::builder()
        .calibration(hos::Calibration::default())
        .build()
        .unwrap();
    let (mutex, key, word) = (
        Arc::new(AtomicU32::new(0)),
        Arc::new(AtomicU32::new(0)),
        Arc::new(AtomicU32::new(0)),
    );
    let owner = {
        let mutex = mutex.clone();
        rt.thread()
            .spawn(move || {
                mutex.store(svc::current_thread_handle().0 | WAITERS, SeqCst);
                let nothing = AtomicU32::new(0);
                svc::wait_for_address(&nothing, ArbitrationType::WaitIfEqual, 0, -1)
            })
            .unwrap()
    };
    let owner_handle = owner.thread().handle();
    while mutex.load(SeqCst) == 0 {
        std::thread::yield_now();
    }
    let locker = {
        let mutex = mutex.clone();
        rt.thread()
            .spawn(move || svc::arbitrate_lock(owner_handle, &mutex, 7))
            .unwrap()
    };
    let condvar = {
        let key = key.clone();
        rt.thread()
            .spawn(move || {
                let me = svc::current_thread_handle().0;
                let m = AtomicU32::new(me);
                svc::wait_process_wide_key_atomic(&m, &key, me, -1)
            })
            .unwrap()
    };
    let address = {
        let word = word.clone();
        rt.thread()
            .spawn(move || svc::wait_for_address(&word, ArbitrationType::WaitIfEqual, 0, -1))
            .unwrap()
    };
    let sync = rt
        .thread()
        .spawn(|| svc::wait_synchronization(&[], -1))
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    rt.shutdown();
    let c = Err(ResultCode::CANCELLED);
    for (what, r) in [
        ("owner", owner.join().unwrap()),
        ("lock", locker.join().unwrap()),
        ("condvar", condvar.join().unwrap()),
        ("address", address.join().unwrap()),
    ] {
        assert_eq!(r, c, "{what}");
    }
    assert_eq!(sync.join().unwrap(), Err(ResultCode::CANCELLED));
}
