//! Strs made by filling CPython's compact layouts directly.
//!
//! Why: strs are the objects a decode makes most (keys the key cache misses, and most values
//! of JSON-shaped records), and `PyUnicode_New` spends about 45 instructions besides its
//! allocation on what a decoder already knows: whether the text is ASCII, its widest
//! character, its length, which kind and size of object that means. Here the object is
//! allocated with `PyObject_Malloc` and made an object by `PyObject_Init`, as `PyUnicode_New`
//! does, and its header is written from those facts: the length, no hash yet (-1), the state
//! bits (not interned, the kind, compact, ASCII or not, and ready before 3.12), no UTF-8 or
//! wchar copy, and the NUL unit after the text that CPython keeps for C callers.
//!
//! Only where the layouts are known (`amber_known_layouts`, crates/amber-py/build.rs); the
//! state word is made by pyo3-ffi's setters of each field, for the version built for. Kinds
//! 1 and 2 only: before 3.12 a 4-byte str shares its data as its wchar_t copy on Linux,
//! which `PyUnicode_New` knows how to set up and such strs are rare. Checked: the empty str
//! stays CPython's singleton; the fallback is `PyUnicode_New` itself;
//! `tests/test_cpython_layouts.py` compares the header of decoded strs, state word included,
//! with the header of the same text made by CPython, on every version `make test` finds.

use pyo3_ffi as ffi;

/// The state word of a fresh compact str of `kind`, ASCII or not, as `PyUnicode_New`
/// leaves it.
#[cfg(amber_known_layouts)]
#[inline(always)]
fn compact_state(kind: u32, ascii: bool) -> u32 {
    // SAFETY: a zeroed PyASCIIObject is plain data; the setters only change bits of its
    // state word, which is all that is read back.
    unsafe {
        let mut probe: ffi::PyASCIIObject = std::mem::zeroed();
        probe.set_interned(0);
        probe.set_kind(kind);
        probe.set_compact(1);
        probe.set_ascii(u32::from(ascii));
        #[cfg(not(Py_3_12))]
        probe.set_ready(1);
        #[cfg(Py_3_12)]
        probe.set_statically_allocated(0);
        probe.state
    }
}

/// A new str of the ASCII text `ascii`, or NULL with `MemoryError` set.
///
/// # Safety
/// Every byte of `ascii` must be below 0x80; the GIL must be held.
#[inline(always)]
pub(super) unsafe fn new_ascii_str(ascii: &[u8]) -> *mut ffi::PyObject {
    let n = ascii.len();
    #[cfg(amber_known_layouts)]
    if n > 0 {
        let header = std::mem::size_of::<ffi::PyASCIIObject>();
        // SAFETY: the GIL is held. The object is laid out as CPython lays out a compact
        // ASCII str of n characters: the header, the n bytes, a NUL. PyObject_Init sets its
        // type and reference count as PyUnicode_New's own call does; nothing else can see
        // the object before this returns it.
        unsafe {
            let ptr = ffi::PyObject_Malloc(header + n + 1).cast::<ffi::PyObject>();
            if ptr.is_null() {
                return ffi::PyErr_NoMemory();
            }
            ffi::PyObject_Init(ptr, std::ptr::addr_of_mut!(ffi::PyUnicode_Type));
            let object = ptr.cast::<ffi::PyASCIIObject>();
            (*object).length = n as ffi::Py_ssize_t;
            (*object).hash = -1;
            (*object).state = compact_state(ffi::PyUnicode_1BYTE_KIND, true);
            #[cfg(not(Py_3_12))]
            {
                (*object).wstr = std::ptr::null_mut();
            }
            let data = object.add(1).cast::<u8>();
            crate::short_bytes::copy_short(ascii, data);
            *data.add(n) = 0;
            return ptr;
        }
    }
    // SAFETY: the GIL is held; a new compact ASCII str of n characters, filled before
    // anything else sees it (PyUnicode_New writes the NUL itself).
    unsafe {
        let ptr = ffi::PyUnicode_New(n as ffi::Py_ssize_t, 127);
        if !ptr.is_null() {
            crate::short_bytes::copy_short(ascii, ffi::PyUnicode_DATA(ptr).cast::<u8>());
        }
        ptr
    }
}

/// A unit of a compact str of kind 1 or 2, which [`new_wide_str`] makes.
pub(super) trait NarrowUnit: amber_format::utf8::Unit {
    /// CPython's kind number for strs of this unit.
    const KIND: u32;
}

impl NarrowUnit for u8 {
    const KIND: u32 = ffi::PyUnicode_1BYTE_KIND;
}

impl NarrowUnit for u16 {
    const KIND: u32 = ffi::PyUnicode_2BYTE_KIND;
}

/// A new str of `count` characters of units `T` (not all ASCII, for kind 1), left for
/// `fill` to write: it gets the `count` units, all of which it must write. NULL with an
/// exception set on failure.
///
/// # Safety
/// The GIL must be held; `count` must be at least 1, and the characters `fill` writes must
/// make `T` the narrowest kind that holds them, as CPython requires (for u8: one at least
/// U+0080; for u16: one at least U+0100).
#[inline(always)]
pub(super) unsafe fn new_wide_str<T: NarrowUnit>(
    count: usize,
    fill: impl FnOnce(&mut [T]),
) -> *mut ffi::PyObject {
    #[cfg(amber_known_layouts)]
    // SAFETY: the GIL is held. The object is laid out as CPython lays out a compact str of
    // this kind and count: the PyCompactUnicodeObject header, count units aligned for T
    // (the header's size is a multiple of 8), a NUL unit. PyObject_Init sets its type and
    // reference count as PyUnicode_New's own call does; nothing else can see the object
    // before this returns it.
    unsafe {
        let header = std::mem::size_of::<ffi::PyCompactUnicodeObject>();
        let unit = std::mem::size_of::<T>();
        let ptr = ffi::PyObject_Malloc(header + (count + 1) * unit).cast::<ffi::PyObject>();
        if ptr.is_null() {
            return ffi::PyErr_NoMemory();
        }
        ffi::PyObject_Init(ptr, std::ptr::addr_of_mut!(ffi::PyUnicode_Type));
        let object = ptr.cast::<ffi::PyCompactUnicodeObject>();
        (*object)._base.length = count as ffi::Py_ssize_t;
        (*object)._base.hash = -1;
        (*object)._base.state = compact_state(T::KIND, false);
        (*object).utf8_length = 0;
        (*object).utf8 = std::ptr::null_mut();
        #[cfg(not(Py_3_12))]
        {
            (*object)._base.wstr = std::ptr::null_mut();
            (*object).wstr_length = 0;
        }
        let data = object.add(1).cast::<T>();
        fill(std::slice::from_raw_parts_mut(data, count));
        data.add(count).write(T::from_point(0));
        ptr
    }
    #[cfg(not(amber_known_layouts))]
    // SAFETY: the GIL is held; PyUnicode_New makes a compact str of `count` units of T's
    // kind (the widest character decides it, per the contract), aligned for T, which only
    // this function sees until it returns.
    unsafe {
        let max_char: ffi::Py_UCS4 = if T::KIND == ffi::PyUnicode_1BYTE_KIND {
            0xFF
        } else {
            0xFFFF
        };
        let ptr = ffi::PyUnicode_New(count as ffi::Py_ssize_t, max_char);
        if !ptr.is_null() {
            fill(std::slice::from_raw_parts_mut(
                ffi::PyUnicode_DATA(ptr).cast::<T>(),
                count,
            ));
        }
        ptr
    }
}
