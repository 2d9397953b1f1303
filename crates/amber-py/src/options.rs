//! Every option of every entry point, checked in one place. `dumps` and `Encoder()` build
//! their options with [`EncodeConfig::new`], `loads` and `Decoder()` with
//! [`DecodeConfig::new`]; an invalid option is a `TypeError` or `ValueError` naming it.

use amber_format::limits::{DEFAULT_MAX_DEPTH, HARD_MAX_DEPTH};
use amber_format::Limits;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3_ffi as ffi;

use crate::envelope::{OpenConfig, SealConfig};
use crate::{decode, encode, object, registry};
use std::sync::Arc;

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
pub(crate) fn check_depth(max_depth: Option<&Bound<'_, PyAny>>) -> PyResult<u32> {
    match max_depth.filter(|v| !v.is_none()) {
        None => Ok(DEFAULT_MAX_DEPTH),
        Some(v) => int_option("max_depth", v, 1..=u64::from(HARD_MAX_DEPTH)).map(|n| n as u32),
    }
}

/// `None` (the default) means no limit.
pub(crate) fn check_alloc(max_alloc: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    max_alloc
        .filter(|v| !v.is_none())
        .map(|v| int_option("max_alloc", v, 1..=u64::MAX))
        .transpose()
}

/// The custom encode table for `custom=`, or None.
fn custom_encoders(
    py: Python<'_>,
    custom: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Arc<registry::CustomEncoders>>> {
    match custom {
        None => Ok(None),
        Some(c) if c.is_none() => Ok(None),
        Some(c) => Ok(registry::encoders(py, c)?.map(Arc::new)),
    }
}

/// The class options of a call that allows no classes and keeps the other defaults: made
/// once, then lent to every such `loads`.
pub(crate) fn no_classes(py: Python<'_>) -> &'static decode::ClassOptions {
    static NONE: pyo3::sync::PyOnceLock<decode::ClassOptions> = pyo3::sync::PyOnceLock::new();
    NONE.get_or_init(py, || decode::ClassOptions {
        allowed: registry::Allowed::none(),
        unknown_error: false,
        placeholders: false,
    })
}

/// `types=` of an encode: the names a decoder given the same list would allow, or None when
/// absent.
fn allowed_for_encoding(
    py: Python<'_>,
    types: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Arc<registry::Names>>> {
    let Some(types) = types.filter(|t| !t.is_none()) else {
        return Ok(None);
    };
    registry::names(py, types).map(Some)
}

/// The class options of a decode, validated.
pub(crate) fn class_options(
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
    Ok(decode::ClassOptions {
        allowed: registry::allowed(py, types, custom)?,
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
/// (TypeError otherwise). The test for none, the common case, is made in line.
#[inline(always)]
pub(crate) fn check_buffers(
    buffers: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Vec<object::PyObj>>> {
    match buffers.filter(|b| !b.is_none()) {
        None => Ok(None),
        Some(buffers) => buffer_list(buffers).map(Some),
    }
}

/// [`check_buffers`] of an object that is not None.
#[inline(never)]
fn buffer_list(buffers: &Bound<'_, PyAny>) -> PyResult<Vec<object::PyObj>> {
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
    Ok(out)
}

/// The validated options of an encode: what `dumps` takes besides the object, and what an
/// `Encoder` keeps.
pub(crate) struct EncodeConfig {
    pub options: encode::Options,
    /// The caller's custom encode functions by exact type, or None.
    pub custom: Option<Arc<registry::CustomEncoders>>,
    /// `types=`: the allow-list the encoder holds every shape to (see `encode::ClassTables`),
    /// or None for no check.
    pub allowed: Option<Arc<registry::Names>>,
    pub buffer_callback: Option<Py<PyAny>>,
    pub seal: SealConfig,
}

impl EncodeConfig {
    /// The options of `dumps` and `Encoder()`, checked.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
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
        Ok(EncodeConfig {
            options: encode::Options {
                refs,
                max_depth: check_depth(max_depth)?,
                canonical,
                sort_keys,
            },
            buffer_callback: check_callback(buffer_callback)?,
            seal: SealConfig::new(key, timestamp, compress, level, clock)?,
            custom: custom_encoders(py, custom)?,
            allowed: allowed_for_encoding(py, types)?,
        })
    }
}

/// The validated options of a decode: what `loads` takes besides the data and its buffers,
/// and what a `Decoder` keeps.
pub(crate) struct DecodeConfig {
    pub limits: Limits,
    pub envelope: OpenConfig,
    pub classes: decode::ClassOptions,
}

impl DecodeConfig {
    /// The options of `loads` and `Decoder()`, checked.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
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
        Ok(DecodeConfig {
            limits: Limits {
                max_depth: check_depth(max_depth)?,
                max_alloc: check_alloc(max_alloc)?,
            },
            envelope: OpenConfig::new(key, max_age, max_decompressed, clock)?,
            classes: class_options(py, types, custom, unknown_fields, placeholders)?,
        })
    }
}
