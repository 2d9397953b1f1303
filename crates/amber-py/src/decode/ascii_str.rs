//! ASCII strs made by filling CPython's compact-ASCII layout directly.
//!
//! Why: strs are the objects a decode makes most (keys the key cache misses, and most values
//! of JSON-shaped records), and for an ASCII str `PyUnicode_New` spends about 45 instructions
//! besides its allocation on what a decoder already knows: that the text is ASCII, how long
//! it is, which kind and size of object that means. Here the object is allocated with
//! `PyObject_Malloc` and made an object by `PyObject_Init`, as `PyUnicode_New` does, and its
//! header is written from those facts: the length, no hash yet (-1), the state bits of a
//! compact ASCII str (not interned, 1-byte kind, compact, ASCII, and ready before 3.12), and
//! the NUL after the text that CPython keeps for C callers.
//!
//! Only where the layouts are known (`amber_known_layouts`, crates/amber-py/build.rs); the
//! state word is made by pyo3-ffi's setters of each field, for the version built for.
//! Checked: the empty str stays CPython's singleton (`PyUnicode_New`); the fallback
//! (elsewhere) is `PyUnicode_New` itself; `tests/test_cpython_layouts.py` compares the header
//! of decoded strs, state word included, with the header of the same text made by CPython,
//! on every version `make test` finds.

use pyo3_ffi as ffi;

/// The state word of a fresh compact ASCII str, as `PyUnicode_New` leaves it.
#[cfg(amber_known_layouts)]
#[inline(always)]
fn compact_ascii_state() -> u32 {
    // SAFETY: a zeroed PyASCIIObject is plain data; the setters only change bits of its
    // state word, which is all that is read back.
    unsafe {
        let mut probe: ffi::PyASCIIObject = std::mem::zeroed();
        probe.set_interned(0);
        probe.set_kind(ffi::PyUnicode_1BYTE_KIND);
        probe.set_compact(1);
        probe.set_ascii(1);
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
            (*object).state = compact_ascii_state();
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
