//! The Python side of signed and compressed payloads: `amber.SigningKey`, the `key=`,
//! `timestamp=`, `compress=`, `level=`, `max_age=`, `max_decompressed=` and `clock=` options. All checking of bytes is `amber_format::envelope`'s.
//!
//! Compressing, decompressing and signing a large payload run without the GIL, so that other
//! threads run meanwhile (two threads compress at once on two cores): see [`DETACH_MIN`].

use amber_format::envelope::{
    self, Algorithm, Compression, EnvelopeInfo, SealOptions, DEFAULT_ZSTD_LEVEL, ZSTD_LEVELS,
};
use amber_format::header::{ENVELOPE_FLAGS, FLAG_COMPRESSED};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::callbacks::Callback;

/// Payloads of at least this many bytes are sealed and opened with the GIL released. Below
/// it, releasing and taking back the GIL would cost more than it lets other threads gain: a
/// release costs well under a microsecond alone, but a thread that gives up the GIL while
/// others want it waits for it again (up to the switch interval, 5 ms by default), and zstd,
/// lz4 and HMAC-SHA256 get through 64 KiB in some 20 to 200 µs. (Measured in
/// `bench/threads.py`.)
pub const DETACH_MIN: usize = 64 * 1024;

/// A secret for signing and verifying payloads, and the id that names it in them.
///
/// `SigningKey(secret, *, id=None)`: `secret` is bytes (or str, taken as UTF-8) of at least
/// `MIN_KEY_LENGTH` bytes; `id` (1 to 64 bytes, or str) is written into every payload the key
/// signs, so that a decoder holding several keys knows which to check. Without `id`, the id
/// is the first 8 bytes of HMAC-SHA256(secret, b"amber key id"), which tells nothing about the
/// secret. The secret cannot be read back, and the repr shows only the id.
#[pyclass(name = "SigningKey", module = "amber", frozen)]
pub struct PySigningKey {
    pub key: envelope::SigningKey,
}

#[pymethods]
impl PySigningKey {
    #[new]
    #[pyo3(signature = (secret, *, id = None), text_signature = "(secret, *, id=None)")]
    fn new(secret: &Bound<'_, PyAny>, id: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let secret = byte_string(secret, "secret")?;
        let id = id
            .filter(|i| !i.is_none())
            .map(|i| byte_string(i, "id"))
            .transpose()?;
        let key = envelope::SigningKey::new(&secret, id.as_deref())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PySigningKey { key })
    }

    /// The key id, as written into the payloads this key signs.
    #[getter]
    fn id<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.key.id())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let id = PyBytes::new(py, self.key.id()).repr()?;
        Ok(format!("SigningKey(id={id})"))
    }
}

/// Bytes from bytes, bytearray, memoryview (any buffer) or str (UTF-8); `what` names the
/// argument in errors.
fn byte_string(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if let Ok(text) = value.cast::<PyString>() {
        return text.to_str().map(|s| s.as_bytes().to_vec()).map_err(|_| {
            PyValueError::new_err(format!("{what} is a str that is not valid UTF-8"))
        });
    }
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    if value.is_instance_of::<PyByteArray>() || value.is_instance_of::<pyo3::types::PyMemoryView>()
    {
        let copied = value.py().get_type::<PyBytes>().call1((value,))?;
        return Ok(copied.cast::<PyBytes>()?.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes, bytearray, memoryview or str, not {}",
        value.get_type().name()?
    )))
}

/// One key of `key=`: a `SigningKey`, or a secret whose id is derived.
fn one_key(value: &Bound<'_, PyAny>, what: &str) -> PyResult<envelope::SigningKey> {
    if let Ok(key) = value.cast::<PySigningKey>() {
        return Ok(key.get().key.clone());
    }
    if !(value.is_instance_of::<PyString>()
        || value.is_instance_of::<PyBytes>()
        || value.is_instance_of::<PyByteArray>()
        || value.is_instance_of::<pyo3::types::PyMemoryView>())
    {
        return Err(PyTypeError::new_err(format!(
            "{what} must be bytes, bytearray, memoryview, str, amber.SigningKey or a list of them, not {}",
            value.get_type().name()?
        )));
    }
    let secret = byte_string(value, what)?;
    envelope::SigningKey::new(&secret, None)
        .map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

/// `key=`: None (no keys), one key, or a non-empty list or tuple of keys, the first of which
/// signs.
pub fn keys(value: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<envelope::SigningKey>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(Vec::new());
    };
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> = value.try_iter()?.collect::<PyResult<_>>()?;
        if items.is_empty() {
            return Err(PyValueError::new_err(
                "key must not be an empty list: pass None for no key",
            ));
        }
        return items
            .iter()
            .enumerate()
            .map(|(i, item)| one_key(item, &format!("key[{i}]")))
            .collect();
    }
    one_key(value, "key").map(|key| vec![key])
}

/// What `dumps` does to the payload it wrote.
#[derive(Default)]
pub struct SealConfig {
    /// Boxed: a key holds two SHA-256 states, and this travels by value on every `dumps`.
    pub key: Option<Box<envelope::SigningKey>>,
    pub timestamp: bool,
    pub compression: Option<Compression>,
    /// Where the timestamp comes from.
    pub clock: Clock,
}

impl SealConfig {
    /// Checks `key=`, `timestamp=`, `compress=`, `level=` and `clock=` together.
    #[inline]
    pub fn new(
        key: Option<&Bound<'_, PyAny>>,
        timestamp: bool,
        compress: Option<&Bound<'_, PyAny>>,
        level: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<SealConfig> {
        let given = |v: Option<&Bound<'_, PyAny>>| v.is_some_and(|v| !v.is_none());
        if !given(key) && !timestamp && !given(compress) && !given(level) && !given(clock) {
            // The common call, kept short: small payloads feel every step.
            return Ok(SealConfig::default());
        }
        SealConfig::checked(key, timestamp, compress, level, clock)
    }

    fn checked(
        key: Option<&Bound<'_, PyAny>>,
        timestamp: bool,
        compress: Option<&Bound<'_, PyAny>>,
        level: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<SealConfig> {
        let key = keys(key)?.into_iter().next().map(Box::new);
        if timestamp && key.is_none() {
            return Err(PyValueError::new_err(
                "timestamp=True needs key=: an unsigned timestamp proves nothing",
            ));
        }
        let clock = Clock::new(clock)?;
        if clock.is_given() && !timestamp {
            return Err(PyValueError::new_err(
                "clock needs timestamp=True: without a timestamp the clock is never read",
            ));
        }
        let algorithm = match compress.filter(|c| !c.is_none()) {
            None => None,
            Some(name) => {
                let Ok(name) = name.cast::<PyString>() else {
                    return Err(PyTypeError::new_err(format!(
                        "compress must be None, \"zstd\" or \"lz4\", not {}",
                        name.get_type().name()?
                    )));
                };
                let name = name.to_str()?;
                Some(Algorithm::from_name(name).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "compress must be None, \"zstd\" or \"lz4\", not {name:?}"
                    ))
                })?)
            }
        };
        let level = level.filter(|l| !l.is_none());
        let compression = match (algorithm, level) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(PyValueError::new_err(
                    "level needs compress=\"zstd\": without compression there is no level",
                ))
            }
            (Some(Algorithm::Lz4), Some(_)) => {
                return Err(PyValueError::new_err(
                    "level is not supported with compress=\"lz4\" (lz4 has no levels)",
                ))
            }
            (Some(Algorithm::Lz4), None) => Some(Compression::Lz4),
            (Some(Algorithm::Zstd), None) => Some(Compression::Zstd {
                level: DEFAULT_ZSTD_LEVEL,
            }),
            (Some(Algorithm::Zstd), Some(level)) => {
                let range = *ZSTD_LEVELS.start() as u64..=*ZSTD_LEVELS.end() as u64;
                let level = crate::options::int_option("level", level, range)? as i32;
                Some(Compression::Zstd { level })
            }
        };
        Ok(SealConfig {
            key,
            timestamp,
            compression,
            clock,
        })
    }

    /// Whether `dumps` has anything to do after writing the payload.
    pub fn active(&self) -> bool {
        self.key.is_some() || self.compression.is_some()
    }

    /// Wraps the plain `payload` into a new `bytes` object, reading the clock for a
    /// timestamp. The sealed payload is written straight into the object.
    pub fn seal<'py>(&self, py: Python<'py>, payload: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let timestamp = if self.timestamp {
            Some(self.clock.now(py)?)
        } else {
            None
        };
        let options = SealOptions {
            key: self.key.as_deref(),
            timestamp,
            compression: self.compression,
        };
        let refused = |e: envelope::SealError| match e {
            envelope::SealError::TimestampWithoutKey | envelope::SealError::BadLevel(_) => {
                PyValueError::new_err(e.to_string())
            }
            envelope::SealError::NotPlain
            | envelope::SealError::Compressor(_)
            | envelope::SealError::OutputLength { .. } => PyRuntimeError::new_err(e.to_string()),
        };
        if payload.len() < DETACH_MIN {
            let sealed = envelope::prepare(payload, &options).map_err(refused)?;
            return PyBytes::new_with(py, sealed.len(), |out| {
                sealed.write_into(out).map_err(refused)
            });
        }
        // Why: `payload` is the bytes object the encode has just made, which nothing else
        // holds yet, and bytes never change, so no Python code can touch what the compressor
        // reads; the key and options are Rust values.
        let sealed = py
            .detach(|| envelope::prepare(payload, &options))
            .map_err(refused)?;
        PyBytes::new_with(py, sealed.len(), |out| {
            // Why: `out` is the new bytes object's memory, which no Python code can see
            // before `new_with` returns it; hashing it for the signature needs no GIL.
            py.detach(|| sealed.write_into(out)).map_err(refused)
        })
    }

    /// The `compress=` name.
    pub fn compress_name(&self) -> Option<&'static str> {
        self.compression.map(|c| match c {
            Compression::Zstd { .. } => "zstd",
            Compression::Lz4 => "lz4",
        })
    }

    /// The zstd level, if compressing with zstd.
    pub fn level(&self) -> Option<i32> {
        match self.compression {
            Some(Compression::Zstd { level }) => Some(level),
            _ => None,
        }
    }
}

/// What `loads` accepts beyond a plain payload.
#[derive(Default)]
pub struct OpenConfig {
    pub keys: Vec<envelope::SigningKey>,
    pub max_age: Option<u64>,
    pub max_decompressed: Option<u64>,
    /// What `max_age` is judged against.
    pub clock: Clock,
}

impl OpenConfig {
    /// Plain payloads only: what `loads(data)` without keywords uses, lent rather than made
    /// and dropped on every call.
    pub const PLAIN: OpenConfig = OpenConfig {
        keys: Vec::new(),
        max_age: None,
        max_decompressed: None,
        clock: Clock::Amber,
    };

    /// Checks `key=`, `max_age=`, `max_decompressed=` and `clock=` together.
    #[inline]
    pub fn new(
        key: Option<&Bound<'_, PyAny>>,
        max_age: Option<&Bound<'_, PyAny>>,
        max_decompressed: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<OpenConfig> {
        let given = |v: Option<&Bound<'_, PyAny>>| v.is_some_and(|v| !v.is_none());
        if !given(key) && !given(max_age) && !given(max_decompressed) && !given(clock) {
            // The common call, kept short: small payloads feel every step.
            return Ok(OpenConfig::default());
        }
        OpenConfig::checked(key, max_age, max_decompressed, clock)
    }

    fn checked(
        key: Option<&Bound<'_, PyAny>>,
        max_age: Option<&Bound<'_, PyAny>>,
        max_decompressed: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<OpenConfig> {
        let keys = keys(key)?;
        let max_age = max_age_option(max_age)?;
        if max_age.is_some() && keys.is_empty() {
            return Err(PyValueError::new_err(
                "max_age needs key=: only a signed timestamp can be trusted",
            ));
        }
        let clock = Clock::new(clock)?;
        if clock.is_given() && max_age.is_none() {
            return Err(PyValueError::new_err(
                "clock needs max_age=: without an age limit the clock is never read",
            ));
        }
        let max_decompressed = max_decompressed
            .filter(|v| !v.is_none())
            .map(|v| crate::options::int_option("max_decompressed", v, 1..=u64::MAX))
            .transpose()?;
        Ok(OpenConfig {
            keys,
            max_age,
            max_decompressed,
            clock,
        })
    }

    /// Whether a timestamp will be judged, so that [`OpenConfig::now`] reads the clock.
    #[inline(always)]
    pub fn reads_clock(&self) -> bool {
        self.max_age.is_some()
    }

    /// The clock, read only when a timestamp will be judged (else 0). Read it before
    /// borrowing the input: the clock is Python code.
    pub fn now(&self, py: Python<'_>) -> PyResult<u64> {
        if self.reads_clock() {
            self.clock.now(py)
        } else {
            Ok(0)
        }
    }

    /// The format crate's options for one input.
    pub fn options(&self, now: u64, alloc_budget: u64) -> envelope::OpenOptions<'_> {
        envelope::OpenOptions {
            keys: &self.keys,
            max_age: self.max_age,
            now,
            max_decompressed: self.max_decompressed,
            alloc_budget,
        }
    }
}

/// Opens the envelope of `data`, as `amber_format::open` does, with the GIL released when
/// that is worth it: `data` is compressed or signed, and large or decompressing into a large
/// body. `frozen` says that no Python code can change `data` meanwhile (it is the memory of a
/// `bytes` object, held by the caller); only then is the GIL released.
pub fn open<'a>(
    py: Python<'_>,
    data: &'a [u8],
    options: &envelope::OpenOptions<'_>,
    frozen: bool,
) -> Result<envelope::Opened<'a>, amber_format::DecodeError> {
    if frozen && open_work(data) >= DETACH_MIN {
        // Why: a bytes object never changes and the caller holds it, so the input stays as it
        // is while other threads run; everything else read here is a Rust value. A bytearray
        // or another buffer is never `frozen`: its export pins its size, but another thread
        // could write into it while it is hashed or decompressed.
        py.detach(|| amber_format::open(data, options))
    } else {
        amber_format::open(data, options)
    }
}

/// Verifies the envelope of `data`, as `amber_format::envelope::verify` does, with the GIL
/// released for a large input that no Python code can change meanwhile (`frozen`, as for
/// [`open`]): the signature is checked over all of it.
pub fn verify(
    py: Python<'_>,
    data: &[u8],
    options: &envelope::OpenOptions<'_>,
    frozen: bool,
) -> Result<EnvelopeInfo, amber_format::DecodeError> {
    let verify = || envelope::verify(data, options.keys, options.max_age, options.now);
    if frozen && data.len() >= DETACH_MIN {
        py.detach(verify)
    } else {
        verify()
    }
}

/// How many bytes opening `data` hashes or makes: 0 for a plain payload; the input for a
/// signed one; for a compressed one, the body it declares, if larger (whether that size is
/// allowed is for `open` to check).
fn open_work(data: &[u8]) -> usize {
    let flags = data.get(2).map_or(0, |f| f & ENVELOPE_FLAGS);
    if flags == 0 {
        0
    } else if flags & FLAG_COMPRESSED == 0 {
        data.len()
    } else {
        envelope::inspect(data).map_or(data.len(), |info| {
            usize::try_from(info.size).map_or(usize::MAX, |size| size.max(data.len()))
        })
    }
}

/// `max_age=`: None, or seconds as a non-negative int, float or `datetime.timedelta`.
/// Timestamps are whole seconds, so a fractional bound is the same as its floor.
pub fn max_age_option(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(
            "max_age must be a number of seconds or a timedelta, not bool",
        ));
    }
    let seconds: f64 = if value.is_instance_of::<pyo3::types::PyDelta>() {
        value.call_method0("total_seconds")?.extract()?
    } else if value.is_instance_of::<pyo3::types::PyInt>() {
        return match value.extract::<u64>() {
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(PyValueError::new_err(format!(
                "max_age must be 0 or more seconds, got {value}"
            ))),
        };
    } else if value.is_instance_of::<pyo3::types::PyFloat>() {
        value.extract()?
    } else {
        return Err(PyTypeError::new_err(format!(
            "max_age must be a number of seconds or a timedelta, not {}",
            value.get_type().name()?
        )));
    };
    if seconds.is_nan() || seconds < 0.0 {
        return Err(PyValueError::new_err(format!(
            "max_age must be 0 or more seconds, got {value}"
        )));
    }
    // Saturates for infinity and anything beyond u64: no age exceeds it.
    Ok(Some(seconds.floor() as u64))
}

/// Where envelope times come from: the `clock=` a call passed, or amber's own clock
/// (`amber._clock.now`, looked up on each read so that a test may replace it).
#[derive(Default)]
pub enum Clock {
    #[default]
    Amber,
    /// A callable that returns whole seconds since 1970.
    Given(Py<PyAny>),
}

impl Clock {
    /// `clock=`: None, or a callable (TypeError otherwise).
    fn new(clock: Option<&Bound<'_, PyAny>>) -> PyResult<Clock> {
        match clock.filter(|c| !c.is_none()) {
            None => Ok(Clock::Amber),
            Some(c) if c.is_callable() => Ok(Clock::Given(c.clone().unbind())),
            Some(c) => Err(PyTypeError::new_err(format!(
                "clock must be a callable that returns seconds since 1970, not {}",
                c.get_type().name()?
            ))),
        }
    }

    fn is_given(&self) -> bool {
        matches!(self, Clock::Given(_))
    }

    /// The callable a caller passed, if any.
    pub fn given(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        match self {
            Clock::Amber => None,
            Clock::Given(c) => Some(c.clone_ref(py)),
        }
    }

    /// The time, in whole seconds since 1970.
    pub fn now(&self, py: Python<'_>) -> PyResult<u64> {
        let (value, what) = match self {
            Clock::Amber => (Callback::ClockNow.call(py, ())?, "amber._clock.now()"),
            Clock::Given(c) => (c.bind(py).call0()?, "clock()"),
        };
        value.extract::<u64>().map_err(|_| {
            PyValueError::new_err(format!(
                "{what} must return seconds since 1970 as an int of 0 or more, got {value}"
            ))
        })
    }
}

/// `info` as the dict `verify` and `envelope_info` return.
pub fn info_dict<'py>(py: Python<'py>, info: &EnvelopeInfo) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("signed", info.signed)?;
    dict.set_item(
        "key_id",
        info.key_id.as_deref().map(|id| PyBytes::new(py, id)),
    )?;
    dict.set_item("timestamp", info.timestamp)?;
    dict.set_item("compression", info.compression.map(Algorithm::name))?;
    dict.set_item("compressed_size", info.compressed_size)?;
    dict.set_item("size", info.size)?;
    Ok(dict)
}
