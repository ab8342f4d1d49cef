//! Shutdown cancels every wait with Cancelled (0xEC01) and joins the guest threads. One test
//! in its own binary: shutting a runtime down must not touch other tests' waits.

use hos::os::{
    wait_any, ClearMode, ConditionVariable, Event, LockError, MessageQueue, Mutex, Semaphore,
};
use hos::{Calibration, ResultCode, Runtime};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn shutdown_cancels_every_wait_guest_host_and_async() {
    assert_eq!(ResultCode::CANCELLED.0, 0xEC01);
    let rt = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .unwrap();
    let ev = Arc::new(Event::new(ClearMode::Auto));
    let q = Arc::new(MessageQueue::<u8>::new(1));
    let full = Arc::new(MessageQueue::<u8>::new(1));
    full.send(0).unwrap();
    let m = Arc::new(Mutex::new(false));
    let held = m.lock().ok().unwrap();
    let cv = Arc::new(ConditionVariable::new());
    let cv_mutex = Arc::new(Mutex::new(false));
    let sem = Arc::new(Semaphore::new(0, 1));

    type Wait = Box<dyn FnOnce() -> Result<(), ResultCode> + Send>;
    let waits: Vec<Wait> = vec![
        Box::new({
            let ev = ev.clone();
            move || ev.wait()
        }),
        Box::new({
            let q = q.clone();
            move || q.receive().map(drop)
        }),
        Box::new({
            let full = full.clone();
            move || full.send(1).map_err(|e| e.code)
        }),
        Box::new({
            let m = m.clone();
            move || match m.lock() {
                Err(LockError::Failed(code)) => Err(code),
                _ => Ok(()),
            }
        }),
        Box::new({
            let (cv, cm) = (cv.clone(), cv_mutex.clone());
            move || {
                let g = cm.lock().ok().unwrap();
                let (g, r) = cv.wait(g);
                assert!(cm.is_locked_by_current_thread(), "the mutex is held again");
                drop(g);
                r
            }
        }),
        Box::new({
            let sem = sem.clone();
            move || sem.acquire()
        }),
        Box::new(|| wait_any(&[], None).map(drop)),
        Box::new(|| hos::svc::wait_synchronization(&[], -1).map(drop)),
        Box::new({
            let ev = ev.clone();
            move || ev.wait_timeout(Duration::from_secs(600))
        }),
    ];
    let guests: Vec<_> = waits
        .into_iter()
        .map(|w| rt.thread().spawn(w).unwrap())
        .collect();
    // A host thread and an async task, cancelled through the reactor's stop watchers. They
    // say when they start; their waits carry a long timeout so that a start delayed past the
    // shutdown (no runtime left to cancel it) fails the test instead of hanging it.
    let long = Duration::from_secs(600);
    let (started, starts) = std::sync::mpsc::channel();
    let host = std::thread::spawn({
        let (ev, started) = (ev.clone(), started.clone());
        move || {
            started.send(()).unwrap();
            ev.wait_async().timeout(long).block()
        }
    });
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let task = {
        let q = q.clone();
        std::thread::spawn(move || {
            tokio.block_on(async move {
                started.send(()).unwrap();
                q.receive_async().timeout(long).await
            })
        })
    };
    starts.recv().unwrap();
    starts.recv().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    rt.shutdown();
    for g in guests {
        assert_eq!(g.join().unwrap(), Err(ResultCode::CANCELLED));
    }
    assert_eq!(host.join().unwrap(), Err(ResultCode::CANCELLED));
    assert_eq!(task.join().unwrap(), Err(ResultCode::CANCELLED));
    drop(held);
    // A wait that needs no waiting still succeeds; nothing was consumed by the cancels.
    assert_eq!(full.try_receive(), Some(0));
    assert!(q.is_empty() && !ev.is_signalled() && sem.count() == 0);
}
