//! What a host engineer used to std and parking_lot writes first, compiled and run: errors
//! that are `std::error::Error`s, object handles that clone, timed waits that say whether they
//! timed out or were cancelled, and the builder's methods on `hos::RuntimeBuilder`.
//! (A review as a host engineer found six such first guesses that did not compile.)

use hos::os::{
    ClearMode, ConditionVariable, Event, LockError, MessageQueue, Mutex, Semaphore, SendError,
    TimerEvent,
};
use hos::{BuildError, Calibration, ConfigError, ResultCode, Runtime, RuntimeBuilder};
use std::error::Error;
use std::time::Duration;

mod common;
use common::rt;

const SHORT: Duration = Duration::from_millis(20);

/// Runs `f` on a guest thread of this binary's runtime: a host thread's timed wait takes the
/// newest runtime for its deadline, and another test's runtime shutting down would end it
/// Cancelled.
fn on_guest<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    rt().thread().spawn(f).unwrap().join().unwrap()
}
/// Bounds a wait that must succeed, so that a broken version fails instead of hanging.
const LONG: Duration = Duration::from_secs(10);

/// Every public error type is a `std::error::Error` with a message naming its value.
#[test]
fn errors_are_std_errors() {
    fn boxed<'a>(e: impl Error + 'a) -> Box<dyn Error + 'a> {
        Box::new(e)
    }
    fn lock_error(e: LockError<'_>) -> Box<dyn Error + '_> {
        Box::new(e)
    }
    fn to_send_sync<E: Error + Send + Sync + 'static>(e: E) -> Box<dyn Error + Send + Sync> {
        e.into()
    }

    let m = Mutex::new(false);
    let g = m.lock().map_err(|e| e.code()).unwrap();
    let e = m.lock().unwrap_err();
    let msg = lock_error(e).to_string();
    assert!(msg.contains("InvalidState"), "{msg}");
    let e = m.try_lock().unwrap_err();
    let cause = e.source().map(|s| s.to_string());
    assert_eq!(
        cause.as_deref(),
        Some("InvalidState(0xFA01)"),
        "locked again by its owner"
    );
    drop(e);
    std::thread::scope(|s| {
        let e = s.spawn(|| m.try_lock().map(drop).map_err(|e| e.to_string()));
        assert_eq!(
            e.join().unwrap().unwrap_err(),
            "mutex not locked: TimedOut(0xEA01)",
            "held by another thread"
        );
    });
    drop(g);

    assert!(to_send_sync(ResultCode::CANCELLED)
        .to_string()
        .contains("Cancelled"));
    let q = MessageQueue::<u32>::new(1);
    q.send(1).unwrap();
    let full: SendError<u32> = q.try_send(2).unwrap_err();
    assert!(to_send_sync(full).to_string().contains("TimedOut"));

    let config: ConfigError = RuntimeBuilder::new().vcores(0).resolve().unwrap_err();
    assert!(boxed(config).to_string().contains("vcores"));
    let build: BuildError = RuntimeBuilder::new().vcores(0).build().unwrap_err();
    let build = to_send_sync(build);
    assert!(build.to_string().contains("vcores"));
    assert!(build.source().is_some(), "a config error is the cause");
}

/// `?` passes a build error (and a result code) up as `Box<dyn Error>`.
#[test]
fn question_mark_into_box_dyn_error() {
    fn start(cores: usize) -> Result<Runtime, Box<dyn Error>> {
        let rt = Runtime::builder()
            .calibration(Calibration::default())
            .vcores(cores)
            .build()?;
        Ok(rt)
    }
    fn take(s: &Semaphore) -> Result<(), Box<dyn Error>> {
        s.acquire_timeout(SHORT)?;
        Ok(())
    }
    let err = start(9).unwrap_err();
    assert!(matches!(
        err.downcast_ref::<BuildError>(),
        Some(BuildError::Config(_))
    ));
    on_guest(|| {
        let err = take(&Semaphore::new(0, 1)).unwrap_err();
        assert_eq!(err.downcast_ref(), Some(&ResultCode::TIMED_OUT));
    });
}

/// Every object's handle clones, and the clones name one object.
#[test]
fn handles_clone_and_share_one_object() {
    let ev = Event::new(ClearMode::Auto);
    let sem = Semaphore::new(0, 1);
    let q = MessageQueue::<String>::new(1); // no `String: Copy` needed, nor a clone of it
    let (m, cv) = (Mutex::new(false), ConditionVariable::new());
    let timer = TimerEvent::new(ClearMode::Manual);
    let guest = rt()
        .thread()
        .spawn({
            let (ev, sem, q, m, cv, timer) = (
                ev.clone(),
                sem.clone(),
                q.clone(),
                m.clone(),
                cv.clone(),
                timer.clone(),
            );
            move || -> Result<(), ResultCode> {
                ev.wait_timeout(LONG)?;
                sem.release(1)?;
                q.send("hello".to_string()).map_err(|e| e.code)?;
                timer.start_one_shot(Duration::from_micros(100))?;
                let g = m.lock().map_err(|e| e.code())?;
                cv.broadcast();
                drop(g);
                Ok(())
            }
        })
        .unwrap();
    on_guest(move || {
        ev.signal();
        assert_eq!(sem.acquire_timeout(LONG), Ok(()));
        assert_eq!(q.receive_timeout(LONG).as_deref(), Ok("hello"));
        assert_eq!(timer.wait_timeout(LONG), Ok(()));
    });
    assert_eq!(guest.join().unwrap(), Ok(()));
}

/// A timer event runs while any clone lives; the last one to drop stops it.
#[test]
fn the_last_timer_handle_stops_the_timer() {
    on_guest(the_last_timer_handle_stops_the_timer_here);
}

fn the_last_timer_handle_stops_the_timer_here() {
    let timer = TimerEvent::new(ClearMode::Auto);
    let ev: Event = (*timer).clone(); // the timer's own event, outliving every handle
    let other = timer.clone();
    timer
        .start_periodic(Duration::from_micros(200), Duration::from_micros(200))
        .unwrap();
    drop(timer);
    assert_eq!(
        ev.wait_timeout(LONG),
        Ok(()),
        "a clone still lives: the timer runs"
    );
    drop(other);
    ev.clear();
    assert_eq!(
        ev.wait_timeout(Duration::from_millis(5)),
        Err(ResultCode::TIMED_OUT),
        "the last handle stopped it"
    );
}

/// A timed wait says which of TimedOut and Cancelled ended it.
#[test]
fn timed_waits_tell_timed_out_from_cancelled() {
    let ev = Event::new(ClearMode::Manual);
    let q = MessageQueue::<u8>::new(1);
    on_guest({
        let (ev, q) = (ev.clone(), q.clone());
        move || {
            match ev.wait_timeout(SHORT) {
                Ok(()) => panic!("nobody signalled it"),
                Err(ResultCode::TIMED_OUT) => {}
                Err(code) => panic!("{code}"),
            }
            assert_eq!(q.receive_timeout(SHORT), Err(ResultCode::TIMED_OUT));
            assert_eq!(q.peek_timeout(SHORT), Err(ResultCode::TIMED_OUT));
        }
    });

    // A runtime of its own, shut down under its waiting guest threads.
    let own = Runtime::builder()
        .calibration(Calibration::default())
        .build()
        .unwrap();
    let long = Duration::from_secs(600);
    let (started, starts) = std::sync::mpsc::channel();
    let waits: Vec<Box<dyn FnOnce() -> Result<(), ResultCode> + Send>> = vec![
        Box::new({
            let ev = ev.clone();
            move || ev.wait_timeout(long)
        }),
        Box::new({
            let q = q.clone();
            move || q.receive_timeout(long).map(drop)
        }),
        Box::new({
            let q = q.clone();
            move || q.peek_timeout(long).map(drop)
        }),
        Box::new(move || Semaphore::new(0, 1).acquire_timeout(long)),
    ];
    let guests: Vec<_> = waits
        .into_iter()
        .map(|w| {
            let started = started.clone();
            own.thread()
                .spawn(move || {
                    started.send(()).unwrap();
                    w()
                })
                .unwrap()
        })
        .collect();
    for _ in 0..guests.len() {
        starts.recv().unwrap();
    }
    own.shutdown();
    for g in guests {
        assert_eq!(g.join().unwrap(), Err(ResultCode::CANCELLED));
    }
}

/// The builder is `hos::RuntimeBuilder`, with its methods, to pass around and return.
#[test]
fn runtime_builder_is_a_type_with_methods() {
    fn tuned(b: RuntimeBuilder) -> RuntimeBuilder {
        b.spin_us(30).vcores(4).serial(["MainThread"]).flight(false)
    }
    let config = tuned(RuntimeBuilder::new())
        .env_from(|name| (name == "HOS_SPIN_OTHER_US").then(|| "7".into()))
        .resolve()
        .unwrap();
    assert_eq!((config.spin_us, config.cores), (30, 4));
    assert_eq!(config.spin_other_us, Some(7));
    let rt = tuned(Runtime::builder())
        .calibration(Calibration::default())
        .build()
        .unwrap();
    assert_eq!(rt.config().cores, 4);
    rt.shutdown();
}
