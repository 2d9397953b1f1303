//! OUT_OF_BAND values (spec section 5.16.6): the data is in one of the buffers the caller
//! passes next to the payload (`loads(data, buffers=[...])`); the blob says which one, how
//! long it is and what it holds.
//!
//! Every check of the blob itself comes first (`invalid_ext`), then the buffer is looked up
//! (`missing_buffer`) and measured (`buffer_mismatch`). What is allocated: nothing for an
//! exact `bytes` buffer (the caller's object is the value) or an ndarray (a view of the
//! caller's memory), one copy of the buffer for the other kinds. Each buffer backs at most
//! one value of a payload, so the copies together never exceed the buffers the caller passed.

use amber_format::ext::{BufferKind, OutOfBandRef};
use amber_format::{BuildError, ErrorKind};
use pyo3_ffi as ffi;
use rustc_hash::FxHashSet;

use super::known::{invalid, Reader};
use super::PyBuilder;
use crate::object::PyObj;

/// The caller's out-of-band buffers for one decode.
pub struct Buffers<'o> {
    /// The buffers, or `None` when the caller passed none.
    given: Option<&'o [PyObj]>,
    /// The indices referred to so far: a buffer may back only one value.
    used: FxHashSet<u64>,
}

impl<'o> Buffers<'o> {
    /// The buffers passed to one decode, if any.
    pub fn new(given: Option<&'o [PyObj]>) -> Self {
        Buffers {
            given,
            used: FxHashSet::default(),
        }
    }
}

/// An error of `kind` with a sentence for people.
#[cold]
fn rejected(kind: ErrorKind, detail: String) -> BuildError {
    BuildError::Rejected(kind, detail)
}

impl PyBuilder<'_, '_> {
    /// The value of an OUT_OF_BAND blob.
    pub(super) fn out_of_band(&mut self, blob: &[u8]) -> Result<PyObj, BuildError> {
        let oob = OutOfBandRef::parse(blob).map_err(invalid)?;
        // The layout checks that need the host come before the buffer, like the others.
        let shell = match oob.kind {
            BufferKind::Array(typecode) => Some(self.empty_array("OUT_OF_BAND array", typecode)?),
            _ => None,
        };
        let header = match oob.kind {
            BufferKind::NdArray { .. } => {
                let mut r = Reader::new("OUT_OF_BAND", oob.ndarray_header);
                let header = self.ndarray_header(&mut r)?;
                r.end()?;
                if header.nbytes != oob.length {
                    return Err(invalid(format!(
                        "OUT_OF_BAND length {} does not match shape {:?} and item size {}, which need {}",
                        oob.length, header.dims, header.itemsize, header.nbytes
                    )));
                }
                Some(header)
            }
            _ => None,
        };
        if !self.oob.used.insert(oob.index) {
            return Err(invalid(format!(
                "OUT_OF_BAND buffer {} is already used by an earlier value of this payload",
                oob.index
            )));
        }
        let buffer = self.oob_buffer(oob.index)?;
        let len = self.oob_buffer_len(&buffer, oob.index)?;
        if len != oob.length {
            return Err(rejected(
                ErrorKind::BufferMismatch,
                format!(
                    "out-of-band buffer {} has {len} bytes; the payload says {}",
                    oob.index, oob.length
                ),
            ));
        }
        // SAFETY: a type check on a live object.
        let exact_bytes = unsafe { ffi::PyBytes_CheckExact(buffer.as_ptr()) } != 0;
        match (oob.kind, shell, header) {
            (BufferKind::Bytes, ..) if exact_bytes => Ok(buffer),
            (BufferKind::Bytes, ..) => {
                // SAFETY: bytes(buffer) copies any object with the buffer protocol; NULL
                // means an exception is set.
                let ptr = unsafe { ffi::PyBytes_FromObject(buffer.as_ptr()) };
                self.made(ptr, "OUT_OF_BAND bytes")
            }
            (BufferKind::ByteArray, ..) => {
                // SAFETY: bytearray(buffer) copies it (a fresh object, so the caller's memory
                // is never shared with a mutable value); NULL means an exception is set.
                let ptr = unsafe { ffi::PyByteArray_FromObject(buffer.as_ptr()) };
                self.made(ptr, "OUT_OF_BAND bytearray")
            }
            (BufferKind::Array(typecode), Some(array), _) => {
                self.fill_array(&array, &buffer, typecode)?;
                Ok(array)
            }
            (BufferKind::NdArray { fortran }, _, Some(header)) => {
                self.ndarray_over(&buffer, &header, fortran)
            }
            _ => Err(invalid(String::from("OUT_OF_BAND value of no kind"))),
        }
    }

    /// The caller's buffer at `index`, or `missing_buffer`.
    fn oob_buffer(&self, index: u64) -> Result<PyObj, BuildError> {
        let Some(given) = self.oob.given else {
            return Err(rejected(
                ErrorKind::MissingBuffer,
                format!(
                    "the payload refers to out-of-band buffer {index}; pass the buffers its \
                     encoder gave to buffer_callback as loads(data, buffers=...)"
                ),
            ));
        };
        usize::try_from(index)
            .ok()
            .and_then(|i| given.get(i))
            .cloned()
            .ok_or_else(|| {
                rejected(
                    ErrorKind::MissingBuffer,
                    format!(
                        "the payload refers to out-of-band buffer {index}, but only {} buffers \
                         were given",
                        given.len()
                    ),
                )
            })
    }

    /// The length of a buffer that exports one C-contiguous block, or `buffer_mismatch`.
    fn oob_buffer_len(&mut self, buffer: &PyObj, index: u64) -> Result<u64, BuildError> {
        // SAFETY: a zeroed Py_buffer is the documented initial state for GetBuffer.
        let mut view = crate::buffer::BufferView(unsafe { std::mem::zeroed() });
        // SAFETY: asks for a plain C-contiguous view; -1 means an exception is set (and
        // view.obj stays NULL, so dropping the view is a no-op).
        if unsafe { ffi::PyObject_GetBuffer(buffer.as_ptr(), &mut view.0, ffi::PyBUF_SIMPLE) } < 0 {
            // SAFETY: an exception is set; checking its type.
            if unsafe { ffi::PyErr_ExceptionMatches(ffi::PyExc_MemoryError) } != 0 {
                return Err(self.python_rejected("out-of-band buffer"));
            }
            // SAFETY: discarding the BufferError, reported as a format error instead.
            unsafe { ffi::PyErr_Clear() };
            return Err(rejected(
                ErrorKind::BufferMismatch,
                format!("out-of-band buffer {index} is not one C-contiguous block of bytes"),
            ));
        }
        Ok(view.0.len.max(0) as u64)
    }
}
