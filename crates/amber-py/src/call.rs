//! One call of `dumps` or `loads` with its options checked: the encode or decode, the
//! envelope, and the hand-over of out-of-band buffers.

use amber_format::Limits;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::{bytes_of, frozen_input, with_input};
use crate::envelope::{OpenConfig, SealConfig};
use crate::errors::{decode_error, encode_error, EncodeError};
use crate::options::{check_buffers, DecodeConfig, EncodeConfig};
use crate::{decode, encode, object};

impl EncodeConfig {
    /// `dumps(obj)` with these options.
    pub fn dumps(&self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Py<PyBytes>> {
        self.dumps_custom(py, obj, self.custom.as_deref())
    }

    /// `dumps(obj)` with these options but `custom` for their custom encode functions: a
    /// keyword cache entry whose `custom=` list it cannot check keeps no table, and each
    /// call makes its own from its list (see `fastcall::Remembered`).
    pub fn dumps_custom(
        &self,
        py: Python<'_>,
        obj: &Bound<'_, PyAny>,
        custom: Option<&crate::registry::CustomEncoders>,
    ) -> PyResult<Py<PyBytes>> {
        dumps_with(
            py,
            obj,
            self.options,
            (custom, self.allowed.as_deref()),
            self.buffer_callback.as_ref(),
            &self.seal,
        )
    }
}

impl DecodeConfig {
    /// `loads(data, buffers=buffers)` with these options but `allowed` for their classes:
    /// the call that fills a keyword cache entry, whose options now hold the classes weakly
    /// (`Allowed::hold_weakly`), holds them strongly itself.
    pub fn loads_allowing(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        buffers: Option<&Bound<'_, PyAny>>,
        allowed: crate::registry::Allowed,
    ) -> PyResult<Py<PyAny>> {
        let classes = decode::ClassOptions {
            allowed,
            unknown_error: self.classes.unknown_error,
            placeholders: self.classes.placeholders,
        };
        loads_with(py, data, &self.limits, &self.envelope, &classes, buffers)
    }

    /// `loads(data, buffers=buffers)` with these options.
    pub fn loads(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        buffers: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        loads_with(
            py,
            data,
            &self.limits,
            &self.envelope,
            &self.classes,
            buffers,
        )
    }
}

/// An encode with these options, for [`EncodeConfig::dumps`] and for `dumps(obj)`, which
/// needs no `EncodeConfig` (see `fastcall`).
pub(crate) fn dumps_with(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    options: encode::Options,
    (custom, allowed): (
        Option<&crate::registry::CustomEncoders>,
        Option<&crate::registry::Names>,
    ),
    buffer_callback: Option<&Py<PyAny>>,
    seal: &SealConfig,
) -> PyResult<Py<PyBytes>> {
    let classes = encode::ClassTables { custom, allowed };
    if buffer_callback.is_none() && !seal.active() {
        return encode_bytes(py, obj, options, classes, None);
    }
    dumps_sealed_or_out_of_band(py, obj, options, classes, buffer_callback, seal)
}

/// The encode of `dumps`: its payload as `bytes`, its out-of-band buffers in `oob`.
#[inline(always)]
fn encode_bytes(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    options: encode::Options,
    classes: encode::ClassTables<'_>,
    oob: Option<&mut encode::OutOfBand>,
) -> PyResult<Py<PyBytes>> {
    let bytes = encode::encode(py, obj.as_ptr(), options, classes, oob)
        .map_err(|fail| encode_error(py, fail))?;
    // SAFETY: encode returns a bytes object.
    Ok(unsafe {
        Bound::from_owned_ptr(py, bytes.into_ptr())
            .cast_into_unchecked::<PyBytes>()
            .unbind()
    })
}

/// [`dumps_with`] when the payload is sealed or its buffers go to a callback.
#[inline(never)]
fn dumps_sealed_or_out_of_band(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    options: encode::Options,
    classes: encode::ClassTables<'_>,
    buffer_callback: Option<&Py<PyAny>>,
    seal: &SealConfig,
) -> PyResult<Py<PyBytes>> {
    let mut oob = buffer_callback.map(|_| encode::OutOfBand::collect());
    // Kept for a second walk should the callback fail (see `buffer_callback_error`).
    let retry_classes = buffer_callback.map(|_| classes);
    let mut bytes = encode_bytes(py, obj, options, classes, oob.as_mut())?;
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
                    retry_classes.unwrap_or_default(),
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
    classes: encode::ClassTables<'_>,
    at: OutOfBandFailure,
    err: PyErr,
) -> PyErr {
    let mut finder = encode::OutOfBand::find(&at.source);
    let walked = encode::encode(py, obj.as_ptr(), options, classes, Some(&mut finder));
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

/// `dumps(obj)` with the default options but `max_depth`: no seal, no class tables and no
/// buffer callback, so none of [`dumps_with`]'s arguments to pass and test.
pub(crate) fn dumps_plain(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    max_depth: u32,
) -> PyResult<Py<PyBytes>> {
    let options = encode::Options {
        refs: true,
        max_depth,
        canonical: false,
        sort_keys: false,
    };
    encode_bytes(py, obj, options, encode::ClassTables::default(), None)
}

/// `loads(data)` with the default options but `max_depth`: plain payloads only, no classes,
/// no buffers.
pub(crate) fn loads_plain(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    max_depth: u32,
) -> PyResult<Py<PyAny>> {
    static PLAIN_ONLY: OpenConfig = OpenConfig::PLAIN;
    let limits = Limits {
        max_depth,
        max_alloc: None,
    };
    loads_with(
        py,
        data,
        &limits,
        &PLAIN_ONLY,
        crate::options::no_classes(py),
        None,
    )
}

/// A decode with these options, for [`DecodeConfig::loads`] and for `loads(data)`, which
/// needs no `DecodeConfig` (see `fastcall`).
///
/// The common call, a `bytes` object with no buffers and no clock to read, goes straight to
/// the decoder from the caller's own code: through the general path below, with its tests
/// and its call of [`with_input`], a small message paid about 80 instructions more.
#[inline(always)]
pub(crate) fn loads_with(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    limits: &Limits,
    envelope: &OpenConfig,
    classes: &decode::ClassOptions,
    buffers: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    if buffers.is_none() && !envelope.reads_clock() {
        if let Some(slice) = bytes_of(data) {
            return decode::decode_bytes(py, slice, true, limits, envelope, 0, classes, None)
                .map_err(|f| decode_error(py, f));
        }
    }
    loads_any(py, data, limits, envelope, classes, buffers)
}

/// [`loads_with`] for any input, buffers and clock.
#[inline(never)]
fn loads_any(
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
    with_input(py, data, "loads()", |slice| {
        let frozen = frozen_input(data, slice.len());
        decode::decode_bytes(py, slice, frozen, limits, envelope, now, classes, buffers)
            .map_err(|f| decode_error(py, f))
    })
}
