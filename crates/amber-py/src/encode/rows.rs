//! Lists of tuples of one length as TUPLE_LIST (spec 5.11.1): the count and the arity once,
//! then each row's items as ordinary values, with no tag per row.
//!
//! The list is looked over first, without writing anything (the rows' items go through the
//! memo, which cannot take back what it recorded): every item an exact tuple of the first
//! one's length, held by the list alone. The scan calls no Python code, so the list cannot
//! change while it runs; the rows are then written, and a list that class code changes while
//! its rows are written is an error, as for a LIST.

use amber_format::tag::TUPLE_LIST_MIN;
use pyo3_ffi as ffi;

use super::containers::{changed_size, list_item_now};
use super::{hold, EncodeFail, FailKind, PyEncoder, Segment};

impl PyEncoder<'_> {
    /// Writes the exact list `list` of `n` items (at least [`TUPLE_LIST_MIN`], the first of
    /// them an exact tuple) as a TUPLE_LIST if its items qualify, and says whether it did;
    /// otherwise nothing is written. `holds` is as for [`PyEncoder::compact_list`]; `owner` is
    /// the object whose items these are (the list, or a deque), for the path of an error in a
    /// row. The caller has entered the list's nesting level; the rows' level is entered here.
    ///
    /// A row held by the list alone is met once, here, so writing it without a tag loses no
    /// sharing; its items are written exactly as inside a TUPLE, memo included. (Inside the
    /// write of a cyclic tuple, where the encoder memoizes everything, lists are memoized too
    /// and so written once: their rows still are met once.)
    #[inline(never)]
    pub(super) fn rows(
        &mut self,
        list: *mut ffi::PyObject,
        n: usize,
        holds: ffi::Py_ssize_t,
        owner: *mut ffi::PyObject,
    ) -> Result<bool, EncodeFail> {
        debug_assert!(n >= TUPLE_LIST_MIN);
        let tuple_type = self.types.tuple();
        let limit = self.unshared_limit(holds);
        // SAFETY: list is a live exact list of n items.
        let items = unsafe { (*list.cast::<ffi::PyListObject>()).ob_item };
        // SAFETY: the first item is a live exact tuple.
        let arity = unsafe { ffi::PyTuple_GET_SIZE(*items) };
        if arity == 0 {
            return Ok(false);
        }
        for i in 0..n {
            // SAFETY: i < n, the list's length, which nothing can change during this loop.
            let item = unsafe { *items.add(i) };
            // SAFETY: reading the type, length and reference count of a live object; the
            // length only once the type is known to be an exact tuple.
            let fits = unsafe {
                ffi::Py_TYPE(item) == tuple_type
                    && ffi::PyTuple_GET_SIZE(item) == arity
                    && ffi::Py_REFCNT(item) <= limit
            };
            if !fits {
                return Ok(false);
            }
        }
        self.enter()?;
        self.writer.tuple_list_header(n, arity as usize);
        for i in 0..n {
            // Class code run while an item is written may change the list: the row is read
            // again, and held while its items are written.
            let row = list_item_now(list, i)?;
            // SAFETY: reading the type and length of a live object, as in the scan.
            let same =
                unsafe { ffi::Py_TYPE(row) == tuple_type && ffi::PyTuple_GET_SIZE(row) == arity };
            if !same {
                return Err(changed_row(i));
            }
            let row = hold(row);
            for j in 0..arity {
                // SAFETY: 0 <= j < arity = len(row); the item is borrowed from the held row.
                let item = unsafe { ffi::PyTuple_GET_ITEM(row.as_ptr(), j) };
                self.nested_value(item).map_err(|e| {
                    e.at(Segment::Index(j as usize), row.as_ptr())
                        .at(Segment::Index(i), owner)
                })?;
            }
        }
        // SAFETY: list is a live list.
        if unsafe { ffi::PyList_GET_SIZE(list) } as usize != n {
            return Err(changed_size("list", list));
        }
        self.leave();
        Ok(true)
    }
}

/// The error for a list whose row `index` class code replaced, while the rows before it were
/// written, by something other than a tuple of the arity already in the output.
#[cold]
fn changed_row(index: usize) -> EncodeFail {
    EncodeFail::new(FailKind::Refused(format!(
        "item {index} of a list of tuples changed while the list was being encoded (by code \
         in a class it contains)"
    )))
}
