//! Lists of plain numbers as PACKED_INT_LIST and PACKED_FLOAT_LIST (spec 5.10.1), and the
//! choice of a list's compact form.
//!
//! A list is written optimistically: tag, count, then each item while it is checked. The
//! first item that does not qualify (another type, a shared object, one FLOAT32 item too
//! many) abandons the run, which leaves the output as it was, and the caller writes the list
//! the ordinary way. The loops call no Python code and allocate nothing, so the list cannot
//! change while they read it.

use std::os::raw::c_int;

use amber_format::tag::{OBJECT_ROWS_MIN, PACKED_MIN, RECORDS_MIN, TUPLE_LIST_MIN};
use amber_format::varint::{zigzag, MAX_VARINT_LEN};
use amber_format::{Tag, Writer};
use pyo3_ffi as ffi;

use super::sink::Run;
use super::PyEncoder;

// One length check serves both forms for numbers and tuples; dicts need fewer items.
const _: () = assert!(
    PACKED_MIN == TUPLE_LIST_MIN && RECORDS_MIN <= PACKED_MIN && OBJECT_ROWS_MIN == RECORDS_MIN
);

/// What [`PyEncoder::compact_list`] found.
pub(super) enum Compact {
    /// Nothing is written: the list takes the ordinary form.
    Plain,
    /// The list is written, packed.
    Written,
    /// Nothing is written: the list has this many items (at least [`TUPLE_LIST_MIN`]) and
    /// the first is an exact tuple, so it may be written as rows ([`PyEncoder::rows`]).
    Rows(usize),
    /// Nothing is written: the list has this many items (at least [`RECORDS_MIN`]) and the
    /// first is an exact dict, so it may be written as records ([`PyEncoder::records`]).
    Records(usize),
    /// Nothing is written: the list has this many items (at least [`OBJECT_ROWS_MIN`]) and
    /// the first is an instance of a heap type (a class defined in Python), so it may be
    /// written as object rows ([`PyEncoder::object_rows`]).
    Objects(usize),
}

impl PyEncoder<'_> {
    /// Writes the exact list `list` packed if its items qualify for it, or finds that they
    /// may qualify to be written as rows (spec 5.11.1, `rows.rs`), records (spec 5.12.1,
    /// `records.rs`) or object rows (spec 5.17.9, `object_rows.rs`), which is for the caller
    /// to try: see [`Compact`]. `holds` is how many
    /// references the containers that the encoder knows of have on each item: 1 for a list
    /// of the graph, 2 for the copy of a deque's items (the deque holds them too). An item with more references than that is held
    /// somewhere else as well, so it may be met again and has to go through the memo.
    ///
    /// Inlined into every list's path: most lists are turned away by their length or by the
    /// type of their first item before anything else is done.
    #[inline(always)]
    pub(super) fn compact_list(
        &mut self,
        list: *mut ffi::PyObject,
        holds: ffi::Py_ssize_t,
    ) -> Compact {
        // SAFETY: list is a live exact list.
        let n = unsafe { ffi::PyList_GET_SIZE(list) } as usize;
        if n < RECORDS_MIN {
            return Compact::Plain;
        }
        // SAFETY: an exact list of n > 0 items has an item array of n live objects.
        let items = unsafe { (*list.cast::<ffi::PyListObject>()).ob_item };
        // SAFETY: as above; the first item is live.
        let ty = unsafe { ffi::Py_TYPE(*items) };
        if ty == self.types.dict() {
            return Compact::Records(n);
        }
        // SAFETY: reading the flags of a live type.
        if unsafe { ffi::PyType_HasFeature(ty, ffi::Py_TPFLAGS_HEAPTYPE) } != 0 {
            return Compact::Objects(n);
        }
        if n < PACKED_MIN {
            return Compact::Plain;
        }
        if ty == self.types.int() || ty == self.types.float() {
            if self.packed_numbers(items, n, holds) {
                return Compact::Written;
            }
        } else if ty == self.types.tuple() {
            return Compact::Rows(n);
        }
        Compact::Plain
    }

    /// The most references an item of a list written in a compact form may have, `holds`
    /// being what the containers the encoder knows of account for (see
    /// [`PyEncoder::compact_list`]). Only the memo can write an item as a REF: with refs off,
    /// and in canonical mode (numbers and tuples are written by value), no item is ever
    /// shared, whatever holds it.
    #[inline]
    pub(super) fn unshared_limit(&self, holds: ffi::Py_ssize_t) -> ffi::Py_ssize_t {
        if self.memo.is_on() && self.value_trackable(true) {
            holds
        } else {
            ffi::Py_ssize_t::MAX
        }
    }

    /// [`PyEncoder::compact_list`] for a list of `n` items, the first of them an exact int or float.
    /// (A list of ints that fails at its first item, such as `[x] * n` with a shared `x`,
    /// costs little more than that: the room it reserves, a byte an item, the ordinary form
    /// needs too.)
    #[inline(never)]
    fn packed_numbers(
        &mut self,
        items: *const *mut ffi::PyObject,
        n: usize,
        holds: ffi::Py_ssize_t,
    ) -> bool {
        let limit = self.unshared_limit(holds);
        // SAFETY: items holds n >= PACKED_MIN live objects.
        if unsafe { ffi::Py_TYPE(*items) } == self.types.int() {
            self.packed_ints(items, n, limit)
        } else {
            self.packed_floats(items, n, limit)
        }
    }

    /// A run holding the tag and the count of a packed list of `n` items, with room for
    /// `item_room` bytes of each item (written by the caller).
    #[inline]
    fn packed_run(&mut self, tag: Tag, n: usize, item_room: usize) -> Option<Run<'_>> {
        let mut run = self
            .writer
            .sink_mut()
            .run(1 + MAX_VARINT_LEN + item_room.saturating_mul(n))?;
        // SAFETY: the room reserved starts with a tag byte and a varint.
        unsafe {
            run.byte(tag.code());
            run.varint(n as u64);
        }
        Some(run)
    }

    /// PACKED_INT_LIST: every item an exact int in the i64 range, and either one that is never
    /// memoized (-16..=256) or one with at most `limit` references.
    #[inline]
    fn packed_ints(
        &mut self,
        items: *const *mut ffi::PyObject,
        n: usize,
        limit: ffi::Py_ssize_t,
    ) -> bool {
        let int_type = self.types.int();
        // Room for one byte an item, the least they take: a room of 10 bytes an item, their
        // most, would often move the output to a larger block, only to shrink it at the end.
        let Some(mut run) = self.packed_run(Tag::PackedIntList, n, 1) else {
            return false;
        };
        for i in 0..n {
            // SAFETY: i < n, the list's length, which nothing can change during this loop.
            let item = unsafe { *items.add(i) };
            // SAFETY: the item is live while the list holds it.
            if unsafe { ffi::Py_TYPE(item) } != int_type {
                return false;
            }
            // SAFETY: item is an exact int.
            let Some(v) = (unsafe { crate::pylong::small_value(item) }).or_else(|| i64_value(item))
            else {
                return false;
            };
            // SAFETY: reading the reference count of a live object.
            if !Writer::is_inline_int(v) && unsafe { ffi::Py_REFCNT(item) } > limit {
                return false;
            }
            if !run.ensure(MAX_VARINT_LEN) {
                return false;
            }
            // SAFETY: room for a whole varint was just made.
            unsafe { run.varint(zigzag(v)) };
        }
        run.commit();
        true
    }

    /// PACKED_FLOAT_LIST: every item an exact float with at most `limit` references, and at
    /// most a quarter of them float32-exact.
    #[inline]
    fn packed_floats(
        &mut self,
        items: *const *mut ffi::PyObject,
        n: usize,
        limit: ffi::Py_ssize_t,
    ) -> bool {
        let float_type = self.types.float();
        // Room for all the floats is reserved at once, 8 bytes each: a list of one shared
        // float (`[x] * n`) is turned away first, since its REFs take far less.
        // SAFETY: items holds n >= PACKED_MIN live objects.
        if unsafe { ffi::Py_REFCNT(*items) } > limit {
            return false;
        }
        let Some(mut run) = self.packed_run(Tag::PackedFloatList, n, 8) else {
            return false;
        };
        let mut exact = 0;
        for i in 0..n {
            // SAFETY: as in `packed_ints`.
            let item = unsafe { *items.add(i) };
            // SAFETY: reading the type and reference count of a live object.
            if unsafe { ffi::Py_TYPE(item) != float_type || ffi::Py_REFCNT(item) > limit } {
                return false;
            }
            // SAFETY: item is an exact float.
            let v = unsafe { ffi::PyFloat_AS_DOUBLE(item) };
            if Writer::is_float32_exact(v) {
                exact += 1;
                // Packing would now be longer than FLOAT32 items, whatever follows.
                if !Writer::packs_floats(n, exact) {
                    return false;
                }
            }
            // SAFETY: one of the n floats the run has room for.
            unsafe { run.f64(v) };
        }
        run.commit();
        true
    }
}

/// The value of an exact int beyond two 30-bit digits, if it is in the i64 range.
#[cold]
fn i64_value(item: *mut ffi::PyObject) -> Option<i64> {
    let mut overflow: c_int = 0;
    // SAFETY: item is an exact int; this call cannot fail for one (overflow is reported).
    let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(item, &mut overflow) };
    (overflow == 0).then_some(v)
}
