//! The ints CPython keeps one object each for (-5 to 256), handed out without a call.
//!
//! Decoded payloads are full of small ints: ids, counts, flags, whole packed lists of them.
//! `PyLong_FromLongLong` returns CPython's cached object for such a value, but through a call
//! and its range checks, about 20 instructions for what an INT tag like `0x05` holds. Module
//! init asks CPython once for each of them and keeps the objects here; a decode then takes
//! a reference to the very object `PyLong_FromLongLong` would have returned, so identity and
//! values are unchanged.
//!
//! Fallback: init fills the table only if CPython hands out one object per small value
//! (asking twice gives the same object, and it holds the value asked for); otherwise, or
//! before init, every int goes through `PyLong_FromLongLong`.

use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3_ffi as ffi;

/// The smallest and largest value CPython caches an object for.
const LOWEST: i64 = -5;
const HIGHEST: i64 = 256;
const COUNT: usize = (HIGHEST - LOWEST + 1) as usize;

/// By value - LOWEST: the cached int, or NULL while the table is not filled.
static TABLE: [AtomicPtr<ffi::PyObject>; COUNT] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; COUNT];

/// A new reference to the int `v` if it is a small int the table holds, else NULL (the caller
/// then makes it with `PyLong_FromLongLong`).
///
/// # Safety
/// The GIL must be held.
#[inline(always)]
pub unsafe fn get(v: i64) -> *mut ffi::PyObject {
    let index = v.wrapping_sub(LOWEST) as u64;
    if index >= COUNT as u64 {
        return std::ptr::null_mut();
    }
    let obj = TABLE[index as usize].load(Ordering::Relaxed);
    if !obj.is_null() {
        // SAFETY: the table holds a reference to obj for the life of the process, and the
        // GIL is held (caller).
        unsafe { ffi::Py_INCREF(obj) };
    }
    obj
}

/// Fills the table if CPython caches small ints as expected (see the module documentation).
/// Called once, at module init, with the GIL held.
pub fn fill() {
    let mut objects = Vec::with_capacity(COUNT);
    for v in LOWEST..=HIGHEST {
        // SAFETY: plain constructors and accessors, with the GIL held (module init); each
        // reference made here is kept in the table or released below.
        unsafe {
            let first = ffi::PyLong_FromLongLong(v);
            let again = ffi::PyLong_FromLongLong(v);
            let same = !first.is_null() && first == again && ffi::PyLong_AsLongLong(first) == v;
            if !again.is_null() {
                ffi::Py_DECREF(again);
            }
            if !same {
                ffi::PyErr_Clear();
                if !first.is_null() {
                    ffi::Py_DECREF(first);
                }
                for obj in objects {
                    ffi::Py_DECREF(obj);
                }
                return;
            }
            objects.push(first);
        }
    }
    for (slot, obj) in TABLE.iter().zip(objects) {
        // The table keeps this reference for the life of the process.
        slot.store(obj, Ordering::Relaxed);
    }
}
