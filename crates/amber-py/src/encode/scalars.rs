//! int, float, complex, str, bytes, bytearray.

use std::os::raw::c_int;

use amber_format::ext::BufferKind;
use amber_format::Writer;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_ffi as ffi;

use super::{hold, EncodeFail, PyEncoder};
use crate::buffer::DETACH_COPY_MIN;

impl PyEncoder<'_> {
    #[inline(always)]
    pub(super) fn int(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // SAFETY: obj is an exact int.
        if let Some(v) = unsafe { crate::pylong::small_value(obj) } {
            // CPython shares -5..=256 itself; tracking them would only add lookups.
            if !(-16..=256).contains(&v) && self.write_value_ref_if_seen(obj) {
                return Ok(());
            }
            self.writer.int(v);
            return Ok(());
        }
        // When small_value reads this interpreter's ints, one it left is at least 2^60 in
        // magnitude: neither cached by CPython nor a small int, so the memo comes before the
        // conversion, and a shared one (`[big] * n`) costs no conversion at all, and no call.
        let big = crate::pylong::small_values_readable();
        if big && self.write_value_ref_if_seen(obj) {
            return Ok(());
        }
        self.int_slow(obj, big)
    }

    /// An int [`PyEncoder::int`] could not write from its digits. When `big`, the memo has
    /// already had its turn (it recorded the int, or skipped it as held once).
    #[inline(never)]
    fn int_slow(&mut self, obj: *mut ffi::PyObject, big: bool) -> Result<(), EncodeFail> {
        let mut overflow: c_int = 0;
        // SAFETY: obj is an exact int; this call cannot fail for one (overflow is reported).
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow) };
        if overflow == 0 {
            // CPython shares -5..=256 itself; tracking them would only add lookups.
            let memoized = !(-5..=256).contains(&v) && !Writer::is_small_int(v);
            if !big && memoized && self.write_value_ref_if_seen(obj) {
                return Ok(());
            }
            self.writer.int(v);
            return Ok(());
        }
        if !big && self.write_value_ref_if_seen(obj) {
            return Ok(());
        }
        self.bigint(obj)
    }

    /// Ints beyond 64 bits: `int.to_bytes` is linear in the size, as is the format.
    #[cold]
    fn bigint(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        self.pin_memo();
        let py = self.py;
        // SAFETY: obj is a live int borrowed from its container.
        let int = unsafe { Bound::from_borrowed_ptr(py, obj) };
        let digits = (|| -> PyResult<Vec<u8>> {
            let bits: usize = int.call_method0("bit_length")?.extract()?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("signed", true)?;
            let raw = int.call_method("to_bytes", (bits / 8 + 1, "little"), Some(&kwargs))?;
            Ok(raw.cast::<PyBytes>()?.as_bytes().to_vec())
        })()
        .map_err(|e| EncodeFail::new(super::FailKind::Python(e)))?;
        self.writer.bigint(&digits);
        Ok(())
    }

    #[inline(always)]
    pub(super) fn float(&mut self, obj: *mut ffi::PyObject) {
        if self.write_value_ref_if_seen(obj) {
            return;
        }
        // SAFETY: obj is an exact float.
        self.writer.float(unsafe { ffi::PyFloat_AS_DOUBLE(obj) });
    }

    pub(super) fn complex(&mut self, obj: *mut ffi::PyObject) {
        if self.write_value_ref_if_seen(obj) {
            return;
        }
        // SAFETY: obj is an exact complex; these accessors cannot fail for one.
        let (re, im) = unsafe {
            (
                ffi::PyComplex_RealAsDouble(obj),
                ffi::PyComplex_ImagAsDouble(obj),
            )
        };
        self.writer.complex(re, im);
    }

    #[inline(always)]
    pub(super) fn str(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // SAFETY: obj is an exact str.
        let empty = unsafe { ffi::PyUnicode_GET_LENGTH(obj) } == 0;
        if !empty && self.write_value_ref_if_seen(obj) {
            return Ok(());
        }
        // The state bits are private: read only on the versions build.rs knows (pyo3 does not
        // even declare them for 3.14 and later).
        #[cfg(amber_known_layouts)]
        // SAFETY: obj is an exact str, whose state bits say how its text is stored.
        if unsafe { ffi::PyUnicode_IS_COMPACT_ASCII(obj) } != 0 {
            // SAFETY: a compact ASCII str stores its length-many bytes inline, and ASCII is
            // UTF-8; obj outlives this call.
            let ascii = unsafe {
                std::slice::from_raw_parts(
                    ffi::PyUnicode_DATA(obj).cast::<u8>(),
                    ffi::PyUnicode_GET_LENGTH(obj) as usize,
                )
            };
            self.writer.str(ascii);
            return Ok(());
        }
        #[cfg(amber_known_layouts)]
        // SAFETY: obj is an exact str, whose state bits say how its text is stored.
        if unsafe { ffi::PyUnicode_IS_COMPACT(obj) } != 0 {
            // SAFETY: obj is a compact exact str, not ASCII (checked above), held by its
            // container for the whole encode.
            if let Some(utf8) = unsafe { super::wide_str::cached_utf8(obj) } {
                self.writer.str(utf8);
                return Ok(());
            }
            // SAFETY: obj is a compact exact str, not ASCII (checked above), held by its
            // container for the whole encode.
            return unsafe { self.compact_wide_str(obj) };
        }
        self.str_through_cpython(obj)
    }

    /// A non-ASCII str through CPython's UTF-8 form: a legacy str, or any str when the
    /// layouts are unknown (`wide_str.rs` says why the others are not).
    #[inline(never)]
    fn str_through_cpython(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        let mut size: ffi::Py_ssize_t = 0;
        // SAFETY: obj is a str; on success the pointer stays valid while obj lives (CPython
        // keeps the UTF-8 form inside the object).
        let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(obj, &mut size) };
        if data.is_null() {
            return self.str_with_surrogates(obj);
        }
        // SAFETY: data points to size bytes owned by obj, which outlives this call.
        let utf8 = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) };
        self.writer.str(utf8);
        Ok(())
    }

    /// A str that strict UTF-8 cannot encode holds lone surrogates.
    #[cold]
    pub(super) fn str_with_surrogates(
        &mut self,
        obj: *mut ffi::PyObject,
    ) -> Result<(), EncodeFail> {
        // SAFETY: clearing the UnicodeEncodeError PyUnicode_AsUTF8AndSize raised, if it was
        // the one that found the surrogate.
        unsafe { ffi::PyErr_Clear() };
        // SAFETY: obj is a str; the encoding and error names are NUL-terminated literals.
        let encoded = unsafe {
            ffi::PyUnicode_AsEncodedString(obj, c"utf-8".as_ptr(), c"surrogatepass".as_ptr())
        };
        let Some(encoded) = crate::object::PyObj::from_owned(encoded) else {
            return Err(EncodeFail::python(self.py));
        };
        // SAFETY: encoded is a bytes object we own for the rest of this function.
        let bytes = unsafe { bytes_slice(encoded.as_ptr()) };
        self.writer.str_surrogates(bytes);
        Ok(())
    }

    pub(super) fn bytes(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // SAFETY: obj is an exact bytes object.
        let data = unsafe { bytes_slice(obj) };
        if !data.is_empty() && self.write_value_ref_if_seen(obj) {
            return Ok(());
        }
        if self.goes_out_of_band(data.len()) {
            return self.out_of_band_object(obj, BufferKind::Bytes, data.len());
        }
        if data.len() >= DETACH_COPY_MIN {
            // Copied without the GIL: a bytes object never changes, and this reference keeps
            // it alive should another thread drop its container's meanwhile. Other threads
            // run Python code then, which may free objects the memo knows by address: pin.
            self.pin_memo();
            let _alive = hold(obj);
            self.writer.bytes_header(data.len());
            self.writer.sink_mut().extend_detached(self.py, data);
            return Ok(());
        }
        self.writer.bytes(data);
        Ok(())
    }

    pub(super) fn bytearray(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        if self.write_ref_if_seen(obj) {
            return Ok(());
        }
        // SAFETY: obj is an exact bytearray.
        let len = unsafe { ffi::PyByteArray_GET_SIZE(obj) } as usize;
        if self.goes_out_of_band(len) {
            return self.out_of_band_object(obj, BufferKind::ByteArray, len);
        }
        // SAFETY: obj is an exact bytearray of len bytes; no Python code runs while we read it.
        let data = unsafe {
            if len == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(ffi::PyByteArray_AS_STRING(obj).cast::<u8>(), len)
            }
        };
        self.writer.bytearray(data);
        Ok(())
    }
}

/// The contents of a bytes object.
///
/// # Safety
/// `obj` must be a live bytes object that outlives the returned slice.
unsafe fn bytes_slice<'a>(obj: *mut ffi::PyObject) -> &'a [u8] {
    // SAFETY: per the function contract.
    unsafe {
        std::slice::from_raw_parts(
            ffi::PyBytes_AS_STRING(obj).cast::<u8>(),
            ffi::Py_SIZE(obj) as usize,
        )
    }
}
