//! `amber._amber`: the Python extension. Argument handling and errors live here; the walk
//! over Python objects is in [`encode`], object building in [`decode`], and all checking of
//! bytes in the `amber-format` crate.

mod decode;
mod dict_layout;
mod encode;
mod envelope;
mod fastcall;
mod helpers;
mod object;
mod pylong;
mod stream;
mod weak_class;

use amber_format::limits::{DEFAULT_MAX_DEPTH, HARD_MAX_DEPTH};
use amber_format::Limits;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_ffi as ffi;

use decode::DecodeFailure;
use encode::{EncodeFail, FailKind};
use envelope::{OpenConfig, PySigningKey, SealConfig};

pyo3::create_exception!(
    amber,
    EncodeError,
    PyTypeError,
    "A value could not be encoded. `.path` says where it sits in the graph (e.g. `root[\"users\"][3]`)."
);
pyo3::create_exception!(
    amber,
    DecodeError,
    PyValueError,
    "The bytes are not a valid amber payload. `.offset` is the byte position, `.kind` the error kind."
);
pyo3::create_exception!(
    amber,
    ClassNotAllowedError,
    DecodeError,
    "The payload names a class the caller did not allow. `.module` and `.qualname` name it; pass the class in `types=[...]` to allow it."
);
pyo3::create_exception!(
    amber,
    DecodeLimitError,
    DecodeError,
    "The payload exceeds a decoding limit (max_depth, max_alloc, max_decompressed or the hash-flooding limits)."
);
pyo3::create_exception!(
    amber,
    SignatureError,
    DecodeError,
    "The payload is not authentic or not fresh for this decoder: unsigned where a key was given, signed where none was, signed by an unknown key, altered, expired or dated in the future. `.kind` says which."
);

/// An int option: a TypeError for a non-int, a ValueError (not OverflowError) for any int
/// outside `range`.
pub(crate) fn int_option(
    name: &str,
    value: &Bound<'_, PyAny>,
    range: std::ops::RangeInclusive<u64>,
) -> PyResult<u64> {
    if value.is_instance_of::<pyo3::types::PyBool>()
        || !value.is_instance_of::<pyo3::types::PyInt>()
    {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, not {}",
            value.get_type().name()?
        )));
    }
    match value.extract::<u64>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(PyValueError::new_err(format!(
            "{name} must be between {} and {}, got {value}",
            range.start(),
            range.end()
        ))),
    }
}

/// `None` (the default) means [`DEFAULT_MAX_DEPTH`].
fn check_depth(max_depth: Option<&Bound<'_, PyAny>>) -> PyResult<u32> {
    match max_depth.filter(|v| !v.is_none()) {
        None => Ok(DEFAULT_MAX_DEPTH),
        Some(v) => int_option("max_depth", v, 1..=u64::from(HARD_MAX_DEPTH)).map(|n| n as u32),
    }
}

fn check_alloc(max_alloc: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    max_alloc
        .filter(|v| !v.is_none())
        .map(|v| int_option("max_alloc", v, 1..=u64::MAX))
        .transpose()
}

fn encode_error(py: Python<'_>, fail: EncodeFail) -> PyErr {
    let path = fail.path();
    let message = match &fail.kind {
        FailKind::Unsupported(name) => format!("unsupported type {name} at {path}"),
        FailKind::TooDeep(limit) => {
            format!("nesting deeper than max_depth={limit} at {path}")
        }
        FailKind::Cycle => {
            format!("cycle at {path}: a container contains itself, which refs=False cannot encode")
        }
        FailKind::Python(err) => format!("{} at {path}", err.value(py)),
        FailKind::Restart => format!("internal error: unfinished encoding pass at {path}"),
        FailKind::Refused(reason) => format!("{reason} at {path}"),
    };
    let err = EncodeError::new_err(message);
    let _ = err.value(py).setattr("path", path);
    if let FailKind::Python(cause) = fail.into_kind() {
        err.set_cause(py, Some(cause));
    }
    err
}

fn decode_error(py: Python<'_>, failure: DecodeFailure) -> PyErr {
    match failure {
        DecodeFailure::Python(err) => err,
        DecodeFailure::Format(error, refused) => {
            let amber_format::error::DecodeErrorFields {
                kind,
                offset,
                detail,
            } = error.into_fields();
            let message = format!("{detail} (at byte {offset}, {})", kind.name());
            let err = if kind.is_limit() {
                DecodeLimitError::new_err(message)
            } else if kind.is_signature() {
                SignatureError::new_err(message)
            } else if kind == amber_format::ErrorKind::ClassNotAllowed {
                ClassNotAllowedError::new_err(message)
            } else {
                DecodeError::new_err(message)
            };
            let value = err.value(py);
            let _ = value.setattr("offset", offset);
            let _ = value.setattr("kind", kind.name());
            if let Some((module, qualname)) = refused {
                let _ = value.setattr("module", module);
                let _ = value.setattr("qualname", qualname);
            }
            err
        }
    }
}

fn dumps_impl(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    options: encode::Options,
    custom: Option<&Py<PyAny>>,
    buffer_callback: Option<&Py<PyAny>>,
    seal: &SealConfig,
) -> PyResult<Py<PyBytes>> {
    let custom = custom.map(|c| {
        // SAFETY: c is a live dict held by the caller for the whole encode.
        unsafe { object::PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(c.as_ptr())) }
    });
    let mut oob = buffer_callback.map(|_| encode::OutOfBand::collect());
    // Kept for a second walk should the callback fail (see `buffer_callback_error`).
    let retry_custom = buffer_callback.and_then(|_| custom.clone());
    let bytes = encode::encode(py, obj.as_ptr(), options, custom, oob.as_mut())
        .map_err(|fail| encode_error(py, fail))?;
    // SAFETY: encode returns a bytes object.
    let mut bytes = unsafe {
        Bound::from_owned_ptr(py, bytes.into_ptr())
            .cast_into_unchecked::<PyBytes>()
            .unbind()
    };
    if seal.active() {
        // Before the buffers go out: a payload that cannot be sealed hands none over.
        let sealed = seal.seal(py, bytes.as_bytes(py))?.unbind();
        bytes = sealed;
    }
    if let (Some(callback), Some(oob)) = (buffer_callback, oob) {
        // The payload is complete: hand over its buffers, in index order.
        let buffers = oob.into_buffers();
        let count = buffers.len();
        for (index, (view, source)) in buffers.into_iter().enumerate() {
            // SAFETY: view is a live memoryview we own; the Bound takes its own reference.
            let view = unsafe { Bound::from_borrowed_ptr(py, view.as_ptr()) };
            if let Err(err) = callback.bind(py).call1((view,)) {
                let at = OutOfBandFailure {
                    index,
                    count,
                    source,
                };
                return Err(buffer_callback_error(
                    py,
                    obj,
                    options,
                    retry_custom,
                    at,
                    err,
                ));
            }
        }
    }
    Ok(bytes)
}

/// Which buffer a `buffer_callback` refused.
struct OutOfBandFailure {
    index: usize,
    count: usize,
    /// The object of the graph the buffer was taken from.
    source: object::PyObj,
}

/// The error for a `buffer_callback` that raised `err`. To say where the buffer's object
/// sits, the graph is walked again up to that object (a second walk, but only on this error
/// path); the `EncodeError` then carries its path, and `err` as its cause.
#[cold]
fn buffer_callback_error(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    options: encode::Options,
    custom: Option<object::PyObj>,
    at: OutOfBandFailure,
    err: PyErr,
) -> PyErr {
    let mut finder = encode::OutOfBand::find(&at.source);
    let walked = encode::encode(py, obj.as_ptr(), options, custom, Some(&mut finder));
    let path = match walked {
        Err(fail) if finder.found() => fail.path(),
        // Class code gave the second walk another graph: the place is unknown.
        _ => String::from("root"),
    };
    let kind = err
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    let message = format!(
        "buffer_callback raised {kind}: {} for out-of-band buffer {} of {} at {path}",
        err.value(py),
        at.index,
        at.count
    );
    let error = EncodeError::new_err(message);
    let _ = error.value(py).setattr("path", path);
    error.set_cause(py, Some(err));
    error
}

/// Releases a buffer view when dropped.
struct BufferView(ffi::Py_buffer);

impl Drop for BufferView {
    fn drop(&mut self) {
        // SAFETY: the view was filled by a successful PyObject_GetBuffer; GIL held.
        unsafe { ffi::PyBuffer_Release(&mut self.0) };
    }
}

/// The custom encode table for `custom=`: a dict by exact type, or None.
fn custom_encoders(
    py: Python<'_>,
    custom: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Py<PyAny>>> {
    match custom {
        None => Ok(None),
        Some(c) if c.is_none() => Ok(None),
        Some(c) => {
            let table = helpers::call(py, "encoders", (c,))?;
            Ok((!table.is_none()).then(|| table.unbind()))
        }
    }
}

/// The class options of a call that allows no classes and keeps the other defaults: made
/// once, then lent to every such `loads`.
fn no_classes(py: Python<'_>) -> &'static decode::ClassOptions {
    static NONE: pyo3::sync::PyOnceLock<decode::ClassOptions> = pyo3::sync::PyOnceLock::new();
    NONE.get_or_init(py, || decode::ClassOptions {
        allowed: pyo3::types::PyDict::new(py).into_any().unbind(),
        decoders: pyo3::types::PyDict::new(py).into_any().unbind(),
        unknown_error: false,
        placeholders: false,
    })
}

/// The class options of a decode, validated.
fn class_options(
    py: Python<'_>,
    types: Option<&Bound<'_, PyAny>>,
    custom: Option<&Bound<'_, PyAny>>,
    unknown_fields: &str,
    placeholders: bool,
) -> PyResult<decode::ClassOptions> {
    let unknown_error = match unknown_fields {
        "ignore" => false,
        "error" => true,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown_fields must be \"ignore\" or \"error\", not {other:?}"
            )))
        }
    };
    let absent = |v: Option<&Bound<'_, PyAny>>| v.map_or(true, |v| v.is_none());
    if absent(types) && absent(custom) {
        // The common call: no classes allowed. Skip building the registry in Python.
        let none = no_classes(py);
        return Ok(decode::ClassOptions {
            allowed: none.allowed.clone_ref(py),
            decoders: none.decoders.clone_ref(py),
            unknown_error,
            placeholders,
        });
    }
    let none = py.None();
    let registry = helpers::call(
        py,
        "registry",
        (
            types.map_or_else(|| none.bind(py).clone(), Bound::clone),
            custom.map_or_else(|| none.bind(py).clone(), Bound::clone),
        ),
    )?;
    let (allowed, decoders): (Py<PyAny>, Py<PyAny>) = registry.extract()?;
    Ok(decode::ClassOptions {
        allowed,
        decoders,
        unknown_error,
        placeholders,
    })
}

/// `buffer_callback=`: None, or a callable (TypeError otherwise).
fn check_callback(callback: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Py<PyAny>>> {
    match callback.filter(|c| !c.is_none()) {
        None => Ok(None),
        Some(c) if c.is_callable() => Ok(Some(c.clone().unbind())),
        Some(c) => Err(PyTypeError::new_err(format!(
            "buffer_callback must be callable, not {}",
            c.get_type().name()?
        ))),
    }
}

/// `buffers=`: None, or an iterable of objects with the buffer protocol, taken as a list
/// (TypeError otherwise).
fn check_buffers(buffers: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<object::PyObj>>> {
    let Some(buffers) = buffers.filter(|b| !b.is_none()) else {
        return Ok(None);
    };
    let items = buffers.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "buffers must be an iterable of objects with the buffer protocol, not {}",
            buffers
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        let item = item?;
        // SAFETY: a check on a live object; it cannot fail.
        if unsafe { ffi::PyObject_CheckBuffer(item.as_ptr()) } == 0 {
            return Err(PyTypeError::new_err(format!(
                "buffers[{i}] is a {}, which does not support the buffer protocol",
                item.get_type().name()?
            )));
        }
        // SAFETY: item is a live object; we take our own reference.
        out.push(unsafe {
            object::PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(item.as_ptr()))
        });
    }
    Ok(Some(out))
}

/// Runs `f` on the bytes of `data` (bytes, or any C-contiguous buffer), which `what` names in
/// the TypeError for anything else.
fn with_input<T>(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    what: &str,
    f: impl FnOnce(&[u8]) -> PyResult<T>,
) -> PyResult<T> {
    let ptr = data.as_ptr();
    // SAFETY: type check on a live object.
    if unsafe { ffi::PyBytes_Check(ptr) } != 0 {
        // SAFETY: ptr is a bytes object kept alive by `data` for the whole call, and bytes
        // are immutable.
        let slice = unsafe {
            std::slice::from_raw_parts(
                ffi::PyBytes_AS_STRING(ptr).cast::<u8>(),
                ffi::Py_SIZE(ptr) as usize,
            )
        };
        return f(slice);
    }
    // SAFETY: a zeroed Py_buffer is the documented initial state for GetBuffer.
    let mut view = BufferView(unsafe { std::mem::zeroed() });
    // SAFETY: asks for a C-contiguous read-only view; the exporter refuses otherwise.
    if unsafe { ffi::PyObject_GetBuffer(ptr, &mut view.0, ffi::PyBUF_SIMPLE) } < 0 {
        let cause = PyErr::take(py);
        let err = PyTypeError::new_err(format!(
            "{what} needs bytes, bytearray, memoryview or another C-contiguous buffer, got {}",
            data.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ));
        err.set_cause(py, cause);
        return Err(err);
    }
    let len = view.0.len.max(0) as usize;
    let slice: &[u8] = if len == 0 || view.0.buf.is_null() {
        &[]
    } else {
        // SAFETY: the view exports len contiguous bytes and stays valid until `view` drops;
        // the exporter cannot resize while exported.
        unsafe { std::slice::from_raw_parts(view.0.buf.cast::<u8>(), len) }
    };
    let result = f(slice);
    drop(view);
    result
}

fn loads_impl(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    limits: &Limits,
    envelope: &OpenConfig,
    classes: &decode::ClassOptions,
    buffers: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let buffers = check_buffers(buffers)?;
    let buffers = buffers.as_deref();
    let now = envelope.now(py)?;
    // SAFETY: a type check on a live object.
    let frozen = unsafe { ffi::PyBytes_Check(data.as_ptr()) } != 0;
    with_input(py, data, "loads()", |slice| {
        decode::decode_bytes(py, slice, frozen, limits, envelope, now, classes, buffers)
            .map_err(|f| decode_error(py, f))
    })
}

/// One traced value as a Python tuple: `(offset, end, depth, tag, name, head_end, tracked,
/// info, value)`; `info` is a tuple whose first item says what the value is.
fn trace_event<'py>(
    py: Python<'py>,
    event: &amber_format::trace::Event<object::PyObj>,
    shapes: &[Bound<'py, PyAny>],
) -> PyResult<Bound<'py, PyAny>> {
    use amber_format::trace::Info;
    let kind = |name: &str| pyo3::types::PyString::intern(py, name);
    let info = match event.info {
        Info::Scalar => (kind("scalar"),).into_pyobject(py)?.into_any(),
        Info::Unknown => (kind("unknown"),).into_pyobject(py)?.into_any(),
        Info::Supersede => (kind("supersede"),).into_pyobject(py)?.into_any(),
        Info::Data { len } => (kind("data"), len).into_pyobject(py)?.into_any(),
        Info::Container { len } => (kind("container"), len).into_pyobject(py)?.into_any(),
        Info::Packed { len } => (kind("packed"), len).into_pyobject(py)?.into_any(),
        Info::TupleList { rows, arity } => (kind("tuple_list"), rows, arity)
            .into_pyobject(py)?
            .into_any(),
        Info::Ext { code, blob } => (kind("ext"), kind(code.spec_name()), blob)
            .into_pyobject(py)?
            .into_any(),
        Info::Object { shape, defines } => {
            let def = shapes.get(shape).cloned();
            (kind("object"), shape, defines, def)
                .into_pyobject(py)?
                .into_any()
        }
        Info::Ref { target, index } => (kind("ref"), target, index).into_pyobject(py)?.into_any(),
    };
    let name = amber_format::Tag::of_byte(event.tag).map_or("RESERVED", |t| t.spec_name());
    let value = match &event.value {
        // SAFETY: the trace holds a strong reference; the Bound takes its own.
        Some(obj) => unsafe { Bound::from_borrowed_ptr(py, obj.as_ptr()) },
        None => py.None().into_bound(py),
    };
    let row = (
        event.offset,
        event.end,
        event.depth,
        event.tag,
        kind(name),
        event.head_end,
        event.tracked,
        info,
        value,
    );
    Ok(row.into_pyobject(py)?.into_any())
}

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

/// _trace(data, *, max_depth=1000, max_alloc=None, max_events=None, key=None)
///     -> (events, values, error, body)
///
/// Decodes `data` as `loads(data, placeholders=True, key=key)` does and reports where each
/// value sits in it, for `amber inspect` and `amber stats`. `events` lists the first
/// `max_events` values (all by default) in the order of their tags, each as `(offset, end,
/// depth, tag, name, head_end, tracked, info, value)`; `values` counts all of them. `error`
/// is the `DecodeError` that ended the decode (not raised), or None. `body` is the
/// decompressed body of a compressed payload (whose offsets then count from its first byte,
/// not from the start of `data`), or None.
#[pyfunction]
#[pyo3(
    name = "_trace",
    signature = (data, *, max_depth = None, max_alloc = None, max_events = None, key = None),
    text_signature = "(data, *, max_depth=1000, max_alloc=None, max_events=None, key=None)"
)]
fn trace<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    max_depth: Option<&Bound<'py, PyAny>>,
    max_alloc: Option<&Bound<'py, PyAny>>,
    max_events: Option<&Bound<'py, PyAny>>,
    key: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let limits = Limits {
        max_depth: check_depth(max_depth)?,
        max_alloc: check_alloc(max_alloc)?,
    };
    let max_events = match max_events.filter(|v| !v.is_none()) {
        None => usize::MAX,
        Some(v) => {
            usize::try_from(int_option("max_events", v, 0..=u64::MAX)?).unwrap_or(usize::MAX)
        }
    };
    let envelope = OpenConfig::new(key, None, None)?;
    let classes = class_options(py, None, None, "ignore", true)?;
    with_input(py, data, "_trace()", |slice| {
        let (trace, failure) =
            decode::trace_bytes(py, slice, &limits, &envelope, 0, &classes, max_events);
        let error = match failure {
            None => py.None().into_bound(py),
            Some(decode::DecodeFailure::Python(err)) => return Err(err),
            Some(failure) => decode_error(py, failure)
                .into_value(py)
                .into_bound(py)
                .into_any(),
        };
        let shapes = trace
            .shapes
            .iter()
            .map(|s| {
                let fields = pyo3::types::PyTuple::new(py, &s.fields)?;
                (
                    s.module.as_str(),
                    s.qualname.as_str(),
                    s.kind.spec_name(),
                    fields,
                )
                    .into_pyobject(py)
                    .map(Bound::into_any)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let events = pyo3::types::PyList::empty(py);
        for event in &trace.events {
            events.append(trace_event(py, event, &shapes)?)?;
        }
        let body = trace.decompressed.as_deref().map(|b| PyBytes::new(py, b));
        Ok((events, trace.values, error, body)
            .into_pyobject(py)?
            .into_any())
    })
}

/// dumps(obj, *, refs=True, max_depth=1000, custom=None, buffer_callback=None, key=None,
///       timestamp=False, compress=None, level=None, canonical=False, sort_keys=False) -> bytes
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
/// compressing it, and `timestamp=True` puts the time of signing into what is signed.
/// Out-of-band buffers are neither compressed nor signed: only the payload is.
#[pyfunction]
#[pyo3(
    signature = (obj, *, refs = true, max_depth = None, custom = None, buffer_callback = None, key = None, timestamp = false, compress = None, level = None, canonical = false, sort_keys = false),
    text_signature = "(obj, *, refs=True, max_depth=1000, custom=None, buffer_callback=None, key=None, timestamp=False, compress=None, level=None, canonical=False, sort_keys=False)"
)]
#[allow(clippy::too_many_arguments)]
fn dumps(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    refs: bool,
    max_depth: Option<&Bound<'_, PyAny>>,
    custom: Option<&Bound<'_, PyAny>>,
    buffer_callback: Option<&Bound<'_, PyAny>>,
    key: Option<&Bound<'_, PyAny>>,
    timestamp: bool,
    compress: Option<&Bound<'_, PyAny>>,
    level: Option<&Bound<'_, PyAny>>,
    canonical: bool,
    sort_keys: bool,
) -> PyResult<Py<PyBytes>> {
    let options = encode::Options {
        refs,
        max_depth: check_depth(max_depth)?,
        canonical,
        sort_keys,
    };
    let callback = check_callback(buffer_callback)?;
    let seal = SealConfig::new(key, timestamp, compress, level)?;
    let custom = custom_encoders(py, custom)?;
    dumps_impl(py, obj, options, custom.as_ref(), callback.as_ref(), &seal)
}

/// `dumps(obj)` with every option at its default (see [`fastcall`]).
fn dumps_default(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Py<PyBytes>> {
    let options = encode::Options {
        refs: true,
        max_depth: DEFAULT_MAX_DEPTH,
        canonical: false,
        sort_keys: false,
    };
    dumps_impl(py, obj, options, None, None, &SealConfig::default())
}

/// `loads(data)` with every option at its default (see [`fastcall`]).
fn loads_default(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let limits = Limits {
        max_depth: DEFAULT_MAX_DEPTH,
        max_alloc: None,
    };
    loads_impl(
        py,
        data,
        &limits,
        &OpenConfig::default(),
        no_classes(py),
        None,
    )
}

/// loads(data, *, max_depth=1000, max_alloc=None, types=None, custom=None,
///       unknown_fields="ignore", placeholders=False, buffers=None, key=None, max_age=None,
///       max_decompressed=None) -> object
///
/// Decodes an amber payload from bytes or any C-contiguous buffer. A class instance is
/// built only if its exact class is in `types` (or `custom`); otherwise
/// `ClassNotAllowedError`, or an `amber.Placeholder` with `placeholders=True`. `buffers`
/// are the out-of-band buffers a `buffer_callback` received, in order.
///
/// With `key` (one key or a list: any of them verifies) the payload must be signed by one of
/// the keys, and the signature is checked before anything is decompressed or built
/// (`SignatureError` otherwise); `max_age` (seconds or a timedelta) then refuses payloads
/// signed longer ago, or not timestamped. A compressed payload is decompressed within the
/// same `max_alloc` budget as the values it holds; `max_decompressed` caps its size too.
#[pyfunction]
#[pyo3(
    signature = (data, *, max_depth = None, max_alloc = None, types = None, custom = None, unknown_fields = "ignore", placeholders = false, buffers = None, key = None, max_age = None, max_decompressed = None),
    text_signature = "(data, *, max_depth=1000, max_alloc=None, types=None, custom=None, unknown_fields='ignore', placeholders=False, buffers=None, key=None, max_age=None, max_decompressed=None)"
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
) -> PyResult<Py<PyAny>> {
    let limits = Limits {
        max_depth: check_depth(max_depth)?,
        max_alloc: check_alloc(max_alloc)?,
    };
    let envelope = OpenConfig::new(key, max_age, max_decompressed)?;
    let classes = class_options(py, types, custom, unknown_fields, placeholders)?;
    loads_impl(py, data, &limits, &envelope, &classes, buffers)
}

/// verify(data, *, key, max_age=None) -> dict
///
/// Checks that `data` is signed by one of `key` (and, with `max_age`, fresh) without
/// decompressing or decoding its body, and returns what its envelope says: `signed`,
/// `key_id`, `timestamp` (seconds since 1970, or None), `compression` ("zstd", "lz4" or
/// None), `compressed_size` and `size` (of the body, declared when compressed). Raises
/// `SignatureError` or another `DecodeError` as `loads` would.
#[pyfunction]
#[pyo3(signature = (data, *, key, max_age = None), text_signature = "(data, *, key, max_age=None)")]
fn verify<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    key: &Bound<'py, PyAny>,
    max_age: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    if key.is_none() {
        return Err(PyValueError::new_err(
            "verify() needs key=: the key or keys to check the signature with",
        ));
    }
    let config = OpenConfig::new(Some(key), max_age, None)?;
    // Nothing is decompressed, so no allocation budget is needed.
    let options = config.options(config.now(py)?, 0);
    let info = with_input(py, data, "verify()", |slice| {
        amber_format::envelope::verify(slice, options.keys, options.max_age, options.now)
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

/// A reusable encoder holding options; each call is independent of the last.
#[pyclass(module = "amber", frozen)]
struct Encoder {
    options: encode::Options,
    custom: Option<Py<PyAny>>,
    buffer_callback: Option<Py<PyAny>>,
    seal: SealConfig,
}

#[pymethods]
impl Encoder {
    #[new]
    #[pyo3(
        signature = (*, refs = true, max_depth = None, custom = None, buffer_callback = None, key = None, timestamp = false, compress = None, level = None, canonical = false, sort_keys = false),
        text_signature = "(*, refs=True, max_depth=1000, custom=None, buffer_callback=None, key=None, timestamp=False, compress=None, level=None, canonical=False, sort_keys=False)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        refs: bool,
        max_depth: Option<&Bound<'_, PyAny>>,
        custom: Option<&Bound<'_, PyAny>>,
        buffer_callback: Option<&Bound<'_, PyAny>>,
        key: Option<&Bound<'_, PyAny>>,
        timestamp: bool,
        compress: Option<&Bound<'_, PyAny>>,
        level: Option<&Bound<'_, PyAny>>,
        canonical: bool,
        sort_keys: bool,
    ) -> PyResult<Self> {
        Ok(Encoder {
            options: encode::Options {
                refs,
                max_depth: check_depth(max_depth)?,
                canonical,
                sort_keys,
            },
            buffer_callback: check_callback(buffer_callback)?,
            seal: SealConfig::new(key, timestamp, compress, level)?,
            custom: custom_encoders(py, custom)?,
        })
    }

    /// Encodes `obj` as an amber payload.
    fn encode(&self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Py<PyBytes>> {
        dumps_impl(
            py,
            obj,
            self.options,
            self.custom.as_ref(),
            self.buffer_callback.as_ref(),
            &self.seal,
        )
    }

    #[getter]
    fn buffer_callback(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.buffer_callback.as_ref().map(|c| c.clone_ref(py))
    }

    #[getter]
    fn refs(&self) -> bool {
        self.options.refs
    }

    #[getter]
    fn max_depth(&self) -> u32 {
        self.options.max_depth
    }

    #[getter]
    fn canonical(&self) -> bool {
        self.options.canonical
    }

    #[getter]
    fn sort_keys(&self) -> bool {
        self.options.sort_keys
    }

    /// The id of the key that signs, or None.
    #[getter]
    fn key_id<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.seal.key.as_ref().map(|k| PyBytes::new(py, k.id()))
    }

    #[getter]
    fn timestamp(&self) -> bool {
        self.seal.timestamp
    }

    #[getter]
    fn compress(&self) -> Option<&'static str> {
        self.seal.compress_name()
    }

    #[getter]
    fn level(&self) -> Option<i32> {
        self.seal.level()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let flag = |b: bool| if b { "True" } else { "False" };
        let mut repr = format!(
            "Encoder(refs={}, max_depth={}",
            flag(self.options.refs),
            self.options.max_depth
        );
        if self.options.canonical || self.options.sort_keys {
            repr += &format!(
                ", canonical={}, sort_keys={}",
                flag(self.options.canonical),
                flag(self.options.sort_keys)
            );
        }
        if let Some(key) = &self.seal.key {
            repr += &format!(
                ", key_id={}, timestamp={}",
                PyBytes::new(py, key.id()).repr()?,
                if self.seal.timestamp { "True" } else { "False" }
            );
        }
        if let Some(name) = self.seal.compress_name() {
            repr += &format!(", compress='{name}'");
        }
        if let Some(level) = self.seal.level() {
            repr += &format!(", level={level}");
        }
        Ok(repr + ")")
    }
}

/// A reusable decoder holding limits; each call is independent of the last.
#[pyclass(module = "amber", frozen)]
struct Decoder {
    limits: Limits,
    envelope: OpenConfig,
    classes: decode::ClassOptions,
}

#[pymethods]
impl Decoder {
    #[new]
    #[pyo3(
        signature = (*, max_depth = None, max_alloc = None, types = None, custom = None, unknown_fields = "ignore", placeholders = false, key = None, max_age = None, max_decompressed = None),
        text_signature = "(*, max_depth=1000, max_alloc=None, types=None, custom=None, unknown_fields='ignore', placeholders=False, key=None, max_age=None, max_decompressed=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        max_depth: Option<&Bound<'_, PyAny>>,
        max_alloc: Option<&Bound<'_, PyAny>>,
        types: Option<&Bound<'_, PyAny>>,
        custom: Option<&Bound<'_, PyAny>>,
        unknown_fields: &str,
        placeholders: bool,
        key: Option<&Bound<'_, PyAny>>,
        max_age: Option<&Bound<'_, PyAny>>,
        max_decompressed: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        Ok(Decoder {
            limits: Limits {
                max_depth: check_depth(max_depth)?,
                max_alloc: check_alloc(max_alloc)?,
            },
            envelope: OpenConfig::new(key, max_age, max_decompressed)?,
            classes: class_options(py, types, custom, unknown_fields, placeholders)?,
        })
    }

    /// Decodes an amber payload from bytes or any C-contiguous buffer; `buffers` are its
    /// out-of-band buffers, if it has any.
    #[pyo3(signature = (data, *, buffers = None), text_signature = "($self, data, *, buffers=None)")]
    fn decode(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        buffers: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        loads_impl(
            py,
            data,
            &self.limits,
            &self.envelope,
            &self.classes,
            buffers,
        )
    }

    #[getter]
    fn max_depth(&self) -> u32 {
        self.limits.max_depth
    }

    #[getter]
    fn max_alloc(&self) -> Option<u64> {
        self.limits.max_alloc
    }

    /// The ids of the keys that verify, in order (empty without a key).
    #[getter]
    fn key_ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        pyo3::types::PyTuple::new(
            py,
            self.envelope.keys.iter().map(|k| PyBytes::new(py, k.id())),
        )
    }

    #[getter]
    fn max_age(&self) -> Option<u64> {
        self.envelope.max_age
    }

    #[getter]
    fn max_decompressed(&self) -> Option<u64> {
        self.envelope.max_decompressed
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let optional = |n: Option<u64>| n.map_or_else(|| String::from("None"), |n| n.to_string());
        let mut repr = format!(
            "Decoder(max_depth={}, max_alloc={}",
            self.limits.max_depth,
            optional(self.limits.max_alloc)
        );
        if !self.envelope.keys.is_empty() {
            repr += &format!(
                ", key_ids={}, max_age={}",
                self.key_ids(py)?.repr()?,
                optional(self.envelope.max_age)
            );
        }
        if self.envelope.max_decompressed.is_some() {
            repr += &format!(
                ", max_decompressed={}",
                optional(self.envelope.max_decompressed)
            );
        }
        Ok(repr + ")")
    }
}

#[pymodule]
fn _amber(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let digit_bits: u32 = py
        .import("sys")?
        .getattr("int_info")?
        .getattr("bits_per_digit")?
        .extract()?;
    pylong::set_digit_bits(digit_bits);
    dict_layout::check();
    fastcall::add_functions(m, wrap_pyfunction!(dumps, m)?, wrap_pyfunction!(loads, m)?)?;
    m.add_function(wrap_pyfunction!(trace, m)?)?;
    m.add_function(wrap_pyfunction!(dict_layout_known, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(envelope_info, m)?)?;
    m.add_class::<Encoder>()?;
    m.add_class::<Decoder>()?;
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
