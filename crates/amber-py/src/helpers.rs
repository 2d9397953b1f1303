//! The Python side of class handling (`amber._classes`) and of structured numpy dtypes
//! (`amber._dtypes`), each imported once on first use.
//!
//! Class introspection (dataclass fields, attrs defaults, slots, enum and named-tuple
//! detection) is done in Python once per class or shape and cached; only per-instance work
//! runs in Rust.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

static CLASSES: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
static DTYPES: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// Calls `amber._classes.<name>(*args)`.
pub fn call<'py>(
    py: Python<'py>,
    name: &str,
    args: impl pyo3::call::PyCallArgs<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    call_in(py, &CLASSES, "amber._classes", name, args)
}

/// Calls `amber._dtypes.<name>(*args)` (structured numpy dtypes as text).
pub fn call_dtypes<'py>(
    py: Python<'py>,
    name: &str,
    args: impl pyo3::call::PyCallArgs<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    call_in(py, &DTYPES, "amber._dtypes", name, args)
}

fn call_in<'py>(
    py: Python<'py>,
    cell: &PyOnceLock<Py<PyModule>>,
    module: &str,
    name: &str,
    args: impl pyo3::call::PyCallArgs<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let module = cell.get_or_try_init(py, || PyModule::import(py, module).map(Bound::unbind))?;
    module.bind(py).getattr(name)?.call1(args)
}
