//! One program thread's side of a case: its choices, the arguments it draws from them (good
//! and bad: handles live, stale, wrong-kind and random; NULL and misaligned pointers; struct
//! sizes too small and too large; timeouts negative, zero and huge), and the calls it makes.
//!
//! Invariant: every pointer handed to a call is NULL, misaligned into a buffer of this
//! context that is large enough for what a missed check would write there, or valid for the
//! call (a struct's `size` never claims more bytes than its buffer has); so a broken check
//! shows as a wrong code or a sanitizer finding, never as memory the fuzzer did not own.
//! Each call's text (name and arguments) is in the thread's trace before the call starts.

use super::draw::Draw;
use super::table::Call;
use super::world::{Trace, World};
use crate::config::{hos_calibration, hos_config};
use crate::object::HOS_CURRENT_THREAD;
use crate::result::hos_result;
use crate::runtime::hos_runtime;
use crate::stats::{hos_stats, hos_thread_stats};
use crate::thread::hos_thread_params;
use hos_rs::internal::lock;
use std::ffi::c_char;
use std::fmt::Debug;
use std::mem::{align_of, size_of};
use std::sync::{Arc, Mutex};

/// The most calls one program makes.
const MAX_CALLS: usize = 48;
/// Scratch slots for scalar outputs, 16 bytes each.
const SLOTS: usize = 8;
/// Elements of the `hos_thread_stats` array.
const THREAD_STATS: usize = 8;
/// Bytes past a struct's own size that its buffer has (a caller built against a newer header).
const SPARE: usize = 64;

/// What kind of thread runs the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A host thread (it may attach itself).
    Host,
    /// A guest thread spawned through `hos_thread_spawn`.
    Guest,
}

/// 8-aligned bytes.
fn buffer(bytes: usize) -> Box<[u64]> {
    vec![0u64; bytes.div_ceil(8)].into_boxed_slice()
}

/// One program thread's context.
pub struct Ctx {
    draw: Draw,
    pub(crate) world: Arc<World>,
    trace: Arc<Mutex<Trace>>,
    kind: Kind,
    attached: bool,
    /// The current call's text.
    line: String,
    /// Whether the current call got a NULL or misaligned pointer it requires.
    bad_pointer: bool,
    /// Out-slots of handles of the current call that are valid pointers.
    made: Vec<*mut u32>,
    slots: Box<[u64]>,
    next_slot: usize,
    params: Box<[u64]>,
    calibration: Box<[u64]>,
    stats: Box<[u64]>,
    thread_stats: Box<[u64]>,
    handles: Box<[u32; 66]>,
    /// The case's config, while the driver builds it (main thread only).
    pub(crate) cfg: *mut hos_config,
}

// SAFETY: the raw pointers point into the context's own boxes (or to the config the driver
// owns), which move with it; nothing else holds them once the context moves to its thread.
unsafe impl Send for Ctx {}

impl Ctx {
    pub(crate) fn new(draw: Draw, world: Arc<World>, kind: Kind, who: String) -> Ctx {
        let trace = world.trace(who);
        Ctx {
            draw,
            world,
            trace,
            kind,
            attached: false,
            line: String::new(),
            bad_pointer: false,
            made: Vec::new(),
            slots: buffer(16 * SLOTS),
            next_slot: 0,
            params: buffer(size_of::<hos_thread_params>() + SPARE),
            calibration: buffer(size_of::<hos_calibration>() + SPARE),
            stats: buffer(size_of::<hos_stats>() + SPARE),
            thread_stats: buffer(THREAD_STATS * (size_of::<hos_thread_stats>() + SPARE)),
            handles: Box::new([0; 66]),
            cfg: std::ptr::null_mut(),
        }
    }

    /// The choices left, for the driver's own draws.
    pub(crate) fn draw(&mut self) -> &mut Draw {
        &mut self.draw
    }

    /// The choices left, taken out (the driver's context hands them to the programs).
    pub(crate) fn take_draw(&mut self) -> Draw {
        std::mem::replace(&mut self.draw, Draw::new(&[]))
    }

    /// Runs the program: calls picked from `table` until the choices or [`MAX_CALLS`] run
    /// out; an attached thread detaches at the end.
    pub(crate) fn play(&mut self, table: &[Call]) {
        for _ in 0..MAX_CALLS {
            if self.draw.is_empty() {
                break;
            }
            let i = usize::from(self.draw.byte()) % table.len();
            self.call(&table[i]);
        }
        if self.attached {
            self.attached = false;
            let r = crate::attach::hos_thread_detach();
            if r != 0 {
                self.world
                    .finding(format!("hos_thread_detach() at the end -> {r:#x}"));
            }
        }
    }

    /// Makes one call: draws its arguments, checks and counts its code, keeps the handles it
    /// made.
    pub(crate) fn call(&mut self, call: &Call) {
        self.line.clear();
        self.line.push_str(call.name);
        self.line.push('(');
        self.bad_pointer = false;
        self.made.clear();
        self.next_slot = 0;
        self.publish();
        let code = (call.run)(self);
        self.line.push(')');
        let text = self.line.clone();
        self.world
            .record(call.name, code, call.codes, self.bad_pointer, &text);
        if code == 0 {
            for &p in &self.made {
                // SAFETY: a slot of this context the call wrote a handle to.
                self.world.made(unsafe { p.read() });
            }
        }
        let name = crate::result::name(code).to_string_lossy();
        let mut t = lock(&self.trace);
        t.done.push(format!("{text} -> {name}"));
        t.now.clear();
    }

    fn publish(&self) {
        lock(&self.trace).now.clone_from(&self.line);
    }

    /// Adds an argument to the call's text.
    fn arg(&mut self, label: &str, value: impl Debug) {
        if !self.line.ends_with('(') {
            self.line.push_str(", ");
        }
        self.line += &format!("{label}={value:?}");
        self.publish();
    }

    /// Marks the call's pointer `ok` or not: a call given a bad one must fail.
    fn pointer(&mut self, ok: bool) {
        self.bad_pointer |= !ok;
    }

    /// Notes the handle of a successful attach: the thread detaches at its program's end.
    pub(crate) fn attached(&mut self, code: hos_result) -> hos_result {
        self.attached |= code == 0;
        code
    }

    /// Notes a successful detach.
    pub(crate) fn detached(&mut self, code: hos_result) -> hos_result {
        self.attached &= code != 0;
        code
    }

    /// The kind of thread the program runs on.
    pub(crate) fn kind(&self) -> Kind {
        if self.attached {
            Kind::Guest
        } else {
            self.kind
        }
    }

    /// A handle: a live one (of any kind), a closed one, the current-thread pseudo-handle, 0,
    /// or any value.
    pub(crate) fn handle(&mut self) -> u32 {
        let i = usize::from(self.draw.byte());
        let (how, h) = match self.draw.below(8) {
            0..=3 => ("live", self.world.live_at(i)),
            4 => ("stale", self.world.stale_at(i)),
            5 => ("current", HOS_CURRENT_THREAD),
            6 => ("zero", 0),
            _ => ("any", self.draw.u64() as u32),
        };
        self.arg("h", format_args!("{how}:{h:#x}"));
        h
    }

    /// A timeout in ns: 0, negative (no limit), tiny, a few ms, huge. With no runtime to
    /// cancel them at the case's end, waits without limit are cut to 1 ms.
    pub(crate) fn timeout(&mut self) -> i64 {
        let t = match self.draw.below(8) {
            0 => 0,
            1 => -1,
            2 => i64::MIN,
            3 => 1,
            4 => (self.draw.u64() % 2_000_000) as i64,
            5 => i64::MAX,
            6 => self.draw.u64() as i64,
            _ => 100_000,
        };
        let t = match self.world.rt().is_null() && !(0..=5_000_000).contains(&t) {
            true => 1_000_000,
            false => t,
        };
        self.arg("t", t);
        t
    }

    /// A bounded timeout for a shutdown in a program: 0 to 20 ms (the case's end shuts down
    /// without limit).
    pub(crate) fn grace(&mut self) -> i64 {
        let t = [0, 1_000_000, 5_000_000, 20_000_000][self.draw.below(4)];
        self.arg("t", t);
        t
    }

    /// A priority: mostly in 0..=63, else any value.
    pub(crate) fn priority(&mut self) -> i32 {
        match self.draw.below(4) {
            0 => self.i32(),
            _ => {
                let p = i32::from(self.draw.byte() % 64);
                self.arg("prio", p);
                p
            }
        }
    }

    /// The config pointer: the case's, NULL (a bad pointer unless `null_ok`), or misaligned.
    pub(crate) fn config(&mut self, null_ok: bool) -> *mut hos_config {
        let (how, p) = match self.draw.below(8) {
            0 => ("NULL", std::ptr::null_mut()),
            1 => ("misaligned", self.cfg.cast::<u8>().wrapping_add(1).cast()),
            _ => ("case", self.cfg),
        };
        self.pointer(how == "case" && !self.cfg.is_null() || null_ok && p.is_null());
        self.arg("cfg", how);
        p
    }

    /// A config key: a switch's name (those that write files left out), a near miss, not
    /// UTF-8, or NULL.
    pub(crate) fn key(&mut self) -> *const c_char {
        const KEYS: [&[u8]; 12] = [
            b"HOS_CORES\0",
            b"HOS_SPIN_US\0",
            b"HOS_SHORT_SLEEP\0",
            b"HOS_VCORES\0",
            b"HOS_VCORE_SLICE_US\0",
            b"HOS_VCORE_GRACE_US\0",
            b"HOS_SERIAL\0",
            b"HOS_IDLE_POLL_BLIND\0",
            b"HOS_SLEEP_LOG\0",
            b"hos_cores\0",
            b"HOS_\xff\0",
            b"\0",
        ];
        let key = self.string("key", &KEYS);
        self.pointer(!key.is_null());
        key
    }

    /// A config value: accepted by some switch or by none, not UTF-8, or NULL (unset).
    pub(crate) fn value(&mut self) -> *const c_char {
        const VALUES: [&[u8]; 12] = [
            b"0\0",
            b"1\0",
            b"2\0",
            b"8\0",
            b"9\0",
            b"-7\0",
            b"fast\0",
            b"auto\0",
            b"1000000\0",
            b"99999999999999999999\0",
            b"Main\xffThread\0",
            b"\0",
        ];
        self.string("value", &VALUES)
    }

    /// One of `strings` (each NUL-terminated), or NULL.
    fn string(&mut self, label: &str, strings: &[&'static [u8]]) -> *const c_char {
        let i = self.draw.below(strings.len() + 1);
        match strings.get(i) {
            Some(s) => {
                self.arg(label, String::from_utf8_lossy(s));
                s.as_ptr().cast()
            }
            None => {
                self.arg(label, "NULL");
                std::ptr::null()
            }
        }
    }

    /// An `i32`: edges, small values and any value.
    pub(crate) fn i32(&mut self) -> i32 {
        let v = match self.draw.below(8) {
            0 => 0,
            1 => 1,
            2 => -1,
            3 => i32::MIN,
            4 => i32::MAX,
            5 => self.draw.u64() as i32,
            _ => i32::from(self.draw.byte() % 70) - 3,
        };
        self.arg("i", v);
        v
    }

    /// A `u32`, as [`Ctx::i32`].
    pub(crate) fn u32(&mut self) -> u32 {
        self.i32() as u32
    }

    /// A `u64`: edges, small values, core masks and any value.
    pub(crate) fn u64(&mut self) -> u64 {
        let v = match self.draw.below(8) {
            0 => 0,
            1 => 1,
            2 => 0x3,
            3 => 0x3F,
            4 => u64::MAX,
            5 => self.draw.u64(),
            _ => u64::from(self.draw.byte() % 70),
        };
        self.arg("u", v);
        v
    }

    /// A tag for a guest word: a handle, maybe with the waiters bit.
    pub(crate) fn tag(&mut self) -> u32 {
        let h = self.handle();
        match self.draw.below(2) {
            0 => h,
            _ => h | crate::arbiter::HOS_MUTEX_WAITERS,
        }
    }

    /// An out-pointer for a `T`: a scratch slot, NULL, or misaligned into the slot.
    pub(crate) fn out<T>(&mut self) -> *mut T {
        debug_assert!(size_of::<T>() <= 8 && align_of::<T>() > 1);
        let slot = self.next_slot % SLOTS;
        self.next_slot += 1;
        let p = self.slots[slot * 2..].as_mut_ptr();
        let (how, p) = match self.draw.below(8) {
            0 => ("NULL", std::ptr::null_mut()),
            // One byte in: misaligned for every T here, and still inside the 16-byte slot.
            1 => ("misaligned", p.cast::<u8>().wrapping_add(1).cast::<T>()),
            _ => ("ok", p.cast::<T>()),
        };
        self.pointer(how == "ok");
        self.arg("out", how);
        p
    }

    /// An out-pointer for a handle; a handle written there by a successful call is kept.
    pub(crate) fn out_handle(&mut self) -> *mut u32 {
        let p = self.out::<u32>();
        if !p.is_null() && p.is_aligned() {
            self.made.push(p);
        }
        p
    }

    /// The runtime pointer: the case's, NULL, or misaligned.
    pub(crate) fn rt(&mut self) -> *mut hos_runtime {
        let rt = self.world.rt();
        let (how, p) = match self.draw.below(8) {
            0 => ("NULL", std::ptr::null_mut()),
            1 => ("misaligned", rt.cast::<u8>().wrapping_add(1).cast()),
            _ => ("case", rt),
        };
        self.pointer(how == "case" && !rt.is_null());
        self.arg("rt", how);
        p
    }

    /// A 32-bit guest word: one of the case's, NULL, or misaligned.
    pub(crate) fn word32<T>(&mut self) -> *mut T {
        let i = self.draw.below(8);
        let base = self.world.words.as_ptr().cast::<u32>().cast_mut();
        let (how, p) = match self.draw.below(8) {
            0 => ("NULL", std::ptr::null_mut()),
            1 => (
                "misaligned",
                base.cast::<u8>().wrapping_add(4 * i + 1).cast(),
            ),
            _ => ("word", base.wrapping_add(i).cast::<T>()),
        };
        self.pointer(how == "word");
        self.arg("addr", format_args!("{how}{i}"));
        p
    }

    /// A 64-bit guest word: one of the case's, NULL, or 4-aligned only.
    pub(crate) fn word64(&mut self) -> *mut i64 {
        let i = self.draw.below(4);
        let base = self.world.words.as_ptr().cast::<i64>().cast_mut();
        let (how, p) = match self.draw.below(8) {
            0 => ("NULL", std::ptr::null_mut()),
            1 => (
                "misaligned",
                base.cast::<u8>().wrapping_add(8 * i + 4).cast(),
            ),
            _ => ("word", base.wrapping_add(i)),
        };
        self.pointer(how == "word");
        self.arg("addr64", format_args!("{how}{i}"));
        p
    }

    /// A struct's `size`: its own, 0, too small, a little larger (within [`SPARE`]), or (for
    /// structs only read) huge.
    fn size(&mut self, own: usize, read_only: bool) -> u32 {
        let s = match self.draw.below(8) {
            0 => 0,
            1 => (usize::from(self.draw.byte()) % own) as u32,
            2 => (own + usize::from(self.draw.byte()) % SPARE) as u32,
            3 if read_only => u32::MAX,
            _ => own as u32,
        };
        self.arg("size", s);
        s
    }

    /// A pointer into `buf` or NULL or misaligned; `ok` says which.
    fn struct_ptr<T>(&mut self, buf: *mut u64, what: &str) -> (*mut T, bool) {
        let (how, p) = match self.draw.below(8) {
            0 => ("NULL", std::ptr::null_mut()),
            1 => ("misaligned", buf.cast::<u8>().wrapping_add(4).cast()),
            _ => ("ok", buf.cast::<T>()),
        };
        self.arg(what, how);
        (p, how == "ok")
    }

    /// Thread parameters: NULL (the defaults), misaligned, or a struct of any size with names,
    /// priorities, ideal cores and masks in and out of range.
    pub(crate) fn params(&mut self) -> *const hos_thread_params {
        let buf = self.params.as_mut_ptr();
        let (p, ok) = self.struct_ptr::<hos_thread_params>(buf, "p");
        // NULL is allowed (the defaults); misaligned is not.
        self.pointer(ok || p.is_null());
        if !ok {
            return p;
        }
        let names: [&'static [u8]; 6] = [
            b"FuzzSpawned\0",
            b"MainThread\0",
            b"Presentation\0",
            b"Bad\xc3\0",
            b"\0",
            b"\xff\xfe\0",
        ];
        let name = match self.draw.below(8) {
            0 => std::ptr::null(),
            i => names[(i - 1) % names.len()].as_ptr().cast::<c_char>(),
        };
        let priority = match self.draw.below(4) {
            0 => self.i32(),
            _ => i32::from(self.draw.byte() % 64),
        };
        let ideal_core = match self.draw.below(4) {
            0 => self.i32(),
            _ => -2,
        };
        let core_mask = match self.draw.below(4) {
            0 => self.u64(),
            _ => u64::MAX >> (64 - 6),
        };
        let size = self.size(size_of::<hos_thread_params>(), true);
        self.arg("prio", priority);
        self.arg("ideal", ideal_core);
        self.arg("mask", format_args!("{core_mask:#x}"));
        // Mostly a role (auto, worker, serial, serial-first), else any value.
        let role = match self.u32() % 8 {
            r @ 0..=3 => r,
            _ => self.u32(),
        };
        self.arg("role", role);
        let params = hos_thread_params {
            size,
            name,
            priority,
            ideal_core,
            core_mask,
            role,
        };
        // SAFETY: the context's buffer, aligned and large enough for the struct.
        unsafe { p.write(params) };
        p
    }

    /// A calibration to pin: NULL (measure again), misaligned, or a struct of any size with
    /// figures in and out of range (past 2 ms `hos_runtime_new` refuses) and a precise path
    /// of 0, 1 or any value.
    pub(crate) fn calibration(&mut self) -> *const hos_calibration {
        let buf = self.calibration.as_mut_ptr();
        let (p, ok) = self.struct_ptr::<hos_calibration>(buf, "cal");
        // NULL is allowed (measure again); misaligned is not.
        self.pointer(ok || p.is_null());
        if !ok {
            return p;
        }
        let size = self.size(size_of::<hos_calibration>(), true);
        let precise_reactor = match self.u32() % 4 {
            r @ 0..=1 => r,
            _ => self.u32(),
        };
        let mut ns = || match self.draw.below(4) {
            0 => self.u64(),
            _ => u64::from(self.draw.byte()) * 1_000,
        };
        let cal = hos_calibration {
            size,
            precise_reactor,
            timer_lateness_ns: ns(),
            timer_margin_ns: ns(),
            poller_margin_ns: ns(),
            wake_latency_ns: ns(),
        };
        // SAFETY: the context's buffer, aligned and large enough for the struct.
        unsafe { p.write(cal) };
        p
    }

    /// A `hos_stats` to fill: NULL, misaligned, or the context's buffer with any `size` it
    /// holds.
    pub(crate) fn stats(&mut self) -> *mut hos_stats {
        let buf = self.stats.as_mut_ptr();
        let (p, ok) = self.struct_ptr::<hos_stats>(buf, "out");
        self.pointer(ok);
        if ok {
            let size = self.size(size_of::<hos_stats>(), false);
            // SAFETY: the context's buffer, aligned; its first u32 is the size.
            unsafe { p.cast::<u32>().write(size) };
        }
        p
    }

    /// A `hos_thread_stats` array and its capacity: NULL (with a capacity or not),
    /// misaligned, or the context's buffer with a stride and capacity it holds.
    pub(crate) fn thread_stats(&mut self) -> (*mut hos_thread_stats, u32) {
        let buf = self.thread_stats.as_mut_ptr();
        let (p, ok) = self.struct_ptr::<hos_thread_stats>(buf, "out");
        let stride = match ok {
            true => self.size(size_of::<hos_thread_stats>(), false),
            false => size_of::<hos_thread_stats>() as u32,
        };
        let room = self.thread_stats.len() * 8 / (stride as usize).max(1);
        let capacity = (usize::from(self.draw.byte()) % (room.min(THREAD_STATS) + 1)) as u32;
        self.pointer(ok || capacity == 0 && p.is_null());
        self.arg("capacity", capacity);
        if ok {
            // SAFETY: the context's buffer, aligned; its first u32 is out[0].size.
            unsafe { p.cast::<u32>().write(stride) };
        }
        (p, capacity)
    }

    /// A handle array and its count: a count in and out of 0..=64, the handles drawn, the
    /// array NULL or misaligned too.
    pub(crate) fn handles(&mut self) -> (*const u32, i32) {
        let count = match self.draw.below(8) {
            0 => -1,
            1 => 65,
            2 => 64,
            3 => self.draw.u64() as i32,
            _ => i32::from(self.draw.byte() % 5),
        };
        let n = usize::try_from(count).unwrap_or(0).min(self.handles.len());
        let drawn: Vec<u32> = (0..n.min(4)).map(|_| self.handle()).collect();
        for i in 0..n {
            self.handles[i] = drawn[i % drawn.len()];
        }
        let base = self.handles.as_ptr();
        let (how, p) = match self.draw.below(8) {
            0 => ("NULL", std::ptr::null()),
            1 => ("misaligned", base.cast::<u8>().wrapping_add(2).cast()),
            _ => ("ok", base),
        };
        self.pointer(how == "ok" || count == 0 && p.is_null());
        self.arg("handles", how);
        self.arg("count", count);
        (p, count)
    }
}
