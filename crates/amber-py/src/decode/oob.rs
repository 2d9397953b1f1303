//! OUT_OF_BAND values (spec section 5.16.6): the data is in one of the buffers the caller
//! passes next to the payload (`loads(data, buffers=[...])`); the blob says which one, how
//! long it is and what it holds.
//!
//! The format crate checks the blob and that no two values of a payload use one buffer; the
//! host's checks of an array typecode or an ndarray's dtype come next (`invalid_ext`), then
//! the buffer is looked up (`missing_buffer`) and measured (`buffer_mismatch`). What is
//! allocated: nothing for an exact `bytes` buffer (the caller's object is the value) or an
//! ndarray (a view of the caller's memory), one copy of the buffer for the other kinds. Each
//! buffer backs at most one value of a payload, so the copies together never exceed the
//! buffers the caller passed.

use amber_format::ext::{ArrayTypecode, BufferKind, OutOfBand};
use amber_format::{BuildError, ErrorKind};
use pyo3_ffi as ffi;

use super::known::invalid;
use super::numpy::NdHeader;
use super::PyBuilder;
use crate::object::PyObj;

/// The caller's out-of-band buffers for one decode.
pub struct Buffers<'o> {
    /// The buffers, or `None` when the caller passed none.
    given: Option<&'o [PyObj]>,
}

impl<'o> Buffers<'o> {
    /// The buffers passed to one decode, if any.
    pub fn new(given: Option<&'o [PyObj]>) -> Self {
        Buffers { given }
    }
}

/// An error of `kind` with a sentence for people.
#[cold]
fn rejected(kind: ErrorKind, detail: String) -> BuildError {
    BuildError::Rejected(kind, detail)
}

/// What a buffer becomes, made ready (with the host's checks) before the buffer is looked up.
enum Shell<'a> {
    Bytes,
    ByteArray,
    /// An empty array of the typecode, to fill from the buffer.
    Array(PyObj, ArrayTypecode),
    /// The header with its dtype made, and whether the data is in Fortran order.
    NdArray(NdHeader<'a>, bool),
}

impl PyBuilder<'_, '_> {
    /// The value of an OUT_OF_BAND blob.
    pub(super) fn out_of_band(&mut self, oob: OutOfBand<'_>) -> Result<PyObj, BuildError> {
        // The layout checks that need the host come before the buffer, like the others.
        let shell = match oob.kind {
            BufferKind::Bytes => Shell::Bytes,
            BufferKind::ByteArray => Shell::ByteArray,
            BufferKind::Array(typecode) => {
                Shell::Array(self.empty_array("OUT_OF_BAND array", typecode)?, typecode)
            }
            BufferKind::NdArray { fortran, header } => {
                let header = self.ndarray_header("OUT_OF_BAND", &header)?;
                // The format crate checked this for dtypes whose text tells the item size;
                // numpy tells it for the others.
                if header.nbytes != oob.length {
                    return Err(invalid(format!(
                        "OUT_OF_BAND length {} does not match shape {:?} and item size {}, which need {}",
                        oob.length, header.dims.to_vec(), header.itemsize, header.nbytes
                    )));
                }
                Shell::NdArray(header, fortran)
            }
        };
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
        match shell {
            // SAFETY: a type check on a live object.
            Shell::Bytes if unsafe { ffi::PyBytes_CheckExact(buffer.as_ptr()) } != 0 => Ok(buffer),
            Shell::Bytes => {
                // SAFETY: bytes(buffer) copies any object with the buffer protocol; NULL
                // means an exception is set.
                let ptr = unsafe { ffi::PyBytes_FromObject(buffer.as_ptr()) };
                self.made(ptr, "OUT_OF_BAND bytes")
            }
            Shell::ByteArray => {
                // SAFETY: bytearray(buffer) copies it (a fresh object, so the caller's memory
                // is never shared with a mutable value); NULL means an exception is set.
                let ptr = unsafe { ffi::PyByteArray_FromObject(buffer.as_ptr()) };
                self.made(ptr, "OUT_OF_BAND bytearray")
            }
            Shell::Array(array, typecode) => {
                self.fill_array(&array, &buffer, typecode)?;
                Ok(array)
            }
            Shell::NdArray(header, fortran) => self.ndarray_over(&buffer, &header, fortran),
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
