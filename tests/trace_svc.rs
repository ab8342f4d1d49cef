//! The trace of the kernel's synchronization svcs: a wait names its svc, its guest word and,
//! for ArbitrateLock, the owner it waits for, so the wait tree puts a kernel mutex's waiters
//! under its holder and names a deadlock through kernel mutexes; a hand-off moves the other
//! waiters to the new owner in the tree too; a lent priority shows on its holder's track and
//! in the tree (and none where it is no better than the owner's own); a condition variable's
//! waiter moved onto a held mutex waits "then" for it; a kernel event's and a guest word's
//! signal each flow to the wake they caused; a new core mask shows on its thread's track.

mod tracefile;

use hos::os::{ClearMode, Event};
use hos::svc::{self, ArbitrationType, Handle, SignalType, WAITERS};
use hos::{Calibration, ResultCode, Runtime, State, WaitTree};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracefile::{load, scratch, track, Item};

fn runtime() -> Runtime {
    Runtime::builder()
        .calibration(Calibration::default())
        .flight(true)
        .build()
        .unwrap()
}

/// Reads the wait tree until `cond` holds of it, failing (with the tree) after 10 s.
fn tree_until(rt: &Runtime, what: &str, cond: impl Fn(&WaitTree) -> bool) -> WaitTree {
    let start = Instant::now();
    loop {
        let tree = rt.wait_tree();
        if cond(&tree) {
            return tree;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "never {what}:\n{tree}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether thread `id` waits on a `svc` wait (and, if `on` is given, waits for `on`).
fn waits_on(tree: &WaitTree, id: u64, svc: &str, on: Option<u64>) -> bool {
    tree.node(id).is_some_and(|n| {
        matches!(&n.state, State::Waiting { what } if what.starts_with(svc))
            && on.is_none_or(|h| n.holders == [h])
    })
}

/// The address of a guest word, as the trace prints it.
fn at(w: &Arc<AtomicU32>) -> String {
    format!("{:#x}", Arc::as_ptr(w) as usize)
}

/// Takes the kernel mutex word `w` as the SDK does when it is held: flags WAITERS and asks
/// the kernel, with this thread's handle as the tag.
fn arbitrate(w: &AtomicU32) -> Result<(), ResultCode> {
    let me = svc::current_thread_handle().0;
    let owner = w.fetch_or(WAITERS, SeqCst) & !WAITERS;
    svc::arbitrate_lock(Handle(owner), w, me)
}

/// Takes the free kernel mutex word `w` with guest atomics (the SDK's fast path).
fn take(w: &AtomicU32) {
    let me = svc::current_thread_handle().0;
    w.compare_exchange(0, me, SeqCst, SeqCst)
        .expect("the word is free");
}

#[test]
fn the_wait_tree_names_a_deadlock_through_kernel_mutexes() {
    let rt = runtime();
    let (m1, m2) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (a_has, b_has) = (
        Arc::new(Event::new(ClearMode::Manual)),
        Arc::new(Event::new(ClearMode::Manual)),
    );
    // Each takes one word, waits until the other has taken its own, then asks the kernel for
    // the other's: a deadlock that only the shutdown ends (both waits cancelled).
    let spawn = |name: &str,
                 mine: Arc<AtomicU32>,
                 theirs: Arc<AtomicU32>,
                 me: Arc<Event>,
                 them: Arc<Event>| {
        rt.thread()
            .name(name)
            .spawn(move || {
                take(&mine);
                me.signal();
                them.wait().unwrap();
                arbitrate(&theirs)
            })
            .unwrap()
    };
    let a = spawn(
        "KDeadA",
        m1.clone(),
        m2.clone(),
        a_has.clone(),
        b_has.clone(),
    );
    let b = spawn("KDeadB", m2.clone(), m1.clone(), b_has, a_has);
    let (ida, idb) = (a.thread().id(), b.thread().id());
    let tree = tree_until(&rt, "a deadlock through kernel mutexes", |t| {
        waits_on(t, ida, "ArbitrateLock", Some(idb)) && waits_on(t, idb, "ArbitrateLock", Some(ida))
    });
    let cycles = tree.cycles();
    assert_eq!(cycles.len(), 1, "{tree}");
    let mut cycle = cycles[0].clone();
    cycle.sort_unstable();
    assert_eq!(cycle, [ida.min(idb), ida.max(idb)], "{tree}");
    let text = tree.to_string();
    assert!(
        text.contains("deadlock: cycle KDeadA -> KDeadB -> KDeadA")
            || text.contains("deadlock: cycle KDeadB -> KDeadA -> KDeadB"),
        "{text}"
    );
    assert!(
        text.contains(&format!("waits on ArbitrateLock {}", at(&m2))),
        "A waits on B's word:\n{text}"
    );
    assert!(
        text.contains(&format!("waits on ArbitrateLock {}", at(&m1))),
        "B waits on A's word:\n{text}"
    );
    rt.shutdown();
    assert_eq!(a.join().unwrap(), Err(ResultCode::CANCELLED));
    assert_eq!(b.join().unwrap(), Err(ResultCode::CANCELLED));
}

/// The instants and slices named `name` on a track.
fn named<'a>(items: &'a [Item], name: &str) -> Vec<&'a Item> {
    items.iter().filter(|i| i.name == name).collect()
}

#[test]
fn a_hand_off_moves_the_waiters_to_the_new_owner_and_a_lent_priority_shows() {
    let rt = runtime();
    let m = Arc::new(AtomicU32::new(0));
    let (has, release, w1_hold) = (
        Arc::new(Event::new(ClearMode::Manual)),
        Arc::new(Event::new(ClearMode::Manual)),
        Arc::new(Event::new(ClearMode::Manual)),
    );
    // The owner (priority 59) takes the word and holds it until told; a priority-40 waiter
    // and then a priority-30 one wait for it in the kernel. The unlock hands it to the 30,
    // which holds it until told: the 40 now waits for the 30, not for the owner.
    let owner = {
        let (m, has, release) = (m.clone(), has.clone(), release.clone());
        rt.thread()
            .name("KOwner")
            .priority(59)
            .spawn(move || {
                take(&m);
                has.signal();
                release.wait().unwrap();
                svc::arbitrate_unlock(&m)
            })
            .unwrap()
    };
    let waiter = |name: &str, p: i32, hold: Option<Arc<Event>>| {
        let (m, has) = (m.clone(), has.clone());
        rt.thread()
            .name(name)
            .priority(p)
            .spawn(move || {
                has.wait().unwrap();
                arbitrate(&m)?;
                if let Some(hold) = hold {
                    hold.wait().unwrap();
                }
                svc::arbitrate_unlock(&m)
            })
            .unwrap()
    };
    let io = owner.thread().id();
    let w40 = waiter("KWaiter40", 40, None);
    let i40 = w40.thread().id();
    tree_until(&rt, "the 40 waiting for the owner", |t| {
        waits_on(t, i40, "ArbitrateLock", Some(io))
    });
    let w30 = waiter("KWaiter30", 30, Some(w1_hold.clone()));
    let i30 = w30.thread().id();
    let tree = tree_until(&rt, "both waiting, the owner lent 30", |t| {
        waits_on(t, i30, "ArbitrateLock", Some(io))
            && t.node(io).is_some_and(|n| n.lent == Some(30))
    });
    assert!(
        tree.to_string()
            .contains("KOwner (priority 59, runs at 30 lent, mask"),
        "{tree}"
    );
    release.signal();
    // The 30 takes the word, then waits on `hold`: both seen in one snapshot (a loaded
    // machine may show the move before the 30 reaches its wait).
    let tree = tree_until(
        &rt,
        "the 40 moved to the 30, the 30 waiting to be told",
        |t| {
            waits_on(t, i40, "ArbitrateLock", Some(i30))
            && t.node(i30).is_some_and(
                |n| matches!(&n.state, State::Waiting { what } if what.starts_with("event::Take")),
            )
        },
    );
    assert_eq!(tree.node(i40).unwrap().holders, [i30], "{tree}");
    let file = scratch("svc-handoff").join("handoff.json");
    w1_hold.signal();
    assert_eq!(owner.join().unwrap(), Ok(()));
    assert_eq!(w30.join().unwrap(), Ok(()));
    assert_eq!(w40.join().unwrap(), Ok(()));
    rt.write_trace(&file).unwrap();
    rt.shutdown();

    let (items, names, _) = load(&file);
    let (_, o) = track(&items, &names, "KOwner");
    let lent: Vec<&str> = o
        .iter()
        .filter(|i| i.ph == "i" && i.name.contains("lent"))
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(
        lent,
        [
            "priority 40 lent",
            "priority 30 lent",
            "lent priority taken back"
        ],
        "the owner's own track shows what it was lent: {o:?}"
    );
    let moved = format!("KWaiter40 now waits for KWaiter30 (mutex {})", at(&m));
    assert_eq!(
        named(&o, &moved).len(),
        1,
        "the owner's unlock moved the 40: {o:?}"
    );
    let (_, w) = track(&items, &names, "KWaiter30");
    assert!(!named(&w, "wait ArbitrateLock").is_empty(), "{w:?}");
    // The owner's unlock woke the 30: a flow from its signal to the 30's wait end.
    let woken = named(&w, "woken by KOwner");
    assert_eq!(woken.len(), 1, "{w:?}");
    let signal = o
        .iter()
        .find(|i| i.bind == woken[0].bind && !i.flow_in)
        .expect("the flow's source is on the owner's track");
    assert_eq!(signal.name, "signal");
}

#[test]
fn a_kernel_event_and_a_guest_word_signal_flow_to_the_wakes_they_caused() {
    let rt = runtime();
    let (write, read) = svc::create_event().unwrap();
    let word = Arc::new(AtomicU32::new(0));
    let waiter = {
        let word = word.clone();
        rt.thread()
            .name("KSignalled")
            .spawn(move || {
                svc::wait_synchronization(&[read], -1)?;
                svc::wait_for_address(&word, ArbitrationType::WaitIfEqual, 0, -1)
            })
            .unwrap()
    };
    let id = waiter.thread().id();
    tree_until(&rt, "a wait on the kernel event", |t| {
        waits_on(t, id, "event::", None)
    });
    let signaller = |name: &str, f: Box<dyn FnOnce() + Send>| {
        rt.thread().name(name).spawn(f).unwrap().join().unwrap();
    };
    signaller(
        "KEventSignaller",
        Box::new(move || svc::signal_event(write).unwrap()),
    );
    let tree = tree_until(&rt, "a wait on the word", |t| {
        waits_on(t, id, "WaitForAddress", None)
    });
    assert!(
        tree.to_string()
            .contains(&format!("waits on WaitForAddress {}", at(&word))),
        "{tree}"
    );
    let w = word.clone();
    signaller(
        "KWordSignaller",
        Box::new(move || svc::signal_to_address(&w, SignalType::Signal, 0, 1).unwrap()),
    );
    assert_eq!(waiter.join().unwrap(), Ok(()));
    let file = scratch("svc-flows").join("flows.json");
    rt.write_trace(&file).unwrap();
    rt.shutdown();
    svc::close_handle(write).unwrap();
    svc::close_handle(read).unwrap();

    let (items, names, _) = load(&file);
    let (_, k) = track(&items, &names, "KSignalled");
    let waits: Vec<&str> = k
        .iter()
        .filter(|i| i.name.starts_with("wait "))
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(waits, ["wait event::Take", "wait WaitForAddress"], "{k:?}");
    for from in ["KEventSignaller", "KWordSignaller"] {
        let woken = named(&k, &format!("woken by {from}"));
        assert_eq!(woken.len(), 1, "{from}: {k:?}");
        let (_, s) = track(&items, &names, from);
        let signal = s.iter().find(|i| i.bind == woken[0].bind && !i.flow_in);
        assert_eq!(
            signal.map(|i| i.name.as_str()),
            Some("signal"),
            "{from}: {s:?}"
        );
    }
}

/// A condition-variable waiter that a signal moves onto a held mutex waits on the key and
/// "then the mutex", under the mutex's owner; a waiter of the owner's priority lends none.
#[test]
fn a_waiter_moved_onto_a_held_mutex_waits_then_for_the_mutex() {
    let rt = runtime();
    let (m, key) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let release = Arc::new(Event::new(ClearMode::Manual));
    let waiter = {
        let (m, key) = (m.clone(), key.clone());
        rt.thread()
            .name("CvWaiter")
            .priority(44)
            .spawn(move || {
                take(&m);
                let me = svc::current_thread_handle().0;
                svc::wait_process_wide_key_atomic(&m, &key, me, -1)?;
                svc::arbitrate_unlock(&m)
            })
            .unwrap()
    };
    let iw = waiter.thread().id();
    tree_until(&rt, "the waiter on the key", |t| {
        waits_on(t, iw, "WaitProcessWideKeyAtomic", None)
    });
    let owner = {
        let (m, key, release) = (m.clone(), key.clone(), release.clone());
        rt.thread()
            .name("CvOwner")
            .priority(44)
            .spawn(move || {
                take(&m);
                // The waiter moves onto the mutex this thread holds.
                svc::signal_process_wide_key(&key, 1);
                release.wait().unwrap();
                svc::arbitrate_unlock(&m)
            })
            .unwrap()
    };
    let io = owner.thread().id();
    let then = format!("then the mutex {}", at(&m));
    let tree = tree_until(&rt, "the waiter moved onto the owner's mutex", |t| {
        t.node(iw).is_some_and(|n| {
            matches!(&n.state, State::Waiting { what } if what.contains(&then)) && n.holders == [io]
        })
    });
    assert_eq!(
        tree.node(io).unwrap().lent,
        None,
        "44 over 44 is no lending: {tree}"
    );
    release.signal();
    owner.join().unwrap().unwrap();
    waiter.join().unwrap().unwrap();
    rt.shutdown();
}

/// An owner whose own priority comes up to the one it was lent shows none lent: it runs at
/// its own (the table tells no change, as its effective priority stays the same).
#[test]
fn a_lent_priority_no_better_than_the_owners_own_is_not_shown() {
    let rt = runtime();
    let m = Arc::new(AtomicU32::new(0));
    let (has, raise, raised, release) = (
        Arc::new(Event::new(ClearMode::Manual)),
        Arc::new(Event::new(ClearMode::Manual)),
        Arc::new(Event::new(ClearMode::Manual)),
        Arc::new(Event::new(ClearMode::Manual)),
    );
    let owner = {
        let (m, has, raise, raised, release) = (
            m.clone(),
            has.clone(),
            raise.clone(),
            raised.clone(),
            release.clone(),
        );
        rt.thread()
            .name("LentOwner")
            .priority(59)
            .spawn(move || {
                take(&m);
                has.signal();
                raise.wait().unwrap();
                svc::set_thread_priority(Handle::CURRENT_THREAD, 30).unwrap();
                raised.signal();
                release.wait().unwrap();
                svc::arbitrate_unlock(&m)
            })
            .unwrap()
    };
    let io = owner.thread().id();
    let waiter = {
        let (m, has) = (m.clone(), has.clone());
        rt.thread()
            .name("LentWaiter")
            .priority(30)
            .spawn(move || {
                has.wait().unwrap();
                arbitrate(&m)?;
                svc::arbitrate_unlock(&m)
            })
            .unwrap()
    };
    tree_until(&rt, "the owner lent 30", |t| {
        t.node(io).is_some_and(|n| n.lent == Some(30))
    });
    raise.signal();
    raised.wait().unwrap();
    let tree = rt.wait_tree();
    let n = tree.node(io).expect("the owner");
    assert_eq!((n.priority, n.lent), (30, None), "{tree}");
    assert!(!tree.to_string().contains("lent"), "{tree}");
    release.signal();
    owner.join().unwrap().unwrap();
    waiter.join().unwrap().unwrap();
    rt.shutdown();
}

/// SetThreadCoreMask shows on the thread's own track: its new ideal core and mask.
#[test]
fn a_new_core_mask_shows_on_its_threads_track() {
    let rt = runtime();
    let mover = rt
        .thread()
        .name("CoreMover")
        .spawn(|| svc::set_thread_core_mask(Handle::CURRENT_THREAD, 2, 0b0110))
        .unwrap();
    assert_eq!(mover.join().unwrap(), Ok(()));
    let file = scratch("svc-cores").join("cores.json");
    rt.write_trace(&file).unwrap();
    rt.shutdown();
    let (items, names, _) = load(&file);
    let (_, mine) = track(&items, &names, "CoreMover");
    assert_eq!(
        named(&mine, "cores: ideal 2, mask 0x6").len(),
        1,
        "{mine:?}"
    );
}
