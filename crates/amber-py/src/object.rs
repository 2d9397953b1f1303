//! Owned references to Python objects and the exact-type table used for dispatch.

use std::ptr::NonNull;

use pyo3_ffi as ffi;

/// A strong reference to a Python object: clone is `Py_INCREF`, drop is `Py_DECREF`.
///
/// Only ever created and dropped while the GIL is held: the encoder and decoder run inside a
/// `#[pyfunction]` without releasing it.
pub struct PyObj(NonNull<ffi::PyObject>);

impl PyObj {
    /// Takes ownership of a new reference; `None` if the C call returned NULL (error set).
    #[inline]
    pub fn from_owned(ptr: *mut ffi::PyObject) -> Option<PyObj> {
        NonNull::new(ptr).map(PyObj)
    }

    /// Takes a new reference to a borrowed object.
    ///
    /// # Safety
    /// `ptr` must point to a live Python object and the GIL must be held.
    #[inline]
    pub unsafe fn from_borrowed(ptr: NonNull<ffi::PyObject>) -> PyObj {
        // SAFETY: the caller guarantees a live object and the GIL.
        unsafe { ffi::Py_INCREF(ptr.as_ptr()) };
        PyObj(ptr)
    }

    /// The raw pointer, still owned by `self`.
    #[inline]
    pub fn as_ptr(&self) -> *mut ffi::PyObject {
        self.0.as_ptr()
    }

    /// Gives up ownership: the caller now owns the reference.
    #[inline]
    pub fn into_ptr(self) -> *mut ffi::PyObject {
        let ptr = self.0.as_ptr();
        std::mem::forget(self);
        ptr
    }
}

impl Clone for PyObj {
    #[inline]
    fn clone(&self) -> Self {
        // SAFETY: self holds a strong reference, so the object is alive; GIL held (type docs).
        unsafe { ffi::Py_INCREF(self.0.as_ptr()) };
        PyObj(self.0)
    }
}

impl Drop for PyObj {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: self owns one strong reference; GIL held (type docs).
        unsafe { ffi::Py_DECREF(self.0.as_ptr()) };
    }
}

/// Exact type objects, compared by pointer in the encoder's dispatch.
pub struct Types {
    pub str: *mut ffi::PyTypeObject,
    pub int: *mut ffi::PyTypeObject,
    pub dict: *mut ffi::PyTypeObject,
    pub list: *mut ffi::PyTypeObject,
    pub float: *mut ffi::PyTypeObject,
    pub tuple: *mut ffi::PyTypeObject,
    pub bytes: *mut ffi::PyTypeObject,
    pub set: *mut ffi::PyTypeObject,
    pub frozenset: *mut ffi::PyTypeObject,
    pub bytearray: *mut ffi::PyTypeObject,
    pub complex: *mut ffi::PyTypeObject,
    pub none: *mut ffi::PyObject,
    pub true_: *mut ffi::PyObject,
    pub false_: *mut ffi::PyObject,
}

impl Types {
    /// Reads the static type objects of the running interpreter.
    pub fn get() -> Types {
        // SAFETY: taking the addresses of the interpreter's static type objects and
        // singletons; nothing is read or written through them here.
        unsafe {
            Types {
                str: &raw mut ffi::PyUnicode_Type,
                int: &raw mut ffi::PyLong_Type,
                dict: &raw mut ffi::PyDict_Type,
                list: &raw mut ffi::PyList_Type,
                float: &raw mut ffi::PyFloat_Type,
                tuple: &raw mut ffi::PyTuple_Type,
                bytes: &raw mut ffi::PyBytes_Type,
                set: &raw mut ffi::PySet_Type,
                frozenset: &raw mut ffi::PyFrozenSet_Type,
                bytearray: &raw mut ffi::PyByteArray_Type,
                complex: &raw mut ffi::PyComplex_Type,
                none: ffi::Py_None(),
                true_: ffi::Py_True(),
                false_: ffi::Py_False(),
            }
        }
    }
}
