//! Emits pyo3's `Py_3_*` cfgs, so code that reads CPython's int layout can follow it per
//! version, and `amber_known_layouts` for the interpreters whose private layouts (dict
//! tables, the int digits, a str's cached UTF-8) the fast paths were written and tested for.
//! Without it (3.14 and later, free-threaded builds, other implementations) those paths are
//! compiled out and the C-API does their work: slower, same bytes.
//! `AMBER_GENERIC_LAYOUTS=1` forces that fallback, for the test that compares its bytes.
use pyo3_build_config::PythonImplementation;

/// The minor versions of CPython 3 whose layouts the fast paths know.
const KNOWN_MINORS: std::ops::RangeInclusive<u8> = 10..=13;

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
    println!("cargo:rustc-check-cfg=cfg(amber_known_layouts)");
    println!("cargo:rerun-if-env-changed=AMBER_GENERIC_LAYOUTS");
    let config = pyo3_build_config::get();
    let forced_generic = std::env::var_os("AMBER_GENERIC_LAYOUTS").is_some_and(|v| v != "0");
    // (amber is never built for abi3: it reads the objects of one version's layout.)
    let version = config.version();
    let known = config.implementation() == PythonImplementation::CPython
        && version.major == 3
        && KNOWN_MINORS.contains(&version.minor)
        && !config.is_free_threaded();
    if known && !forced_generic {
        println!("cargo:rustc-cfg=amber_known_layouts");
    }
}
