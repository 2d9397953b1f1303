//! A PACKED_INT_LIST's ints made straight into their list's item array, a stretch at a time.
//!
//! Why: going through `packed_int` one item at a time wrapped each int in a `Result` and
//! repeated `list_set`'s check that no Python code has touched the list: amber's own part of
//! decoding `list(range(1000))` was about 48 instructions an int, against CPython's ~70 for
//! the ints it allocates (`PyLong_FromLongLong` and its allocator). Nothing can touch the
//! list while a stretch fills: making an int never runs Python code (ints are not tracked by
//! the garbage collector, so their allocation never starts a collection). So the list is
//! checked once per stretch, filled, and its size set to what was stored. Small ints come
//! from `small_ints` without a call, as `make_int` takes them; the others through a direct
//! call, for the reason `float_run.rs` gives. Decoding `list(range(1000))` went from 108,404
//! to 102,181 instructions (callgrind) and from 6.71 to 6.35 µs; the format crate's varint
//! loop, then about 33 instructions an item, now reads short items a word at a time
//! (`amber_format`'s `varint_word.rs`).
//!
//! Fallback: a list not in the state the stretch before left it in (size `start`, room for
//! every int) goes through `packed_int` item by item, as every other builder does.

use amber_format::{packed_ints_one_by_one, BuildError};
use pyo3_ffi as ffi;

use super::PyBuilder;
use crate::object::PyObj;

impl PyBuilder<'_, '_> {
    /// Puts `values` at `start..` of `list`, fresh from `packed_list` and filled up to `start`.
    pub(super) fn fill_ints(
        &mut self,
        list: &PyObj,
        start: usize,
        values: &[i64],
    ) -> Result<(), (usize, BuildError)> {
        let end = start + values.len();
        let target = list.as_ptr().cast::<ffi::PyListObject>();
        // SAFETY: `list` is a live list and the GIL is held.
        let fresh = unsafe {
            (*target).ob_base.ob_size == start as ffi::Py_ssize_t
                && (*target).allocated >= end as ffi::Py_ssize_t
        };
        if !fresh {
            return packed_ints_one_by_one(self, list, start, values);
        }
        // SAFETY: the list has room for `end` items and a size of `start` (checked above), so
        // slots start..end are allocated and unseen. No Python code runs until this returns
        // (module header), so nothing else can change the list meanwhile. The size is set to
        // the number of slots filled, on success and on failure alike, so the list never
        // shows an unset slot; each slot takes the new reference `small_ints::get` or
        // `new_int` returns.
        unsafe {
            let items = (*target).ob_item;
            for (i, &v) in values.iter().enumerate() {
                let mut int = crate::small_ints::get(v);
                if int.is_null() {
                    int = new_int(v);
                    if int.is_null() {
                        (*target).ob_base.ob_size = (start + i) as ffi::Py_ssize_t;
                        return Err((i, self.host_failure()));
                    }
                }
                *items.add(start + i) = int;
            }
            (*target).ob_base.ob_size = end as ffi::Py_ssize_t;
        }
        Ok(())
    }
}

/// `PyLong_FromLongLong`, reached by a direct call (see `float_run.rs`'s `new_float`).
#[inline(never)]
unsafe extern "C" fn new_int(v: i64) -> *mut ffi::PyObject {
    // SAFETY: the caller holds the GIL; a plain constructor, NULL only with an exception set.
    unsafe { ffi::PyLong_FromLongLong(v) }
}
