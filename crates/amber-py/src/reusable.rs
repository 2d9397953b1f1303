//! `Encoder` and `Decoder`: options checked once, then used for any number of calls.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::options::{DecodeConfig, EncodeConfig};

/// A reusable encoder holding options; each call is independent of the last.
#[pyclass(module = "amber", frozen)]
pub(crate) struct Encoder {
    config: EncodeConfig,
}

impl Encoder {
    /// The encoder's options.
    pub(crate) fn config(&self) -> &EncodeConfig {
        &self.config
    }
}

#[pymethods]
impl Encoder {
    #[new]
    #[pyo3(
        signature = (*, refs = true, max_depth = None, types = None, custom = None, buffer_callback = None, key = None, timestamp = false, compress = None, level = None, canonical = false, sort_keys = false, clock = None),
        text_signature = "(*, refs=True, max_depth=1000, types=None, custom=None, buffer_callback=None, key=None, timestamp=False, compress=None, level=None, canonical=False, sort_keys=False, clock=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
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
    ) -> PyResult<Self> {
        let config = EncodeConfig::new(
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
        )?;
        Ok(Encoder { config })
    }

    /// Encodes `obj` as an amber payload.
    fn encode(&self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Py<PyBytes>> {
        self.config.dumps(py, obj)
    }

    #[getter]
    fn buffer_callback(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.config
            .buffer_callback
            .as_ref()
            .map(|c| c.clone_ref(py))
    }

    #[getter]
    fn refs(&self) -> bool {
        self.config.options.refs
    }

    #[getter]
    fn max_depth(&self) -> u32 {
        self.config.options.max_depth
    }

    #[getter]
    fn canonical(&self) -> bool {
        self.config.options.canonical
    }

    #[getter]
    fn sort_keys(&self) -> bool {
        self.config.options.sort_keys
    }

    /// The id of the key that signs, or None.
    #[getter]
    fn key_id<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.config
            .seal
            .key
            .as_ref()
            .map(|k| PyBytes::new(py, k.id()))
    }

    /// The clock of the timestamps, if one was given.
    #[getter]
    fn clock(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.config.seal.clock.given(py)
    }

    #[getter]
    fn timestamp(&self) -> bool {
        self.config.seal.timestamp
    }

    #[getter]
    fn compress(&self) -> Option<&'static str> {
        self.config.seal.compress_name()
    }

    #[getter]
    fn level(&self) -> Option<i32> {
        self.config.seal.level()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let flag = |b: bool| if b { "True" } else { "False" };
        let mut repr = format!(
            "Encoder(refs={}, max_depth={}",
            flag(self.config.options.refs),
            self.config.options.max_depth
        );
        if self.config.options.canonical || self.config.options.sort_keys {
            repr += &format!(
                ", canonical={}, sort_keys={}",
                flag(self.config.options.canonical),
                flag(self.config.options.sort_keys)
            );
        }
        if let Some(key) = &self.config.seal.key {
            repr += &format!(
                ", key_id={}, timestamp={}",
                PyBytes::new(py, key.id()).repr()?,
                if self.config.seal.timestamp {
                    "True"
                } else {
                    "False"
                }
            );
        }
        if let Some(name) = self.config.seal.compress_name() {
            repr += &format!(", compress='{name}'");
        }
        if let Some(level) = self.config.seal.level() {
            repr += &format!(", level={level}");
        }
        Ok(repr + ")")
    }
}

/// A reusable decoder holding limits; each call is independent of the last.
#[pyclass(module = "amber", frozen)]
pub(crate) struct Decoder {
    config: DecodeConfig,
}

impl Decoder {
    /// The decoder's options.
    pub(crate) fn config(&self) -> &DecodeConfig {
        &self.config
    }
}

#[pymethods]
impl Decoder {
    #[new]
    #[pyo3(
        signature = (*, max_depth = None, max_alloc = None, types = None, custom = None, unknown_fields = "ignore", placeholders = false, key = None, max_age = None, max_decompressed = None, clock = None),
        text_signature = "(*, max_depth=1000, max_alloc=None, types=None, custom=None, unknown_fields='ignore', placeholders=False, key=None, max_age=None, max_decompressed=None, clock=None)"
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
        clock: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let config = DecodeConfig::new(
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
        )?;
        Ok(Decoder { config })
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
        self.config.loads(py, data, buffers)
    }

    #[getter]
    fn max_depth(&self) -> u32 {
        self.config.limits.max_depth
    }

    #[getter]
    fn max_alloc(&self) -> Option<u64> {
        self.config.limits.max_alloc
    }

    /// The ids of the keys that verify, in order (empty without a key).
    #[getter]
    fn key_ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        pyo3::types::PyTuple::new(
            py,
            self.config
                .envelope
                .keys
                .iter()
                .map(|k| PyBytes::new(py, k.id())),
        )
    }

    #[getter]
    fn max_age(&self) -> Option<u64> {
        self.config.envelope.max_age
    }

    /// The clock `max_age` is judged by, if one was given.
    #[getter]
    fn clock(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.config.envelope.clock.given(py)
    }

    #[getter]
    fn max_decompressed(&self) -> Option<u64> {
        self.config.envelope.max_decompressed
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let optional = |n: Option<u64>| n.map_or_else(|| String::from("None"), |n| n.to_string());
        let mut repr = format!(
            "Decoder(max_depth={}, max_alloc={}",
            self.config.limits.max_depth,
            optional(self.config.limits.max_alloc)
        );
        if !self.config.envelope.keys.is_empty() {
            repr += &format!(
                ", key_ids={}, max_age={}",
                self.key_ids(py)?.repr()?,
                optional(self.config.envelope.max_age)
            );
        }
        if self.config.envelope.max_decompressed.is_some() {
            repr += &format!(
                ", max_decompressed={}",
                optional(self.config.envelope.max_decompressed)
            );
        }
        Ok(repr + ")")
    }
}
