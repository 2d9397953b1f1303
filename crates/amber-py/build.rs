//! Emits pyo3's `Py_3_*` cfgs, so code that reads CPython's int layout can follow it per
//! version.
fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
