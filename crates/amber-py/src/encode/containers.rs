//! list, tuple, dict, set, frozenset.

use amber_format::{ImmutableStart, ImmutableToken};
use pyo3_ffi as ffi;

use super::error::key_label;
use super::memo::KeyRef;
use super::packed::Compact;
use super::prefetch;
use super::{hold, EncodeFail, FailKind, PyEncoder, Segment};
use crate::dict_layout;
use crate::object::PyObj;

impl PyEncoder<'_> {
    #[inline]
    pub(super) fn list(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        if self.write_ref_if_seen(obj) {
            return Ok(());
        }
        let _held = hold(obj);
        self.enter()?;
        // Items held by this list alone are met only here: a list of such numbers, tuples or
        // dicts loses no sharing when packed or written as rows or records.
        match self.compact_list(obj, 1) {
            Compact::Written => {
                self.leave();
                return Ok(());
            }
            // Out of line, and not joining the loop below: the rows' path keeps its values
            // out of the registers of the loop that every other list runs.
            Compact::Rows(n) => return self.rows_or_items(obj, n),
            Compact::Records(n) => return self.records_or_items(obj, n),
            Compact::Objects(n) => return self.object_rows_or_items(obj, n),
            Compact::Plain => {}
        }
        self.list_items(obj)
    }

    /// A list of `n` items whose first is an exact dict: records if they qualify, else the
    /// ordinary items.
    #[inline(never)]
    fn records_or_items(&mut self, obj: *mut ffi::PyObject, n: usize) -> Result<(), EncodeFail> {
        if self.records(obj, n, 1, obj)? {
            self.leave();
            return Ok(());
        }
        self.list_items(obj)
    }

    /// A list of `n` items whose first is an instance of a heap type: object rows if they
    /// qualify, else the ordinary items.
    #[inline(never)]
    fn object_rows_or_items(
        &mut self,
        obj: *mut ffi::PyObject,
        n: usize,
    ) -> Result<(), EncodeFail> {
        if self.object_rows(obj, n, 1, obj)? {
            self.leave();
            return Ok(());
        }
        self.list_items(obj)
    }

    /// A list of `n` items whose first is an exact tuple: rows if they qualify, else the
    /// ordinary items.
    #[inline(never)]
    fn rows_or_items(&mut self, obj: *mut ffi::PyObject, n: usize) -> Result<(), EncodeFail> {
        if self.rows(obj, n, 1, obj)? {
            self.leave();
            return Ok(());
        }
        self.list_items(obj)
    }

    /// The header and items of the exact list `obj`, whose nesting level is entered, and
    /// then leaves that level.
    #[inline(always)]
    fn list_items(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // SAFETY: obj is an exact list.
        let n = unsafe { ffi::PyList_GET_SIZE(obj) };
        self.writer.list_header(n as usize);
        let n = n as usize;
        for i in 0..n {
            // Once the memo's table is large, the rest of the list prefetches (the table only
            // grows until the encode ends). Checked every RECHECK items: a test at every item
            // cost a list of repeated objects 9% more instructions. Not at the first item, so
            // that a short list (a GeoJSON document has thousands) never asks.
            if i % prefetch::RECHECK == prefetch::RECHECK - 1 && self.memo.worth_prefetching() {
                return self.list_rest_prefetching(obj, i, n);
            }
            self.list_item(obj, i)?;
        }
        self.list_end(obj, n)
    }

    /// Writes item `i` of the exact list `obj`.
    #[inline(always)]
    fn list_item(&mut self, obj: *mut ffi::PyObject, i: usize) -> Result<(), EncodeFail> {
        // Class code (a __getstate__, a custom encoder) may run while an item is written and
        // change this list, so the length is read again before each item. The item is
        // borrowed: taking a reference would make every item look shared (see
        // `Memo::set_floors`) and send it through the memo. An item that runs code holds
        // itself while it does (class encoders take a reference once the memo has seen
        // them), and memoized objects are kept alive by the encoder.
        let item = list_item_now(obj, i)?;
        self.nested_value(item)
            .map_err(|e| e.at(Segment::Index(i), obj))
    }

    /// Items `start..n` of the exact list `obj` of `n` items, each starting the memo's reads
    /// for the item [`prefetch::AHEAD`] of it (see `prefetch.rs`). Out of line: in the loop
    /// of every list, the prefetching took geojson_features 5% more instructions.
    #[inline(never)]
    fn list_rest_prefetching(
        &mut self,
        obj: *mut ffi::PyObject,
        start: usize,
        n: usize,
    ) -> Result<(), EncodeFail> {
        for i in start..n {
            self.prefetch_item(obj, i + prefetch::AHEAD);
            self.list_item(obj, i)?;
        }
        self.list_end(obj, n)
    }

    /// Ends the exact list `obj`, which had `n` items when its header was written.
    #[inline(always)]
    fn list_end(&mut self, obj: *mut ffi::PyObject, n: usize) -> Result<(), EncodeFail> {
        // SAFETY: obj is a live list.
        if unsafe { ffi::PyList_GET_SIZE(obj) } as usize != n {
            return Err(changed_size("list", obj));
        }
        self.leave();
        Ok(())
    }

    /// Prefetches the memo's reads for item `i` of the exact list `list`, if it has one now
    /// (see `prefetch.rs`).
    #[inline(always)]
    fn prefetch_item(&self, list: *mut ffi::PyObject, i: usize) {
        // SAFETY: list is a live list, and i is checked against its length now (class code
        // may have shrunk it), so the item's pointer is read in bounds; the item itself is
        // only prefetched, never dereferenced (it may be freed before its turn).
        unsafe {
            if i < ffi::PyList_GET_SIZE(list) as usize {
                self.memo
                    .prefetch_lookup(ffi::PyList_GET_ITEM(list, i as ffi::Py_ssize_t));
            }
        }
    }

    #[inline]
    pub(super) fn tuple(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // SAFETY: obj is an exact tuple.
        let n = unsafe { ffi::PyTuple_GET_SIZE(obj) };
        // Most tuples are held by one container only and never go near the memo; deciding
        // that here lets them skip begin_value's token handling.
        if self.immutable_may_repeat(obj, self.value_trackable(n > 0)) {
            return self.tracked_tuple(obj, n);
        }
        self.enter()?;
        self.tuple_items(obj, n)?;
        self.leave();
        Ok(())
    }

    #[inline(never)]
    fn tracked_tuple(&mut self, obj: *mut ffi::PyObject, n: isize) -> Result<(), EncodeFail> {
        let Some(token) = self.begin_value(obj, true)? else {
            return Ok(());
        };
        self.tuple_items(obj, n)?;
        self.end_immutable(obj, token);
        Ok(())
    }

    /// The header and items of tuple `obj`, whose length is `n`.
    #[inline(always)]
    fn tuple_items(&mut self, obj: *mut ffi::PyObject, n: isize) -> Result<(), EncodeFail> {
        let _held = hold(obj);
        self.writer.tuple_header(n as usize);
        for i in 0..n {
            // SAFETY: 0 <= i < n = len(tuple); the item is borrowed from the tuple.
            let item = unsafe { ffi::PyTuple_GET_ITEM(obj, i) };
            self.nested_value(item)
                .map_err(|e| e.at(Segment::Index(i as usize), obj))?;
        }
        Ok(())
    }

    #[inline]
    pub(super) fn dict(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        if self.options.sort_keys {
            return self.dict_sorted(obj);
        }
        if self.write_ref_if_seen(obj) {
            return Ok(());
        }
        let _held = hold(obj);
        self.enter()?;
        // SAFETY: obj is an exact dict; its `ma_used` field is what PyDict_Size returns, read
        // without the call (a JSON document has thousands of dicts).
        let n = unsafe { (*obj.cast::<ffi::PyDictObject>()).ma_used };
        self.writer.dict_header(n as usize);
        let mut index = 0;
        // SAFETY: obj is an exact dict, held until the loop ends. Items checks the table
        // and the position against the dict's current entries at every step (as PyDict_Next
        // does), so it stays in bounds even if class code changes the dict meanwhile.
        for (key, value) in unsafe { dict_layout::Items::new(obj) } {
            // Key and value are borrowed (see `list` for why). The key must outlive its value's
            // encode, whose error path names it: a str or int key runs no code, so it is held
            // after it is written (leaving the memo's view of it alone); any other key is held
            // first, since writing it may run code that drops it.
            // SAFETY: ob_type of a live key.
            let key_type = unsafe { ffi::Py_TYPE(key) };
            let is_str = key_type == self.types.str();
            let plain = is_str || key_type == self.types.int();
            let early = (!plain).then(|| hold(key));
            if is_str {
                self.str_key(key, index)
                    .map_err(|e| e.at(Segment::KeyOf(index), obj))?;
            } else {
                self.nested_value(key)
                    .map_err(|e| e.at(Segment::KeyOf(index), obj))?;
            }
            let held = early.unwrap_or_else(|| hold(key));
            self.nested_value(value)
                .map_err(|e| e.at(Segment::Key(key_label(self.py, held.as_ptr())), obj))?;
            index += 1;
        }
        if index != n as usize {
            return Err(changed_size("dict", obj));
        }
        self.leave();
        Ok(())
    }

    /// Writes the str `key` of a dict's entry number `index`.
    ///
    /// Dicts of one shape (rows, records) repeat their keys, which the memo holds (a key is
    /// held by every dict that has it): the second dict on writes each key as a `REF`. The
    /// memo remembers the keys it holds with their offsets (by position in the dict, or past
    /// the first few positions by address), so that such a key costs one comparison instead
    /// of a memo lookup.
    #[inline(always)]
    fn str_key(&mut self, key: *mut ffi::PyObject, index: usize) -> Result<(), EncodeFail> {
        if !self.memo.key_caches_on() {
            return self.str(key);
        }
        match self.memo.key(key, index) {
            KeyRef::Written(offset) => {
                self.writer.reference(offset);
                Ok(())
            }
            KeyRef::Unknown => {
                self.str(key)?;
                self.memo.remember_key(key, index);
                Ok(())
            }
        }
    }

    pub(super) fn set(&mut self, obj: *mut ffi::PyObject, frozen: bool) -> Result<(), EncodeFail> {
        let token = if frozen {
            let Some(token) = self.begin_value(obj, true)? else {
                return Ok(());
            };
            token
        } else {
            if self.write_ref_if_seen(obj) {
                return Ok(());
            }
            self.enter()?;
            None
        };
        let _held = hold(obj);
        // The memo has just recorded the set, after `cold_value` pinned what it held. Making
        // the iterator allocates, which may start a garbage collection (up to 3.11) whose
        // code drops the set's other holders; `_held` would then be its last reference, and
        // once it went a new object could take the set's address. Pinned, the memo holds it.
        self.pin_memo();
        // SAFETY: obj is an exact set or frozenset.
        let n = unsafe { ffi::PySet_Size(obj) };
        self.writer.set_header(n as usize, frozen);
        // SAFETY: obj is iterable; a NULL result means an exception is set.
        let Some(iter) = PyObj::from_owned(unsafe { ffi::PyObject_GetIter(obj) }) else {
            return Err(EncodeFail::python(self.py));
        };
        if self.options.canonical {
            let mut items = Vec::with_capacity(n.max(0) as usize);
            // SAFETY: as below.
            while let Some(item) = PyObj::from_owned(unsafe { ffi::PyIter_Next(iter.as_ptr()) }) {
                items.push(item);
            }
            // SAFETY: checking whether PyIter_Next stopped because of an error.
            if !unsafe { ffi::PyErr_Occurred() }.is_null() {
                return Err(EncodeFail::python(self.py));
            }
            if items.len() != n as usize {
                return Err(changed_size("set", obj));
            }
            for (index, item) in self.sort_elements(obj, items)?.iter().enumerate() {
                self.nested_value(item.as_ptr())
                    .map_err(|e| e.at(Segment::Element(index), obj))?;
            }
            self.end_immutable(obj, token);
            return Ok(());
        }
        let mut index = 0;
        // SAFETY: iter is a live set iterator; each item is a new reference we own.
        while let Some(item) = PyObj::from_owned(unsafe { ffi::PyIter_Next(iter.as_ptr()) }) {
            self.nested_value(item.as_ptr())
                .map_err(|e| e.at(Segment::Element(index), obj))?;
            index += 1;
        }
        // SAFETY: checking whether PyIter_Next stopped because of an error.
        if !unsafe { ffi::PyErr_Occurred() }.is_null() {
            return Err(EncodeFail::python(self.py));
        }
        if index != n as usize {
            return Err(changed_size("set", obj));
        }
        self.end_immutable(obj, token);
        Ok(())
    }

    /// [`PyEncoder::begin_immutable`] for a value with no identity of its own (tuple,
    /// frozenset, named tuple, range, slice): in canonical mode it is never tracked (see
    /// [`PyEncoder::write_value_ref_if_seen`]). Cycles still end: they pass through a
    /// mutable object, which keeps its identity.
    #[inline]
    pub(super) fn begin_value(
        &mut self,
        obj: *mut ffi::PyObject,
        trackable: bool,
    ) -> Result<Option<Option<ImmutableToken>>, EncodeFail> {
        self.begin_immutable(obj, self.value_trackable(trackable))
    }

    /// Whether an immutable value that is `trackable` by kind may be written as a `REF`
    /// (never in canonical mode, see [`PyEncoder::begin_value`]).
    #[inline(always)]
    pub(super) fn value_trackable(&self, trackable: bool) -> bool {
        trackable && !self.options.canonical
    }

    /// Starts a tuple or frozenset (`trackable` false for the empty tuple). `None`: it was
    /// written before and a `REF` to it is out; otherwise the nesting level is entered and
    /// the token (if tracked) goes to [`PyEncoder::end_immutable`].
    #[inline]
    pub(super) fn begin_immutable(
        &mut self,
        obj: *mut ffi::PyObject,
        trackable: bool,
    ) -> Result<Option<Option<ImmutableToken>>, EncodeFail> {
        let may_repeat = self.immutable_may_repeat(obj, trackable);
        let start = if may_repeat {
            self.memo.begin_immutable(obj, &mut self.writer)
        } else {
            None
        };
        let token = match start {
            Some(ImmutableStart::Ref(offset)) => {
                self.writer.reference(offset);
                return Ok(None);
            }
            Some(ImmutableStart::Write(token)) => Some(token),
            Some(ImmutableStart::Restart) => return Err(EncodeFail::new(FailKind::Restart)),
            None => None,
        };
        // A SUPERSEDE wrapper is a nesting level of its own, as the decoder counts it.
        if token.is_some_and(|t| t.is_superseded()) {
            self.enter()?;
        }
        self.enter()?;
        Ok(Some(token))
    }

    /// Whether a tuple or frozenset goes through the memo: it is `trackable` (see
    /// [`PyEncoder::begin_value`]), refs are on, and it may be met again.
    #[inline(always)]
    fn immutable_may_repeat(&self, obj: *mut ffi::PyObject, trackable: bool) -> bool {
        trackable && self.memo.immutable_may_repeat(obj)
    }

    /// Leaves a container's nesting level; for a tracked tuple or frozenset, also tells the
    /// tracker it is complete.
    #[inline]
    pub(super) fn end_immutable(&mut self, obj: *mut ffi::PyObject, token: Option<ImmutableToken>) {
        self.leave();
        if let Some(token) = token {
            if token.is_superseded() {
                self.leave();
            }
            self.memo.end_immutable(obj, token, &mut self.writer);
        }
    }
}

/// Item `i` of the exact list `list` as it is now (borrowed): code run while the items before
/// it were written may have shrunk the list, which is an error, as the count already in the
/// output would no longer match.
#[inline(always)]
pub(super) fn list_item_now(
    list: *mut ffi::PyObject,
    i: usize,
) -> Result<*mut ffi::PyObject, EncodeFail> {
    // SAFETY: list is a live list (held by the caller); i is checked against its length now.
    unsafe {
        if i >= ffi::PyList_GET_SIZE(list) as usize {
            return Err(changed_size("list", list));
        }
        Ok(ffi::PyList_GET_ITEM(list, i as ffi::Py_ssize_t))
    }
}

/// The error for a container that class code changed while it was being written: the
/// count already in the output would no longer match.
#[cold]
pub(super) fn changed_size(what: &str, _container: *mut ffi::PyObject) -> EncodeFail {
    EncodeFail::new(FailKind::Refused(format!(
        "the {what} changed size while it was being encoded (by code in a class it contains)"
    )))
}
