//! `dumps(obj)` and `loads(data)` called with one argument and no keywords, the commonest
//! calls by far, skip keyword parsing and option validation.
//!
//! pyo3's matching of twelve keyword options and the option structs cost about 300
//! instructions of every `dumps` and 250 of every `loads`: a tenth of a hundred-byte
//! payload's encode. The module therefore exports `dumps` and `loads` as METH_FASTCALL
//! functions of its own: one positional argument and no keywords go straight to the encoder
//! or decoder with the default options; any other call is passed on, unchanged, to the full
//! function pyo3 generates, which parses and checks everything as before.
//!
//! Both enter through pyo3's own trampoline, the one every `#[pyfunction]` uses. It counts
//! the thread as attached for the call, so that a `Py` dropped inside is released at once
//! rather than queued in pyo3's deferred pool (a first version without it let that pool grow
//! with every call), and turns a panic into an exception. The trampoline is reached through
//! `get_trampoline_function!`, which is pyo3's code-generation API rather than its documented
//! one; `Cargo.lock` pins the version, and a change there fails to compile rather than
//! misbehaving.

use std::ffi::CStr;

use pyo3::impl_::trampoline::fastcall_cfunction_with_keywords::Func;
use pyo3::prelude::*;
use pyo3::types::PyCFunction;
use pyo3_ffi as ffi;

/// The full pyo3 functions, to which every other call goes.
static DUMPS_FULL: pyo3::sync::PyOnceLock<Py<PyCFunction>> = pyo3::sync::PyOnceLock::new();
static LOADS_FULL: pyo3::sync::PyOnceLock<Py<PyCFunction>> = pyo3::sync::PyOnceLock::new();

type CFunction = unsafe extern "C" fn(
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
    fast: CFunction,
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
    const DUMPS: Func = short_call::<false>;
    const LOADS: Func = short_call::<true>;
    let dumps_entry = pyo3::get_trampoline_function!(fastcall_cfunction_with_keywords, DUMPS);
    let loads_entry = pyo3::get_trampoline_function!(fastcall_cfunction_with_keywords, LOADS);
    export(module, dumps, c"dumps", dumps_entry, &DUMPS_FULL)?;
    export(module, loads, c"loads", loads_entry, &LOADS_FULL)
}

/// The call as CPython made it: `short` takes one positional argument without keywords, and
/// the full function in `slot` every other call. The result is a new reference; a NULL from
/// the full function comes with its exception set, which the trampoline passes on as it is.
///
/// # Safety
/// The arguments are those CPython passed to a METH_FASTCALL | METH_KEYWORDS function.
#[inline(always)]
unsafe fn dispatch<T>(
    py: Python<'_>,
    slot: &pyo3::sync::PyOnceLock<Py<PyCFunction>>,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
    short: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<Py<T>>,
) -> PyResult<*mut ffi::PyObject> {
    // SAFETY: nargsf is CPython's count, possibly with the offset flag set.
    let nargs = unsafe { ffi::PyVectorcall_NARGS(nargsf as usize) };
    if kwnames.is_null() && nargs == 1 {
        // SAFETY: with one positional argument, args[0] is a live borrowed reference.
        let arg = unsafe { Bound::from_borrowed_ptr(py, *args) };
        return short(py, &arg).map(Py::into_ptr);
    }
    let full = slot
        .get(py)
        .ok_or_else(|| pyo3::exceptions::PySystemError::new_err("amber is not initialised"))?;
    // SAFETY: the vector call is passed through as CPython gave it.
    Ok(unsafe { ffi::PyObject_Vectorcall(full.as_ptr(), args, nargsf as usize, kwnames) })
}

/// The body of `loads` (`LOADS`) or `dumps`, run inside pyo3's trampoline.
///
/// # Safety
/// As [`dispatch`].
unsafe fn short_call<const LOADS: bool>(
    py: Python<'_>,
    _module: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> PyResult<*mut ffi::PyObject> {
    // SAFETY: CPython's own arguments, passed through.
    unsafe {
        if LOADS {
            dispatch(py, &LOADS_FULL, args, nargsf, kwnames, crate::loads_default)
        } else {
            dispatch(py, &DUMPS_FULL, args, nargsf, kwnames, crate::dumps_default)
        }
    }
}
