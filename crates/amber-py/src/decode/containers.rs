//! list, tuple, dict, set, frozenset, and the Builder trait wiring.

use amber_format::{
    BuildAfterCode, BuildError, Builder, CreateFirstCode, ExtBlob, PairPlace, ShapeDef,
};
use pyo3_ffi as ffi;

use super::{dict_template, key_cache, PyBuilder};

extern "C" {
    // CPython's constructor of a dict sized for `minused` items (pyo3-ffi keeps its binding
    // private); exported by every CPython version amber supports, and used by msgspec and
    // orjson for the same purpose.
    fn _PyDict_NewPresized(minused: ffi::Py_ssize_t) -> *mut ffi::PyObject;
}
use crate::dict_layout;
use crate::object::PyObj;

impl Builder for PyBuilder<'_, '_> {
    type Obj = PyObj;

    fn none(&mut self) -> Result<PyObj, BuildError> {
        Ok(self.make_none())
    }
    fn bool(&mut self, v: bool) -> Result<PyObj, BuildError> {
        Ok(self.make_bool(v))
    }
    fn int(&mut self, v: i64) -> Result<PyObj, BuildError> {
        self.make_int(v)
    }
    fn bigint(&mut self, twos_le: &[u8]) -> Result<PyObj, BuildError> {
        self.make_bigint(twos_le)
    }
    fn float(&mut self, v: f64) -> Result<PyObj, BuildError> {
        self.make_float(v)
    }
    fn complex(&mut self, re: f64, im: f64) -> Result<PyObj, BuildError> {
        self.make_complex(re, im)
    }
    // Always inlined, as `make_str` is, for the same reason.
    #[inline(always)]
    fn str(&mut self, utf8: &[u8]) -> Result<PyObj, BuildError> {
        self.make_str(utf8)
    }
    #[inline(always)]
    fn key_str(&mut self, utf8: &[u8]) -> Result<PyObj, BuildError> {
        let slot = match key_cache::short_key(utf8) {
            Some(short) => {
                // SAFETY: the GIL is held for the whole decode.
                let cached = unsafe { key_cache::lookup(&short) };
                if !cached.is_null() {
                    // SAFETY: lookup returned a new reference.
                    return Ok(unsafe { PyObj::from_owned(cached).unwrap_unchecked() });
                }
                short.slot
            }
            None if !utf8.is_ascii() => return self.make_wide_str(utf8),
            // ASCII, but longer than the keys the table hands out: never found there, but
            // kept, so that a dict template can tell the key is the table's (`holds`).
            None => key_cache::slot(utf8),
        };
        let key = self.make_str(utf8)?;
        // SAFETY: the GIL is held; key is a new exact str of ASCII characters.
        unsafe { key_cache::remember(slot, key.as_ptr()) };
        Ok(key)
    }
    fn str_surrogates(&mut self, bytes: &[u8]) -> Result<PyObj, BuildError> {
        self.make_str_with_surrogates(bytes)
    }
    fn bytes(&mut self, b: &[u8]) -> Result<PyObj, BuildError> {
        self.make_bytes(b)
    }
    fn bytearray(&mut self, b: &[u8]) -> Result<PyObj, BuildError> {
        self.make_bytearray(b)
    }

    #[inline]
    fn list(&mut self, len: usize) -> Result<PyObj, BuildError> {
        // Why empty: a REF may hand a list to Python code before its items are all decoded (a
        // cycle through a deque, a class's __setstate__, a custom decode function). Made with
        // room for len items but a size of 0, growing as list_set fills it, such a list is a
        // valid shorter list; with len NULL slots, iterating it crashed the interpreter.
        #[cfg(amber_known_layouts)]
        // SAFETY: the GIL is held.
        let ptr = unsafe { empty_list_with_room(len) };
        #[cfg(not(amber_known_layouts))]
        // SAFETY: PyList_New gives a new list with len allocated slots (or NULL with an error
        // set, which own reports); a size of 0 makes none of them visible, and list_set then
        // keeps size <= allocated.
        let ptr = unsafe {
            let ptr = ffi::PyList_New(len as ffi::Py_ssize_t);
            if !ptr.is_null() {
                // The new list's size field, set as Py_SET_SIZE would.
                (*ptr.cast::<ffi::PyVarObject>()).ob_size = 0;
            }
            ptr
        };
        self.own(ptr)
    }

    #[inline]
    fn list_set(&mut self, list: &PyObj, index: usize, item: PyObj) {
        let raw = list.as_ptr().cast::<ffi::PyListObject>();
        let at = index as ffi::Py_ssize_t;
        // SAFETY: `list` is a live list made by `list` above and the GIL is held. While no
        // Python code has touched it, its size is `index` and a slot is allocated there: the
        // item goes in and the size grows by one, as PyList_Append would do without its checks.
        unsafe {
            if (*raw).ob_base.ob_size == at && at < (*raw).allocated {
                *(*raw).ob_item.add(index) = item.into_ptr();
                (*raw).ob_base.ob_size = at + 1;
                return;
            }
        }
        // Python code reached the unfinished list through a REF and changed it: append, which
        // is sound whatever it did. A failure (out of memory) leaves the item out.
        // SAFETY: both are live objects; PyList_Append takes its own reference to the item.
        if unsafe { ffi::PyList_Append(list.as_ptr(), item.as_ptr()) } != 0 {
            // SAFETY: the GIL is held; the error is PyList_Append's own.
            unsafe { ffi::PyErr_Clear() };
        }
    }

    fn packed_ints(
        &mut self,
        list: &PyObj,
        start: usize,
        values: &[i64],
    ) -> Result<(), (usize, BuildError)> {
        self.fill_ints(list, start, values)
    }

    fn packed_floats(&mut self, list: &PyObj, raw: &[u8]) -> Result<(), (usize, BuildError)> {
        self.fill_floats(list, raw)
    }

    #[inline]
    fn tuple(&mut self, len: usize) -> Result<PyObj, BuildError> {
        // SAFETY: as for lists; the tuple is not exposed to anything until it is full.
        let ptr = unsafe { ffi::PyTuple_New(len as ffi::Py_ssize_t) };
        self.own(ptr)
    }

    #[inline]
    fn tuple_set(&mut self, tuple: &PyObj, index: usize, item: PyObj) {
        // SAFETY: once per index in 0..len of a fresh tuple of that length; steals item.
        unsafe { ffi::PyTuple_SET_ITEM(tuple.as_ptr(), index as ffi::Py_ssize_t, item.into_ptr()) };
    }

    #[inline]
    fn dict(&mut self, len: usize) -> Result<PyObj, BuildError> {
        // A new dict holds 5 items before its first resize; a larger one is made at its final
        // size, saving the resizes (each a new table and a rehash) as it fills, unless a
        // template of that length may replace its table.
        let ptr = if len <= 5 || self.templates.has_length(len) {
            // SAFETY: plain constructor.
            unsafe { ffi::PyDict_New() }
        } else {
            // SAFETY: a constructor taking a size hint; len is bounded by the input (each
            // item needs two bytes), so it fits a Py_ssize_t.
            unsafe { _PyDict_NewPresized(len as ffi::Py_ssize_t) }
        };
        self.own(ptr)
    }

    /// A RECORDS' keys go into a dict grown as they are inserted (not presized), so that a
    /// str-keyed one is what `PyDict_Copy` clones whole into each row.
    fn schema(&mut self, _width: usize) -> Result<PyObj, BuildError> {
        // SAFETY: plain constructor.
        self.own(unsafe { ffi::PyDict_New() })
    }

    /// A row of a RECORDS: a copy of the schema when its table can be copied whole (str keys,
    /// the layout known), so that the row starts with every key, holding None, and
    /// [`Builder::record_set`] stores each value into its entry without a lookup; otherwise an
    /// empty dict.
    #[inline]
    fn record(&mut self, schema: &PyObj, width: usize) -> Result<PyObj, BuildError> {
        // SAFETY: schema is an exact dict of the decoder's own, which nothing else reaches.
        let whole =
            dict_layout::known() && unsafe { dict_layout::copies_whole(schema.as_ptr(), width) };
        // PyDict_Copy clones such a table in one allocation and a copy of its bytes, where
        // a new dict and PyDict_Merge into it cost two calls more per row.
        // SAFETY: schema is an exact dict; both are plain constructors.
        let row = unsafe {
            if whole {
                ffi::PyDict_Copy(schema.as_ptr())
            } else {
                ffi::PyDict_New()
            }
        };
        self.own(row)
    }

    #[inline(always)]
    fn record_set(
        &mut self,
        row: &PyObj,
        index: usize,
        _width: usize,
        key: &PyObj,
        value: PyObj,
    ) -> Result<(), BuildError> {
        let row_ptr = row.as_ptr();
        // SAFETY: row is an exact dict made by `record`; nothing outside the decoder can reach
        // it (a row has no identity on the wire, and goes into its list once complete). A copy
        // of the schema holds all its keys before any value is set.
        let value = if unsafe { dict_template::is_from_template(row_ptr, index) } {
            // SAFETY: as above; the copy's entries are the schema's keys, in order.
            match unsafe { dict_template::store(row_ptr, index, key.as_ptr(), value) } {
                Ok(()) => return Ok(()),
                Err(value) => value,
            }
        } else {
            // The plain way hashes the key again for every row: a key whose hash is not
            // constant-time is charged to the hash budget each time, as in a LIST of dicts.
            self.guard_key(row, key)?;
            value
        };
        // SAFETY: as above; the key passed the schema's checks, so it is hashable and not a
        // duplicate; SetItem takes its own references.
        if unsafe { ffi::PyDict_SetItem(row_ptr, key.as_ptr(), value.as_ptr()) } < 0 {
            return Err(self.host_failure());
        }
        Ok(())
    }

    #[inline]
    fn check_key(&mut self, container: &PyObj, key: &PyObj) -> Result<(), BuildError> {
        self.guard_key(container, key)
    }

    // Always inlined, as `make_str` is, for the same reason.
    #[inline(always)]
    fn dict_insert(
        &mut self,
        dict: &PyObj,
        key: PyObj,
        value: PyObj,
        place: PairPlace,
    ) -> Result<(), BuildError> {
        let PairPlace {
            index,
            len,
            referable,
        } = place;
        // A dict a REF may reach while it is built could be handed to host code (a class's
        // __setstate__) that changes it under the template's feet: built the plain way.
        let by_template = dict_template::applies(len) && !referable;
        let value = if !by_template {
            value
        } else {
            match self.insert_by_template(dict, &key, value, index, len) {
                ByTemplate::Stored => return Ok(()),
                ByTemplate::Plain(value) => value,
                ByTemplate::Failed(err) => return Err(err),
            }
        };
        let dict_ptr = dict.as_ptr().cast::<ffi::PyDictObject>();
        // SAFETY: dict is an exact dict we created; ma_used is its item count (read directly:
        // this runs for every item).
        let before = unsafe { (*dict_ptr).ma_used };
        // SAFETY: as above; key was checked hashable (or is a str); SetItem takes its own
        // references.
        if unsafe { ffi::PyDict_SetItem(dict.as_ptr(), key.as_ptr(), value.as_ptr()) } < 0 {
            return Err(self.host_failure());
        }
        // SAFETY: as above.
        if unsafe { (*dict_ptr).ma_used } == before {
            return Err(BuildError::Duplicate);
        }
        // SAFETY: dict is an exact dict we created, of len pairs, that nothing else can reach.
        if index + 1 == len && by_template && !unsafe { self.templates.learn(dict.as_ptr(), len) } {
            return Err(self.host_failure());
        }
        Ok(())
    }

    #[inline]
    fn set(&mut self, _len: usize, frozen: bool) -> Result<PyObj, BuildError> {
        // SAFETY: plain constructors with no iterable.
        let ptr = unsafe {
            if frozen {
                ffi::PyFrozenSet_New(std::ptr::null_mut())
            } else {
                ffi::PySet_New(std::ptr::null_mut())
            }
        };
        self.own(ptr)
    }

    #[inline]
    fn set_add(&mut self, set: &PyObj, item: PyObj) -> Result<(), BuildError> {
        // SAFETY: set is a set or a brand-new frozenset only the decoder holds (refcount 1,
        // which PySet_Add requires for frozensets).
        let before = unsafe { ffi::PySet_Size(set.as_ptr()) };
        // SAFETY: as above; PySet_Add takes its own reference.
        if unsafe { ffi::PySet_Add(set.as_ptr(), item.as_ptr()) } < 0 {
            return Err(self.host_failure());
        }
        // SAFETY: as above.
        if unsafe { ffi::PySet_Size(set.as_ptr()) } == before {
            return Err(BuildError::Duplicate);
        }
        Ok(())
    }
    fn ext_blob(&mut self, blob: ExtBlob<'_>, _raw: &[u8]) -> Result<PyObj, BuildError> {
        self.known_blob(blob)
    }
    fn ext_begin(&mut self, code: CreateFirstCode) -> Result<PyObj, BuildError> {
        self.known_begin(code)
    }
    fn ext_finish(
        &mut self,
        code: CreateFirstCode,
        obj: &PyObj,
        values: Vec<PyObj>,
    ) -> Result<(), BuildError> {
        self.known_finish(code, obj, values)
    }
    fn ext_build(&mut self, code: BuildAfterCode, values: Vec<PyObj>) -> Result<PyObj, BuildError> {
        self.known_build(code, values)
    }
    fn define_shape(&mut self, index: usize, shape: ShapeDef) -> Result<(), BuildError> {
        self.class_define_shape(index, shape)
    }
    fn object_begin(&mut self, shape: usize) -> Result<PyObj, BuildError> {
        if self.shape_plan(shape)?.by_parts() {
            return self.parts_begin(shape);
        }
        self.class_begin(shape)
    }
    fn object_from_first(&mut self, shape: usize, first: PyObj) -> Result<PyObj, BuildError> {
        self.parts_from_first(shape, first)
    }
    fn object_set(
        &mut self,
        obj: &PyObj,
        shape: usize,
        index: usize,
        value: PyObj,
    ) -> Result<(), BuildError> {
        self.class_set(obj, shape, index, value)
    }
    fn object_finish(&mut self, obj: &PyObj, shape: usize) -> Result<(), BuildError> {
        self.class_finish(obj, shape)
    }
    fn object_build(&mut self, shape: usize, values: Vec<PyObj>) -> Result<PyObj, BuildError> {
        if self.shape_plan(shape)?.by_parts() {
            return self.parts_build(shape, values);
        }
        self.class_build(shape, values)
    }
}

/// What [`PyBuilder::insert_by_template`] did with a pair.
enum ByTemplate {
    /// The value is in the dict.
    Stored,
    /// The pair goes in the plain way: here is its value back.
    Plain(PyObj),
    Failed(BuildError),
}

impl PyBuilder<'_, '_> {
    /// Puts pair `index` of a dict of `len` pairs in through a template: the first pair
    /// of a shape that has one makes the dict a copy of it, and later pairs store their value
    /// when their key is the template's. Gives the value back for a plain insert otherwise,
    /// after turning a copy whose key differs back into a plain dict.
    #[inline(always)]
    fn insert_by_template(
        &mut self,
        dict: &PyObj,
        key: &PyObj,
        value: PyObj,
        index: usize,
        len: usize,
    ) -> ByTemplate {
        let dict_ptr = dict.as_ptr();
        if index == 0 {
            let Some(template) = self.templates.find(key.as_ptr(), len) else {
                return ByTemplate::Plain(value);
            };
            // SAFETY: dict is an empty exact dict that nothing outside the decoder can reach
            // (not referable), template an exact dict; merging into an empty dict copies the
            // template's keys table.
            if unsafe { ffi::PyDict_Merge(dict_ptr, template.as_ptr(), 1) } < 0 {
                return ByTemplate::Failed(self.host_failure());
            }
        // SAFETY: dict is an exact dict we created.
        } else if !unsafe { dict_template::is_from_template(dict_ptr, index) } {
            return ByTemplate::Plain(value);
        }
        // SAFETY: dict is now a copy of a template (of len entries, index < len) that nothing
        // outside the decoder can reach.
        match unsafe { dict_template::store(dict_ptr, index, key.as_ptr(), value) } {
            Ok(()) => ByTemplate::Stored,
            Err(value) => {
                // SAFETY: as above; index > 0 here, since a template's first key is the one
                // that found it.
                let first_key = unsafe { dict_template::first_key(dict_ptr) };
                self.templates.missed(first_key, len);
                // SAFETY: as above.
                if unsafe { dict_template::unfill(dict_ptr, index) } {
                    ByTemplate::Plain(value)
                } else {
                    ByTemplate::Failed(self.host_failure())
                }
            }
        }
    }
}

/// A new empty list with room for `len` items, or NULL with an error set.
///
/// `PyList_New(len)` zeroes its `len` slots, which the decoder's list of size 0 never shows
/// and fills one by one (`list_set`): for a list of 100,000 items that was 800 KB of stores
/// for nothing, 5% of decoding complex_list. Here the slots come uninitialised from
/// `PyMem_Malloc`, the allocator CPython frees and grows a list's slots with, as long as the
/// list keeps them in a plain array: not in free-threaded builds, hence only where the
/// layouts are known.
///
/// # Safety
/// The GIL must be held.
#[cfg(amber_known_layouts)]
#[inline]
unsafe fn empty_list_with_room(len: usize) -> *mut ffi::PyObject {
    // SAFETY: the GIL is held. An empty list has no slots (ob_item NULL, allocated 0); giving
    // it an array of `len` and saying so in `allocated`, with its size left at 0, is what
    // CPython's own resize does before it fills a list. A failed allocation frees the list
    // and reports MemoryError.
    unsafe {
        let ptr = ffi::PyList_New(0);
        if ptr.is_null() || len == 0 {
            return ptr;
        }
        let Some(bytes) = len.checked_mul(std::mem::size_of::<*mut ffi::PyObject>()) else {
            ffi::Py_DECREF(ptr);
            return ffi::PyErr_NoMemory();
        };
        let items = ffi::PyMem_Malloc(bytes).cast::<*mut ffi::PyObject>();
        if items.is_null() {
            ffi::Py_DECREF(ptr);
            return ffi::PyErr_NoMemory();
        }
        let list = ptr.cast::<ffi::PyListObject>();
        (*list).ob_item = items;
        (*list).allocated = len as ffi::Py_ssize_t;
        ptr
    }
}
