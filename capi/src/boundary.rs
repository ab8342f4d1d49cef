//! The boundary's machinery: every entry point's panic catch, the checks of what C hands in
//! (pointers, strings, size-prefixed structs, timeouts), and the writes of what it gets back
//! (arrays of size-prefixed structs, text into the caller's buffer, names cut to a field).
//!
//! Invariant: an entry point touches what a C pointer points to only through the checks
//! here, after the NULL and alignment checks, and writes its outputs only once nothing can
//! fail any more (an [`Out`] is checked first, written last), so a failed call leaves the
//! caller's outputs untouched. Pointers that pass are trusted to point to memory of their
//! type, which is the C caller's contract.

use crate::result::{self, hos_result, HOS_RESULT_INTERNAL_ERROR, HOS_RESULT_SUCCESS};
use crate::result::{HOS_RESULT_INVALID_POINTER, HOS_RESULT_INVALID_SIZE, HOS_RESULT_INVALID_UTF8};
use hos_rs::ResultCode;
use std::ffi::{c_char, CStr};
use std::mem::{align_of, size_of};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// A failed call: its code, and what the host may want to read about it.
#[derive(Debug, PartialEq, Eq)]
pub struct Error {
    /// The code returned.
    pub code: hos_result,
    /// The detail for `hos_last_error_message`; the code's name if `None`.
    pub detail: Option<String>,
}

impl Error {
    /// A failure with a detail.
    pub fn new(code: hos_result, detail: impl Into<String>) -> Self {
        Error {
            code,
            detail: Some(detail.into()),
        }
    }

    /// Records the detail for the calling thread and gives the code.
    fn record(self) -> hos_result {
        match &self.detail {
            Some(d) => result::set_last(d),
            None => result::set_last(&result::name(self.code).to_string_lossy()),
        }
        self.code
    }
}

impl From<ResultCode> for Error {
    fn from(code: ResultCode) -> Self {
        Error {
            code: code.0,
            detail: None,
        }
    }
}

/// What an entry point's body returns.
pub type Result<T> = std::result::Result<T, Error>;

/// Runs an entry point's body: its error becomes its code (the detail kept for
/// `hos_last_error_message`), a panic `HOS_RESULT_INTERNAL_ERROR`.
///
/// The body is taken as unwind-safe: what it shares lives in hos, whose locks recover from
/// poisoning, and a body that panicked half-way has written no output ([`Out`]).
pub fn entry(body: impl FnOnce() -> Result<()>) -> hos_result {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => HOS_RESULT_SUCCESS,
        Ok(Err(e)) => e.record(),
        Err(panic) => panicked(panic),
    }
}

/// A panic caught at the boundary: logged, kept as the last error, `HOS_RESULT_INTERNAL_ERROR`.
#[cold]
pub fn panicked(panic: Box<dyn std::any::Any + Send>) -> hos_result {
    let what = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    hos_rs::error!("hos panicked inside a C call (a bug in hos): {what}");
    Error::new(HOS_RESULT_INTERNAL_ERROR, format!("hos panicked: {what}")).record()
}

/// Runs the body of an entry point that returns a value instead of a result; a panic gives
/// `fallback`, with its message kept as the last error.
pub fn entry_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    let mut out = Some(fallback);
    let code = entry(|| {
        out = Some(body());
        Ok(())
    });
    debug_assert!(code == HOS_RESULT_SUCCESS || code == HOS_RESULT_INTERNAL_ERROR);
    out.expect("set on entry and on success")
}

/// A NULL or misaligned pointer's error, naming the argument.
fn bad_pointer<T>(what: &str, p: *const T) -> Error {
    let why = if p.is_null() { "NULL" } else { "misaligned" };
    Error::new(
        HOS_RESULT_INVALID_POINTER,
        format!("{what} is {why} ({p:p})"),
    )
}

/// `p` as a reference, if it is neither NULL nor misaligned for `T`.
///
/// # Safety
/// If `p` is neither, it points to a `T` valid for `'a`.
pub unsafe fn arg<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    if p.is_null() || p as usize % align_of::<T>() != 0 {
        return Err(bad_pointer(what, p));
    }
    // SAFETY: not NULL, aligned; the rest is the caller's promise.
    Ok(unsafe { &*p })
}

/// `p` as a mutable reference, if it is neither NULL nor misaligned for `T`.
///
/// # Safety
/// If `p` is neither, it points to a `T` valid for `'a` that nothing else uses meanwhile.
pub unsafe fn arg_mut<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    if p.is_null() || p as usize % align_of::<T>() != 0 {
        return Err(bad_pointer(what, p));
    }
    // SAFETY: not NULL, aligned; the rest is the caller's promise.
    Ok(unsafe { &mut *p })
}

/// Checks that `p`, which may be NULL, is not misaligned for `T` (an array of no elements).
pub fn opt_aligned<T>(p: *const T, what: &str) -> Result<()> {
    match p.is_null() || p as usize % align_of::<T>() == 0 {
        true => Ok(()),
        false => Err(bad_pointer(what, p)),
    }
}

/// An out-pointer, checked (not NULL, aligned) before the call does anything, written once
/// at the end.
#[derive(Debug)]
pub struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// Checks `p`.
    ///
    /// # Safety
    /// If `p` is neither NULL nor misaligned, it points to memory for a `T` that the call may
    /// write.
    pub unsafe fn new(p: *mut T, what: &str) -> Result<Self> {
        match NonNull::new(p) {
            Some(nn) if p as usize % align_of::<T>() == 0 => Ok(Out(nn)),
            _ => Err(bad_pointer(what, p)),
        }
    }

    /// Writes the output (what was there is overwritten, not dropped: it is C's).
    pub fn write(self, value: T) {
        // SAFETY: checked in `new`; the caller of `new` promised the memory.
        unsafe { self.0.as_ptr().write(value) }
    }
}

/// The UTF-8 string `p` points to; `None` for NULL.
///
/// # Safety
/// If `p` is not NULL, it points to a NUL-terminated string valid for `'a`.
pub unsafe fn opt_str<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: not NULL; NUL-terminated and alive is the caller's promise.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(Some)
        .map_err(|e| Error::new(HOS_RESULT_INVALID_UTF8, format!("{what} is not UTF-8: {e}")))
}

/// The UTF-8 string `p` points to, required.
///
/// # Safety
/// As [`opt_str`].
pub unsafe fn req_str<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    // SAFETY: forwarded.
    unsafe { opt_str(p, what) }?.ok_or_else(|| bad_pointer(what, p))
}

/// A struct that crosses the boundary: plain data, zero a valid value of every field, and a
/// `uint32_t size` first that the caller sets to the size it was compiled with.
///
/// # Safety
/// `Self` is `#[repr(C)]`, starts with a `u32` size, and every bit pattern of zeros is a
/// valid value of it.
pub unsafe trait Versioned: Copy {
    /// The size of the struct's first version: a caller's `size` below it is InvalidSize. A
    /// later version adds fields at the end and keeps this.
    const FIRST_SIZE: usize;
}

/// Reads a size-prefixed input struct: the fields the caller's `size` covers; fields past it
/// (a caller built against an older header) are zero.
///
/// # Safety
/// If `p` is neither NULL nor misaligned, it points to a readable `u32` and then `size`
/// readable bytes in all.
pub unsafe fn read_sized<T: Versioned>(p: *const T, what: &str) -> Result<T> {
    if p.is_null() || p as usize % align_of::<T>() != 0 {
        return Err(bad_pointer(what, p));
    }
    // SAFETY: aligned (for T, so for its leading u32) and readable, by the caller's promise.
    let size = unsafe { p.cast::<u32>().read() } as usize;
    check_size::<T>(size, what)?;
    // SAFETY: all zeros is a valid T (trait contract).
    let mut value: T = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's `size` bytes are readable; we copy at most our own size.
    unsafe {
        std::ptr::copy_nonoverlapping(
            p.cast::<u8>(),
            (&mut value as *mut T).cast::<u8>(),
            size.min(size_of::<T>()),
        );
    }
    Ok(value)
}

/// Writes a size-prefixed output struct: the fields the caller's `size` covers, zeros past
/// ours (a caller built against a newer header reads its new fields as 0), and the caller's
/// `size` left as it was.
///
/// # Safety
/// If `p` is neither NULL nor misaligned, it points to a readable and writable `u32` and
/// then `size` writable bytes in all.
pub unsafe fn write_sized<T: Versioned>(p: *mut T, value: &T, what: &str) -> Result<()> {
    if p.is_null() || p as usize % align_of::<T>() != 0 {
        return Err(bad_pointer(what, p));
    }
    // SAFETY: aligned and readable, by the caller's promise.
    let size = unsafe { p.cast::<u32>().read() } as usize;
    check_size::<T>(size, what)?;
    let ours = size_of::<T>();
    let src = (value as *const T).cast::<u8>();
    // SAFETY: `size` bytes at `p` are writable; the size field (the first 4) is skipped.
    unsafe {
        let dst = p.cast::<u8>();
        std::ptr::copy_nonoverlapping(src.add(4), dst.add(4), size.min(ours) - 4);
        if size > ours {
            std::ptr::write_bytes(dst.add(ours), 0, size - ours);
        }
    }
    Ok(())
}

/// Writes `items` into the caller's array `out[0..capacity]`, whose elements lie `out[0].size`
/// bytes apart (each element's `size` is set to that stride, and each is written as
/// [`write_sized`] writes one), and gives the number of items, which may exceed `capacity`
/// (the caller calls again with a larger array). `out` may be NULL when `capacity` is 0.
///
/// Errors: InvalidPointer for an `out` that is NULL (with a capacity) or misaligned;
/// InvalidSize for an `out[0].size` below the first version's or not a multiple of the
/// struct's alignment. Nothing is written then.
///
/// # Safety
/// If `capacity` is not 0 and `out` is neither NULL nor misaligned, it points to `capacity`
/// elements of `out[0].size` writable bytes each.
pub unsafe fn write_array<T: Versioned>(
    out: *mut T,
    capacity: u32,
    items: &[T],
    what: &str,
) -> Result<u32> {
    let count = u32::try_from(items.len()).unwrap_or(u32::MAX);
    // Misaligned is refused with no capacity too (the fuzzer found it accepted).
    opt_aligned(out, what)?;
    if capacity == 0 {
        return Ok(count);
    }
    if out.is_null() {
        return Err(bad_pointer(what, out));
    }
    // SAFETY: aligned; the first element's leading u32 is readable (the caller's promise).
    let stride = unsafe { out.cast::<u32>().read() } as usize;
    if stride < T::FIRST_SIZE || stride % align_of::<T>() != 0 {
        return Err(Error::new(
            HOS_RESULT_INVALID_SIZE,
            format!(
                "{what}[0].size is {stride}: set it to the sizeof of its struct ({} bytes)",
                size_of::<T>()
            ),
        ));
    }
    for (i, item) in items.iter().take(capacity as usize).enumerate() {
        // SAFETY: element i lies i * stride bytes in, inside the caller's array; aligned
        // (the stride is a multiple of the struct's alignment).
        let at = unsafe { out.cast::<u8>().add(i * stride).cast::<T>() };
        // SAFETY: as above; the element's size field is set to the stride first, so the
        // write covers the stride (checked above: it cannot fail).
        unsafe {
            at.cast::<u32>().write(stride as u32);
            write_sized(at, item, what)?;
        }
    }
    Ok(count)
}

/// A caller's text buffer `buf[0..size]` and its length out-pointer, checked before the call
/// does anything and written once at the end, as snprintf writes: as much of the text as
/// fits with a terminating NUL (cut on a character boundary), nothing for a `size` of 0; and
/// the text's whole length in bytes, without the NUL, into `*len`. The text is whole when
/// `*len < size`.
#[derive(Debug)]
pub struct TextOut {
    buf: *mut c_char,
    size: usize,
    len: Out<usize>,
}

impl TextOut {
    /// Checks the buffer: InvalidPointer for a NULL `len` or a NULL `buf` with a size.
    ///
    /// # Safety
    /// If `size` is not 0 and `buf` is not NULL, it points to `size` writable bytes; `len`
    /// is NULL or points to a writable `size_t`.
    pub unsafe fn new(buf: *mut c_char, size: usize, len: *mut usize, what: &str) -> Result<Self> {
        // SAFETY: forwarded from the caller.
        let len = unsafe { Out::new(len, "len") }?;
        if size > 0 && buf.is_null() {
            return Err(bad_pointer(what, buf));
        }
        Ok(TextOut { buf, size, len })
    }

    /// Writes `text`.
    pub fn write(self, text: &str) {
        if self.size > 0 {
            let mut cut = text.len().min(self.size - 1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            // SAFETY: `size` bytes at `buf` are writable (checked not NULL in `new`, the rest
            // the caller's promise); cut < size.
            unsafe {
                std::ptr::copy_nonoverlapping(text.as_ptr(), self.buf.cast::<u8>(), cut);
                self.buf.add(cut).write(0);
            }
        }
        self.len.write(text.len());
    }
}

/// `s` as a NUL-terminated field of `N` bytes: cut at `N - 1` bytes on a character boundary,
/// zeros after it.
pub fn c_field<const N: usize>(s: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let mut cut = s.len().min(N - 1);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    out[..cut].copy_from_slice(&s.as_bytes()[..cut]);
    out
}

fn check_size<T: Versioned>(size: usize, what: &str) -> Result<()> {
    if size < T::FIRST_SIZE {
        return Err(Error::new(
            HOS_RESULT_INVALID_SIZE,
            format!(
                "{what}->size is {size}, below the {} bytes of its first version (set it to sizeof)",
                T::FIRST_SIZE
            ),
        ));
    }
    Ok(())
}

/// The 32-bit guest word `p` points to (a mutex, condition-variable or address word), as an
/// atomic, after the kernel's checks of its address ([`check_word`]).
///
/// # Safety
/// If `p` passes, it points to a `u32` (or `i32`: the same bits) that stays valid for `'a`
/// and that other threads only access atomically meanwhile (guest code's own atomics).
pub unsafe fn word32<'a>(p: *mut u32, what: &str) -> Result<&'a AtomicU32> {
    check_word(p, what)?;
    // SAFETY: aligned and not NULL (checked); valid and only accessed atomically is the
    // caller's promise.
    Ok(unsafe { AtomicU32::from_ptr(p) })
}

/// The 64-bit guest word `p` points to (WaitIfEqual64's), as [`word32`].
///
/// # Safety
/// As [`word32`], for an `i64`.
pub unsafe fn word64<'a>(p: *mut i64, what: &str) -> Result<&'a AtomicU64> {
    check_word(p, what)?;
    // SAFETY: as in `word32`; an i64 and a u64 have the same layout.
    Ok(unsafe { AtomicU64::from_ptr(p.cast::<u64>()) })
}

/// The kernel's checks of a guest word's address (`svc::check_word_address`): InvalidAddress
/// if `p` is misaligned for `T`, then InvalidCurrentMemory for NULL; the error names `what`.
fn check_word<T>(p: *mut T, what: &str) -> Result<()> {
    hos_rs::svc::check_word_address(p as usize, align_of::<T>()).map_err(|code| {
        let why = if p.is_null() { "NULL" } else { "misaligned" };
        Error::new(code.0, format!("{what} is {why} ({p:p})"))
    })
}

/// A wait's timeout in nanoseconds, read as every svc reads it (hos's one conversion):
/// negative waits without limit, 0 polls.
pub use hos_rs::svc::timeout_from_ns as timeout;
