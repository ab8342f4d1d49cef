//! Why a runtime did not start: a value a switch does not accept, a trace file that cannot be
//! written, a thread the OS refused, a calibration that could not measure the machine.
//!
//! Invariant: `build` either returns a running runtime or one of these, with nothing of the
//! runtime left running (a reactor thread that started is joined before the error returns).

use crate::config::ConfigError;
use crate::det::record::RecordError;
use std::fmt;
use std::path::PathBuf;

/// Why the runtime builder's `build` did not start a runtime.
///
/// ```
/// # // Written for hosts, which use the hos crate (it re-exports this type); in hos-runtime's
/// # // own doctest this module stands in for it.
/// # mod hos { pub use hos_runtime::BuildError; pub type RuntimeBuilder = hos_runtime::Builder; }
/// use hos::{BuildError, RuntimeBuilder};
///
/// match RuntimeBuilder::new().vcores(9).build() {
///     Err(BuildError::Config(e)) => assert_eq!(e.switch, "vcores"),
///     other => panic!("expected a config error, got {other:?}"),
/// }
/// // An error (Send + Sync + 'static): `?` passes it up as a `Box<dyn Error>`.
/// fn start(cores: usize) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
///     let _rt = RuntimeBuilder::new().vcores(cores).build()?;
///     Ok(())
/// }
/// assert!(start(0).unwrap_err().to_string().contains("vcores"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// A switch or builder value that is not accepted (nothing was started).
    Config(ConfigError),
    /// The HOS_TRACE file (`Builder::trace`) cannot be opened for writing (nothing was
    /// started).
    Trace {
        /// The path, as given.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// The OS refused a thread the runtime needs: `name` is the thread (`hos-reactor`,
    /// `hos-watchdog`).
    Thread {
        /// The thread's name.
        name: &'static str,
        /// What the OS said.
        error: std::io::Error,
    },
    /// The boot calibration could not measure the machine (why). A host that pins a
    /// calibration (the builder's `calibration`) starts without measuring.
    Calibration(String),
    /// HOS_DET=replay:PATH or guided:PREFIX:DROP:PATH: the recording cannot be read, or it
    /// was made with another build or configuration (the error names the field and both
    /// values), or it cannot guide as asked.
    Replay(RecordError),
    /// The HOS_DET_RECORD file (`Builder::det_record`) cannot be created or written.
    Record {
        /// The path, as given.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
}

impl BuildError {
    /// The config error, if that is what it is.
    pub fn config(&self) -> Option<&ConfigError> {
        match self {
            BuildError::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Config(e) => e.fmt(f),
            BuildError::Trace { path, error } => write!(
                f,
                "the trace file {} (HOS_TRACE) cannot be written: {error}",
                path.display()
            ),
            BuildError::Thread { name, error } => {
                write!(f, "the OS refused the runtime's thread {name}: {error}")
            }
            BuildError::Calibration(why) => write!(
                f,
                "the calibration could not measure the machine: {why} (a pinned calibration \
                 starts without measuring)"
            ),
            BuildError::Replay(e) => write!(f, "HOS_DET's recording: {e}"),
            BuildError::Record { path, error } => write!(
                f,
                "the recording {} (HOS_DET_RECORD) cannot be written: {error}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Config(e) => Some(e),
            BuildError::Thread { error, .. }
            | BuildError::Trace { error, .. }
            | BuildError::Record { error, .. } => Some(error),
            BuildError::Replay(e) => Some(e),
            BuildError::Calibration(_) => None,
        }
    }
}

impl From<ConfigError> for BuildError {
    fn from(e: ConfigError) -> Self {
        BuildError::Config(e)
    }
}
