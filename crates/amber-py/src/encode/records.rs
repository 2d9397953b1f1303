//! Lists of dicts with the same keys as RECORDS (spec 5.12.1): the count, the width and the
//! keys once, then each dict's values as ordinary values, with no tag and no keys per row.
//!
//! The list is looked over first, without writing anything: every item an exact dict held by
//! the list alone, with as many keys as the first, whose keys are at least
//! [`RECORDS_MIN_WIDTH`] strs. That scan reads only each dict's own object (type, reference
//! count, size): on a list of a million dicts, a second walk through their key tables, before
//! the one that reads their values, cost a tenth of the encode in cache misses.
//!
//! Whether each dict has the first one's very keys, in order, is checked while its values are
//! written, from the same table reads. A dict that does not (its keys are others, or in another
//! order, or class code run by an earlier value changed it) cannot be taken back: the keys and
//! values written so far went through the memo, which cannot forget them. So the encode starts
//! again, as it does for a cycle through a tuple (`memo.rs`), with the list marked to be
//! written as a LIST (`PyEncoder::plain_records`); a list is marked once, so restarts are
//! bounded by the lists of dicts in the payload. Lists of dicts that share a length but not
//! their keys are rare: the cost, an encode done twice, is paid for those only.
//!
//! The keys are held while the rows are written, so a key that class code frees cannot be
//! mistaken for a new object at the same address. A row's entries are read straight from its
//! table when it is a dense str-keys table (`dict_layout::dense_str_entries`), which records
//! built by code and by JSON decoders are; any other dict, or an interpreter whose layout is
//! not known, goes through `dict_layout::Items`.

use amber_format::tag::{RECORDS_MIN, RECORDS_MIN_WIDTH};
use pyo3_ffi as ffi;

use super::containers::{changed_size, list_item_now};
use super::error::key_label;
use super::{hold, EncodeFail, FailKind, PyEncoder, Segment};
use crate::dict_layout::{self, Items};
use crate::object::PyObj;

impl PyEncoder<'_> {
    /// Writes the exact list `list` of `n` items (at least [`RECORDS_MIN`], the first of them
    /// an exact dict) as a RECORDS if its items qualify, and says whether it did; otherwise
    /// nothing is written. `holds` is as for [`PyEncoder::compact_list`]; `owner` is the object
    /// whose items these are (the list, or a deque), for the path of an error. The caller has
    /// entered the list's nesting level; the rows' level is entered here.
    ///
    /// A dict held by the list alone is met once, here, so writing it without a tag loses no
    /// sharing. Its keys are the first dict's very objects, written once; its values are
    /// written exactly as inside a DICT, memo included.
    #[inline(never)]
    pub(super) fn records(
        &mut self,
        list: *mut ffi::PyObject,
        n: usize,
        holds: ffi::Py_ssize_t,
        owner: *mut ffi::PyObject,
    ) -> Result<bool, EncodeFail> {
        debug_assert!(n >= RECORDS_MIN);
        // Canonical mode writes every list of dicts as a LIST (spec 6.7, rule 3).
        if self.options.canonical {
            return Ok(false);
        }
        if !self.plain_records.is_empty() && self.plain_records.contains(&(owner as usize)) {
            return Ok(false);
        }
        let mut keys = self.spare_key_lists.pop().unwrap_or_default();
        if !self.record_keys(list, n, holds, &mut keys) {
            self.give_back_keys(keys);
            return Ok(false);
        }
        let width = keys.len();
        self.enter()?;
        self.writer.records_header(n, width);
        // SAFETY: list is a live list of n items (nothing has run since the scan).
        let first = unsafe { ffi::PyList_GET_ITEM(list, 0) };
        for (index, key) in keys.iter().enumerate() {
            self.nested_value(key.as_ptr()).map_err(|e| {
                e.at(Segment::KeyOf(index), first)
                    .at(Segment::Index(0), owner)
            })?;
        }
        for i in 0..n {
            // Class code run while a value is written may change the list: the row is read
            // again, and held while its values are written.
            let row = list_item_now(list, i)?;
            // SAFETY: reading the type of a live object.
            if unsafe { ffi::Py_TYPE(row) } != self.types.dict() {
                return Err(self.not_records(owner));
            }
            let row = hold(row);
            let fits = self
                .record_values(row.as_ptr(), &keys)
                .map_err(|e| e.at(Segment::Index(i), owner))?;
            if !fits {
                return Err(self.not_records(owner));
            }
        }
        // SAFETY: list is a live list.
        if unsafe { ffi::PyList_GET_SIZE(list) } as usize != n {
            return Err(changed_size("list", list));
        }
        self.leave();
        self.give_back_keys(keys);
        Ok(true)
    }

    /// Returns a list of keys taken from [`PyEncoder::spare_key_lists`], emptied (its keys
    /// released), for the next list of records.
    #[inline]
    fn give_back_keys(&mut self, mut keys: Vec<PyObj>) {
        keys.clear();
        self.spare_key_lists.push(keys);
    }

    /// Writes the values of `row`, a held exact dict, in the order of `keys`; false (with
    /// nothing more written) when a key is not the one at its place.
    #[inline(always)]
    fn record_values(
        &mut self,
        row: *mut ffi::PyObject,
        keys: &[PyObj],
    ) -> Result<bool, EncodeFail> {
        let layout = dict_layout::known();
        let width = keys.len();
        for (index, key) in keys.iter().enumerate() {
            let key = key.as_ptr();
            // The entries are looked up again for every value: writing the one before may
            // have run code that changed the table.
            // SAFETY: row is a live exact dict, held; dense entries hold `width` items.
            let dense = layout.then(|| unsafe { dict_layout::dense_str_entries(row, width) });
            let value = match dense {
                Some(Some(entries)) => {
                    // SAFETY: index < width, the dense table's entry count.
                    let entry = unsafe { &*entries.add(index) };
                    if entry.key != key {
                        return Ok(false);
                    }
                    entry.value
                }
                // Not a dense str-keys table: the rest of the row the general way.
                _ => return self.record_values_by_items(row, keys, index),
            };
            self.nested_value(value)
                .map_err(|e| e.at(Segment::Key(key_label(self.py, key)), row))?;
        }
        Ok(true)
    }

    /// [`PyEncoder::record_values`] from value `from` on, for any dict: through
    /// [`Items`], which checks the table at every step.
    #[cold]
    #[inline(never)]
    fn record_values_by_items(
        &mut self,
        row: *mut ffi::PyObject,
        keys: &[PyObj],
        from: usize,
    ) -> Result<bool, EncodeFail> {
        let mut index = 0;
        // SAFETY: row is an exact dict, held by the caller; Items checks the table at every
        // step (see `dict`).
        for (key, value) in unsafe { Items::new(row) } {
            if keys.get(index).map(PyObj::as_ptr) != Some(key) {
                return Ok(false);
            }
            if index >= from {
                self.nested_value(value)
                    .map_err(|e| e.at(Segment::Key(key_label(self.py, key)), row))?;
            }
            index += 1;
        }
        Ok(index == keys.len())
    }

    /// Puts into `keys` (empty) the keys of a list of `n` dicts that may be written as
    /// RECORDS, held, and says whether its items qualify: each an exact dict with at most the
    /// references `holds` allows (see [`PyEncoder::unshared_limit`]) and as many keys as the
    /// first, which has at least [`RECORDS_MIN_WIDTH`], all exact strs. (That every dict has
    /// those very keys is checked as its values are written.) When they do not, `keys` may
    /// hold some keys, for the caller to release.
    fn record_keys(
        &self,
        list: *mut ffi::PyObject,
        n: usize,
        holds: ffi::Py_ssize_t,
        keys: &mut Vec<PyObj>,
    ) -> bool {
        let dict_type = self.types.dict();
        // Dicts keep their identity in every mode but canonical, which the caller excludes:
        // only refs=False lets a dict held twice be written twice.
        let limit = if self.memo.is_on() {
            holds
        } else {
            ffi::Py_ssize_t::MAX
        };
        // SAFETY: list is a live exact list of n items.
        let items = unsafe { (*list.cast::<ffi::PyListObject>()).ob_item };
        // SAFETY: the first item is a live exact dict (the caller checked its type).
        let first = unsafe { *items };
        // SAFETY: first is a live exact dict; no Python code runs while it is read.
        for (key, _) in unsafe { Items::new(first) } {
            // SAFETY: reading the type of a live key.
            if unsafe { ffi::Py_TYPE(key) } != self.types.str() {
                return false;
            }
            keys.push(hold(key));
        }
        if keys.len() < RECORDS_MIN_WIDTH {
            return false;
        }
        let width = keys.len();
        for i in 0..n {
            // SAFETY: i < n, the list's length, which nothing can change during this loop.
            let item = unsafe { *items.add(i) };
            // SAFETY: reading the type, reference count and size of a live object, the size
            // only once it is known to be an exact dict.
            let fits = unsafe {
                ffi::Py_TYPE(item) == dict_type
                    && ffi::Py_REFCNT(item) <= limit
                    && (*item.cast::<ffi::PyDictObject>()).ma_used as usize == width
            };
            if !fits {
                return false;
            }
        }
        true
    }
}

impl PyEncoder<'_> {
    /// A list being written as records has a dict that does not fit: the list is marked to be
    /// written as a LIST, and the encode starts again.
    #[cold]
    fn not_records(&mut self, owner: *mut ffi::PyObject) -> EncodeFail {
        self.plain_records.insert(owner as usize);
        EncodeFail::new(FailKind::Restart)
    }
}
