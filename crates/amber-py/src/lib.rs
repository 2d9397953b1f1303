//! `amber._amber`: the Python extension. This file is its surface: the module-level
//! functions and the module's contents. Options are checked in [`options`], a call runs in
//! [`call`], failures become exceptions in [`errors`]; the walk over Python objects is in
//! [`encode`], object building in [`decode`], and all checking of bytes in the
//! `amber-format` crate.

// A Python extension has no Rust users: its documentation is for the people who work on it,
// built with `--document-private-items` (`make lint`), where links to private items resolve.
#![allow(rustdoc::private_intra_doc_links)]

mod buffer;
mod call;
mod callbacks;
mod custom_type;
mod decode;
mod dict_layout;
mod encode;
mod envelope;
mod errors;
mod fastcall;
mod gil_slot;
mod keyword_cache;
mod object;
mod options;
mod pylong;
mod registry;
mod reusable;
mod short_bytes;
mod slot_offsets;
mod small_ints;
mod stream;
mod trace;
mod weak_class;

use amber_format::limits::{DEFAULT_MAX_DEPTH, HARD_MAX_DEPTH};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use buffer::with_input;
use decode::DecodeFailure;
use envelope::{OpenConfig, PySigningKey};
use errors::{
    decode_error, ClassNotAllowedError, DecodeError, DecodeLimitError, EncodeError, SignatureError,
};
use options::{DecodeConfig, EncodeConfig};

/// _dict_layout_known() -> bool
///
/// Whether module init confirmed CPython's private dict layout on this interpreter, so that
/// dicts are walked from their tables and repeated shapes decode from templates. For the
/// tests: where it is false, both fall back to the C-API and nothing else shows it.
#[pyfunction]
#[pyo3(name = "_dict_layout_known")]
fn dict_layout_known() -> bool {
    dict_layout::known()
}

/// dumps(obj, *, refs=True, max_depth=1000, custom=None, buffer_callback=None, key=None,
///       timestamp=False, compress=None, level=None, canonical=False, sort_keys=False,
///       clock=None) -> bytes
///
/// Encodes `obj` as an amber payload. Class instances are written by module and qualified
/// name; `custom` is an iterable of `amber.CustomType` for classes written by the caller's
/// own functions. With `buffer_callback`, the data of every bytes, bytearray, array.array
/// and numpy array of at least `OOB_THRESHOLD` bytes stays out of the payload: the callback
/// gets a read-only memoryview of it, once the payload is complete, and `loads` needs those
/// buffers back as `buffers=`. With `canonical`, equal values give identical bytes: set and
/// frozenset elements are written in a defined order and immutable values by value (never as
/// references); `sort_keys` also orders dict entries by key.
///
/// `compress` ("zstd" or "lz4") compresses the payload when that makes it smaller (`level`:
/// zstd's, 1 to 22, default 3; lz4 has none). `key` (bytes, str, `amber.SigningKey`, or a
/// list of them, the first of which signs) signs the payload with HMAC-SHA256 after
/// compressing it, and `timestamp=True` puts the time of signing into what is signed:
/// `clock()` if given (a callable returning whole seconds since 1970), else the system's.
/// Out-of-band buffers are neither compressed nor signed: only the payload is.
#[pyfunction]
#[pyo3(
    signature = (obj, *, refs = true, max_depth = None, types = None, custom = None, buffer_callback = None, key = None, timestamp = false, compress = None, level = None, canonical = false, sort_keys = false, clock = None),
    text_signature = "(obj, *, refs=True, max_depth=1000, types=None, custom=None, buffer_callback=None, key=None, timestamp=False, compress=None, level=None, canonical=False, sort_keys=False, clock=None)"
)]
#[allow(clippy::too_many_arguments)]
fn dumps(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    refs: bool,
    max_depth: Option<&Bound<'_, PyAny>>,
    types: Option<&Bound<'_, PyAny>>,
    custom: Option<&Bound<'_, PyAny>>,
    buffer_callback: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
    timestamp: bool,
    compress: Option<&Bound<'_, PyAny>>,
    level: Option<&Bound<'_, PyAny>>,
    canonical: bool,
    sort_keys: bool,
    clock: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyBytes>> {
    EncodeConfig::new(
        py,
        refs,
        max_depth,
        types,
        custom,
        buffer_callback,
        key,
        timestamp,
        compress,
        level,
        canonical,
        sort_keys,
        clock,
    )?
    .dumps(py, obj)
}

/// `dumps(obj)` with every option at its default (see [`fastcall`]).
fn dumps_default(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Py<PyBytes>> {
    call::dumps_plain(py, obj, DEFAULT_MAX_DEPTH)
}

/// `loads(data)` with every option at its default (see [`fastcall`]).
fn loads_default(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    call::loads_plain(py, data, DEFAULT_MAX_DEPTH)
}

/// loads(data, *, max_depth=1000, max_alloc=None, types=None, custom=None,
///       unknown_fields="ignore", placeholders=False, buffers=None, key=None, max_age=None,
///       max_decompressed=None, clock=None) -> object
///
/// Decodes an amber payload from bytes or any C-contiguous buffer. A class instance is
/// built only if its exact class is in `types` (or `custom`); otherwise
/// `ClassNotAllowedError`, or an `amber.Placeholder` with `placeholders=True`. `buffers`
/// are the out-of-band buffers a `buffer_callback` received, in order.
///
/// With `key` (one key or a list: any of them verifies) the payload must be signed by one of
/// the keys, and the signature is checked before anything is decompressed or built
/// (`SignatureError` otherwise); `max_age` (seconds or a timedelta) then refuses payloads
/// signed longer ago, or not timestamped, by `clock()` if given (as for `dumps`). A
/// compressed payload is decompressed within the same `max_alloc` budget as the values it
/// holds; `max_decompressed` caps its size too.
#[pyfunction]
#[pyo3(
    signature = (data, *, max_depth = None, max_alloc = None, types = None, custom = None, unknown_fields = "ignore", placeholders = false, buffers = None, key = None, max_age = None, max_decompressed = None, clock = None),
    text_signature = "(data, *, max_depth=1000, max_alloc=None, types=None, custom=None, unknown_fields='ignore', placeholders=False, buffers=None, key=None, max_age=None, max_decompressed=None, clock=None)"
)]
#[allow(clippy::too_many_arguments)]
fn loads(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    max_depth: Option<&Bound<'_, PyAny>>,
    max_alloc: Option<&Bound<'_, PyAny>>,
    types: Option<&Bound<'_, PyAny>>,
    custom: Option<&Bound<'_, PyAny>>,
    unknown_fields: &str,
    placeholders: bool,
    buffers: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
    max_age: Option<&Bound<'_, PyAny>>,
    max_decompressed: Option<&Bound<'_, PyAny>>,
    clock: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    DecodeConfig::new(
        py,
        max_depth,
        max_alloc,
        types,
        custom,
        unknown_fields,
        placeholders,
        key,
        max_age,
        max_decompressed,
        clock,
    )?
    .loads(py, data, buffers)
}

/// verify(data, *, key, max_age=None, clock=None) -> dict
///
/// Checks that `data` is signed by one of `key` (and, with `max_age`, fresh) without
/// decompressing or decoding its body, and returns what its envelope says: `signed`,
/// `key_id`, `timestamp` (seconds since 1970, or None), `compression` ("zstd", "lz4" or
/// None), `compressed_size` and `size` (of the body, declared when compressed). Raises
/// `SignatureError` or another `DecodeError` as `loads` would.
#[pyfunction]
#[pyo3(
    signature = (data, *, key, max_age = None, clock = None),
    text_signature = "(data, *, key, max_age=None, clock=None)"
)]
fn verify<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    key: &Bound<'py, PyAny>,
    max_age: Option<&Bound<'py, PyAny>>,
    clock: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    if key.is_none() {
        return Err(PyValueError::new_err(
            "verify() needs key=: the key or keys to check the signature with",
        ));
    }
    let config = OpenConfig::new(Some(key), max_age, None, clock)?;
    // Nothing is decompressed, so no allocation budget is needed.
    let options = config.options(config.now(py)?, 0);
    let info = with_input(py, data, "verify()", |slice| {
        let frozen = buffer::frozen_input(data, slice.len());
        envelope::verify(py, slice, &options, frozen)
            .map_err(|e| decode_error(py, DecodeFailure::Format(e, None)))
    })?;
    envelope::info_dict(py, &info)
}

/// envelope_info(data) -> dict
///
/// What the envelope of `data` says about itself, as `verify` returns it, but UNVERIFIED:
/// nothing here proves that the payload is authentic, its key id and timestamp included. For
/// tools that show or route payloads; decode with `loads(..., key=...)`. Raises a
/// `DecodeError` for malformed envelope fields.
#[pyfunction]
#[pyo3(signature = (data), text_signature = "(data)")]
fn envelope_info<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let info = with_input(py, data, "envelope_info()", |slice| {
        amber_format::envelope::inspect(slice)
            .map_err(|e| decode_error(py, DecodeFailure::Format(e, None)))
    })?;
    envelope::info_dict(py, &info)
}

// gil_used: the extension relies on the GIL (its caches, the identity memo's addresses, the
// private layouts it reads), so on a free-threaded CPython importing it turns the GIL back on,
// with CPython's own RuntimeWarning, rather than run it without one.
#[pymodule(gil_used = true)]
fn _amber(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let digit_bits: u32 = py
        .import("sys")?
        .getattr("int_info")?
        .getattr("bits_per_digit")?
        .extract()?;
    pylong::set_digit_bits(digit_bits);
    dict_layout::check();
    small_ints::fill();
    fastcall::add_functions(m, wrap_pyfunction!(dumps, m)?, wrap_pyfunction!(loads, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace, m)?)?;
    m.add_function(wrap_pyfunction!(dict_layout_known, m)?)?;
    m.add_function(wrap_pyfunction!(callbacks::callbacks, m)?)?;
    m.add_function(wrap_pyfunction!(decode::value_rule, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(envelope_info, m)?)?;
    m.add_class::<reusable::Encoder>()?;
    m.add_class::<reusable::Decoder>()?;
    m.add_class::<PySigningKey>()?;
    stream::register(m)?;
    m.add("EncodeError", py.get_type::<EncodeError>())?;
    m.add("DecodeError", py.get_type::<DecodeError>())?;
    m.add("DecodeLimitError", py.get_type::<DecodeLimitError>())?;
    m.add(
        "ClassNotAllowedError",
        py.get_type::<ClassNotAllowedError>(),
    )?;
    m.add("SignatureError", py.get_type::<SignatureError>())?;
    m.add("FORMAT_VERSION", amber_format::header::VERSION)?;
    m.add("MAX_DEPTH_LIMIT", HARD_MAX_DEPTH)?;
    m.add("DEFAULT_MAX_DEPTH", DEFAULT_MAX_DEPTH)?;
    m.add("OOB_THRESHOLD", amber_format::ext::OUT_OF_BAND_THRESHOLD)?;
    m.add("MIN_KEY_LENGTH", amber_format::envelope::MIN_KEY_LENGTH)?;
    Ok(())
}
