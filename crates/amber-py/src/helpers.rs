//! The Python side of class handling (`amber._classes`), imported once on first use.
//!
//! Class introspection (dataclass fields, attrs defaults, slots, enum and named-tuple
//! detection) is done in Python once per class or shape and cached; only per-instance work
//! runs in Rust.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

static CLASSES: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// Calls `amber._classes.<name>(*args)`.
pub fn call<'py>(
    py: Python<'py>,
    name: &str,
    args: impl pyo3::call::PyCallArgs<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let module = CLASSES.get_or_try_init(py, || {
        PyModule::import(py, "amber._classes").map(Bound::unbind)
    })?;
    module.bind(py).getattr(name)?.call1(args)
}
