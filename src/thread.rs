//! Guest threads: OS threads that run guest code under the runtime.
//!
//! Invariant: a guest thread holds a virtual core only while it runs guest code; when it
//! ends, by return or by panic, its core is given back and its context is cleared (guards).

use crate::{ResultCode, Runtime};
use hos_runtime::context;
use hos_runtime::thread::{ThreadRecord, ThreadSpec};
use std::sync::Arc;

/// Highest (worst) Horizon priority.
pub const PRIORITY_MAX: u8 = 63;
/// Ideal core -2: the process's default core.
pub const IDEAL_CORE_DEFAULT: i32 = -2;
/// Ideal core -3 (in a core-mask change): keep the current ideal core.
pub const IDEAL_CORE_KEEP: i32 = -3;

/// Builds a guest thread. Made by [`Runtime::thread`].
#[derive(Debug)]
pub struct Builder {
    rt: Runtime,
    name: String,
    priority: i32,
    core_mask: u64,
    ideal_core: i32,
}

impl Builder {
    pub(crate) fn new(rt: Runtime) -> Self {
        let cores = rt.raw().config().cores;
        Builder {
            rt,
            name: String::from("GuestThread"),
            priority: 0x2C,
            core_mask: (1u64 << cores) - 1,
            ideal_core: IDEAL_CORE_DEFAULT,
        }
    }

    /// The thread's name (it decides the serial role and HOS_VCORE_FIRST).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Horizon priority, 0 (best) ..= 63; anything else fails at spawn with InvalidPriority.
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = p;
        self
    }

    /// Allowed virtual cores, a bit per core; 0 or a bit past the cores fails with InvalidCoreId.
    pub fn core_mask(mut self, mask: u64) -> Self {
        self.core_mask = mask;
        self
    }

    /// Preferred virtual core; -2 is the process's default core.
    pub fn ideal_core(mut self, core: i32) -> Self {
        self.ideal_core = core;
        self
    }

    /// Starts the thread.
    ///
    /// # Errors
    /// InvalidPriority for a priority outside 0..=63; InvalidCoreId for an empty mask, a mask
    /// with a core past the runtime's cores, or an ideal core outside the mask.
    pub fn spawn<T, F>(self, f: F) -> Result<JoinHandle<T>, ResultCode>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let priority = validate_priority(self.priority)?;
        let cores = self.rt.raw().config().cores;
        let ideal = validate_affinity(cores, self.ideal_core, self.core_mask)?;
        let spec = ThreadSpec {
            name: self.name.clone(),
            priority,
            core_mask: self.core_mask,
            ideal_core: ideal,
        };
        let record = self.rt.raw().register_thread(&spec);
        let rt = self.rt.clone();
        let rec = record.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let handle = std::thread::Builder::new()
            .name(self.name)
            .spawn(move || {
                let _ctx = context::enter(rt.raw(), rec.clone());
                let _core = CoreGuard::take(&rt, &rec);
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
                let _ = tx.send(out);
            })
            .map_err(|_| ResultCode::INVALID_STATE)?;
        Ok(JoinHandle {
            record,
            rx,
            handle: Some(handle),
        })
    }
}

/// Checks a Horizon priority.
pub fn validate_priority(p: i32) -> Result<u8, ResultCode> {
    u8::try_from(p)
        .ok()
        .filter(|p| *p <= PRIORITY_MAX)
        .ok_or(ResultCode::INVALID_PRIORITY)
}

/// Checks an ideal core and mask against `cores`; resolves -2 to the first core of the mask.
pub fn validate_affinity(cores: usize, ideal: i32, mask: u64) -> Result<i32, ResultCode> {
    let all = if cores >= 64 {
        u64::MAX
    } else {
        (1u64 << cores) - 1
    };
    if mask == 0 || mask & !all != 0 {
        return Err(ResultCode::INVALID_CORE_ID);
    }
    match ideal {
        IDEAL_CORE_DEFAULT => Ok(mask.trailing_zeros() as i32),
        c if (0..cores as i32).contains(&c) && mask & (1 << c) != 0 => Ok(c),
        _ => Err(ResultCode::INVALID_CORE_ID),
    }
}

/// Holds the thread's virtual core for its guest code; gives it back on any exit.
struct CoreGuard<'a> {
    rt: &'a Runtime,
    rec: &'a Arc<ThreadRecord>,
}

impl<'a> CoreGuard<'a> {
    fn take(rt: &'a Runtime, rec: &'a Arc<ThreadRecord>) -> Self {
        rt.raw().vcores().acquire(rec);
        CoreGuard { rt, rec }
    }
}

impl Drop for CoreGuard<'_> {
    fn drop(&mut self) {
        self.rt.raw().vcores().release(self.rec);
    }
}

/// The handle of a guest thread; `join` returns its value or its panic.
#[derive(Debug)]
pub struct JoinHandle<T> {
    record: Arc<ThreadRecord>,
    rx: std::sync::mpsc::Receiver<std::thread::Result<T>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl<T> JoinHandle<T> {
    /// Waits for the thread; `Err` carries its panic.
    pub fn join(mut self) -> std::thread::Result<T> {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.rx
            .recv()
            .unwrap_or_else(|_| Err(Box::new("guest thread ended without a result")))
    }

    /// The runtime's record of the thread.
    pub fn record(&self) -> &Arc<ThreadRecord> {
        &self.record
    }
}
