//! Whether a weak reference held by a plan cache still names the class being looked up.
//!
//! Why: the encoder's and decoder's plan caches are keyed by a class's address and hold the
//! class weakly, so that classes made at run time can die. A hit must prove that the class at
//! that address is still the one the plan was made for; a new class may have taken a dead
//! one's address. CPython clears a weak reference before it frees the referent, so comparing
//! the referent with the class is that proof.
//!
//! The trick: on the CPythons whose layouts amber knows (`amber_known_layouts`, set by
//! build.rs) the referent field is read directly, as CPython's own `PyWeakref_GET_OBJECT`
//! macro did: one load and one comparison on every cache hit. Elsewhere (3.14 and later,
//! free-threaded builds, or `AMBER_GENERIC_LAYOUTS=1`) the public `PyWeakref_GetRef` answers
//! the same question with a reference count round trip.

use pyo3::prelude::*;
use pyo3_ffi as ffi;

/// The start of CPython's `PyWeakReference`: the object header, then the referent (set to
/// `None` when the referent dies, before its memory is freed).
#[cfg(amber_known_layouts)]
#[repr(C)]
struct WeakRefHead {
    ob_base: ffi::PyObject,
    wr_object: *mut ffi::PyObject,
}

/// Whether `weak`, a `weakref.ref` made by a plan cache, still refers to `class`, a live
/// object. While `class` is alive no other object can have its address, so equal addresses
/// mean the same class; a dead referent never equals a live class.
#[cfg(amber_known_layouts)]
#[inline]
pub fn refers_to(weak: &Py<PyAny>, class: *mut ffi::PyObject) -> bool {
    // SAFETY: `weak` is a live `weakref.ref` (an exact `_PyWeakReference`, made by
    // PyWeakref_NewRef through pyo3) that the caller holds, so its header and referent field
    // can be read; the GIL is held, so nothing writes them meanwhile. Only the pointer is
    // compared, nothing is read through it.
    unsafe { (*weak.as_ptr().cast::<WeakRefHead>()).wr_object == class }
}

/// Whether `weak`, a `weakref.ref` made by a plan cache, still refers to `class`: the public
/// C-API's answer, for interpreters whose weakref layout amber does not know.
#[cfg(not(amber_known_layouts))]
pub fn refers_to(weak: &Py<PyAny>, class: *mut ffi::PyObject) -> bool {
    let mut referent: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: `weak` is a live `weakref.ref` the caller holds, and the GIL is held (every
    // caller runs inside an encode or decode). The call gives a new reference, or NULL for a
    // dead referent, or -1 with an exception set if `weak` were not a weak reference.
    let found = unsafe { ffi::compat::PyWeakref_GetRef(weak.as_ptr(), &mut referent) };
    if found < 0 {
        // SAFETY: the GIL is held; the error is the cache's, not the caller's, and a plan
        // that cannot be checked is simply not used.
        unsafe { ffi::PyErr_Clear() };
        return false;
    }
    let same = referent == class;
    if !referent.is_null() {
        // SAFETY: `referent` is the new reference PyWeakref_GetRef gave us.
        unsafe { ffi::Py_DECREF(referent) };
    }
    same
}

/// A weak reference to `object`, or None if it takes none: what a cache keeps of a class or
/// function it must not keep alive. An object without weak reference support raises a
/// TypeError, which is cleared: such an object is simply not cached.
pub fn weak(py: Python<'_>, object: *mut ffi::PyObject) -> Option<Py<PyAny>> {
    new_weak(py, object, std::ptr::null_mut())
}

/// As [`weak`], a weak reference that calls `callback` with itself when `object` dies.
pub fn weak_calling(
    py: Python<'_>,
    object: *mut ffi::PyObject,
    callback: &Bound<'_, PyAny>,
) -> Option<Py<PyAny>> {
    new_weak(py, object, callback.as_ptr())
}

fn new_weak(
    py: Python<'_>,
    object: *mut ffi::PyObject,
    callback: *mut ffi::PyObject,
) -> Option<Py<PyAny>> {
    // SAFETY: object is live and callback NULL or a live callable; the call returns a new
    // reference, or NULL with an error set.
    unsafe {
        let weak = ffi::PyWeakref_NewRef(object, callback);
        if weak.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(Bound::from_owned_ptr(py, weak).unbind())
    }
}

/// The referent of `weak`, a weak reference, as a new reference; None once it has died.
pub fn upgrade<'py>(py: Python<'py>, weak: &Py<PyAny>) -> Option<Bound<'py, PyAny>> {
    let mut referent: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: `weak` is a live weak reference and the GIL is held; the call gives a new
    // reference, or NULL for a dead referent, or -1 with an exception set (not a weak
    // reference), which is cleared: nothing is found.
    unsafe {
        if ffi::compat::PyWeakref_GetRef(weak.as_ptr(), &mut referent) < 0 {
            ffi::PyErr_Clear();
            return None;
        }
        Bound::from_owned_ptr_or_opt(py, referent)
    }
}
