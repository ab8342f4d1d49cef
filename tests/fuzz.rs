//! Fuzzed input: random sequences of svc calls and object operations with arbitrary
//! arguments (handles open, closed and garbage; priorities, masks and cores in and out of
//! range; timeouts from i64::MIN to i64::MAX; negative sleeps; any queue capacity, semaphore
//! count and timer period), run at once by three guest threads and a host thread. Then the
//! runtime shuts down, which must end every wait (a shutdown that times out is a hang).
//! Nothing may panic, and every error is one the call documents.
//!
//! One test in its own binary: host threads wait on the newest runtime, so no other test's
//! runtime may run beside it. CI runs 128 cases; `PROPTEST_CASES=5000` runs more.

use hos::os::{
    wait_any, ClearMode, ConditionVariable, Event, LockError, MessageQueue, Mutex, Semaphore,
    TimerEvent, Waitable,
};
use hos::svc::{self, Handle};
use hos::{Calibration, ResultCode, Runtime};
use proptest::prelude::*;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

/// A handle as an argument: one this case opened, one it closed, any number, or the
/// current-thread pseudo-handle.
#[derive(Clone, Debug)]
enum HandleArg {
    Open(usize),
    Closed(usize),
    Garbage(u32),
    Current,
}

#[derive(Clone, Debug)]
enum Op {
    Sleep(i64),
    GetPriority(HandleArg),
    SetPriority(HandleArg, i32),
    GetCoreMask(HandleArg),
    SetCoreMask(HandleArg, i32, u64),
    WaitSync(Vec<HandleArg>, i64),
    CreateHandle(usize),
    CloseHandle(HandleArg),
    Spawn(i32, u64, i32),
    Signal(usize),
    Clear(usize),
    EventWait(usize, i64),
    SemRelease(usize, u32),
    SemAcquire(usize, i64),
    Send(usize, bool, i64),
    Receive(usize, i64),
    Peek(usize, i64),
    Lock(usize, i64),
    LockAndLeak(usize),
    Unlock(usize),
    CondvarWait(usize, i64),
    CondvarSignal(bool),
    TimerStart(usize, u64, u64),
    TimerStop(usize),
    WaitAny(Vec<usize>, i64),
}

fn timeout() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        -3i64..=3,
        1i64..=3_000_000,
        Just(i64::MIN),
        Just(i64::MAX),
    ]
}

fn handle() -> impl Strategy<Value = HandleArg> {
    prop_oneof![
        any::<usize>().prop_map(HandleArg::Open),
        any::<usize>().prop_map(HandleArg::Closed),
        any::<u32>().prop_map(HandleArg::Garbage),
        Just(HandleArg::Current),
    ]
}

fn small_or_any_u64() -> impl Strategy<Value = u64> {
    prop_oneof![any::<u64>(), 0u64..=3_000_000, Just(1u64)]
}

fn op() -> impl Strategy<Value = Op> {
    let ix = any::<usize>;
    prop_oneof![
        prop_oneof![any::<i64>(), -3i64..=100_000].prop_map(Op::Sleep),
        handle().prop_map(Op::GetPriority),
        (handle(), prop_oneof![any::<i32>(), -2i32..=66]).prop_map(|(h, p)| Op::SetPriority(h, p)),
        handle().prop_map(Op::GetCoreMask),
        (
            handle(),
            prop_oneof![any::<i32>(), -4i32..=8],
            prop_oneof![any::<u64>(), 0u64..=0x7f]
        )
            .prop_map(|(h, i, m)| Op::SetCoreMask(h, i, m)),
        (prop::collection::vec(handle(), 0..=66), timeout()).prop_map(|(h, t)| Op::WaitSync(h, t)),
        ix().prop_map(Op::CreateHandle),
        handle().prop_map(Op::CloseHandle),
        (
            prop_oneof![any::<i32>(), -1i32..=64],
            any::<u64>(),
            prop_oneof![any::<i32>(), -3i32..=7]
        )
            .prop_map(|(p, m, i)| Op::Spawn(p, m, i)),
        ix().prop_map(Op::Signal),
        ix().prop_map(Op::Clear),
        (ix(), timeout()).prop_map(|(i, t)| Op::EventWait(i, t)),
        (ix(), any::<u32>()).prop_map(|(i, n)| Op::SemRelease(i, n)),
        (ix(), timeout()).prop_map(|(i, t)| Op::SemAcquire(i, t)),
        (ix(), any::<bool>(), timeout()).prop_map(|(i, f, t)| Op::Send(i, f, t)),
        (ix(), timeout()).prop_map(|(i, t)| Op::Receive(i, t)),
        (ix(), timeout()).prop_map(|(i, t)| Op::Peek(i, t)),
        (ix(), timeout()).prop_map(|(i, t)| Op::Lock(i, t)),
        ix().prop_map(Op::LockAndLeak),
        ix().prop_map(Op::Unlock),
        (ix(), timeout()).prop_map(|(i, t)| Op::CondvarWait(i, t)),
        any::<bool>().prop_map(Op::CondvarSignal),
        (ix(), small_or_any_u64(), small_or_any_u64())
            .prop_map(|(i, f, p)| Op::TimerStart(i, f, p)),
        ix().prop_map(Op::TimerStop),
        (prop::collection::vec(ix(), 0..=66), timeout()).prop_map(|(o, t)| Op::WaitAny(o, t)),
    ]
}

/// The objects one case's threads share.
struct World {
    events: Vec<Arc<Event>>,
    sems: Vec<Arc<Semaphore>>,
    queues: Vec<Arc<MessageQueue<u64>>>,
    mutexes: Vec<Mutex>,
    cv: ConditionVariable,
    timers: Vec<Arc<TimerEvent>>,
    open: StdMutex<Vec<Handle>>,
    closed: StdMutex<Vec<Handle>>,
    rt: Runtime,
}

fn pick<T>(v: &[T], i: usize) -> &T {
    &v[i % v.len()]
}

/// A wait's limit as the svc layer reads it: negative waits without limit, 0 polls.
fn limit(ns: i64) -> Option<Duration> {
    u64::try_from(ns).ok().map(Duration::from_nanos)
}

impl World {
    fn new(rt: Runtime, capacities: [usize; 2], sems: [(u32, u32); 2]) -> World {
        World {
            events: vec![
                Arc::new(Event::new(ClearMode::Auto)),
                Arc::new(Event::new(ClearMode::Manual)),
            ],
            sems: sems
                .iter()
                .map(|(i, m)| Arc::new(Semaphore::new(*i, *m)))
                .collect(),
            queues: capacities
                .iter()
                .map(|c| Arc::new(MessageQueue::new(*c)))
                .collect(),
            mutexes: vec![Mutex::new(false), Mutex::new(true)],
            cv: ConditionVariable::new(),
            timers: vec![
                Arc::new(TimerEvent::new(ClearMode::Auto)),
                Arc::new(TimerEvent::new(ClearMode::Manual)),
            ],
            open: StdMutex::new(Vec::new()),
            closed: StdMutex::new(Vec::new()),
            rt,
        }
    }

    fn handle(&self, h: &HandleArg) -> Handle {
        let from = |l: &StdMutex<Vec<Handle>>, i: usize| {
            let l = l.lock().unwrap();
            l.get(i % l.len().max(1))
                .copied()
                .unwrap_or(Handle(i as u32))
        };
        match h {
            HandleArg::Open(i) => from(&self.open, *i),
            HandleArg::Closed(i) => from(&self.closed, *i),
            HandleArg::Garbage(v) => Handle(*v),
            HandleArg::Current => Handle::CURRENT_THREAD,
        }
    }

    fn waitable(&self, i: usize) -> &dyn Waitable {
        match i % 6 {
            0 | 1 => &**pick(&self.events, i),
            2 => &**pick(&self.sems, i),
            3 => &**pick(&self.queues, i),
            _ => &**pick(&self.timers, i),
        }
    }

    /// Runs `op`; its result code, if it failed (a bool result that says "not now" is
    /// TimedOut).
    fn run(&self, op: &Op) -> Result<(), ResultCode> {
        use ResultCode as R;
        let lock_code = |e: LockError<'_>| match e {
            LockError::Abandoned(_) => Ok(()),
            LockError::Failed(code) => Err(code),
        };
        match op {
            Op::Sleep(ns) => {
                svc::sleep_thread(*ns);
                Ok(())
            }
            Op::GetPriority(h) => svc::get_thread_priority(self.handle(h)).map(drop),
            Op::SetPriority(h, p) => svc::set_thread_priority(self.handle(h), *p),
            Op::GetCoreMask(h) => svc::get_thread_core_mask(self.handle(h)).map(drop),
            Op::SetCoreMask(h, i, m) => svc::set_thread_core_mask(self.handle(h), *i, *m),
            Op::WaitSync(hs, t) => {
                let hs: Vec<Handle> = hs.iter().map(|h| self.handle(h)).collect();
                let i = svc::wait_synchronization(&hs, *t)?;
                if i >= hs.len() {
                    return Err(R(0xDEAD)); // an index past the handles: caught below
                }
                Ok(())
            }
            Op::CreateHandle(i) => {
                let h = match i % 3 {
                    0 => svc::create_handle(pick(&self.events, *i).clone()),
                    1 => svc::create_handle(pick(&self.queues, *i).clone()),
                    _ => svc::create_handle(pick(&self.sems, *i).clone()),
                }?;
                self.open.lock().unwrap().push(h);
                Ok(())
            }
            Op::CloseHandle(h) => {
                let h = self.handle(h);
                svc::close_handle(h)?;
                self.open.lock().unwrap().retain(|o| *o != h);
                self.closed.lock().unwrap().push(h);
                Ok(())
            }
            Op::Spawn(p, m, i) => self
                .rt
                .thread()
                .priority(*p)
                .core_mask(*m)
                .ideal_core(*i)
                .spawn(|| svc::sleep_thread(1_000))
                .map(drop),
            Op::Signal(i) => {
                pick(&self.events, *i).signal();
                Ok(())
            }
            Op::Clear(i) => {
                pick(&self.events, *i).clear();
                Ok(())
            }
            Op::EventWait(i, t) => {
                let ev = pick(&self.events, *i);
                match limit(*t) {
                    None => ev.wait(),
                    Some(d) => ev.wait_async().timeout(d).block(),
                }
            }
            Op::SemRelease(i, n) => pick(&self.sems, *i).release(*n),
            Op::SemAcquire(i, t) => {
                let s = pick(&self.sems, *i);
                match limit(*t) {
                    None => s.acquire(),
                    Some(d) => s.acquire_timeout(d),
                }
            }
            Op::Send(i, front, t) => {
                let q = pick(&self.queues, *i);
                let sent = match (limit(*t), front) {
                    (None, false) => q.send(7),
                    (None, true) => q.jam(7),
                    (Some(d), false) => q.send_timeout(7, d),
                    (Some(d), true) => q.jam_timeout(7, d),
                };
                sent.map_err(|e| e.code)
            }
            Op::Receive(i, t) => {
                let q = pick(&self.queues, *i);
                match limit(*t) {
                    None => q.receive().map(drop),
                    Some(d) => q.receive_async().timeout(d).block().map(drop),
                }
            }
            Op::Peek(i, t) => {
                let q = pick(&self.queues, *i);
                match limit(*t) {
                    None => q.peek().map(drop),
                    Some(d) => q.peek_async().timeout(d).block().map(drop),
                }
            }
            Op::Lock(i, t) => {
                let m = pick(&self.mutexes, *i);
                match limit(*t) {
                    None => m.lock().map(drop).or_else(lock_code),
                    Some(d) => m.lock_timeout(d).map(drop).or_else(lock_code),
                }
            }
            Op::LockAndLeak(i) => match pick(&self.mutexes, *i).try_lock() {
                Ok(g) => {
                    g.leak();
                    Ok(())
                }
                Err(LockError::Abandoned(g)) => {
                    g.leak();
                    Ok(())
                }
                Err(LockError::Failed(code)) => Err(code),
            },
            Op::Unlock(i) => pick(&self.mutexes, *i).unlock(),
            Op::CondvarWait(i, t) => {
                let m = pick(&self.mutexes, *i);
                let g = match m.lock() {
                    Ok(g) => g,
                    Err(e) => e.recover()?,
                };
                let (g, r) = match limit(*t) {
                    None => self.cv.wait(g),
                    Some(d) => self.cv.wait_timeout(g, d),
                };
                drop(g);
                r
            }
            Op::CondvarSignal(all) => {
                if *all {
                    self.cv.broadcast();
                } else {
                    self.cv.signal();
                }
                Ok(())
            }
            Op::TimerStart(i, first, period) => {
                let t = pick(&self.timers, *i);
                let (first, period) = (Duration::from_nanos(*first), Duration::from_nanos(*period));
                if i % 2 == 0 {
                    t.start_one_shot(first)
                } else {
                    t.start_periodic(first, period)
                }
            }
            Op::TimerStop(i) => {
                pick(&self.timers, *i).stop();
                Ok(())
            }
            Op::WaitAny(objects, t) => {
                let objects: Vec<&dyn Waitable> =
                    objects.iter().map(|i| self.waitable(*i)).collect();
                let i = wait_any(&objects, limit(*t))?;
                if i >= objects.len() {
                    return Err(R(0xDEAD));
                }
                Ok(())
            }
        }
    }
}

/// The errors each operation documents.
fn documented(op: &Op) -> &'static [ResultCode] {
    use ResultCode as R;
    const WAIT: &[ResultCode] = &[R::TIMED_OUT, R::CANCELLED];
    match op {
        Op::Sleep(_) | Op::Signal(_) | Op::Clear(_) | Op::CondvarSignal(_) | Op::TimerStop(_) => {
            &[]
        }
        Op::GetPriority(_) | Op::GetCoreMask(_) => &[R::INVALID_HANDLE],
        Op::SetPriority(..) => &[R::INVALID_HANDLE, R::INVALID_PRIORITY],
        Op::SetCoreMask(..) => &[
            R::INVALID_HANDLE,
            R::INVALID_CORE_ID,
            R::INVALID_COMBINATION,
        ],
        Op::WaitSync(..) => &[
            R::OUT_OF_RANGE,
            R::INVALID_HANDLE,
            R::TIMED_OUT,
            R::CANCELLED,
        ],
        Op::CreateHandle(_) => &[R::OUT_OF_HANDLES],
        Op::CloseHandle(_) => &[R::INVALID_HANDLE],
        Op::Spawn(..) => &[
            R::INVALID_PRIORITY,
            R::INVALID_CORE_ID,
            R::INVALID_COMBINATION,
            R::INVALID_STATE,
        ],
        Op::EventWait(..) | Op::SemAcquire(..) | Op::Send(..) | Op::Receive(..) | Op::Peek(..) => {
            WAIT
        }
        // The lock it takes first, then the wait.
        Op::CondvarWait(..) => &[
            R::TIMED_OUT,
            R::CANCELLED,
            R::INVALID_STATE,
            R::OUT_OF_RANGE,
        ],
        Op::SemRelease(..) => &[R::OUT_OF_RANGE],
        Op::Lock(..) | Op::LockAndLeak(_) => &[
            R::TIMED_OUT,
            R::CANCELLED,
            R::INVALID_STATE,
            R::OUT_OF_RANGE,
        ],
        Op::Unlock(_) => &[R::INVALID_STATE],
        Op::TimerStart(..) => &[R::OUT_OF_RANGE, R::CANCELLED, R::INVALID_STATE],
        Op::WaitAny(..) => &[R::OUT_OF_RANGE, R::TIMED_OUT, R::CANCELLED],
    }
}

/// Runs `ops` on the calling thread; the operations whose error is not documented.
fn play(world: &World, ops: &[Op]) -> Vec<String> {
    ops.iter()
        .filter_map(|op| match world.run(op) {
            Err(code) if !documented(op).contains(&code) => Some(format!("{op:?} -> {code}")),
            _ => None,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(128),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_calls_from_four_threads_never_panic_hang_or_stray(
        guests in prop::collection::vec(prop::collection::vec(op(), 0usize..24), 3),
        host in prop::collection::vec(op(), 0usize..24),
        capacities in (any::<usize>(), 0usize..4),
        sems in ((any::<u32>(), any::<u32>()), (0u32..3, 0u32..3)),
        run_for_us in 0u64..20_000,
    ) {
        let rt = Runtime::builder()
            .calibration(Calibration::default())
            .vcores(2)
            .vcore_escape_ms(50)
            // Escapes are no failure here: no flight recorder dumps for them.
            .flight(false)
            .build()
            .unwrap();
        let world = Arc::new(World::new(
            rt.clone(),
            [capacities.0, capacities.1],
            [sems.0, sems.1],
        ));
        let threads: Vec<_> = guests
            .into_iter()
            .map(|ops| {
                let w = world.clone();
                rt.thread().spawn(move || play(&w, &ops)).unwrap()
            })
            .collect();
        let host = {
            let w = world.clone();
            std::thread::spawn(move || play(&w, &host))
        };
        std::thread::sleep(Duration::from_micros(run_for_us));
        let report = rt.shutdown_timeout(Duration::from_secs(20));
        prop_assert!(report.is_clean(), "a hang: {}", report);
        let mut stray = Vec::new();
        for t in threads {
            match t.join() {
                Ok(s) => stray.extend(s),
                Err(_) => stray.push("a guest thread panicked".into()),
            }
        }
        match host.join() {
            Ok(s) => stray.extend(s),
            Err(_) => stray.push("the host thread panicked".into()),
        }
        for h in world.open.lock().unwrap().drain(..) {
            let _ = svc::close_handle(h);
        }
        prop_assert!(stray.is_empty(), "undocumented results: {stray:#?}");
    }
}
