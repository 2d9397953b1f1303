//! Owned references to Python objects and the exact-type table used for dispatch.

use std::ffi::CStr;
use std::ptr::NonNull;

use pyo3::types::PyString;
use pyo3::Py;
use pyo3_ffi as ffi;

/// Something holding a str that names a field: the attribute names of an instance, or the
/// field names of a class's plan (the encoder's shapes, the slot offsets).
pub(crate) trait NamePtr {
    fn name_ptr(&self) -> *mut ffi::PyObject;
}

impl NamePtr for PyObj {
    fn name_ptr(&self) -> *mut ffi::PyObject {
        self.as_ptr()
    }
}

impl NamePtr for Py<PyString> {
    fn name_ptr(&self) -> *mut ffi::PyObject {
        self.as_ptr()
    }
}

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

/// Exact type objects and singletons, compared by pointer in the encoder's dispatch.
///
/// Each is the address of the interpreter's static object, read where it is compared: a
/// comparison with it is one instruction on the global offset table's entry, as cheap as one
/// with a copy kept in the encoder. Such copies, fourteen of them, cost every `dumps` 28
/// loads and stores to make.
#[derive(Clone, Copy, Default)]
pub struct Types;

impl Types {
    /// The type objects and singletons of the running interpreter.
    #[inline(always)]
    pub fn get() -> Types {
        Types
    }

    #[inline(always)]
    pub fn str(self) -> *mut ffi::PyTypeObject {
        &raw mut ffi::PyUnicode_Type
    }

    #[inline(always)]
    pub fn int(self) -> *mut ffi::PyTypeObject {
        &raw mut ffi::PyLong_Type
    }

    #[inline(always)]
    pub fn dict(self) -> *mut ffi::PyTypeObject {
        &raw mut ffi::PyDict_Type
    }

    #[inline(always)]
    pub fn list(self) -> *mut ffi::PyTypeObject {
        &raw mut ffi::PyList_Type
    }

    #[inline(always)]
    pub fn float(self) -> *mut ffi::PyTypeObject {
        &raw mut ffi::PyFloat_Type
    }

    #[inline(always)]
    pub fn tuple(self) -> *mut ffi::PyTypeObject {
        &raw mut ffi::PyTuple_Type
    }

    #[inline(always)]
    pub fn bytes(self) -> *mut ffi::PyTypeObject {
        &raw mut ffi::PyBytes_Type
    }

    #[inline(always)]
    pub fn set(self) -> *mut ffi::PyTypeObject {
        &raw mut ffi::PySet_Type
    }

    #[inline(always)]
    pub fn frozenset(self) -> *mut ffi::PyTypeObject {
        &raw mut ffi::PyFrozenSet_Type
    }

    #[inline(always)]
    pub fn bytearray(self) -> *mut ffi::PyTypeObject {
        &raw mut ffi::PyByteArray_Type
    }

    #[inline(always)]
    pub fn complex(self) -> *mut ffi::PyTypeObject {
        &raw mut ffi::PyComplex_Type
    }

    #[inline(always)]
    pub fn none(self) -> *mut ffi::PyObject {
        // SAFETY: only the singleton's address is taken; nothing is read or written.
        unsafe { ffi::Py_None() }
    }

    #[inline(always)]
    pub fn true_(self) -> *mut ffi::PyObject {
        // SAFETY: only the singleton's address is taken; nothing is read or written.
        unsafe { ffi::Py_True() }
    }

    #[inline(always)]
    pub fn false_(self) -> *mut ffi::PyObject {
        // SAFETY: only the singleton's address is taken; nothing is read or written.
        unsafe { ffi::Py_False() }
    }
}

/// A Python object resolved once and then kept for the life of the process (its strong
/// reference is never released): library types and helpers looked up lazily by the
/// encoder and decoder of EXT values.
pub struct Cached(std::sync::OnceLock<usize>);

impl Cached {
    /// Nothing resolved yet.
    pub const fn new() -> Cached {
        Cached(std::sync::OnceLock::new())
    }

    /// The cached object (borrowed, never NULL), or else the result of `init`: a new
    /// reference, kept from now on, or NULL (nothing is cached and `init` may try again
    /// next time). The GIL must be held.
    #[inline]
    pub fn get_or_init(&self, init: impl FnOnce() -> *mut ffi::PyObject) -> *mut ffi::PyObject {
        if let Some(&ptr) = self.0.get() {
            return ptr as *mut ffi::PyObject;
        }
        self.init(init)
    }

    /// The first [`get_or_init`](Self::get_or_init), kept out of its callers' code.
    #[cold]
    #[inline(never)]
    fn init(&self, init: impl FnOnce() -> *mut ffi::PyObject) -> *mut ffi::PyObject {
        let ptr = init();
        if ptr.is_null() {
            return ptr;
        }
        if self.0.set(ptr as usize).is_err() {
            // Another thread won the race: keep its object and drop ours.
            // SAFETY: ptr is the new reference `init` returned; the GIL is held.
            unsafe { ffi::Py_DECREF(ptr) };
        }
        self.0
            .get()
            .map_or(std::ptr::null_mut(), |&p| p as *mut ffi::PyObject)
    }

    /// `module.attr` if `module` is already imported (in `sys.modules`) and its namespace
    /// holds `attr`: nothing is imported and no Python code runs. Borrowed; NULL (with no
    /// exception set) when not available yet.
    pub fn loaded_attr(&self, module: &CStr, attr: &CStr) -> *mut ffi::PyObject {
        self.get_or_init(|| {
            // SAFETY: C-API calls with the GIL held on NUL-terminated names; every new
            // reference is released or returned, and any stray exception is cleared.
            unsafe {
                let name = ffi::PyUnicode_FromString(module.as_ptr());
                if name.is_null() {
                    ffi::PyErr_Clear();
                    return std::ptr::null_mut();
                }
                let m = ffi::PyImport_GetModule(name);
                ffi::Py_DECREF(name);
                if m.is_null() {
                    ffi::PyErr_Clear();
                    return std::ptr::null_mut();
                }
                let mut found = std::ptr::null_mut();
                if ffi::PyModule_Check(m) != 0 {
                    let dict = ffi::PyModule_GetDict(m);
                    if !dict.is_null() {
                        found = ffi::PyDict_GetItemString(dict, attr.as_ptr());
                        if !found.is_null() {
                            ffi::Py_INCREF(found);
                        }
                    }
                }
                ffi::Py_DECREF(m);
                ffi::PyErr_Clear();
                found
            }
        })
    }

    /// `module.attr`, importing `module` on first need. Borrowed; NULL with an exception
    /// set if the import or the attribute lookup failed.
    #[inline]
    pub fn imported_attr(&self, module: &CStr, attr: &CStr) -> *mut ffi::PyObject {
        self.get_or_init(|| {
            // SAFETY: C-API calls with the GIL held on NUL-terminated names; the module
            // reference is released, the attribute (a new reference or NULL) returned.
            unsafe {
                let m = ffi::PyImport_ImportModule(module.as_ptr());
                if m.is_null() {
                    return m;
                }
                let found = ffi::PyObject_GetAttrString(m, attr.as_ptr());
                ffi::Py_DECREF(m);
                found
            }
        })
    }
}

/// The UTF-8 bytes of a str object, copied; `None` for a non-str or a str that has no UTF-8
/// form (lone surrogates), with the Python error cleared.
pub fn str_utf8(s: &PyObj) -> Option<Vec<u8>> {
    let mut size: ffi::Py_ssize_t = 0;
    // SAFETY: a type check, then the UTF-8 buffer of a live str, copied while s is held.
    unsafe {
        if ffi::PyUnicode_Check(s.as_ptr()) == 0 {
            return None;
        }
        let data = ffi::PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut size);
        if data.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(std::slice::from_raw_parts(data.cast::<u8>(), size as usize).to_vec())
    }
}
