//! The output of an encode: a `bytes` object written in place, grown by reallocation and
//! shrunk to fit at the end (or, once per new peak size, copied out: see [`allocator`]).
//! Writing into a `Vec` and copying it into a `bytes` object at the end would touch every
//! byte twice, which halves the speed of large arrays.
//!
//! Small payloads are the exception: for them the allocation, reallocation and shrinking of
//! a `bytes` object cost more than the encode itself. So the first bytes of every payload go
//! into a buffer kept from one encode to the next (`crate::gil_slot`); a payload that fits is
//! copied into a `bytes` of exactly its size at the end, and one that outgrows it moves into
//! a `bytes` object (one copy of at most [`SCRATCH_CAPACITY`] bytes) and carries on there.

use std::os::raw::c_int;

use amber_format::Sink;
use pyo3::exceptions::PyMemoryError;
use pyo3::PyErr;
use pyo3_ffi as ffi;

use crate::gil_slot::GilSlot;
use crate::object::PyObj;

extern "C" {
    // Part of CPython's C API for as long as bytes objects existed (pyo3-ffi keeps its binding
    // private); it needs the only reference to the object.
    fn _PyBytes_Resize(bytes: *mut *mut ffi::PyObject, newsize: ffi::Py_ssize_t) -> c_int;
}

/// Size of the reusable first buffer.
const SCRATCH_CAPACITY: usize = 4096;

/// The reusable first buffer, while no encode is using it. An encode that finds it taken (a
/// custom encoder calling `dumps`) starts in a `bytes` object.
static SCRATCH: GilSlot<Vec<u8>> = GilSlot::new();

/// A payload under construction: in the scratch buffer while it fits (`obj` NULL),
/// then in a `bytes` object owned only by this sink until [`BytesSink::finish`].
///
/// A failed allocation does not abort: the sink drops its object, ignores every later write
/// and reports `MemoryError` from `finish`, so the encoder never needs to check.
pub struct BytesSink {
    /// The bytes object (refcount 1, ours), or NULL while writing into `scratch` or after a
    /// failed allocation.
    obj: *mut ffi::PyObject,
    /// The first data byte: of `scratch`, of `obj`, or NULL after a failed allocation.
    data: *mut u8,
    len: usize,
    /// Usable bytes at `data` (`obj`'s `ob_size` while it is being written).
    cap: usize,
    /// The scratch buffer (empty if it was in use), given back on drop. Written only
    /// through `data`; its own length stays 0.
    scratch: Vec<u8>,
}

impl BytesSink {
    /// An empty sink (nothing is allocated yet unless the scratch buffer is in use).
    pub fn new() -> Self {
        // SAFETY: an encode holds the GIL.
        let mut scratch = unsafe { SCRATCH.take() }.unwrap_or_default();
        if scratch.capacity() < SCRATCH_CAPACITY {
            scratch = Vec::with_capacity(SCRATCH_CAPACITY);
        }
        BytesSink {
            obj: std::ptr::null_mut(),
            data: scratch.as_mut_ptr(),
            len: 0,
            cap: scratch.capacity(),
            scratch,
        }
    }

    /// The finished `bytes` object, exactly as long as what was written; the sink keeps
    /// nothing of it, and is only to be dropped after.
    // In place, not by value: moving the sink out of its encoder loaded its length and
    // capacity with one 16-byte load just after 8-byte stores had written them, a failed
    // store forward that drew 9% of the profile samples of `dumps(None)` (see `encode`).
    pub fn finish(&mut self) -> Result<PyObj, PyErr> {
        if self.data.is_null() {
            return Err(out_of_memory(self.len));
        }
        // A payload still in the scratch buffer is copied out, and so is the first output of
        // each new peak size (see `allocator`); the object it grew in is then freed on drop.
        if self.obj.is_null() || (self.len != self.cap && allocator::is_new_peak(self.cap)) {
            // SAFETY: the first len bytes at data are written; CPython copies them into a new
            // bytes object.
            let exact = unsafe {
                ffi::PyBytes_FromStringAndSize(self.data.cast(), self.len as ffi::Py_ssize_t)
            };
            if let Some(exact) = PyObj::from_owned(exact) {
                return Ok(exact);
            }
            // SAFETY: GIL held; drop the MemoryError CPython set, ours says more.
            unsafe { ffi::PyErr_Clear() };
            if self.obj.is_null() {
                return Err(out_of_memory(self.len));
            }
            // A grown object can still be shrunk in place, which needs no new memory.
        }
        if self.len != self.cap {
            // SAFETY: we hold the only reference to obj; on failure CPython frees it and sets
            // obj to NULL.
            if unsafe { _PyBytes_Resize(&mut self.obj, self.len as ffi::Py_ssize_t) } < 0 {
                self.obj = std::ptr::null_mut();
                // SAFETY: GIL held; drop the MemoryError CPython set, ours says more.
                unsafe { ffi::PyErr_Clear() };
                return Err(out_of_memory(self.len));
            }
        }
        let obj = std::mem::replace(&mut self.obj, std::ptr::null_mut());
        // SAFETY: obj is a new reference we own (non-NULL: a bytes object is being written).
        Ok(unsafe { PyObj::from_owned(obj).unwrap_unchecked() })
    }

    /// Room for `additional` more bytes after the first `used` (at least `len`: a [`Run`]
    /// has written past `len` bytes it has not committed yet, which must move too); false
    /// once an allocation has failed.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, used: usize, additional: usize) -> bool {
        if self.data.is_null() {
            return false;
        }
        let needed = used.saturating_add(additional);
        let new_cap = needed.max(self.cap.saturating_mul(2));
        if new_cap > isize::MAX as usize - 64 {
            self.fail();
            return false;
        }
        if self.obj.is_null() {
            // Out of the scratch buffer: move what is written into a bytes object.
            // SAFETY: a NULL source asks CPython for an uninitialised object of that size.
            let obj = unsafe { ffi::PyBytes_FromStringAndSize(std::ptr::null(), new_cap as _) };
            if obj.is_null() {
                // SAFETY: GIL held; the failure is reported by `finish`.
                unsafe { ffi::PyErr_Clear() };
                self.fail();
                return false;
            }
            // SAFETY: obj is a new bytes object of new_cap > used bytes, which cannot overlap
            // the scratch buffer, whose first used bytes are written.
            unsafe {
                let to = ffi::PyBytes_AS_STRING(obj).cast::<u8>().cast_mut();
                std::ptr::copy_nonoverlapping(self.data, to, used);
                self.data = to;
            }
            self.obj = obj;
            self.cap = new_cap;
            return true;
        }
        // SAFETY: we hold the only reference to obj; on failure CPython frees it and sets
        // obj to NULL.
        if unsafe { _PyBytes_Resize(&mut self.obj, new_cap as ffi::Py_ssize_t) } < 0 {
            self.obj = std::ptr::null_mut();
            // SAFETY: GIL held; the failure is reported by `finish`.
            unsafe { ffi::PyErr_Clear() };
            self.fail();
            return false;
        }
        // SAFETY: obj is the (possibly moved) live bytes object.
        self.data = unsafe { ffi::PyBytes_AS_STRING(self.obj).cast::<u8>().cast_mut() };
        self.cap = new_cap;
        true
    }

    fn fail(&mut self) {
        if !self.obj.is_null() {
            // SAFETY: we own this reference.
            unsafe { ffi::Py_DECREF(self.obj) };
            self.obj = std::ptr::null_mut();
        }
        self.data = std::ptr::null_mut();
        // No room left, and `cap - len` (every write's room check) stays 0. A capacity of 0
        // with bytes already written made that difference wrap around to a huge room, and
        // the next write went through the NULL data pointer: encoding into memory that ran
        // out mid-way crashed the interpreter instead of raising MemoryError.
        self.cap = self.len;
    }

    /// [`Sink::put_tag_varint`] when the room has to grow first. Out of line, and reached by a
    /// tail call, so that the fast path (a REF's tag and offset, most of the bytes a list of
    /// repeated objects writes) saves no registers: with `grow` called from inside it, it
    /// pushed and popped three on every call, and reloaded the sink's fields after each store.
    #[cold]
    #[inline(never)]
    fn put_tag_varint_grown(&mut self, tag: u8, value: u64) {
        if self.grow(self.len, 1 + amber_format::varint::MAX_VARINT_LEN) {
            // The room is there now: the fast path writes.
            self.put_tag_varint(tag, value);
        }
    }

    #[inline]
    fn room(&mut self, additional: usize) -> bool {
        self.cap - self.len >= additional || self.grow(self.len, additional)
    }
}

/// Writes `value` as a varint at `data + at`; returns the offset after it. A free function
/// taking the data pointer: a store through a pointer read from the sink could alias the
/// sink as far as the compiler knows, which made it reload the pointer for every byte.
///
/// # Safety
/// There must be room for `MAX_VARINT_LEN` bytes at `data + at`.
#[inline(always)]
unsafe fn varint_into(data: *mut u8, mut at: usize, mut value: u64) -> usize {
    while value >= 0x80 {
        // SAFETY: a varint has at most MAX_VARINT_LEN bytes, all inside the room.
        unsafe { *data.add(at) = (value as u8) | 0x80 };
        value >>= 7;
        at += 1;
    }
    // SAFETY: as above.
    unsafe { *data.add(at) = value as u8 };
    at + 1
}

/// A run of bytes written into a [`BytesSink`] with unchecked stores (the items of a packed
/// list): the caller makes room with [`BytesSink::run`] and [`Run::ensure`], then writes. Nothing
/// counts as written until [`Run::commit`]: dropping a run leaves the sink's contents as they
/// were, which is how a list that turns out not to qualify is taken back.
pub struct Run<'a> {
    sink: &'a mut BytesSink,
    /// Where the next byte goes.
    at: *mut u8,
    /// The end of the sink's capacity.
    end: *mut u8,
}

impl BytesSink {
    /// Appends `bytes`, the data of an immutable object the caller holds a reference to, with
    /// the GIL released for a large copy (see `crate::buffer::copy_detached`).
    pub fn extend_detached(&mut self, py: pyo3::Python<'_>, bytes: &[u8]) {
        // Nothing to write for an empty slice, and after a failed allocation `data` is NULL:
        // `data.add(len)` on it would be undefined even for a copy of no bytes.
        if !bytes.is_empty() && self.room(bytes.len()) {
            // SAFETY: room() guarantees len + bytes.len() <= cap; the destination is the
            // object being built, which only this encoder can reach, and the source cannot
            // overlap it or change (the caller's promise).
            unsafe {
                crate::buffer::copy_detached(py, bytes, self.data.add(self.len), true);
            }
            self.len += bytes.len();
        }
    }

    /// Starts a run with room for at least `min` bytes; `None` once an allocation has failed
    /// (the encode then reports `MemoryError` from `finish`, as after any other write).
    #[inline]
    pub fn run(&mut self, min: usize) -> Option<Run<'_>> {
        if !self.room(min) {
            return None;
        }
        // SAFETY: room() guarantees len + min <= cap, so both pointers are inside (or one past
        // the end of) the object's data.
        let (at, end) = unsafe { (self.data.add(self.len), self.data.add(self.cap)) };
        Some(Run {
            at,
            end,
            sink: self,
        })
    }
}

impl Run<'_> {
    /// Makes sure `additional` more bytes fit, growing the sink when they do not (by at least
    /// doubling it, so this is rare); false once an allocation has failed.
    #[inline(always)]
    pub fn ensure(&mut self, additional: usize) -> bool {
        if (self.end as usize - self.at as usize) >= additional {
            return true;
        }
        // The run's own fields stay out of the call, so that the loop writing through it can
        // keep them in registers.
        match grow_run(self.sink, self.at, additional) {
            Some((at, end)) => {
                (self.at, self.end) = (at, end);
                true
            }
            None => false,
        }
    }

    /// Appends one byte.
    ///
    /// # Safety
    /// There must be room for it: made by [`BytesSink::run`] or [`Run::ensure`].
    #[inline(always)]
    pub unsafe fn byte(&mut self, b: u8) {
        debug_assert!(self.at < self.end);
        // SAFETY: per the contract, at is inside the room made.
        unsafe {
            *self.at = b;
            self.at = self.at.add(1);
        }
    }

    /// Appends `value` as a minimal varint.
    ///
    /// # Safety
    /// There must be room for `MAX_VARINT_LEN` bytes.
    #[inline(always)]
    pub unsafe fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            // SAFETY: per the contract, a varint's at most MAX_VARINT_LEN bytes fit.
            unsafe { self.byte((value as u8) | 0x80) };
            value >>= 7;
        }
        // SAFETY: as above.
        unsafe { self.byte(value as u8) };
    }

    /// Appends the 8 bytes of `value`, little-endian.
    ///
    /// # Safety
    /// There must be room for 8 bytes.
    #[inline(always)]
    pub unsafe fn f64(&mut self, value: f64) {
        debug_assert!(self.at.wrapping_add(8) <= self.end);
        // SAFETY: per the contract the 8 bytes fit; an array of bytes needs no alignment.
        unsafe {
            std::ptr::write_unaligned(self.at.cast::<[u8; 8]>(), value.to_le_bytes());
            self.at = self.at.add(8);
        }
    }

    /// Where the next byte goes, for a writer that stores through the pointer itself and
    /// then calls [`Run::advance`] (`wide_str.rs`, built where CPython's layouts are known).
    #[cfg(amber_known_layouts)]
    #[inline(always)]
    pub fn position(&self) -> *mut u8 {
        self.at
    }

    /// Counts `n` bytes written at [`Run::position`] as part of the run.
    ///
    /// # Safety
    /// The `n` bytes at the position must be inside the room made, and written.
    #[cfg(amber_known_layouts)]
    #[inline(always)]
    pub unsafe fn advance(&mut self, n: usize) {
        debug_assert!(self.at.wrapping_add(n) <= self.end);
        // SAFETY: per the contract, the n bytes are inside the room.
        self.at = unsafe { self.at.add(n) };
    }

    /// Keeps what was written.
    #[inline]
    pub fn commit(self) {
        // SAFETY: at and data point into the same object, at no lower than data + len.
        let written = unsafe { self.at.offset_from(self.sink.data) };
        self.sink.len = written as usize;
    }
}

/// Grows `sink` so that `additional` bytes fit after `at`, a run's position in it: the run's
/// new position and end, or `None` once an allocation has failed.
#[cold]
#[inline(never)]
fn grow_run(sink: &mut BytesSink, at: *mut u8, additional: usize) -> Option<(*mut u8, *mut u8)> {
    // SAFETY: at points into the sink's data, at or after its committed length.
    let pos = unsafe { at.offset_from(sink.data) } as usize;
    if !sink.grow(pos, additional) {
        return None;
    }
    // SAFETY: the grown object keeps its first pos bytes and has cap bytes of room.
    Some(unsafe { (sink.data.add(pos), sink.data.add(sink.cap)) })
}

#[cold]
fn out_of_memory(len: usize) -> PyErr {
    PyMemoryError::new_err(format!("cannot allocate the output ({len} bytes written)"))
}

impl Drop for BytesSink {
    fn drop(&mut self) {
        self.fail();
        let scratch = std::mem::take(&mut self.scratch);
        if scratch.capacity() == SCRATCH_CAPACITY {
            // SAFETY: an encode's sink is dropped with the GIL held; a Vec<u8> runs no code.
            unsafe { SCRATCH.give_back(scratch) };
        }
    }
}

impl Sink for BytesSink {
    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    // Always: one store behind a room check, met for most values; left to the compiler's
    // judgment it stopped being inlined into the value loop once that loop grew.
    #[inline(always)]
    fn push(&mut self, byte: u8) {
        if self.room(1) {
            // SAFETY: room() guarantees len < cap, inside the object's data.
            unsafe { *self.data.add(self.len) = byte };
            self.len += 1;
        }
    }

    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        // As in `extend_detached`: `room(0)` holds even after a failed allocation.
        if !bytes.is_empty() && self.room(bytes.len()) {
            // SAFETY: room() guarantees len + bytes.len() <= cap; the source is a Rust slice
            // that cannot overlap the object we own exclusively.
            unsafe { crate::short_bytes::copy_short(bytes, self.data.add(self.len)) };
            self.len += bytes.len();
        }
    }

    #[inline]
    fn put_varint(&mut self, value: u64) {
        if self.room(amber_format::varint::MAX_VARINT_LEN) {
            // SAFETY: room for a whole varint was just checked.
            self.len = unsafe { varint_into(self.data, self.len, value) };
        }
    }

    #[inline]
    fn put_tag_varint(&mut self, tag: u8, value: u64) {
        let (data, len) = (self.data, self.len);
        if self.cap - len > amber_format::varint::MAX_VARINT_LEN {
            // SAFETY: room for the tag and a whole varint was just checked; `data` is a local
            // copy, so the stores cannot make the compiler reload the sink's fields.
            unsafe {
                *data.add(len) = tag;
                self.len = varint_into(data, len + 1, value);
            }
        } else {
            self.put_tag_varint_grown(tag, value);
        }
    }

    #[inline(always)]
    fn put_tag_bytes(&mut self, tag: u8, bytes: &[u8]) {
        if self.room(1 + bytes.len()) {
            let (data, len) = (self.data, self.len);
            // SAFETY: room for the tag and the bytes was just checked; the source is a Rust
            // slice that cannot overlap the object we own exclusively. (Local copies of the
            // fields: a store through `data` would otherwise make the compiler reload them.)
            unsafe {
                *data.add(len) = tag;
                crate::short_bytes::copy_short(bytes, data.add(len + 1));
            }
            self.len = len + 1 + bytes.len();
        }
    }

    #[inline]
    fn put_tag_fixed<const N: usize>(&mut self, tag: u8, bytes: [u8; N]) {
        if self.room(1 + N) {
            let (data, len) = (self.data, self.len);
            // SAFETY: room for the tag and N bytes was just checked; an array has no
            // alignment requirement beyond a byte.
            unsafe {
                *data.add(len) = tag;
                std::ptr::write_unaligned(data.add(len + 1).cast::<[u8; N]>(), bytes);
            }
            self.len = len + 1 + N;
        }
    }

    #[inline]
    fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    #[inline]
    fn get_mut(&mut self, index: usize) -> Option<&mut u8> {
        if index < self.len && !self.data.is_null() {
            // SAFETY: index < len <= cap, inside the object's data, which this &mut self
            // borrows exclusively.
            Some(unsafe { &mut *self.data.add(index) })
        } else {
            None
        }
    }

    #[inline]
    fn reserve(&mut self, additional: usize) {
        self.room(additional);
    }

    fn as_slice(&self) -> &[u8] {
        if self.data.is_null() {
            return &[];
        }
        // SAFETY: the first len bytes of the object's data are written.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }
}

/// Keeps glibc from mapping fresh pages for every large output.
///
/// glibc serves a request of at least its mmap threshold (128 KiB at start) with a fresh
/// mapping, and raises the threshold to the size of a mapped block when one is freed (up to
/// 32 MiB); freed heap memory is kept for reuse instead. An output grows past its final size
/// and is then shrunk, so the block its owner frees is smaller than the peak the next encode
/// of the same data reaches: every such encode would map its peak afresh and take a page
/// fault for each 4 KiB it writes (about 340 for a 1.4 MB payload, more time than encoding
/// it). So the first time an output reaches a new peak, [`BytesSink::finish`] copies it into
/// an exact-size object and frees the peak block whole. That raises the threshold as glibc
/// intends, and later outputs up to that size are written into reused heap memory and shrunk
/// in place. A peak above 32 MiB never raises the threshold; such outputs are shrunk as
/// before, without the copy.
mod allocator {
    /// Whether an output whose buffer grew to `capacity` should be copied out rather than
    /// shrunk: true once per new peak size within the range where glibc adjusts.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub(super) fn is_new_peak(capacity: usize) -> bool {
        use std::sync::atomic::{AtomicUsize, Ordering};

        /// glibc's initial threshold; smaller buffers are never mapped.
        const INITIAL_THRESHOLD: usize = 128 * 1024;
        /// The largest block whose freeing raises the threshold on 64-bit targets, less room
        /// for the bytes object's header and the page rounding of a mapped block.
        const MAX_TAUGHT: usize = 32 * 1024 * 1024 - 64 * 1024;
        /// The largest peak seen so far, process-wide like the threshold itself.
        static LARGEST_PEAK: AtomicUsize = AtomicUsize::new(0);

        if !(INITIAL_THRESHOLD..=MAX_TAUGHT).contains(&capacity)
            || capacity <= LARGEST_PEAK.load(Ordering::Relaxed)
        {
            return false;
        }
        LARGEST_PEAK.store(capacity, Ordering::Relaxed);
        true
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub(super) fn is_new_peak(_capacity: usize) -> bool {
        false
    }
}
