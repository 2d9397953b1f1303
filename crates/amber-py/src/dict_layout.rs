//! Reading and writing CPython dicts' entries directly.
//!
//! `PyDict_Next` is a call with a dozen checks per item, and a dict's values can only be set
//! through a lookup of their key. Both walk the same table: a header, an index table, then
//! the entries in insertion order. That layout is CPython's private one, the same from 3.11
//! to 3.13 (and, unchecked, 3.14) on builds with the GIL. It is read only where build.rs set
//! `amber_known_layouts` (3.10 to 3.13, GIL builds) and module init confirmed it on the
//! running interpreter ([`check`]); elsewhere [`known`] is false and callers use the C-API.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3_ffi as ffi;

static LAYOUT_KNOWN: AtomicBool = AtomicBool::new(false);

/// Whether module init confirmed the layout on this interpreter.
#[inline(always)]
pub fn known() -> bool {
    LAYOUT_KNOWN.load(Ordering::Relaxed)
}

/// The fixed header of CPython's `PyDictKeysObject` (3.11 to 3.14, GIL builds); the index
/// table (`1 << dk_log2_index_bytes` bytes) follows it, then the entries.
#[repr(C)]
struct KeysHeader {
    dk_refcnt: ffi::Py_ssize_t,
    dk_log2_size: u8,
    dk_log2_index_bytes: u8,
    dk_kind: u8,
    _dk_version: u32,
    dk_usable: ffi::Py_ssize_t,
    dk_nentries: ffi::Py_ssize_t,
}

/// An entry of a table whose keys are all exact strs (`DICT_KEYS_UNICODE`).
#[repr(C)]
pub struct StrEntry {
    /// The key, NULL for a deleted item.
    pub key: *mut ffi::PyObject,
    /// The value, NULL for a deleted item.
    pub value: *mut ffi::PyObject,
}

/// An entry of a table whose keys may be anything (`DICT_KEYS_GENERAL`).
#[repr(C)]
struct GeneralEntry {
    _hash: ffi::Py_hash_t,
    key: *mut ffi::PyObject,
    value: *mut ffi::PyObject,
}

// Only the layout check builds a general (non-str-keyed) table to look at.
#[cfg(all(Py_3_11, amber_known_layouts))]
const KIND_GENERAL: u8 = 0;
const KIND_STR_KEYS: u8 = 1;

/// `dict`'s keys table when its values live in it (a combined table), else `None`.
///
/// # Safety
/// `dict` must be a live exact dict and the GIL held, with the layout confirmed (or inside
/// [`check`]).
#[inline(always)]
unsafe fn combined_table(dict: *mut ffi::PyObject) -> Option<*mut KeysHeader> {
    // SAFETY: per the contract.
    unsafe {
        let d = dict.cast::<ffi::PyDictObject>();
        (*d).ma_values
            .is_null()
            .then(|| (*d).ma_keys.cast::<KeysHeader>())
    }
}

/// Where the entries of `keys` start.
///
/// # Safety
/// `keys` must be a live keys table with the layout confirmed.
#[inline(always)]
unsafe fn entries(keys: *mut KeysHeader) -> *mut u8 {
    // SAFETY: per the contract, the entries follow the header and the index table.
    unsafe {
        keys.cast::<u8>()
            .add(size_of::<KeysHeader>() + (1usize << (*keys).dk_log2_index_bytes))
    }
}

/// Entry `index` of `dict` when its table is a combined str-keys table holding more than
/// `index` entries (deleted ones included), else `None`.
///
/// # Safety
/// `dict` must be a live exact dict and the GIL held, with the layout confirmed (or inside
/// [`check`]).
#[inline(always)]
pub unsafe fn str_entry(dict: *mut ffi::PyObject, index: usize) -> Option<*mut StrEntry> {
    // SAFETY: per the contract; the bound is the table's own entry count.
    unsafe {
        let keys = combined_table(dict)?;
        if (*keys).dk_kind != KIND_STR_KEYS || index as ffi::Py_ssize_t >= (*keys).dk_nentries {
            return None;
        }
        Some(entries(keys).cast::<StrEntry>().add(index))
    }
}

/// The entries of `dict` when its table is a combined str-keys table whose entries are exactly
/// its `len` items (none deleted), else `None`: entry `i` is then item `i`, key and value both
/// set.
///
/// # Safety
/// `dict` must be a live exact dict and the GIL held, with the layout confirmed.
#[inline(always)]
pub unsafe fn dense_str_entries(dict: *mut ffi::PyObject, len: usize) -> Option<*const StrEntry> {
    // SAFETY: per the contract; a table whose entry count is its item count has no deleted
    // entry among them.
    unsafe {
        let keys = combined_table(dict)?;
        let used = (*dict.cast::<ffi::PyDictObject>()).ma_used;
        let dense = (*keys).dk_kind == KIND_STR_KEYS
            && (*keys).dk_nentries == len as ffi::Py_ssize_t
            && used == len as ffi::Py_ssize_t;
        dense.then(|| entries(keys).cast::<StrEntry>().cast_const())
    }
}

/// The items of an exact dict, borrowed, in the order `PyDict_Next` gives them: read from the
/// table, with its place kept between steps. Each step checks that the dict still has the same
/// combined table and rereads the entry count (code run between steps may have changed the
/// dict), as `PyDict_Next` checks its position. A split table (an instance's `__dict__`), or
/// an interpreter whose layout is not [`known`], goes through `PyDict_Next`; the position
/// means the same to both, so the walk can switch between them.
pub struct Items {
    dict: *mut ffi::PyObject,
    /// Entries visited, as `PyDict_Next` counts them.
    pos: ffi::Py_ssize_t,
    /// Whether the table may be read: the layout is known (or is being checked).
    read_table: bool,
    /// The table `entries` belongs to; null when the next step must look afresh.
    table: *mut KeysHeader,
    entries: *mut u8,
    str_keys: bool,
}

impl Items {
    /// The items of `dict`.
    ///
    /// # Safety
    /// `dict` must be a live exact dict for as long as the iterator is used, with the GIL
    /// held at every step.
    #[inline(always)]
    pub unsafe fn new(dict: *mut ffi::PyObject) -> Items {
        Items {
            dict,
            pos: 0,
            read_table: known(),
            table: std::ptr::null_mut(),
            entries: std::ptr::null_mut(),
            str_keys: false,
        }
    }
}

impl Iterator for Items {
    type Item = (*mut ffi::PyObject, *mut ffi::PyObject);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        // SAFETY: the dict is live and the GIL held (Items::new's contract). The cached
        // entries are used only while the dict still has that table with its values in it,
        // and entries are read only below the table's current entry count.
        unsafe {
            let d = self.dict.cast::<ffi::PyDictObject>();
            let keys = (*d).ma_keys.cast::<KeysHeader>();
            if keys != self.table || !(*d).ma_values.is_null() {
                match combined_table(self.dict) {
                    Some(keys) if self.read_table && (*keys).dk_kind <= KIND_STR_KEYS => {
                        self.table = keys;
                        self.entries = entries(keys);
                        self.str_keys = (*keys).dk_kind == KIND_STR_KEYS;
                    }
                    _ => {
                        self.table = std::ptr::null_mut();
                        return next_item_slow(self.dict, &mut self.pos);
                    }
                }
            }
            let n = (*keys).dk_nentries;
            while self.pos < n {
                let i = self.pos as usize;
                self.pos += 1;
                let (key, value) = if self.str_keys {
                    let entry = self.entries.cast::<StrEntry>().add(i);
                    ((*entry).key, (*entry).value)
                } else {
                    let entry = self.entries.cast::<GeneralEntry>().add(i);
                    ((*entry).key, (*entry).value)
                };
                if !value.is_null() {
                    return Some((key, value));
                }
            }
            None
        }
    }
}

#[cold]
unsafe fn next_item_slow(
    dict: *mut ffi::PyObject,
    pos: &mut ffi::Py_ssize_t,
) -> Option<(*mut ffi::PyObject, *mut ffi::PyObject)> {
    let (mut key, mut value) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: dict is a live dict; PyDict_Next lends the pair.
    (unsafe { ffi::PyDict_Next(dict, pos, &mut key, &mut value) } != 0).then_some((key, value))
}

/// Whether `PyDict_Merge` into an empty dict copies `dict`'s table whole and the copy's
/// entries are its `len` items in order, with str keys: a combined str-keys table without
/// deleted items, of the minimum size or not more than twice the size its items need
/// (CPython's condition for the copy).
///
/// # Safety
/// `dict` must be a live exact dict and the GIL held, with the layout confirmed.
pub unsafe fn copies_whole(dict: *mut ffi::PyObject, len: usize) -> bool {
    // SAFETY: per the contract.
    unsafe {
        let Some(keys) = combined_table(dict) else {
            return false;
        };
        let used = (*dict.cast::<ffi::PyDictObject>()).ma_used;
        let size: ffi::Py_ssize_t = 1 << (*keys).dk_log2_size;
        (*keys).dk_kind == KIND_STR_KEYS
            && used as usize == len
            && (*keys).dk_nentries == used
            && ((*keys).dk_log2_size == 3 || (size / 2) * 2 / 3 < used)
    }
}

/// Checks on the running interpreter that dicts have the layout this module reads, and
/// records the answer for [`known`]: reads the tables of a str-keyed dict, of its copy by
/// `PyDict_Merge`, of a dict with an int key and of one with a deleted item, compares
/// [`Items`] with `PyDict_Next` on each, and writes a value through [`str_entry`] that
/// `PyDict_GetItem` must then find.
pub fn check() {
    #[cfg(all(Py_3_11, amber_known_layouts))]
    {
        // SAFETY: called with the GIL held (module init); every object is made and released
        // here, and entries are read only once a header says the table is the expected one.
        let known = unsafe { layout_matches() };
        LAYOUT_KNOWN.store(known, Ordering::Relaxed);
    }
}

#[cfg(all(Py_3_11, amber_known_layouts))]
unsafe fn layout_matches() -> bool {
    // SAFETY: see check.
    unsafe {
        let made = [
            ffi::PyUnicode_FromString(c"amber_layout_a".as_ptr()),
            ffi::PyUnicode_FromString(c"amber_layout_b".as_ptr()),
            ffi::PyLong_FromLong(1_000_001),
            ffi::PyFloat_FromDouble(1.5),
            ffi::PyFloat_FromDouble(2.5),
            ffi::PyFloat_FromDouble(3.5),
            ffi::PyDict_New(),
            ffi::PyDict_New(),
            ffi::PyDict_New(),
        ];
        let mut ok = made.iter().all(|p| !p.is_null());
        if ok {
            let [a, b, int_key, x, y, z, strs, copy, general] = made;
            ok = ffi::PyDict_SetItem(strs, a, x) == 0
                && ffi::PyDict_SetItem(strs, b, y) == 0
                && small_table_holds(strs, KIND_STR_KEYS, [(a, x), (b, y)])
                && ffi::PyDict_Merge(copy, strs, 1) == 0
                && (*copy.cast::<ffi::PyDictObject>()).ma_keys
                    != (*strs.cast::<ffi::PyDictObject>()).ma_keys
                && small_table_holds(copy, KIND_STR_KEYS, [(a, x), (b, y)])
                && copies_whole(strs, 2)
                && ffi::PyDict_SetItem(general, int_key, x) == 0
                && ffi::PyDict_SetItem(general, a, y) == 0
                && small_table_holds(general, KIND_GENERAL, [(int_key, x), (a, y)])
                && ffi::PyDict_DelItem(general, int_key) == 0
                && ffi::PyDict_DelItem(strs, a) == 0
                && [strs, copy, general]
                    .iter()
                    .all(|&d| walks_like_dict_next(d));
            if ok {
                // Replace y by z in the copy, as a template's copy gets its values.
                ok = match str_entry(copy, 1) {
                    Some(entry) if (*entry).key == b && (*entry).value == y => {
                        ffi::Py_INCREF(z);
                        (*entry).value = z;
                        ffi::Py_DECREF(y);
                        ffi::PyDict_GetItem(copy, b) == z && ffi::PyDict_GetItem(copy, a) == x
                    }
                    _ => false,
                };
            }
        }
        ffi::PyErr_Clear();
        for p in made.into_iter().rev() {
            if !p.is_null() {
                ffi::Py_DECREF(p);
            }
        }
        ok
    }
}

/// Whether `dict`'s table is a fresh minimum-size table of `kind` holding `pairs` in order.
#[cfg(all(Py_3_11, amber_known_layouts))]
unsafe fn small_table_holds(
    dict: *mut ffi::PyObject,
    kind: u8,
    pairs: [(*mut ffi::PyObject, *mut ffi::PyObject); 2],
) -> bool {
    // SAFETY: dict is live; entries are read only once the header matches a table of 8
    // one-byte indices (log2 size 3) with 2 entries.
    unsafe {
        let Some(keys) = combined_table(dict) else {
            return false;
        };
        if (*keys).dk_refcnt != 1
            || (*keys).dk_log2_size != 3
            || (*keys).dk_log2_index_bytes != 3
            || (*keys).dk_kind != kind
            || (*keys).dk_nentries != 2
            || (*keys).dk_usable != 3
            || (*dict.cast::<ffi::PyDictObject>()).ma_used != 2
        {
            return false;
        }
        pairs.iter().enumerate().all(|(i, &(k, v))| {
            let got = if kind == KIND_STR_KEYS {
                let entry = entries(keys).cast::<StrEntry>().add(i);
                ((*entry).key, (*entry).value)
            } else {
                let entry = entries(keys).cast::<GeneralEntry>().add(i);
                ((*entry).key, (*entry).value)
            };
            got == (k, v)
        })
    }
}

/// Whether [`Items`], reading the table, gives what `PyDict_Next` gives for `dict`, with the
/// same position after each item.
#[cfg(all(Py_3_11, amber_known_layouts))]
unsafe fn walks_like_dict_next(dict: *mut ffi::PyObject) -> bool {
    // SAFETY: dict is live; both walks only read it.
    unsafe {
        let mut ours = Items::new(dict);
        ours.read_table = true;
        let mut theirs = 0;
        loop {
            let got = ours.next();
            let want = next_item_slow(dict, &mut theirs);
            if got != want || (got.is_some() && ours.pos != theirs) {
                return false;
            }
            if got.is_none() {
                return true;
            }
        }
    }
}
