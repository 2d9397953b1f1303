//! numpy arrays and scalars as EXT blobs (raw data, dtype and shape). numpy is never
//! imported here: an object can only be a numpy array if numpy is already loaded.
//!
//! An array's data goes from its buffer straight into the payload: one copy, at memory
//! speed. Arrays that are not C-contiguous (Fortran order, strided views) are first copied
//! to C order by numpy.

use std::ffi::CStr;
use std::sync::Mutex;

use amber_format::ext::{
    BufferKind, Dims, Dtype, ExtBlob, NdArray, NdArrayHeader, NumpyScalar, MAX_DTYPE_LEN, MAX_NDIM,
    PLAIN_KINDS,
};
use pyo3::prelude::PyAnyMethods;
use pyo3_ffi as ffi;

use super::{EncodeFail, FailKind, PyEncoder};
use crate::object::{Cached, PyObj};

/// An interned str for an attribute name, made on first use and kept (NULL, with an
/// exception set, only if that fails).
macro_rules! interned {
    ($name:literal) => {{
        static NAME: Cached = Cached::new();
        // SAFETY: interning a NUL-terminated ASCII literal with the GIL held.
        NAME.get_or_init(|| unsafe { ffi::PyUnicode_InternFromString($name.as_ptr()) })
    }};
}

/// dtypes already checked, by address (a strong reference, never released, keeps each
/// address theirs): the dtype text written for them and the item size. Bounded.
static DTYPE_CACHE: Mutex<Vec<(usize, Vec<u8>, usize)>> = Mutex::new(Vec::new());
const DTYPE_CACHE_MAX: usize = 64;

static NDARRAY: Cached = Cached::new();
static GENERIC: Cached = Cached::new();

#[cold]
fn refuse(reason: String) -> EncodeFail {
    EncodeFail::new(FailKind::Refused(reason))
}

/// The dtype the format crate reads from `text`: it refuses a text it would not decode.
fn checked_dtype(text: &[u8]) -> Result<Dtype<'_>, EncodeFail> {
    Dtype::from_text(text).map_err(|e| refuse(format!("numpy dtype cannot be written: {e}")))
}

/// The numpy values amber writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumpyKind {
    /// An exact `numpy.ndarray` (NDARRAY).
    Array,
    /// One of numpy's own scalar types (NUMPY_SCALAR).
    Scalar,
}

/// Which numpy value an exact type is, if any (never imports numpy: a numpy type exists only
/// once numpy is loaded).
pub(crate) fn numpy_kind(ty: *mut ffi::PyTypeObject) -> Option<NumpyKind> {
    // SAFETY: ty is a live type object; tp_name is a NUL-terminated string it owns.
    let name = unsafe { CStr::from_ptr((*ty).tp_name) }.to_bytes();
    if !name.starts_with(b"numpy.") {
        return None;
    }
    let ndarray = NDARRAY.loaded_attr(c"numpy", c"ndarray");
    if ndarray.is_null() {
        return None;
    }
    if ty == ndarray.cast() {
        return Some(NumpyKind::Array);
    }
    let generic = GENERIC.loaded_attr(c"numpy", c"generic");
    if generic.is_null() {
        return None;
    }
    // numpy's own scalar types are static C types; a subclass made in Python is a heap
    // type and not ours.
    // SAFETY: ty and generic are live type objects.
    let scalar = unsafe {
        ffi::PyType_GetFlags(ty) & ffi::Py_TPFLAGS_HEAPTYPE == 0
            && ffi::PyType_IsSubtype(ty, generic.cast()) != 0
    };
    scalar.then_some(NumpyKind::Scalar)
}

impl PyEncoder<'_> {
    /// Writes `obj` if it is an exact `numpy.ndarray` or a numpy scalar; `None` otherwise.
    pub(super) fn numpy_value(
        &mut self,
        obj: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
    ) -> Option<Result<(), EncodeFail>> {
        match numpy_kind(ty)? {
            NumpyKind::Array => Some(self.ndarray(obj)),
            NumpyKind::Scalar => Some(self.numpy_scalar(obj)),
        }
    }

    /// `obj.name` for an interned name, a new reference.
    fn np_attr(
        &self,
        obj: *mut ffi::PyObject,
        name: *mut ffi::PyObject,
    ) -> Result<PyObj, EncodeFail> {
        if name.is_null() {
            return Err(EncodeFail::python(self.py));
        }
        // SAFETY: obj and name are live; NULL means an exception is set.
        PyObj::from_owned(unsafe { ffi::PyObject_GetAttr(obj, name) })
            .ok_or_else(|| EncodeFail::python(self.py))
    }

    fn np_size(&self, v: &PyObj, what: &str) -> Result<usize, EncodeFail> {
        // SAFETY: v is live; -1 with an exception when it is not an int or overflows.
        let n = unsafe { ffi::PyLong_AsSsize_t(v.as_ptr()) };
        if n < 0 {
            // SAFETY: clears a possible TypeError/OverflowError.
            unsafe { ffi::PyErr_Clear() };
            return Err(refuse(format!("numpy {what} is not a size")));
        }
        Ok(n as usize)
    }

    /// Checks a dtype and writes the text written for it (`dtype.str`, or a structured
    /// dtype's JSON) to `out`; returns the item size.
    fn np_dtype(&self, dtype: &PyObj, out: &mut Vec<u8>) -> Result<usize, EncodeFail> {
        let dt = dtype.as_ptr();
        if let Ok(cache) = DTYPE_CACHE.lock() {
            if let Some((_, head, itemsize)) = cache.iter().find(|(p, _, _)| *p == dt as usize) {
                out.extend_from_slice(head);
                return Ok(*itemsize);
            }
        }
        let start = out.len();
        let itemsize = self.np_dtype_checked(dt, out)?;
        if let Ok(mut cache) = DTYPE_CACHE.lock() {
            if cache.len() < DTYPE_CACHE_MAX {
                let head = out.get(start..).unwrap_or_default().to_vec();
                // The cache keeps a reference for good, so the address stays this dtype's.
                // SAFETY: dt is a live object; the GIL is held.
                unsafe { ffi::Py_INCREF(dt) };
                cache.push((dt as usize, head, itemsize));
            }
        }
        Ok(itemsize)
    }

    fn np_dtype_checked(
        &self,
        dt: *mut ffi::PyObject,
        out: &mut Vec<u8>,
    ) -> Result<usize, EncodeFail> {
        let kind = self.np_attr(dt, interned!(c"kind"))?;
        let kind = crate::object::str_utf8(&kind).unwrap_or_default();
        let plain = matches!(kind.as_slice(), [k] if PLAIN_KINDS.contains(k));
        let structured = plain && kind == b"V" && {
            let fields = self.np_attr(dt, interned!(c"fields"))?;
            let subdtype = self.np_attr(dt, interned!(c"subdtype"))?;
            // SAFETY: comparing with the None singleton.
            let none = unsafe { ffi::Py_None() };
            fields.as_ptr() != none || subdtype.as_ptr() != none
        };
        let text = self.np_attr(dt, interned!(c"str"))?;
        let mut text = crate::object::str_utf8(&text).unwrap_or_default();
        if !plain {
            let shown = String::from_utf8_lossy(&text);
            let why = if kind == b"O" {
                "object arrays hold Python objects, not data"
            } else {
                "its items are not plain data"
            };
            return Err(refuse(format!(
                "numpy dtype {shown:?} cannot be written: {why}"
            )));
        }
        if structured {
            // Fields travel as JSON of numpy's descr (see amber._dtypes).
            // SAFETY: dt is a live dtype.
            let dtype = unsafe { pyo3::Bound::from_borrowed_ptr(self.py, dt) };
            let described = crate::callbacks::Callback::StructuredText
                .call(self.py, (dtype,))
                .map_err(|e| refuse(e.value(self.py).to_string()))?;
            text = described
                .extract::<String>()
                .map_err(|_| refuse(String::from("a structured dtype did not describe itself")))?
                .into_bytes();
        } else if text.is_empty() || text.len() as u64 > MAX_DTYPE_LEN || !text.is_ascii() {
            return Err(refuse(format!(
                "numpy dtype string {:?} is not 1..64 ASCII characters",
                String::from_utf8_lossy(&text)
            )));
        }
        let itemsize = self.np_attr(dt, interned!(c"itemsize"))?;
        let itemsize = self.np_size(&itemsize, "itemsize")?;
        out.extend_from_slice(&text);
        Ok(itemsize)
    }

    fn ndarray(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        if self.write_ref_if_seen(obj) {
            return Ok(());
        }
        let shape = self.np_attr(obj, interned!(c"shape"))?;
        let shape_ptr = shape.as_ptr();
        // SAFETY: type check on a live object.
        if unsafe { ffi::PyTuple_Check(shape_ptr) } == 0 {
            return Err(refuse(String::from("numpy array shape is not a tuple")));
        }
        // SAFETY: shape is a tuple we hold.
        let ndim = unsafe { ffi::PyTuple_GET_SIZE(shape_ptr) } as usize;
        if ndim as u64 > MAX_NDIM {
            return Err(refuse(format!(
                "numpy array has {ndim} dimensions; at most {MAX_NDIM} can be written"
            )));
        }
        let mut dims = [0u64; MAX_NDIM as usize];
        for (i, slot) in dims.iter_mut().enumerate().take(ndim) {
            // SAFETY: 0 <= i < len(shape); a new reference to the borrowed item.
            let dim = unsafe {
                PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(ffi::PyTuple_GET_ITEM(
                    shape_ptr,
                    i as ffi::Py_ssize_t,
                )))
            };
            *slot = self.np_size(&dim, "dimension")? as u64;
        }
        let mut wire_dims = Vec::with_capacity(2 * ndim);
        let dims = Dims::encode(dims.get(..ndim).unwrap_or(&[]), &mut wire_dims)
            .map_err(|e| refuse(format!("numpy array cannot be written: {e}")))?;
        let dtype = self.np_attr(obj, interned!(c"dtype"))?;
        let mut text = Vec::with_capacity(16);
        let itemsize = self.np_dtype(&dtype, &mut text)?;
        let header = NdArrayHeader {
            dims,
            dtype: checked_dtype(&text)?,
        };
        let expected = usize::try_from(dims.count())
            .unwrap_or(usize::MAX)
            .saturating_mul(itemsize);
        if self.goes_out_of_band(expected) {
            return self.ndarray_out_of_band(obj, header, expected);
        }

        // The data, C-contiguous: the array's own buffer, or a C-order copy of it.
        // SAFETY: obj is live; a new reference to it.
        let mut source = unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(obj)) };
        // SAFETY: a zeroed Py_buffer is the documented initial state for GetBuffer.
        let mut view = crate::buffer::BufferView(unsafe { std::mem::zeroed() });
        // SAFETY: asks for a C-contiguous read-only view without a format (numpy exports
        // every plain dtype that way); -1 means an exception is set.
        if unsafe { ffi::PyObject_GetBuffer(source.as_ptr(), &mut view.0, ffi::PyBUF_C_CONTIGUOUS) }
            < 0
        {
            // Not C-contiguous: let numpy make a C-order copy.
            // SAFETY: clears the ValueError; the copy is a new array (NULL with an error).
            unsafe { ffi::PyErr_Clear() };
            let copy = self.np_attr(obj, interned!(c"copy"))?;
            // SAFETY: copy is a bound method; calling it with no args makes a C-order copy.
            source = PyObj::from_owned(unsafe { ffi::PyObject_CallNoArgs(copy.as_ptr()) })
                .ok_or_else(|| EncodeFail::python(self.py))?;
            // SAFETY: as above, on the fresh C-order copy.
            if unsafe {
                ffi::PyObject_GetBuffer(source.as_ptr(), &mut view.0, ffi::PyBUF_C_CONTIGUOUS)
            } < 0
            {
                // A failed GetBuffer leaves view.obj NULL, so dropping `view` is a no-op.
                return Err(EncodeFail::python(self.py));
            }
        }
        let len = view.0.len.max(0) as usize;
        if len != expected {
            return Err(refuse(format!(
                "numpy array buffer has {len} bytes, expected {expected}"
            )));
        }
        let data: &[u8] = if len == 0 || view.0.buf.is_null() {
            &[]
        } else {
            // SAFETY: the view exports len contiguous bytes, valid until `view` drops (the
            // array cannot be resized while exported); no Python code runs meanwhile.
            unsafe { std::slice::from_raw_parts(view.0.buf.cast::<u8>(), len) }
        };
        self.writer.ext(&ExtBlob::NdArray(NdArray { header, data }));
        drop(view);
        drop(source);
        Ok(())
    }

    /// An array whose `len` bytes of data go out of band, described by `header`.
    /// The buffer is the array's own memory when it is C- or Fortran-contiguous; any other
    /// array is first copied to C order by numpy, and the copy is the buffer.
    fn ndarray_out_of_band(
        &mut self,
        obj: *mut ffi::PyObject,
        header: NdArrayHeader<'_>,
        len: usize,
    ) -> Result<(), EncodeFail> {
        let exports = |flags: std::os::raw::c_int| {
            // SAFETY: a zeroed Py_buffer is the documented initial state for GetBuffer.
            let mut view = crate::buffer::BufferView(unsafe { std::mem::zeroed() });
            // SAFETY: asks for a view with that contiguity and no format (numpy exports
            // every plain dtype that way); -1 means an exception is set, which is cleared.
            // A failed GetBuffer leaves view.obj NULL, so dropping `view` is a no-op.
            let ok = unsafe { ffi::PyObject_GetBuffer(obj, &mut view.0, flags) } == 0;
            if !ok {
                // SAFETY: clears the ValueError of a refused export.
                unsafe { ffi::PyErr_Clear() };
            }
            ok
        };
        // SAFETY: obj is live; a new reference to it.
        let mut source = unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(obj)) };
        let fortran = if exports(ffi::PyBUF_C_CONTIGUOUS) {
            false
        } else if exports(ffi::PyBUF_F_CONTIGUOUS) {
            true
        } else {
            let copy = self.np_attr(obj, interned!(c"copy"))?;
            // SAFETY: copy is a bound method; calling it with no args makes a C-order copy.
            source = PyObj::from_owned(unsafe { ffi::PyObject_CallNoArgs(copy.as_ptr()) })
                .ok_or_else(|| EncodeFail::python(self.py))?;
            false
        };
        // The data as one flat run of bytes in memory order: for a contiguous array,
        // `ravel("K")` is a view, and a `u1` view of it exports any plain dtype (datetime64
        // included, which numpy refuses to describe in a memoryview).
        // SAFETY: source is a live ndarray we hold.
        let source = unsafe { pyo3::Bound::from_borrowed_ptr(self.py, source.as_ptr()) };
        let flat = source
            .call_method1("ravel", ("K",))
            .and_then(|f| f.call_method1("view", ("u1",)))
            .map_err(|e| EncodeFail::new(FailKind::Python(e)))?;
        let kind = BufferKind::NdArray { fortran, header };
        self.out_of_band(obj, flat.as_ptr(), kind, len)
    }

    fn numpy_scalar(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        if self.write_value_ref_if_seen(obj) {
            return Ok(());
        }
        let mut text = Vec::with_capacity(16);
        let dtype = self.np_attr(obj, interned!(c"dtype"))?;
        let itemsize = self.np_dtype(&dtype, &mut text)?;
        let tobytes = self.np_attr(obj, interned!(c"tobytes"))?;
        // SAFETY: tobytes is a bound method; NULL means an exception is set.
        let raw = PyObj::from_owned(unsafe { ffi::PyObject_CallNoArgs(tobytes.as_ptr()) })
            .ok_or_else(|| EncodeFail::python(self.py))?;
        // SAFETY: type check on a live object.
        if unsafe { ffi::PyBytes_Check(raw.as_ptr()) } == 0 {
            return Err(refuse(String::from("numpy scalar tobytes() is not bytes")));
        }
        // SAFETY: raw is a bytes object we hold until the end of this function.
        let data = unsafe {
            std::slice::from_raw_parts(
                ffi::PyBytes_AS_STRING(raw.as_ptr()).cast::<u8>(),
                ffi::Py_SIZE(raw.as_ptr()) as usize,
            )
        };
        // numpy gives empty bytes_/str_ scalars an itemsize-0 dtype (|S0, <U0) but one
        // item of padding in tobytes().
        let data = if itemsize == 0 { &[][..] } else { data };
        if data.len() != itemsize {
            return Err(refuse(format!(
                "numpy scalar has {} bytes, its dtype says {itemsize}",
                data.len()
            )));
        }
        self.writer.ext(&ExtBlob::NumpyScalar(NumpyScalar {
            dtype: checked_dtype(&text)?,
            data,
        }));
        Ok(())
    }
}
