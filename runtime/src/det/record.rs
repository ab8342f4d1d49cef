//! The `.hosrec` file: what a deterministic run needs to be replayed, and the checks that
//! tell when a replay stops following it.
//!
//! Invariant: a file holds exactly what its writer was given, in order, and its reader gives
//! back exactly that or an error naming what is wrong and where (never a panic, never a
//! partial recording taken as whole: a file without its end marker is truncated). The
//! encoding is byte-for-byte the same on every platform: little-endian fixed widths and
//! LEB128 varints, no padding, no host pointers.
//!
//! Layout, after the 8-byte magic `HOSREC\0\n` and the format version (u32):
//!
//! | part | encoding |
//! | --- | --- |
//! | header | build hash u64, config hash u64, cores u8, quantum u32, checkpoint and op costs u64 each, entropy seed u64, the selector as its switch (varint length, UTF-8), the host's build id (varint length, UTF-8), decisions flag u8 |
//! | input (tag 1) | decision and virtual time as varint deltas from the previous input (the time zigzag-signed), source varint, payload (varint length, bytes) |
//! | check (tag 2) | the rolling witness hash u64, after each 4,096 decisions |
//! | deviation (tag 3) | decisions that picked as `Stable` since the last deviation, then the choice, the quantum and the picked thread's id, varints (only with the decisions flag) |
//! | end (tag 4) | decisions that picked as `Stable` since the last deviation, then the decision count, varints, then the rolling hash of every witness u64, then u8 1 if the host stopped the run while a thread could still run (a replay holds there), else 0 |

use super::clock::Costs;
use super::decisions::{Decisions, Deviation};
use super::guide::GuideError;
use super::post::Post;
use super::selector::{Spec, SpecError};
use super::witness::{Fnv64, Pick, Rolling, Witness, CHECK_EVERY};
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The format this build writes and reads.
pub const FORMAT_VERSION: u32 = 3;

const MAGIC: &[u8; 8] = b"HOSREC\0\n";
const INPUT: u8 = 1;
const CHECK: u8 = 2;
const DEVIATION: u8 = 3;
const END: u8 = 4;

/// What a run was configured with: a replay must match it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The hash of what runs: hos's version and the host's build id (`det_run.rs`). A seed
    /// means the same schedule only on the same build.
    pub build: u64,
    /// The host's own build id (HOS_DET_BUILD_ID: its guest's title and version, say), folded
    /// into `build`; empty when it gave none. Kept so a refusal can name both.
    pub build_id: String,
    /// Logical cores.
    pub cores: u8,
    /// Checkpoints a turn.
    pub quantum: u32,
    /// The virtual clock's costs.
    pub costs: Costs,
    /// The selector and its seed.
    pub selector: Spec,
    /// The seed of the guest's entropy stream.
    pub entropy_seed: u64,
    /// Whether the file holds every decision (needed to replay across code changes and to
    /// minimise a schedule; a seed alone replays the same build).
    pub decisions: bool,
}

impl Header {
    /// The hash of the configuration a replay must share: cores, quantum and costs (the
    /// selector and seeds are what the recording supplies).
    pub fn config_hash(&self) -> u64 {
        let mut h = Fnv64::new();
        h.bytes(&[self.cores]);
        h.u32(self.quantum);
        h.u64(self.costs.checkpoint_ns);
        h.u64(self.costs.op_ns);
        h.finish()
    }

    /// Whether a live run configured as `live` may replay this recording: the first field
    /// that differs, named.
    pub fn check(&self, live: &Header) -> Result<(), RecordError> {
        if self.build != live.build {
            return Err(RecordError::Build {
                recorded: self.build,
                live: live.build,
                recorded_id: self.build_id.clone(),
                live_id: live.build_id.clone(),
            });
        }
        let fields: [(&'static str, u64, u64); 4] = [
            ("cores", self.cores.into(), live.cores.into()),
            ("quantum", self.quantum.into(), live.quantum.into()),
            (
                "checkpoint cost (ns)",
                self.costs.checkpoint_ns,
                live.costs.checkpoint_ns,
            ),
            ("operation cost (ns)", self.costs.op_ns, live.costs.op_ns),
        ];
        match fields.iter().find(|(_, r, l)| r != l) {
            Some(&(field, recorded, live)) => Err(RecordError::Config {
                field,
                recorded,
                live,
            }),
            None => Ok(()),
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&self.build.to_le_bytes());
        out.extend_from_slice(&self.config_hash().to_le_bytes());
        out.push(self.cores);
        out.extend_from_slice(&self.quantum.to_le_bytes());
        out.extend_from_slice(&self.costs.checkpoint_ns.to_le_bytes());
        out.extend_from_slice(&self.costs.op_ns.to_le_bytes());
        out.extend_from_slice(&self.entropy_seed.to_le_bytes());
        let spec = self.selector.to_string();
        varint(out, spec.len() as u64);
        out.extend_from_slice(spec.as_bytes());
        varint(out, self.build_id.len() as u64);
        out.extend_from_slice(self.build_id.as_bytes());
        out.push(u8::from(self.decisions));
    }

    fn read(r: &mut Reader<'_>) -> Result<Header, RecordError> {
        let magic = r.take(MAGIC.len(), "the magic")?;
        if magic != MAGIC {
            return Err(RecordError::NotARecording);
        }
        let version = r.u32("the format version")?;
        if version != FORMAT_VERSION {
            return Err(RecordError::Version {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let build = r.u64("the build hash")?;
        let config = r.u64("the config hash")?;
        let at = r.pos;
        let cores = r.u8("the core count")?;
        let quantum = r.u32("the quantum")?;
        let costs = Costs {
            checkpoint_ns: r.u64("the checkpoint cost")?,
            op_ns: r.u64("the operation cost")?,
        };
        let entropy_seed = r.u64("the entropy seed")?;
        let len = r.varint("the selector's length")?;
        let at_spec = r.pos;
        let spec = r.take(r.len_of(len, "the selector")?, "the selector")?;
        let selector = std::str::from_utf8(spec)
            .map_err(|_| r.corrupt_at(at_spec, "the selector is not UTF-8".into()))?
            .parse()
            .map_err(RecordError::Selector)?;
        let len = r.varint("the build id's length")?;
        let at_id = r.pos;
        let id = r.take(r.len_of(len, "the build id")?, "the build id")?;
        let build_id = std::str::from_utf8(id)
            .map_err(|_| r.corrupt_at(at_id, "the build id is not UTF-8".into()))?
            .to_string();
        let decisions = match r.u8("the decisions flag")? {
            0 => false,
            1 => true,
            v => return Err(r.corrupt(format!("decisions flag {v} is not 0 or 1"))),
        };
        let header = Header {
            build,
            build_id,
            cores,
            quantum,
            costs,
            selector,
            entropy_seed,
            decisions,
        };
        if header.config_hash() != config {
            return Err(r.corrupt_at(
                at,
                format!(
                    "the config hash {config:#x} does not match the header's fields ({:#x})",
                    header.config_hash()
                ),
            ));
        }
        Ok(header)
    }
}

/// A posted input, as recorded: the decision before which it was applied, and the post.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The decision it was applied at.
    pub decision: u64,
    /// What was posted.
    pub post: Post,
}

/// Writes a `.hosrec` as a run goes: the header first, then inputs, checks and (if the
/// header asks) deviations in decision order, and the end marker at [`Writer::finish`].
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    with_decisions: bool,
    rolling: Rolling,
    /// Decisions that picked as `Stable` since the last deviation written.
    same: u64,
    /// The (decision, vt) of the last input, which the next is written relative to.
    last_input: (u64, u64),
    buf: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Starts a recording configured as `header`.
    pub fn new(mut out: W, header: &Header) -> io::Result<Writer<W>> {
        let mut buf = Vec::new();
        header.write(&mut buf);
        out.write_all(&buf)?;
        Ok(Writer {
            out,
            with_decisions: header.decisions,
            rolling: Rolling::new(),
            same: 0,
            last_input: (0, 0),
            buf: Vec::new(),
        })
    }

    /// Records `post`, applied at the coming decision (the one [`Writer::decision`] is
    /// called for next).
    pub fn input(&mut self, post: &Post) -> io::Result<()> {
        let decision = self.rolling.decisions();
        let (last_decision, last_vt) = self.last_input;
        self.buf.clear();
        self.buf.push(INPUT);
        varint(&mut self.buf, decision - last_decision);
        varint(&mut self.buf, zigzag(post.vt.wrapping_sub(last_vt) as i64));
        varint(&mut self.buf, post.source.into());
        varint(&mut self.buf, post.payload.len() as u64);
        self.buf.extend_from_slice(&post.payload);
        self.last_input = (decision, post.vt);
        self.out.write_all(&self.buf)
    }

    /// Records a decision: its witness (for the checks) and, with decisions on, whether its
    /// pick deviates from `stable`, `Stable`'s pick for it.
    pub fn decision(&mut self, w: &Witness, stable: Pick) -> io::Result<()> {
        debug_assert_eq!(w.decision, self.rolling.decisions(), "decisions in order");
        self.buf.clear();
        if self.with_decisions {
            if w.pick == stable {
                self.same += 1;
            } else {
                // A selector's pick is one of its candidates (its invariant).
                let thread = w.candidates.get(w.pick.choice as usize);
                debug_assert!(thread.is_some(), "pick outside its candidates: {w}");
                self.buf.push(DEVIATION);
                varint(&mut self.buf, self.same);
                varint(&mut self.buf, w.pick.choice.into());
                varint(&mut self.buf, w.pick.quantum.into());
                varint(&mut self.buf, thread.map_or(u64::MAX, |c| c.thread));
                self.same = 0;
            }
        }
        if let Some(check) = self.rolling.push(w) {
            self.buf.push(CHECK);
            self.buf.extend_from_slice(&check.hash.to_le_bytes());
        }
        self.out.write_all(&self.buf)
    }

    /// Decisions recorded so far.
    pub fn decisions(&self) -> u64 {
        self.rolling.decisions()
    }

    /// Writes the end marker, `cut` saying whether the host stopped the run while a thread
    /// could still run ([`Recording::cut`]), and flushes; the output.
    pub fn finish(mut self, cut: bool) -> io::Result<W> {
        self.buf.clear();
        self.buf.push(END);
        varint(&mut self.buf, self.same);
        varint(&mut self.buf, self.rolling.decisions());
        self.buf
            .extend_from_slice(&self.rolling.hash().to_le_bytes());
        self.buf.push(u8::from(cut));
        self.out.write_all(&self.buf)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A `.hosrec`, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recording {
    /// How the run was configured.
    pub header: Header,
    /// The posted inputs, in the order they were applied.
    pub inputs: Vec<Input>,
    /// The rolling hash after each 4,096 decisions.
    pub checks: Vec<u64>,
    /// Every decision, if the header asked for them.
    pub decisions: Option<Decisions>,
    /// Decisions the run took.
    pub total: u64,
    /// The rolling hash of all their witnesses.
    pub hash: u64,
    /// Whether the host stopped the run while a thread could still run (a shutdown at a
    /// wall-time point): a replay holds there, taking no decision past `total`, until its
    /// host stops it too. Otherwise the run had come to rest, and a replay that could go on
    /// diverged.
    pub cut: bool,
}

impl Recording {
    /// Reads the recording at `path`.
    pub fn open(path: &Path) -> Result<Recording, RecordError> {
        let bytes = std::fs::read(path).map_err(|error| RecordError::Io {
            path: path.to_path_buf(),
            error: error.to_string(),
        })?;
        Recording::parse(&bytes)
    }

    /// Reads a recording from its bytes.
    pub fn parse(bytes: &[u8]) -> Result<Recording, RecordError> {
        let r = &mut Reader { bytes, pos: 0 };
        let header = Header::read(r)?;
        let mut inputs = Vec::new();
        let mut seqs: BTreeMap<u32, u64> = BTreeMap::new();
        let mut checks = Vec::new();
        let mut deviations = Vec::new();
        let mut last_input = (0u64, 0u64);
        loop {
            let at = r.pos;
            match r.u8("the next entry's tag")? {
                INPUT => {
                    let decision = last_input.0.checked_add(r.varint("an input's decision")?);
                    let decision = decision
                        .ok_or_else(|| r.corrupt("an input's decision overflows".into()))?;
                    let vt = last_input
                        .1
                        .wrapping_add(unzigzag(r.varint("an input's time")?) as u64);
                    let source = r.varint("an input's source")?;
                    let source = u32::try_from(source)
                        .map_err(|_| r.corrupt(format!("input source {source} is over u32")))?;
                    let len = r.varint("an input's length")?;
                    let payload =
                        r.take(r.len_of(len, "an input's payload")?, "an input's payload")?;
                    let seq = seqs.entry(source).or_insert(0);
                    inputs.push(Input {
                        decision,
                        post: Post {
                            vt,
                            source,
                            seq: *seq,
                            payload: payload.to_vec(),
                        },
                    });
                    *seq += 1;
                    last_input = (decision, vt);
                }
                CHECK => checks.push(r.u64("a check's hash")?),
                DEVIATION if header.decisions => {
                    let same = r.varint("a deviation's run")?;
                    let choice = r.varint("a deviation's choice")?;
                    let quantum = r.varint("a deviation's quantum")?;
                    let thread = r.varint("a deviation's thread")?;
                    let (Ok(choice), Ok(quantum)) = (u32::try_from(choice), u32::try_from(quantum))
                    else {
                        return Err(
                            r.corrupt(format!("deviation pick ({choice}, {quantum}) is over u32"))
                        );
                    };
                    deviations.push(Deviation {
                        same,
                        pick: Pick { choice, quantum },
                        thread,
                    });
                }
                END => {
                    let tail = r.varint("the end's run")?;
                    let total = r.varint("the decision count")?;
                    let hash = r.u64("the final hash")?;
                    let cut = match r.u8("the end's cut flag")? {
                        0 => false,
                        1 => true,
                        v => return Err(r.corrupt(format!("cut flag {v} is not 0 or 1"))),
                    };
                    if r.pos != bytes.len() {
                        return Err(
                            r.corrupt(format!("{} bytes after the end", bytes.len() - r.pos))
                        );
                    }
                    let decisions = header
                        .decisions
                        .then(|| Decisions::from_parts(deviations, tail));
                    let parts = (inputs, checks, decisions);
                    return Recording::whole(header, parts, (total, hash, cut))
                        .map_err(|what| r.corrupt_at(at, what));
                }
                tag => return Err(r.corrupt_at(at, format!("unknown entry tag {tag}"))),
            }
        }
    }

    /// A recording whose parts (inputs, checks, decision log) agree with its decision count,
    /// or what disagrees.
    fn whole(
        header: Header,
        (inputs, checks, decisions): (Vec<Input>, Vec<u64>, Option<Decisions>),
        (total, hash, cut): (u64, u64, bool),
    ) -> Result<Recording, String> {
        if checks.len() as u64 != total / CHECK_EVERY {
            return Err(format!("{} checks for {total} decisions", checks.len()));
        }
        if let Some(d) = decisions.as_ref().filter(|d| d.len() != total) {
            return Err(format!("{} logged decisions for {total}", d.len()));
        }
        if let Some(i) = inputs.last().filter(|i| i.decision > total) {
            return Err(format!("an input at decision {} of {total}", i.decision));
        }
        Ok(Recording {
            header,
            inputs,
            checks,
            decisions,
            total,
            hash,
            cut,
        })
    }
}

/// Why a recording cannot be read or replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// The file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The OS's error.
        error: String,
    },
    /// The file does not start with the `.hosrec` magic.
    NotARecording,
    /// Another format version.
    Version {
        /// The file's version.
        found: u32,
        /// This build's.
        supported: u32,
    },
    /// The file ends early.
    Truncated {
        /// Where it ends.
        offset: usize,
        /// What was being read.
        reading: &'static str,
    },
    /// A value in the file is impossible.
    Corrupt {
        /// Where.
        offset: usize,
        /// What is wrong.
        what: String,
    },
    /// The recorded selector switch does not parse.
    Selector(SpecError),
    /// Recorded on another build.
    Build {
        /// The recording's build hash.
        recorded: u64,
        /// The live run's.
        live: u64,
        /// The recording's host build id (empty: none).
        recorded_id: String,
        /// The live run's.
        live_id: String,
    },
    /// Recorded with another configuration.
    Config {
        /// The field that differs.
        field: &'static str,
        /// The recording's value.
        recorded: u64,
        /// The live run's.
        live: u64,
    },
    /// The recording replays a replay and holds no decisions: nothing says the schedule.
    NoSchedule,
    /// The recording cannot guide a run as asked.
    Guide(GuideError),
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            RecordError::NotARecording => write!(f, "not a .hosrec recording (bad magic)"),
            RecordError::Version { found, supported } => write!(
                f,
                "recording format version {found}, this build reads version {supported}"
            ),
            RecordError::Truncated { offset, reading } => {
                write!(f, "recording truncated at byte {offset}, reading {reading}")
            }
            RecordError::Corrupt { offset, what } => {
                write!(f, "recording corrupt at byte {offset}: {what}")
            }
            RecordError::Selector(e) => write!(f, "the recording's {e}"),
            RecordError::Build {
                recorded,
                live,
                recorded_id,
                live_id,
            } => write!(
                f,
                "recorded on build {recorded:#018x} (host build id {}), this is build \
                 {live:#018x} (host build id {})",
                BuildId(recorded_id),
                BuildId(live_id)
            ),
            RecordError::Config {
                field,
                recorded,
                live,
            } => write!(
                f,
                "config mismatch: {field} recorded {recorded}, live {live}"
            ),
            RecordError::NoSchedule => write!(
                f,
                "the recording's selector is a replay and it holds no decisions"
            ),
            RecordError::Guide(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RecordError {}

/// A host build id as a refusal names it: quoted, or `none`.
struct BuildId<'a>(&'a str);

impl fmt::Display for BuildId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            "" => write!(f, "none"),
            id => write!(f, "{id:?}"),
        }
    }
}

/// Appends `v` as an LEB128 varint.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A signed value as an unsigned one, small magnitudes small.
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// A position in a recording's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, reading: &'static str) -> Result<&'a [u8], RecordError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or(RecordError::Truncated {
            offset: self.bytes.len(),
            reading,
        })?;
        let got = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(got)
    }

    fn u8(&mut self, reading: &'static str) -> Result<u8, RecordError> {
        Ok(self.take(1, reading)?[0])
    }

    fn u32(&mut self, reading: &'static str) -> Result<u32, RecordError> {
        let b = self.take(4, reading)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, reading: &'static str) -> Result<u64, RecordError> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8, reading)?);
        Ok(u64::from_le_bytes(b))
    }

    fn varint(&mut self, reading: &'static str) -> Result<u64, RecordError> {
        let at = self.pos;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8(reading)?;
            let bits = u64::from(b & 0x7F);
            if shift == 63 && bits > 1 {
                break;
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.corrupt_at(at, format!("{reading} is a varint over 64 bits")))
    }

    /// `len` as a length of bytes still in the file.
    fn len_of(&self, len: u64, reading: &'static str) -> Result<usize, RecordError> {
        usize::try_from(len)
            .ok()
            .filter(|&n| n <= self.bytes.len() - self.pos)
            .ok_or(RecordError::Truncated {
                offset: self.bytes.len(),
                reading,
            })
    }

    fn corrupt(&self, what: String) -> RecordError {
        self.corrupt_at(self.pos, what)
    }

    fn corrupt_at(&self, offset: usize, what: String) -> RecordError {
        RecordError::Corrupt { offset, what }
    }
}
