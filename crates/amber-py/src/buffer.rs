//! Python buffers read in place: the view guard, and the bytes of a call's input.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3_ffi as ffi;

use crate::envelope::DETACH_MIN;

/// Releases a buffer view when dropped.
pub(crate) struct BufferView(pub(crate) ffi::Py_buffer);

impl Drop for BufferView {
    fn drop(&mut self) {
        // SAFETY: the view was filled by a successful PyObject_GetBuffer; GIL held.
        unsafe { ffi::PyBuffer_Release(&mut self.0) };
    }
}

/// Whether no Python code can change the `len` bytes a call reads from `data` while it reads
/// them with the GIL released: `data` is a `bytes` object, or a memoryview of one. A memoryview
/// keeps its base alive, and cannot be released while the call's own export of it lasts. Its
/// base is looked at only when `len` reaches [`DETACH_MIN`], below which nothing is read
/// without the GIL, since the lookup costs an attribute access on every message of a stream.
pub(crate) fn frozen_input(data: &Bound<'_, PyAny>, len: usize) -> bool {
    let ptr = data.as_ptr();
    // SAFETY: type checks on a live object.
    if unsafe { ffi::PyBytes_Check(ptr) } != 0 {
        return true;
    }
    // SAFETY: as above.
    if len < DETACH_MIN || unsafe { ffi::PyMemoryView_Check(ptr) } == 0 {
        return false;
    }
    data.getattr("obj")
        // SAFETY: a type check on the live base object.
        .is_ok_and(|base| unsafe { ffi::PyBytes_Check(base.as_ptr()) } != 0)
}

/// Copies of at least this many bytes run with the GIL released (see [`copy_detached`]): a
/// mebibyte takes some 50 to 100 µs to copy, far more than giving up and taking back the GIL.
pub(crate) const DETACH_COPY_MIN: usize = 1 << 20;

/// Copies `src` to `dst`, with the GIL released for a copy of [`DETACH_COPY_MIN`] bytes or
/// more when `frozen` says no Python code can change `src` meanwhile (the memory of a `bytes`
/// object the caller holds, or a body the decoder decompressed into memory of its own).
///
/// # Safety
/// `dst` must be valid for `src.len()` bytes of writes, must not overlap `src`, and must be
/// memory of an object no other thread can reach yet (one the caller has just made).
pub(crate) unsafe fn copy_detached(py: Python<'_>, src: &[u8], dst: *mut u8, frozen: bool) {
    if frozen && src.len() >= DETACH_COPY_MIN {
        // An address crosses into the closure: only this thread knows the new object, and
        // the caller holds it for the whole copy.
        let dst = dst as usize;
        py.detach(|| {
            // SAFETY: as the caller promised; `src` cannot change while the GIL is released
            // (`frozen`), and nothing else can reach `dst`.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, src.len()) }
        });
    } else {
        // SAFETY: as the caller promised.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
    }
}

/// The contents of `data` if it is a `bytes` object (of any subclass): memory that never
/// changes, which `data` keeps alive as long as it lives.
#[inline(always)]
pub(crate) fn bytes_of<'a>(data: &'a Bound<'_, PyAny>) -> Option<&'a [u8]> {
    let ptr = data.as_ptr();
    // SAFETY: type check on a live object.
    if unsafe { ffi::PyBytes_Check(ptr) } == 0 {
        return None;
    }
    // SAFETY: ptr is a bytes object that `data` holds for 'a, and bytes are immutable.
    Some(unsafe {
        std::slice::from_raw_parts(
            ffi::PyBytes_AS_STRING(ptr).cast::<u8>(),
            ffi::Py_SIZE(ptr) as usize,
        )
    })
}

/// Runs `f` on the bytes of `data` (bytes, or any C-contiguous buffer), which `what` names in
/// the TypeError for anything else.
pub(crate) fn with_input<T>(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    what: &str,
    f: impl FnOnce(&[u8]) -> PyResult<T>,
) -> PyResult<T> {
    if let Some(slice) = bytes_of(data) {
        return f(slice);
    }
    let ptr = data.as_ptr();
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
