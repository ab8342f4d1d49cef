//! The `.hosrec` file (`det::record`): round trips, every way a file can be wrong, the
//! verifier against a replay, and the size of a recording without decisions.

use crate::det::clock::Costs;
use crate::det::post::Post;
use crate::det::record::{Header, Input, RecordError, Recording, Writer, FORMAT_VERSION};
use crate::det::selector::{Pct, Selector, Spec, Stable};
use crate::det::verifier::{compare, Expected, Verifier};
use crate::det::witness::{Candidate, Pick, Reason, Witness, CHECK_EVERY};
use proptest::prelude::*;

const Q: u32 = 1_000;

fn header(decisions: bool) -> Header {
    Header {
        build: 0xB11D,
        build_id: "Game 1.0".into(),
        cores: 3,
        quantum: Q,
        costs: Costs::default(),
        selector: Spec::Pct {
            depth: 2,
            seed: 77,
            steps: 500,
        },
        entropy_seed: 5,
        decisions,
    }
}

/// A run of `n` decisions by `sel` over cores whose runnable set changes, with each
/// decision's witness and `Stable`'s pick for it.
fn run(sel: &mut dyn Selector, n: u64) -> Vec<(Witness, Pick)> {
    let mut stable = Stable::new(Q);
    let mut current = None;
    (0..n)
        .map(|i| {
            let mask = [0b111u8, 0b011, 0b110, 0b101, 0b010][(i % 5) as usize];
            let candidates: Vec<Candidate> = (0..3u8)
                .filter(|c| mask & (1 << c) != 0)
                .map(|core| Candidate {
                    core,
                    thread: 10 + u64::from(core),
                    priority: 44,
                })
                .collect();
            let reason = if i == 0 { Reason::Start } else { Reason::Wait };
            let s = stable.next(&candidates, current, reason).unwrap();
            let pick = sel.next(&candidates, current, reason).unwrap();
            current = Some(candidates[pick.choice as usize].core);
            let w = Witness {
                decision: i,
                vt: i * 3_000,
                candidates,
                pick,
                reason,
                object: i % 7,
                result: 0,
            };
            (w, s)
        })
        .collect()
}

/// `run`, recorded with `inputs` (decision, post) applied before their decisions.
fn record(header: &Header, run: &[(Witness, Pick)], inputs: &[Input]) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), header).unwrap();
    let mut next = inputs.iter().peekable();
    for (witness, stable) in run {
        while let Some(i) = next.next_if(|i| i.decision == witness.decision) {
            w.input(&i.post).unwrap();
        }
        w.decision(witness, *stable).unwrap();
    }
    for i in next {
        w.input(&i.post).unwrap();
    }
    assert_eq!(w.decisions(), run.len() as u64);
    w.finish(false).unwrap()
}

fn pct() -> Pct {
    Pct::new(2, 77, 500, Q)
}

fn inputs(n: u64) -> Vec<Input> {
    (0..n)
        .map(|k| Input {
            decision: k * 100,
            post: Post {
                vt: k * 300_000 + (k % 3) * 7,
                source: (k % 2) as u32,
                seq: k / 2,
                payload: vec![k as u8; (k % 20) as usize],
            },
        })
        .collect()
}

#[test]
fn a_recording_reads_back_as_written() {
    for decisions in [false, true] {
        let h = header(decisions);
        let r = run(&mut pct(), 3 * CHECK_EVERY + 17);
        let ins = inputs(120);
        let rec = Recording::parse(&record(&h, &r, &ins)).unwrap();
        assert_eq!(rec.header, h);
        assert_eq!(rec.inputs, ins);
        assert_eq!(rec.total, r.len() as u64);
        assert_eq!(rec.checks.len(), 3);
        assert_eq!(rec.decisions.is_some(), decisions);
        if let Some(log) = &rec.decisions {
            assert!(!log.deviations().is_empty(), "pct deviates from stable");
        }
        let mut v = Verifier::new(rec.clone());
        for (w, s) in &r {
            v.observe(w, *s).unwrap();
        }
        v.finish().unwrap();
        assert!(!rec.cut);
        assert_eq!(
            v.holds_at(),
            None,
            "a run at rest: a replay that goes on diverges"
        );
    }
}

#[test]
fn a_cut_run_says_so_and_its_replay_holds_at_its_end() {
    let r = run(&mut pct(), 40);
    let mut w = Writer::new(Vec::new(), &header(false)).unwrap();
    r.iter().for_each(|(wi, s)| w.decision(wi, *s).unwrap());
    let file = w.finish(true).unwrap();
    let rec = Recording::parse(&file).unwrap();
    assert!(rec.cut);
    assert_eq!(Verifier::new(rec).holds_at(), Some(40));
    let mut bad = file.clone();
    *bad.last_mut().unwrap() = 2;
    let e = Recording::parse(&bad).unwrap_err().to_string();
    assert!(e.contains("cut flag 2 is not 0 or 1"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_run_round_trips(
        build in any::<u64>(),
        cores in 1u8..=8,
        quantum in 1u32..100_000,
        checkpoint_ns in any::<u64>(),
        seed in any::<u64>(),
        decisions in any::<bool>(),
        n in 0u64..10_000,
        posts in proptest::collection::vec((0u64..10_000, any::<u64>(), 0u32..5, proptest::collection::vec(any::<u8>(), 0..40)), 0..50),
    ) {
        let h = Header {
            build,
            build_id: format!("id {seed:x}"),
            cores,
            quantum,
            costs: Costs { checkpoint_ns, op_ns: 9 },
            selector: Spec::Random { seed },
            entropy_seed: !seed,
            decisions,
        };
        let r = run(&mut *h.selector.seeded(Q).unwrap(), n);
        let mut posts = posts;
        posts.sort_by_key(|p| p.0);
        let mut seqs = [0u64; 5];
        let ins: Vec<Input> = posts
            .into_iter()
            .map(|(d, vt, source, payload)| {
                let seq = seqs[source as usize];
                seqs[source as usize] += 1;
                Input { decision: d.min(n), post: Post { vt, source, seq, payload } }
            })
            .collect();
        let rec = Recording::parse(&record(&h, &r, &ins)).unwrap();
        prop_assert_eq!(&rec.header, &h);
        prop_assert_eq!(&rec.inputs, &ins);
        prop_assert_eq!(rec.total, n);
        prop_assert_eq!(rec.checks.len() as u64, n / CHECK_EVERY);
        if let Some(log) = &rec.decisions {
            let mut c = log.cursor();
            for (w, s) in &r {
                prop_assert_eq!(c.next(log, *s), Some(w.pick));
            }
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut file = record(&header(true), &run(&mut pct(), 20), &inputs(2));
        let cut = file.len().min(60);
        file.truncate(cut);
        file.extend_from_slice(&bytes);
        let _ = Recording::parse(&file);
        prop_assert!(Recording::parse(&bytes).is_err());
    }
}

#[test]
fn every_strict_prefix_is_truncated() {
    let file = record(&header(true), &run(&mut pct(), 300), &inputs(3));
    for len in 0..file.len() {
        match Recording::parse(&file[..len]) {
            Err(RecordError::Truncated { offset, .. }) => assert_eq!(offset, len),
            other => panic!("a prefix of {len} bytes: {other:?}"),
        }
    }
    let e = Recording::parse(&file[..file.len() - 1]).unwrap_err();
    assert!(e.to_string().contains("truncated at byte"), "{e}");
}

#[test]
fn a_bad_file_names_what_is_wrong() {
    let file = record(&header(false), &run(&mut pct(), 10), &[]);
    let mut bad = file.clone();
    bad[0] = b'X';
    assert_eq!(Recording::parse(&bad), Err(RecordError::NotARecording));

    let mut newer = file.clone();
    newer[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let e = Recording::parse(&newer).unwrap_err();
    assert_eq!(
        e,
        RecordError::Version {
            found: FORMAT_VERSION + 1,
            supported: FORMAT_VERSION
        }
    );
    assert!(
        e.to_string()
            .contains("version 4, this build reads version 3"),
        "{e}"
    );

    let mut id = file.clone();
    // After the fixed fields (57 bytes), the selector `pct:2:77:500` and its length: the
    // build id's length, then its first byte.
    assert_eq!(&id[71..79], b"Game 1.0");
    id[71] = 0xFF;
    let e = Recording::parse(&id).unwrap_err();
    assert!(e.to_string().contains("the build id is not UTF-8"), "{e}");

    let mut cores = file.clone();
    cores[28] = 4; // the core count, which the config hash covers
    let e = Recording::parse(&cores).unwrap_err();
    assert!(e.to_string().contains("config hash"), "{e}");

    let mut tail = file.clone();
    tail.push(0);
    let e = Recording::parse(&tail).unwrap_err();
    assert!(e.to_string().contains("1 bytes after the end"), "{e}");

    let mut tag = file.clone();
    // The end: its tag, two one-byte varints, the 8-byte hash and the cut flag.
    let end = tag.len() - 12;
    assert_eq!(tag[end], 4);
    tag[end] = 9;
    let e = Recording::parse(&tag).unwrap_err();
    assert!(e.to_string().contains("unknown entry tag 9"), "{e}");

    let missing = std::path::Path::new("/nonexistent/run.hosrec");
    let e = Recording::open(missing).unwrap_err();
    assert!(
        e.to_string().starts_with("/nonexistent/run.hosrec: "),
        "{e}"
    );
}

#[test]
fn a_replay_must_match_the_build_and_config() {
    let rec = header(false);
    assert_eq!(rec.check(&rec), Ok(()));
    let mut live = rec.clone();
    live.selector = Spec::Replay("x.hosrec".into());
    live.entropy_seed = 0;
    assert_eq!(rec.check(&live), Ok(()), "the recording supplies these");
    live.quantum = 50;
    let e = rec.check(&live).unwrap_err();
    assert_eq!(
        e,
        RecordError::Config {
            field: "quantum",
            recorded: u64::from(Q),
            live: 50
        }
    );
    assert!(
        e.to_string().contains("quantum recorded 1000, live 50"),
        "{e}"
    );
    live.build = 1;
    assert!(matches!(
        rec.check(&live),
        Err(RecordError::Build {
            recorded: 0xB11D,
            live: 1,
            ..
        })
    ));
    live.build_id = "Game 1.1".into();
    let e = rec.check(&live).unwrap_err().to_string();
    assert!(
        e.contains("(host build id \"Game 1.0\")") && e.contains("(host build id \"Game 1.1\")"),
        "{e}"
    );
    assert_ne!(live.config_hash(), rec.config_hash());
}

#[test]
fn the_verifier_names_where_a_replay_left_the_recording() {
    let r = run(&mut pct(), 2 * CHECK_EVERY + 5);
    for decisions in [false, true] {
        let rec = Recording::parse(&record(&header(decisions), &r, &[])).unwrap();
        let mut v = Verifier::new(rec.clone());
        let at = 5_000;
        let mut err = None;
        for (w, s) in &r {
            let mut w = w.clone();
            if w.decision == at {
                w.object += 1; // a planted leak: one witness differs, not its pick
            }
            if let Err(e) = v.observe(&w, *s) {
                err = Some(e);
                break;
            }
        }
        let e = err.expect("the leak is caught");
        assert_eq!(e.decision, 2 * CHECK_EVERY - 1, "caught at the next check");
        assert_eq!(
            e.expected,
            Expected::Hash {
                since: CHECK_EVERY,
                recorded: rec.checks[1],
                live: match e.expected {
                    Expected::Hash { live, .. } => live,
                    _ => unreachable!(),
                }
            }
        );
        assert!(e.to_string().contains("since decision 4096"), "{e}");
    }

    let rec = Recording::parse(&record(&header(true), &r, &[])).unwrap();
    let mut v = Verifier::new(rec.clone());
    for (w, s) in &r[..10] {
        v.observe(w, *s).unwrap();
    }
    let (mut w, s) = r[10].clone();
    w.pick.quantum += 1;
    let e = v.observe(&w, s).unwrap_err();
    assert_eq!(e.decision, 10, "a pick is caught at once");
    assert_eq!(e.expected, Expected::Pick(r[10].0.pick));
    assert!(
        e.to_string()
            .starts_with("diverged at decision 10 (vt 30000 ns): expected pick"),
        "{e}"
    );

    let short = Recording::parse(&record(&header(false), &r[..3], &[])).unwrap();
    let mut v = Verifier::new(short.clone());
    for (w, s) in &r[..3] {
        v.observe(w, *s).unwrap();
    }
    let e = v.observe(&r[3].0, r[3].1).unwrap_err();
    assert_eq!(e.expected, Expected::End(3));

    // A replay that ends early diverged where it ended.
    let mut v = Verifier::new(short.clone());
    v.observe(&r[0].0, r[0].1).unwrap();
    let e = v.finish().unwrap_err();
    assert_eq!((e.decision, e.vt, e.actual.is_none()), (1, r[0].0.vt, true));
    assert!(e.to_string().ends_with("actual: the run ended"), "{e}");

    // A witness that differs after the last check is caught at the end, by the final hash.
    let mut v = Verifier::new(short.clone());
    for (i, (w, s)) in r[..3].iter().enumerate() {
        let mut w = w.clone();
        w.result += u32::from(i == 1);
        v.observe(&w, *s).unwrap();
    }
    let e = v.finish().unwrap_err();
    assert!(
        matches!(e.expected, Expected::Hash { since: 0, recorded, .. } if recorded == short.hash),
        "{e}"
    );
}

#[test]
fn two_runs_compare_witness_by_witness() {
    let a = run(&mut pct(), 50);
    let b = run(&mut pct(), 50);
    for ((x, _), (y, _)) in a.iter().zip(&b) {
        compare(x, y).unwrap();
    }
    let mut y = a[7].0.clone();
    y.candidates.pop();
    let e = compare(&a[7].0, &y).unwrap_err();
    assert_eq!(e.expected, Expected::Witness(Box::new(a[7].0.clone())));
    assert!(e.to_string().contains("expected decision 7"), "{e}");
}

#[test]
fn a_recording_replays_its_schedule() {
    let r = run(&mut pct(), 1_000);
    for decisions in [false, true] {
        let rec = Recording::parse(&record(&header(decisions), &r, &[])).unwrap();
        let replayed = run(&mut *crate::det::replayer(&rec).unwrap(), 1_000);
        assert_eq!(replayed, r, "decisions {decisions}");
    }
    let mut h = header(false);
    h.selector = Spec::Replay("old.hosrec".into());
    let rec = Recording::parse(&record(&h, &r[..5], &[])).unwrap();
    assert_eq!(
        crate::det::replayer(&rec).err(),
        Some(RecordError::NoSchedule)
    );
}

#[test]
fn a_replay_switch_opens_its_file() {
    let r = run(&mut pct(), 600);
    let path = std::env::temp_dir().join(format!("hos-det-{}.hosrec", std::process::id()));
    std::fs::write(&path, record(&header(true), &r, &[])).unwrap();
    let spec: Spec = format!("replay:{}", path.display()).parse().unwrap();
    let replayed = run(&mut *crate::det::selector(&spec, 7).unwrap(), 600);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(replayed, r);
    assert!(crate::det::selector(&spec, 7).is_err(), "the file is gone");
    let mut stable = crate::det::selector(&Spec::Stable, 7).unwrap();
    assert_eq!(run(&mut *stable, 3)[0].0.pick.quantum, 7);
}

/// REPLAY.md's budget: 10 minutes of 60 Hz, 16-byte inputs plus the checks of 50,000
/// decisions a second stay under 1 MB without the decision log.
#[test]
fn ten_minutes_of_inputs_and_checks_stay_under_1_mb() {
    const RATE: u64 = 50_000;
    const FRAMES: u64 = 10 * 60 * 60;
    let mut w = Writer::new(Vec::new(), &header(false)).unwrap();
    let mut witness = run(&mut Stable::new(Q), 1).remove(0).0;
    witness.candidates.truncate(1);
    let stable = witness.pick;
    for frame in 0..FRAMES {
        w.input(&Post {
            vt: frame * 1_000_000_000 / 60,
            source: 1,
            seq: frame,
            payload: vec![frame as u8; 16],
        })
        .unwrap();
        for _ in 0..RATE / 60 {
            w.decision(&witness, stable).unwrap();
            witness.decision += 1;
        }
    }
    let file = w.finish(false).unwrap();
    assert_eq!(witness.decision, FRAMES * (RATE / 60));
    assert!(file.len() < 1_000_000, "{} bytes", file.len());
    let rec = Recording::parse(&file).unwrap();
    assert_eq!(rec.inputs.len() as u64, FRAMES);
    assert_eq!(rec.checks.len() as u64, witness.decision / CHECK_EVERY);
}
