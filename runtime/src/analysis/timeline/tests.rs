//! The timeline's folding and its ties of wakes and kicks to waits, on hand-made events.

use super::*;

fn ev(t: u64, kind: Kind, x: u64, a: u64, b: u64) -> Event {
    Event { t, kind, x, a, b }
}

fn kinds(spans: &[Span]) -> Vec<(u64, u64, &'static str)> {
    spans
        .iter()
        .map(|s| {
            let name = match &s.what {
                What::Core { .. } => "core",
                What::CoreWait => "core wait",
                What::Wait { .. } => "wait",
                What::Spin => "spin",
                What::Park => "park",
                What::Sleep { .. } => "sleep",
            };
            (s.begin, s.end, name)
        })
        .collect()
}

#[test]
fn a_registration_begins_a_wait_and_its_end_says_a_caught_spin() {
    let object = WaitFor::Object as u64 | 7 << 8;
    let events = [
        ev(10, Kind::Core, 0, 0, 0),
        // A registration outside a wait (an async wait) is no wait's.
        ev(15, Kind::Blocked, 3, 0xAA, 0),
        ev(20, Kind::WaitBegin, object, 0xBEEF, 42),
        ev(25, Kind::SpinEnd, SpinEnd::Missed as u64, 0, 0),
        ev(40, Kind::Repoll, 0, 0, 0),
        ev(45, Kind::Blocked, 7, 0xBEEF, 0),
        ev(50, Kind::WaitEnd, SpinEnd::Caught as u64, 0, 0),
        ev(55, Kind::Core, 0, 0, 0),
    ];
    let spans = fold(&events, 100);
    assert_eq!(
        kinds(&spans),
        [
            (10, 20, "core"),
            (20, 50, "wait"),
            (20, 25, "spin"),
            (25, 40, "park"),
            (40, 50, "spin"),
            (55, 100, "core"),
        ]
    );
    let What::Wait { on, objects, .. } = &spans[1].what else {
        panic!("{spans:?}");
    };
    assert_eq!(*on, WaitFor::Object);
    let first = Object {
        addr: 0xBEEF,
        label: 7,
        holder: 42,
    };
    let again = Object { holder: 0, ..first };
    assert_eq!(objects, &[first, again]);
    assert!(spans[5].open && !spans[1].open);
}

#[test]
fn a_sleep_and_an_exit_give_the_core_up_and_a_deadline_joins_its_wait() {
    let events = [
        ev(10, Kind::Core, 2, 0, 0),
        ev(20, Kind::SleepBegin, 1, 1_000, 0),
        ev(21, Kind::Deadline, 0, 1_020, 0),
        ev(22, Kind::WaitBegin, WaitFor::Sleep as u64, 0, 0),
        ev(1_025, Kind::WaitEnd, 0, 0, 0),
        ev(1_026, Kind::SleepEnd, 0, 5, 0),
        ev(1_030, Kind::Core, 2, 0, 0),
        ev(1_040, Kind::ThreadExit, 0, 0, 0),
    ];
    let spans = fold(&events, 2_000);
    assert_eq!(
        kinds(&spans),
        [
            (10, 20, "core"),
            (20, 1_026, "sleep"),
            (22, 1_025, "wait"),
            (22, 1_025, "park"),
            (1_030, 1_040, "core"),
        ]
    );
    let What::Wait { deadline, .. } = &spans[2].what else {
        panic!("{spans:?}");
    };
    assert_eq!(*deadline, Some(1_020));
}

#[test]
fn a_wait_takes_the_last_move_between_its_begin_and_its_end() {
    let lock = WaitFor::Object as u64 | 7 << 8;
    let events = [
        ev(10, Kind::WaitBegin, lock, 0xA0, 1),
        ev(50, Kind::WaitEnd, 0, 0, 0),
        ev(60, Kind::WaitBegin, lock, 0xA0, 1),
        ev(90, Kind::WaitEnd, 0, 0, 0),
        ev(95, Kind::WaitBegin, lock, 0xB0, 3),
    ];
    let mut spans = fold(&events, 200);
    // Recorded by other threads: moves of thread 9's waits (and one of thread 8's).
    let others = [
        ev(20, Kind::Moved, 0xA0, 9, 2),
        ev(30, Kind::Moved, 0xA0, 9, 4),
        ev(40, Kind::Moved, 0xA0, 8, 5),
        ev(120, Kind::Moved, 0xC0, 9, 6),
    ];
    let moved = moves([&others[..], &events[..]]);
    assert_eq!(moved[&9], [(20, 2, 0xA0), (30, 4, 0xA0), (120, 6, 0xC0)]);
    mark_moves(&mut spans, &moved[&9]);
    let marks: Vec<_> = spans
        .iter()
        .filter(|s| matches!(s.what, What::Wait { .. }))
        .map(|s| (s.begin, s.moved_to))
        .collect();
    assert_eq!(
        marks,
        [(10, Some((4, 0xA0))), (60, None), (95, Some((6, 0xC0)))],
        "the last move in each wait; none in a wait nothing moved"
    );
}

/// A snapshot of two threads: the waker (trace id 1) and the waiter (2), each a host
/// thread.
fn two(waker: Vec<Event>, waiter: Vec<Event>) -> Snapshot {
    let thread = |tid, events| ThreadTrace {
        tid,
        meta: crate::trace::Meta::default(),
        events,
    };
    Snapshot {
        runtime: 0,
        start: 0,
        end: 100,
        dropped: 0,
        threads: vec![thread(1, waker), thread(2, waiter)],
    }
}

/// The waiter's wait's waker and the edge's start.
fn woken_by(snap: &Snapshot) -> Option<(u64, u64)> {
    let t = Timelines::of(snap);
    let (_, spans) = t
        .spans
        .iter()
        .find(|(tid, _)| *tid == 2)
        .expect("the waiter");
    let wait = spans.iter().find(|s| matches!(s.what, What::Wait { .. }));
    wait.expect("its wait").woken_by
}

#[test]
fn an_untimed_wake_ends_the_wait_its_interval_meets_and_no_other() {
    let object = WaitFor::Object as u64 | 7 << 8;
    let waiter = vec![
        ev(20, Kind::WaitBegin, object, 0xA0, 0),
        ev(30, Kind::WaitEnd, SpinEnd::Caught as u64, 0, 0),
    ];
    // Stamped 10 (its thread's event before it); it happened before 40, the next.
    let waker = |next: u64, x: u64| {
        vec![
            ev(10, Kind::Frame, 0, 1, 0),
            ev(10, Kind::Wake, x, 2, 0),
            ev(10, Kind::Wake, UNTIMED, 3, 0),
            ev(next, Kind::WaitBegin, object, 0xB0, 0),
        ]
    };
    assert_eq!(
        woken_by(&two(waker(40, UNTIMED), waiter.clone())),
        Some((1, 20)),
        "the edge starts at the wait's begin, inside the wake's interval"
    );
    assert_eq!(woken_by(&two(waker(15, UNTIMED), waiter.clone())), None);
    assert_eq!(
        woken_by(&two(waker(40, 0), waiter.clone())),
        None,
        "a timed wake before the wait is no wake of it"
    );
    let timed = vec![ev(25, Kind::Wake, 0, 2, 0)];
    assert_eq!(woken_by(&two(timed, waiter)), Some((1, 25)));
}

/// What ended each of the waiter's two object waits (`waits`, begin and end) given the
/// waker's `events`, and how many wake edges the timeline made.
fn two_waits(waits: [(u64, u64); 2], events: Vec<Event>) -> (Vec<Option<(u64, u64)>>, usize) {
    let object = WaitFor::Object as u64 | 7 << 8;
    let waiter = waits
        .iter()
        .flat_map(|&(b, e)| {
            [
                ev(b, Kind::WaitBegin, object, 0xA0, 0),
                ev(e, Kind::WaitEnd, SpinEnd::Caught as u64, 0, 0),
            ]
        })
        .collect();
    let t = Timelines::of(&two(events, waiter));
    let (_, spans) = t
        .spans
        .iter()
        .find(|(tid, _)| *tid == 2)
        .expect("the waiter");
    let woken = spans
        .iter()
        .filter(|s| matches!(s.what, What::Wait { .. }))
        .map(|s| s.woken_by)
        .collect();
    (woken, t.flows.len())
}

#[test]
fn an_untimed_wake_whose_interval_meets_two_waits_ends_the_first_only() {
    // Stamped 10, happened before 60: within reach of both waits.
    let waker = vec![
        ev(10, Kind::Frame, 0, 1, 0),
        ev(10, Kind::Wake, UNTIMED, 2, 0),
        ev(60, Kind::Frame, 0, 2, 0),
    ];
    let (woken, flows) = two_waits([(20, 30), (40, 50)], waker);
    assert_eq!((woken, flows), (vec![Some((1, 20)), None], 1));
}

#[test]
fn a_timed_wake_ends_its_wait_and_an_untimed_one_after_it_the_next() {
    // A signal (timed, 25), then a hand-off stamped with it that happened before 50.
    let waker = vec![
        ev(10, Kind::Frame, 0, 1, 0),
        ev(25, Kind::Wake, 0, 2, 0),
        ev(25, Kind::Wake, UNTIMED, 2, 0),
        ev(50, Kind::Frame, 0, 2, 0),
    ];
    let (woken, flows) = two_waits([(20, 30), (35, 45)], waker);
    assert_eq!((woken, flows), (vec![Some((1, 25)), Some((1, 35))], 2));
}

#[test]
fn an_untimed_wake_whose_interval_closes_at_a_waits_begin_may_end_it() {
    // Stamped 10, happened by 20, when the wait began (a tie keeps no order across threads).
    let waker = vec![
        ev(10, Kind::Frame, 0, 1, 0),
        ev(10, Kind::Wake, UNTIMED, 2, 0),
        ev(20, Kind::Frame, 0, 2, 0),
    ];
    let (woken, _) = two_waits([(20, 30), (40, 50)], waker);
    assert_eq!(woken, [Some((1, 20)), None]);
}

#[test]
fn an_idle_poll_is_woken_by_its_promotion_and_another_sleep_by_nobody() {
    let sleep = |path: SleepPath| {
        vec![
            ev(20, Kind::SleepBegin, 1, 20_000, 0),
            ev(60, Kind::SleepEnd, path as u64, 0, 0),
        ]
    };
    // A wake before the sleep (5), the promotion (40), then a wake of its precise finish
    // (55, as the reactor's).
    let waker = vec![
        ev(5, Kind::Wake, 0, 2, 0),
        ev(40, Kind::Wake, 0, 2, 0),
        ev(55, Kind::Wake, 0, 2, 0),
    ];
    let slept_with = |waker: Vec<Event>, path| {
        let t = Timelines::of(&two(waker, sleep(path)));
        let (_, spans) = t.spans.into_iter().find(|(tid, _)| *tid == 2).expect("it");
        spans[0].woken_by
    };
    let slept = |path| slept_with(waker.clone(), path);
    assert_eq!(
        slept(SleepPath::IdlePoll),
        Some((1, 40)),
        "the first wake inside"
    );
    let at_begin = vec![ev(20, Kind::Wake, 0, 2, 0), ev(40, Kind::Wake, 0, 2, 0)];
    assert_eq!(
        slept_with(at_begin, SleepPath::IdlePoll),
        Some((1, 20)),
        "a wake at the sleep's begin is inside it"
    );
    assert_eq!(
        slept(SleepPath::PreciseReactor),
        None,
        "a reactor's wake ends no sleep"
    );
}
