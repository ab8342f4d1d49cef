//! A deterministic run's parts, made from the config: the token with its selector, the feed
//! its posts come from (the host, or a recording being replayed) and the journal its
//! decisions go to (a recording being made, a replay's checks).
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

/// The build hash a recording's header holds: hos's version. A seed names the same schedule
/// only on the same build.
fn build_hash() -> u64 {
    let mut h = Fnv64::new();
    h.bytes(concat!("hos-runtime ", env!("CARGO_PKG_VERSION")).as_bytes());
    h.finish()
}

/// The token `config` asks for: `None` with the mode off.
///
/// # Errors
/// [`BuildError::Replay`] for a replay's file that cannot be read or does not match,
/// [`BuildError::Record`] for a recording that cannot be created.
pub(crate) fn token(config: &Config) -> Result<Option<Token>, BuildError> {
    let Some(spec) = &config.det else {
        return Ok(None);
    };
    let mut header = Header {
        build: build_hash(),
        cores: config.cores as u8,
        quantum: config.det_quantum,
        costs: Costs::default(),
        selector: spec.clone(),
        entropy_seed: 0,
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
            // A recording of this replay names the schedule as the replayed one did.
            header.selector = recording.header.selector.clone();
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
    Ok(Some(Token::new(
        selector,
        config.cores as u8,
        config.det_pace,
        feed,
        journal,
    )))
}
