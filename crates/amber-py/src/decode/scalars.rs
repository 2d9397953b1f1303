//! None, bool, int, float, complex, str, bytes, bytearray.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_ffi as ffi;

use super::{new_str, PyBuilder};
use crate::buffer::{copy_detached, DETACH_COPY_MIN};
use crate::object::PyObj;
use amber_format::{utf8, BuildError};

impl PyBuilder<'_, '_> {
    #[inline]
    pub(super) fn make_none(&mut self) -> PyObj {
        // SAFETY: None is immortal-or-static and always live.
        unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(ffi::Py_None())) }
    }

    #[inline]
    pub(super) fn make_bool(&mut self, v: bool) -> PyObj {
        // SAFETY: True and False are static singletons, always live.
        unsafe {
            let ptr = if v { ffi::Py_True() } else { ffi::Py_False() };
            PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(ptr))
        }
    }

    #[inline]
    pub(super) fn make_int(&mut self, v: i64) -> Result<PyObj, BuildError> {
        // SAFETY: the GIL is held for the whole decode.
        let small = unsafe { crate::small_ints::get(v) };
        if !small.is_null() {
            // SAFETY: get returned a new reference.
            return Ok(unsafe { PyObj::from_owned(small).unwrap_unchecked() });
        }
        // SAFETY: plain constructor; NULL only with an exception set.
        let ptr = unsafe { ffi::PyLong_FromLongLong(v) };
        self.own(ptr)
    }

    /// `int.from_bytes` is linear in the number of digits.
    #[cold]
    pub(super) fn make_bigint(&mut self, twos_le: &[u8]) -> Result<PyObj, BuildError> {
        let py = self.py;
        let built = (|| -> PyResult<Py<PyAny>> {
            let kwargs = PyDict::new(py);
            kwargs.set_item("signed", true)?;
            let int_type = py.get_type::<pyo3::types::PyInt>();
            let value = int_type.call_method(
                "from_bytes",
                (PyBytes::new(py, twos_le), "little"),
                Some(&kwargs),
            )?;
            Ok(value.unbind())
        })();
        match built {
            Ok(obj) => self.own(obj.into_ptr()),
            Err(e) => {
                self.error = Some(e);
                Err(BuildError::Host)
            }
        }
    }

    #[inline]
    pub(super) fn make_float(&mut self, v: f64) -> Result<PyObj, BuildError> {
        // SAFETY: plain constructor; NULL only with an exception set.
        let ptr = unsafe { ffi::PyFloat_FromDouble(v) };
        self.own(ptr)
    }

    pub(super) fn make_complex(&mut self, re: f64, im: f64) -> Result<PyObj, BuildError> {
        // SAFETY: plain constructor; NULL only with an exception set.
        let ptr = unsafe { ffi::PyComplex_FromDoubles(re, im) };
        self.own(ptr)
    }

    /// A str from bytes the payload says are strict UTF-8. ASCII, the common case, is copied
    /// into a new compact str without a second validation pass.
    // Always inlined: LLVM stops inlining it once `_trace` decodes through it too, which costs
    // `loads` a call per str.
    #[inline(always)]
    pub(super) fn make_str(&mut self, utf8: &[u8]) -> Result<PyObj, BuildError> {
        if crate::short_bytes::is_ascii(utf8) {
            // SAFETY: every byte is below 0x80 (checked); the GIL is held.
            let ptr = unsafe { new_str::new_ascii_str(utf8) };
            if ptr.is_null() {
                return Err(self.host_failure());
            }
            return self.own(ptr);
        }
        self.make_wide_str(utf8)
    }

    /// A str with a character above U+007F, decoded here rather than by CPython: its UTF-8
    /// decoder fills a 1-byte buffer until the first wider character, then widens the buffer
    /// and starts again, and that restart was most of the cost of decoding such strs.
    #[inline(never)]
    pub(super) fn make_wide_str(&mut self, utf8: &[u8]) -> Result<PyObj, BuildError> {
        let scan = utf8::scan(utf8).ok_or(BuildError::InvalidUtf8)?;
        let count = scan.count;
        // CPython requires the narrowest kind that holds every character; scan's OR of the
        // code points tells which (a bit at or above 8, or 16, is set exactly when one of them
        // needs it). decode_into writes all `count` units, since scan counted that many points
        // in valid UTF-8.
        // SAFETY (each arm): the GIL is held, count >= 1 (a non-ASCII character), and the
        // kind is the narrowest that holds every character.
        let ptr = unsafe {
            match scan.seen {
                0..=0xFF => new_str::new_wide_str::<u8>(count, |units| {
                    utf8::decode_into(utf8, units);
                }),
                0x100..=0xFFFF => new_str::new_wide_str::<u16>(count, |units| {
                    utf8::decode_into(utf8, units);
                }),
                _ => {
                    let ptr = ffi::PyUnicode_New(count as ffi::Py_ssize_t, 0x10_FFFF);
                    if !ptr.is_null() {
                        fill_units::<u32>(ffi::PyUnicode_DATA(ptr), count, utf8);
                    }
                    ptr
                }
            }
        };
        if ptr.is_null() {
            return Err(self.host_failure());
        }
        self.own(ptr)
    }

    /// A str whose UTF-8 may also encode surrogates (U+D800..U+DFFF), which CPython's
    /// `surrogatepass` handler validates and decodes.
    #[cold]
    pub(super) fn make_str_with_surrogates(&mut self, bytes: &[u8]) -> Result<PyObj, BuildError> {
        // SAFETY: bytes is a valid slice; CPython validates the bytes and copies them.
        let ptr = unsafe {
            ffi::PyUnicode_DecodeUTF8(
                bytes.as_ptr().cast(),
                bytes.len() as ffi::Py_ssize_t,
                c"surrogatepass".as_ptr(),
            )
        };
        if ptr.is_null() {
            // SAFETY: an exception is set; a UnicodeDecodeError means the bytes are invalid.
            if unsafe { ffi::PyErr_ExceptionMatches(ffi::PyExc_UnicodeDecodeError) } != 0 {
                // SAFETY: discarding the exception we just classified.
                unsafe { ffi::PyErr_Clear() };
                return Err(BuildError::InvalidUtf8);
            }
            return Err(self.host_failure());
        }
        self.own(ptr)
    }

    #[inline]
    pub(super) fn make_bytes(&mut self, b: &[u8]) -> Result<PyObj, BuildError> {
        if b.len() >= DETACH_COPY_MIN {
            return self.make_large_bytes(b, false);
        }
        // SAFETY: copies b.len() bytes from a valid slice.
        let ptr = unsafe {
            ffi::PyBytes_FromStringAndSize(b.as_ptr().cast(), b.len() as ffi::Py_ssize_t)
        };
        self.own(ptr)
    }

    pub(super) fn make_bytearray(&mut self, b: &[u8]) -> Result<PyObj, BuildError> {
        if b.len() >= DETACH_COPY_MIN {
            return self.make_large_bytes(b, true);
        }
        // SAFETY: copies b.len() bytes from a valid slice.
        let ptr = unsafe {
            ffi::PyByteArray_FromStringAndSize(b.as_ptr().cast(), b.len() as ffi::Py_ssize_t)
        };
        self.own(ptr)
    }

    /// A large `bytes` or `bytearray`: made empty of its size, then filled by a copy that
    /// may run without the GIL.
    #[cold]
    fn make_large_bytes(&mut self, b: &[u8], mutable: bool) -> Result<PyObj, BuildError> {
        let len = b.len() as ffi::Py_ssize_t;
        // SAFETY: a NULL source asks for an object of len uninitialised bytes.
        let ptr = unsafe {
            if mutable {
                ffi::PyByteArray_FromStringAndSize(std::ptr::null(), len)
            } else {
                ffi::PyBytes_FromStringAndSize(std::ptr::null(), len)
            }
        };
        let obj = self.own(ptr)?;
        // SAFETY: obj is the new object of exactly b.len() bytes, which only this decoder
        // holds; its buffer does not overlap the input.
        unsafe {
            // A bytes object is written only now, before anyone else can see it.
            let dst: *mut u8 = if mutable {
                ffi::PyByteArray_AS_STRING(obj.as_ptr()).cast()
            } else {
                ffi::PyBytes_AS_STRING(obj.as_ptr()).cast_mut().cast()
            };
            copy_detached(self.py, b, dst, self.frozen_body);
        }
        Ok(obj)
    }
}

/// Writes the `count` code points of `utf8`, valid UTF-8 that [`utf8::scan`] counted, as
/// units of type `T` at `data`.
///
/// # Safety
/// `data` must be aligned for `T` and writable for `count` units, which nothing else reads
/// or writes meanwhile; `T` must hold every code point of `utf8`.
#[inline(always)]
unsafe fn fill_units<T: utf8::Unit>(data: *mut std::ffi::c_void, count: usize, utf8: &[u8]) {
    // SAFETY: the caller's promise: `count` writable, aligned, unshared units.
    let units = unsafe { std::slice::from_raw_parts_mut(data.cast::<T>(), count) };
    // Writes all `count` units, since scan counted that many points in valid UTF-8.
    utf8::decode_into(utf8, units);
}
