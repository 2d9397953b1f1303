//! `dumps(obj)` and `loads(data)` called with one argument and no keywords, the commonest
//! calls by far, skip keyword parsing and option validation.
//!
//! On a payload of a hundred bytes, matching twelve keyword options and building the option
//! structs costs about a quarter of the whole call. The module therefore exports `dumps` and
//! `loads` as plain C functions: one positional argument and no keywords go straight to the
//! encoder or decoder with the default options; any other call is passed on, unchanged, to
//! the full function pyo3 generates, which parses and checks everything as before.

use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use pyo3::types::PyCFunction;
use pyo3_ffi as ffi;

/// The full pyo3 functions, to which every other call goes.
static DUMPS_FULL: pyo3::sync::PyOnceLock<Py<PyCFunction>> = pyo3::sync::PyOnceLock::new();
static LOADS_FULL: pyo3::sync::PyOnceLock<Py<PyCFunction>> = pyo3::sync::PyOnceLock::new();

type FastFunction = unsafe extern "C" fn(
    *mut ffi::PyObject,
    *const *mut ffi::PyObject,
    ffi::Py_ssize_t,
    *mut ffi::PyObject,
) -> *mut ffi::PyObject;

/// Adds `full` (a pyo3 function) to `module` under its own name, as a C function that
/// takes the one-argument call itself through `fast` and passes other calls on to `full`.
/// The new function shares `full`'s docstring, so its text signature and `help()` stay.
fn export(
    module: &Bound<'_, PyModule>,
    full: Bound<'_, PyCFunction>,
    name: &'static CStr,
    fast: FastFunction,
    slot: &'static pyo3::sync::PyOnceLock<Py<PyCFunction>>,
) -> PyResult<()> {
    let py = module.py();
    // SAFETY: full is a live builtin function object; its method definition is static data
    // of pyo3's, valid for the life of the process.
    let doc = unsafe { (*(*full.as_ptr().cast::<ffi::PyCFunctionObject>()).m_ml).ml_doc };
    // Leaked once per process: CPython keeps a pointer to the definition in the function.
    let def = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: name.as_ptr(),
        ml_meth: ffi::PyMethodDefPointer {
            PyCFunctionFastWithKeywords: fast,
        },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: doc,
    }));
    let module_name = module.name()?;
    // SAFETY: def is a valid method definition that lives forever; the module is passed as
    // the function's self, as CPython does for module functions, and its name as __module__.
    let function = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyCFunction_NewEx(def, module.as_ptr(), module_name.as_ptr()),
        )?
    };
    let _ = slot.set(py, full.unbind());
    module.add(name.to_str().unwrap_or_default(), function)
}

/// Registers `dumps` and `loads`.
pub fn add_functions(
    module: &Bound<'_, PyModule>,
    dumps: Bound<'_, PyCFunction>,
    loads: Bound<'_, PyCFunction>,
) -> PyResult<()> {
    export(module, dumps, c"dumps", dumps_fast, &DUMPS_FULL)?;
    export(module, loads, c"loads", loads_fast, &LOADS_FULL)
}

/// Calls the full function with the same arguments.
///
/// # Safety
/// The arguments are those CPython passed to a METH_FASTCALL | METH_KEYWORDS function.
unsafe fn pass_on(
    py: Python<'_>,
    slot: &pyo3::sync::PyOnceLock<Py<PyCFunction>>,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    match slot.get(py) {
        // SAFETY: the vector call convention is passed through as CPython gave it.
        Some(full) => unsafe {
            ffi::PyObject_Vectorcall(full.as_ptr(), args, nargsf as _, kwnames)
        },
        None => {
            PyErr::new::<pyo3::exceptions::PySystemError, _>("amber is not initialised")
                .restore(py);
            std::ptr::null_mut()
        }
    }
}

/// The one positional argument of a call without keywords, or None.
///
/// # Safety
/// As [`pass_on`].
#[inline(always)]
unsafe fn single_argument(
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> Option<*mut ffi::PyObject> {
    // SAFETY: nargsf is CPython's count, possibly with the offset flag set.
    let nargs = unsafe { ffi::PyVectorcall_NARGS(nargsf as usize) };
    // SAFETY: with nargs == 1, args[0] is a live borrowed reference.
    (kwnames.is_null() && nargs == 1).then(|| unsafe { *args })
}

/// Turns the result of a fast call into what CPython expects: a new reference, or NULL with
/// an exception set. A panic (a bug) becomes an exception instead of unwinding into C.
fn finish(py: Python<'_>, result: std::thread::Result<PyResult<Py<PyAny>>>) -> *mut ffi::PyObject {
    match result {
        Ok(Ok(obj)) => obj.into_ptr(),
        Ok(Err(err)) => {
            err.restore(py);
            std::ptr::null_mut()
        }
        Err(_) => {
            pyo3::panic::PanicException::new_err("amber panicked; please report this as a bug")
                .restore(py);
            std::ptr::null_mut()
        }
    }
}

/// A fast call: one positional argument and no keywords go to `short`, anything else to the
/// full function in `slot`.
///
/// # Safety
/// The arguments are those CPython passed to a METH_FASTCALL | METH_KEYWORDS function.
#[inline(always)]
unsafe fn dispatch(
    slot: &pyo3::sync::PyOnceLock<Py<PyCFunction>>,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
    short: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<Py<PyAny>>,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls a C function with the GIL held.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: the arguments come from CPython's vector call (caller).
    let Some(arg) = (unsafe { single_argument(args, nargsf, kwnames) }) else {
        // SAFETY: as above.
        return unsafe { pass_on(py, slot, args, nargsf, kwnames) };
    };
    // SAFETY: arg is a live argument of this call.
    let arg = unsafe { Bound::from_borrowed_ptr(py, arg) };
    finish(py, catch_unwind(AssertUnwindSafe(|| short(py, &arg))))
}

unsafe extern "C" fn dumps_fast(
    _module: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython's own arguments, passed through.
    unsafe {
        dispatch(&DUMPS_FULL, args, nargsf, kwnames, |py, obj| {
            crate::dumps_default(py, obj).map(Py::into_any)
        })
    }
}

unsafe extern "C" fn loads_fast(
    _module: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython's own arguments, passed through.
    unsafe { dispatch(&LOADS_FULL, args, nargsf, kwnames, crate::loads_default) }
}
