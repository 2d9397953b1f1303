//! Out-of-band buffers (EXT OUT_OF_BAND, spec section 5.16.6): with a `buffer_callback`, the
//! data of a large `bytes`, `bytearray`, `array.array` or numpy array is not copied into the
//! payload. The payload names the buffer by its index, and the caller is handed a read-only
//! memoryview of the object's own memory.
//!
//! The views are collected during the walk and given to the callback by the caller of
//! [`super::encode`] once the payload is complete. An encode may walk the graph more than once
//! (a cycle through a tuple, spec section 6.5) and each pass starts the list afresh, so the
//! callback sees exactly the buffers the final payload names, in index order, and no caller
//! code runs in the middle of the walk (where it could change the graph being written).

use amber_format::ext::{self, BufferKind, ExtBlob, OUT_OF_BAND_THRESHOLD};
use pyo3::prelude::*;
use pyo3::PyErr;
use pyo3_ffi as ffi;

use super::{EncodeFail, FailKind, PyEncoder};
use crate::object::PyObj;

/// The out-of-band buffers of one encode.
#[derive(Default)]
pub struct OutOfBand {
    /// Whether large data goes out of band at all (the caller gave a callback).
    enabled: bool,
    /// The buffers of the current pass by index: a read-only memoryview of unsigned bytes
    /// and the object of the graph it was taken from.
    buffers: Vec<(PyObj, PyObj)>,
    /// Set to find where a buffer sits: the walk stops when it reaches the object at this
    /// address (see [`OutOfBand::find`]).
    stop_at: Option<usize>,
    /// Whether the walk reached `stop_at`.
    found: bool,
}

impl OutOfBand {
    /// Collects buffers for a caller that gave a `buffer_callback`.
    pub fn collect() -> Self {
        OutOfBand {
            enabled: true,
            ..OutOfBand::default()
        }
    }

    /// For a second walk after the callback refused a buffer taken from `source`: the walk
    /// fails where it meets `source` (then [`OutOfBand::found`] is true), so the failure
    /// carries the path to it.
    pub fn find(source: &PyObj) -> Self {
        OutOfBand {
            enabled: true,
            stop_at: Some(source.as_ptr() as usize),
            ..OutOfBand::default()
        }
    }

    /// Whether a walk made with [`OutOfBand::find`] stopped at its object.
    pub fn found(&self) -> bool {
        self.found
    }

    /// The memoryviews and the graph objects they were taken from, by buffer index.
    pub fn into_buffers(self) -> Vec<(PyObj, PyObj)> {
        self.buffers
    }

    /// Forgets the buffers of a pass that is being written again.
    pub fn restart(&mut self) {
        self.buffers.clear();
    }
}

impl PyEncoder<'_> {
    /// Whether a data block of `len` bytes goes out of band.
    #[inline]
    pub(super) fn goes_out_of_band(&self, len: usize) -> bool {
        self.oob.enabled && len >= OUT_OF_BAND_THRESHOLD
    }

    /// Writes `obj` (a bytes, bytearray or array.array, exporting `len` contiguous bytes) as
    /// a reference to a new out-of-band buffer.
    pub(super) fn out_of_band_object(
        &mut self,
        obj: *mut ffi::PyObject,
        kind: BufferKind<'_>,
        len: usize,
    ) -> Result<(), EncodeFail> {
        self.out_of_band(obj, obj, kind, len)
    }

    /// Writes a reference to a new out-of-band buffer: `exporter` holds the data (`obj`
    /// itself, or for an ndarray a flat byte view of it or of its copy), `len` bytes in one
    /// C-contiguous block; `kind` says what it holds (an ndarray's kind carries its header).
    pub(super) fn out_of_band(
        &mut self,
        obj: *mut ffi::PyObject,
        exporter: *mut ffi::PyObject,
        kind: BufferKind<'_>,
        len: usize,
    ) -> Result<(), EncodeFail> {
        if self.oob.stop_at == Some(obj as usize) {
            self.oob.found = true;
            return Err(EncodeFail::new(FailKind::Refused(String::from(
                "stopped at the buffer's object",
            ))));
        }
        // Making the views allocates (and may start a garbage collection).
        self.pin_memo();
        let view = self.byte_view(exporter, len)?;
        self.writer.ext(&ExtBlob::OutOfBand(ext::OutOfBand {
            index: self.oob.buffers.len() as u64,
            length: len as u64,
            kind,
        }));
        // SAFETY: obj is live (held by its container, or by the caller for the root).
        let source = unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(obj)) };
        self.oob.buffers.push((view, source));
        Ok(())
    }

    /// `memoryview(exporter).cast("B").toreadonly()`: a read-only view of unsigned bytes over
    /// the exporter's own memory (no copy), checked to hold `len` bytes.
    fn byte_view(&self, exporter: *mut ffi::PyObject, len: usize) -> Result<PyObj, EncodeFail> {
        let py = self.py;
        let python = |e: PyErr| EncodeFail::new(FailKind::Python(e));
        // SAFETY: exporter is a live object; the result is a new reference, or NULL with an
        // exception set.
        let view =
            unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyMemoryView_FromObject(exporter)) }
                .map_err(python)?;
        let view = view
            .call_method1("cast", ("B",))
            .and_then(|v| v.call_method0("toreadonly"))
            .map_err(python)?;
        let nbytes: usize = view
            .getattr("nbytes")
            .and_then(|n| n.extract())
            .map_err(python)?;
        if nbytes != len {
            return Err(EncodeFail::new(FailKind::Refused(format!(
                "an out-of-band buffer exports {nbytes} bytes, expected {len}"
            ))));
        }
        PyObj::from_owned(view.into_ptr()).ok_or_else(|| EncodeFail::python(py))
    }
}
