//! A deterministic run's parts, made from the config: the token with its selector, the feed
//! its posts come from (the host, or a recording being replayed), the journal its
//! decisions go to (a recording being made, a replay's checks) and the guest's entropy.
//!
//! What a recording's header holds of them: the build hash (hos's version and the host's
//! build id, HOS_DET_BUILD_ID), and the entropy seed, the selector's own (0 for `stable`), so
//! one seed gives the whole run, its entropy stream kept apart from the schedule's
//! (`det::rng`); a replay takes the recording's seed.
//!
//! Invariant: a runtime in the mode starts only with every part its config names: a replay
//! whose file cannot be read or whose header does not match the live config, or a recording
//! that cannot be created, fails the build with an error naming the file, the field and both
//! values; nothing is left half set up.

use crate::build_error::BuildError;
use crate::config::Config;
use crate::det::clock::Costs;
use crate::det::feed::Feed;
use crate::det::journal::Journal;
use crate::det::record::{Header, RecordError, Recording};
use crate::det::selector::Spec;
use crate::det::witness::Fnv64;
use crate::token::Token;

/// The build hash a recording's header holds: hos's version and the host's build id (empty:
/// none). A seed names the same schedule only on the same build.
fn build_hash(build_id: &str) -> u64 {
    let mut h = Fnv64::new();
    h.bytes(concat!("hos-runtime ", env!("CARGO_PKG_VERSION")).as_bytes());
    h.u64(build_id.len() as u64);
    h.bytes(build_id.as_bytes());
    h.finish()
}

/// The entropy seed of a run under `spec`: its seed (0 for `stable`; a replay's is the
/// recording's, set where it is read).
fn entropy_seed(spec: &Spec) -> u64 {
    match spec {
        Spec::Stable | Spec::Replay(_) | Spec::Guided { .. } => 0,
        Spec::Random { seed } | Spec::Pct { seed, .. } | Spec::Chaos { seed } => *seed,
    }
}

/// What the runtime keeps of a deterministic run.
pub(crate) struct Det {
    /// The token.
    pub(crate) token: Token,
    /// The guest's entropy, drawn from the run's recorded entropy seed (`entropy.rs`).
    pub(crate) entropy: [u64; 4],
}

/// The run `config` asks for: `None` with the mode off.
///
/// # Errors
/// [`BuildError::Replay`] for a replay's file that cannot be read or does not match,
/// [`BuildError::Record`] for a recording that cannot be created.
pub(crate) fn token(config: &Config) -> Result<Option<Det>, BuildError> {
    let Some(spec) = &config.det else {
        return Ok(None);
    };
    let build_id = config.det_build_id.clone().unwrap_or_default();
    let mut header = Header {
        build: build_hash(&build_id),
        build_id,
        cores: config.cores as u8,
        quantum: config.det_quantum,
        costs: Costs::default(),
        selector: spec.clone(),
        entropy_seed: entropy_seed(spec),
        decisions: config.det_record_decisions,
    };
    let mut journal = Journal::new(config.det_quantum);
    let (selector, feed) = match spec {
        Spec::Replay(path) => {
            let recording = Recording::open(path).map_err(BuildError::Replay)?;
            recording
                .header
                .check(&header)
                .map_err(BuildError::Replay)?;
            let selector = crate::det::replayer(&recording).map_err(BuildError::Replay)?;
            // A recording of this replay names the schedule and the entropy as the replayed
            // one did.
            header.selector = recording.header.selector.clone();
            header.entropy_seed = recording.header.entropy_seed;
            let feed = Feed::replay(recording.inputs.clone());
            journal.replay(recording);
            (selector, feed)
        }
        // A new schedule made of a recording's: its inputs, nothing to check it against.
        Spec::Guided { path, prefix, drop } => {
            let recording = Recording::open(path).map_err(BuildError::Replay)?;
            recording
                .header
                .check(&header)
                .map_err(BuildError::Replay)?;
            let selector =
                crate::det::guided(&recording, *prefix, drop).map_err(BuildError::Replay)?;
            // Its guest draws the guide's entropy, as the run it was made from did.
            header.entropy_seed = recording.header.entropy_seed;
            (selector, Feed::replay(recording.inputs))
        }
        seeded => {
            let selector = seeded.seeded(config.det_quantum);
            let selector = selector.ok_or(BuildError::Replay(RecordError::NoSchedule))?;
            (selector, Feed::live())
        }
    };
    if let Some(path) = &config.det_record {
        journal
            .record(path, &header)
            .map_err(|error| BuildError::Record {
                path: path.clone(),
                error,
            })?;
    }
    Ok(Some(Det {
        token: Token::new(selector, config.cores as u8, config.det_pace, feed, journal),
        entropy: crate::entropy::seeded(header.entropy_seed),
    }))
}
