//! NDARRAY and NUMPY_SCALAR blobs, from the header the format crate parsed and checked.
//! What is left here is what only numpy knows: whether it is installed, whether it accepts
//! the dtype and writes it as the payload does, a structured dtype's item size. numpy is
//! imported only when such a value is met.
//!
//! An array is allocated by numpy (`numpy.empty`, so it owns its memory, is writeable and
//! C-contiguous) and its data copied in once, straight from the input.

use std::sync::Mutex;

use amber_format::ext::{Dims, Dtype, NdArray, NdArrayHeader, NumpyScalar, PLAIN_KINDS};
use amber_format::{BuildError, ErrorKind};
use pyo3::prelude::PyAnyMethods;
use pyo3_ffi as ffi;

use super::known::invalid;
use super::PyBuilder;
use crate::object::{Cached, PyObj};

static NP_EMPTY: Cached = Cached::new();
static NP_DTYPE: Cached = Cached::new();
static NP_ZEROS: Cached = Cached::new();
static NP_FROMBUFFER: Cached = Cached::new();

/// A dtype already made and checked: its string, the dtype (the address of a strong
/// reference, never released), its item size and kind.
type CachedDtype = (Vec<u8>, usize, usize, u8);

/// The NDARRAY header with its dtype made: the dimensions, the dtype, its item size and the
/// data size they imply.
pub(super) struct NdHeader<'a> {
    pub(super) dims: Dims<'a>,
    pub(super) dtype: PyObj,
    pub(super) itemsize: usize,
    pub(super) nbytes: u64,
}

/// dtypes already made and checked, by their string. Bounded.
static DTYPE_CACHE: Mutex<Vec<CachedDtype>> = Mutex::new(Vec::new());
const DTYPE_CACHE_MAX: usize = 64;

impl PyBuilder<'_, '_> {
    /// `numpy.<name>` (borrowed), importing numpy on first need.
    fn numpy_attr(
        &mut self,
        slot: &'static Cached,
        name: &std::ffi::CStr,
    ) -> Result<*mut ffi::PyObject, BuildError> {
        let ptr = slot.imported_attr(c"numpy", name);
        if !ptr.is_null() {
            return Ok(ptr);
        }
        // SAFETY: an exception is set; checking its type.
        let missing = unsafe { ffi::PyErr_ExceptionMatches(ffi::PyExc_ImportError) } != 0;
        if missing {
            // SAFETY: discarding the ImportError, reported as a format error instead.
            unsafe { ffi::PyErr_Clear() };
            return Err(BuildError::Rejected(
                ErrorKind::InvalidExt,
                String::from("numpy is not installed; NDARRAY and NUMPY_SCALAR values need it"),
            ));
        }
        Err(self.python_rejected("importing numpy"))
    }

    /// The numpy dtype for a dtype field, with its item size and kind.
    fn np_dtype(
        &mut self,
        what: &'static str,
        dtype: Dtype<'_>,
    ) -> Result<(PyObj, usize, u8), BuildError> {
        let raw = dtype.text().as_bytes();
        if let Ok(cache) = DTYPE_CACHE.lock() {
            if let Some((_, ptr, itemsize, kind)) = cache.iter().find(|(t, ..)| t == raw) {
                // SAFETY: the cache holds a reference to this live dtype; a new one for us.
                let dtype = unsafe {
                    PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(
                        *ptr as *mut ffi::PyObject,
                    ))
                };
                return Ok((dtype, *itemsize, *kind));
            }
        }
        let (made, itemsize, kind) = match dtype {
            Dtype::Plain(_) => self.np_dtype_checked(what, dtype.text())?,
            Dtype::Structured(text) => self.np_structured_dtype(what, text)?,
        };
        if let Ok(mut cache) = DTYPE_CACHE.lock() {
            if cache.len() < DTYPE_CACHE_MAX {
                // The cache keeps its own reference for good.
                cache.push((
                    raw.to_vec(),
                    made.clone().into_ptr() as usize,
                    itemsize,
                    kind,
                ));
            }
        }
        Ok((made, itemsize, kind))
    }

    /// Makes the dtype for `text` (of `dtype.str` form, which the format crate checked) and
    /// checks that numpy accepts it and writes it so.
    fn np_dtype_checked(
        &mut self,
        what: &'static str,
        text: &str,
    ) -> Result<(PyObj, usize, u8), BuildError> {
        let np_dtype = self.numpy_attr(&NP_DTYPE, c"dtype")?;
        let arg = self.str_obj(text)?;
        let dtype = self.call(np_dtype, &[arg.as_ptr()], &format!("{what} dtype {text:?}"))?;
        let attr = |b: &mut Self, name: &std::ffi::CStr| {
            // SAFETY: dtype is live; the name is NUL-terminated; NULL means an exception.
            let p = unsafe { ffi::PyObject_GetAttrString(dtype.as_ptr(), name.as_ptr()) };
            b.made(p, what)
        };
        let canonical = attr(self, c"str")?;
        let kind = attr(self, c"kind")?;
        let canonical = str_of(&canonical);
        let kind = str_of(&kind);
        if canonical.as_deref() != Some(text) {
            return Err(invalid(format!(
                "{what} dtype {text:?} is not a numpy dtype.str (numpy writes it as {:?})",
                canonical.unwrap_or_default()
            )));
        }
        let plain =
            matches!(kind.as_deref().map(str::as_bytes), Some([k]) if PLAIN_KINDS.contains(k));
        if !plain {
            return Err(invalid(format!(
                "{what} dtype {text:?} is not plain data (object and other dtypes are refused)"
            )));
        }
        if kind.as_deref() == Some("V") {
            let fields = attr(self, c"fields")?;
            let subdtype = attr(self, c"subdtype")?;
            // SAFETY: comparing with the None singleton.
            let none = unsafe { ffi::Py_None() };
            if fields.as_ptr() != none || subdtype.as_ptr() != none {
                return Err(invalid(format!(
                    "{what} dtype {text:?} is structured, which is refused"
                )));
            }
        }
        let itemsize = attr(self, c"itemsize")?;
        // SAFETY: itemsize is an int; -1 with an error on overflow.
        let itemsize = unsafe { ffi::PyLong_AsSsize_t(itemsize.as_ptr()) };
        if itemsize < 0 {
            // SAFETY: clears a possible OverflowError.
            unsafe { ffi::PyErr_Clear() };
            return Err(invalid(format!("{what} dtype {text:?} has no item size")));
        }
        let kind = kind.and_then(|k| k.bytes().next()).unwrap_or(b'V');
        Ok((dtype, itemsize as usize, kind))
    }

    /// A structured dtype from its JSON text (see `amber._dtypes`), which must be in the
    /// canonical form the encoder writes.
    fn np_structured_dtype(
        &mut self,
        what: &'static str,
        text: &str,
    ) -> Result<(PyObj, usize, u8), BuildError> {
        self.numpy_attr(&NP_DTYPE, c"dtype")?; // imports numpy, or says it is missing
        let dtype = match crate::callbacks::Callback::StructuredDtype.call(self.py, (text,)) {
            Ok(d) => d,
            Err(e) => {
                return Err(invalid(format!(
                    "{what} structured dtype is refused: {}",
                    e.value(self.py)
                )))
            }
        };
        let itemsize = dtype
            .getattr("itemsize")
            .and_then(|i| i.extract::<usize>())
            .map_err(|_| invalid(format!("{what} structured dtype has no item size")))?;
        // SAFETY: dtype is a live object; we take our own reference.
        let dtype =
            unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(dtype.as_ptr())) };
        Ok((dtype, itemsize, b'V'))
    }

    fn str_obj(&mut self, text: &str) -> Result<PyObj, BuildError> {
        // SAFETY: decodes a valid UTF-8 slice; NULL means an exception.
        let ptr = unsafe {
            ffi::PyUnicode_FromStringAndSize(text.as_ptr().cast(), text.len() as ffi::Py_ssize_t)
        };
        self.made(ptr, "numpy dtype")
    }

    /// The host's checks of an NDARRAY header (an NDARRAY blob's or an OUT_OF_BAND
    /// ndarray's): numpy makes the dtype, and the sizes must fit the host's.
    pub(super) fn ndarray_header<'a>(
        &mut self,
        what: &'static str,
        header: &NdArrayHeader<'a>,
    ) -> Result<NdHeader<'a>, BuildError> {
        let dims = header.dims;
        if let Some(dim) = dims.iter().find(|&dim| dim > isize::MAX as u64) {
            return Err(invalid(format!(
                "{what} dimension {dim} is above {}",
                isize::MAX
            )));
        }
        let (dtype, itemsize, kind) = self.np_dtype(what, header.dtype)?;
        if itemsize == 0 && kind != b'V' {
            // numpy would silently widen |S0 and <U0 arrays to one byte or char per item.
            return Err(invalid(format!(
                "{what} dtype of kind '{}' with item size 0 cannot be made by numpy",
                kind as char
            )));
        }
        let nbytes = dims
            .count()
            .checked_mul(itemsize as u64)
            .filter(|&bytes| bytes <= isize::MAX as u64);
        let Some(nbytes) = nbytes else {
            return Err(invalid(format!(
                "{what} shape {:?} times item size {itemsize} overflows",
                dims.to_vec()
            )));
        };
        Ok(NdHeader {
            dims,
            dtype,
            itemsize,
            nbytes,
        })
    }

    /// The shape of an array, as a tuple of ints.
    fn shape_tuple(&mut self, dims: Dims<'_>, what: &str) -> Result<PyObj, BuildError> {
        // SAFETY: plain constructor; filled below, in order, before anything sees it.
        let shape = unsafe { ffi::PyTuple_New(dims.len() as ffi::Py_ssize_t) };
        let shape = self.made(shape, what)?;
        for (i, dim) in dims.iter().enumerate() {
            // SAFETY: plain constructor.
            let dim = unsafe { ffi::PyLong_FromUnsignedLongLong(dim) };
            let dim = self.made(dim, what)?;
            // SAFETY: i < len(shape) of a fresh tuple; SET_ITEM steals the reference.
            unsafe { ffi::PyTuple_SET_ITEM(shape.as_ptr(), i as ffi::Py_ssize_t, dim.into_ptr()) };
        }
        Ok(shape)
    }

    pub(super) fn ndarray(&mut self, array: NdArray<'_>) -> Result<PyObj, BuildError> {
        let header = self.ndarray_header("NDARRAY", &array.header)?;
        let data = array.data;
        // The format crate checked this for dtypes whose text tells the item size; numpy
        // tells it for the others.
        if header.nbytes != data.len() as u64 {
            return Err(invalid(format!(
                "NDARRAY data has {} bytes; shape {:?} and item size {} need {}",
                data.len(),
                header.dims.to_vec(),
                header.itemsize,
                header.nbytes
            )));
        }
        let shape = self.shape_tuple(header.dims, "NDARRAY")?;
        let empty = self.numpy_attr(&NP_EMPTY, c"empty")?;
        let made = self.call(empty, &[shape.as_ptr(), header.dtype.as_ptr()], "NDARRAY")?;
        self.fill(&made, data)?;
        Ok(made)
    }

    /// An array over the memory of `buffer`, which holds exactly `header.nbytes` bytes in C
    /// or Fortran order: `numpy.frombuffer(buffer, dtype).reshape(shape)`, no copy. It is
    /// writeable exactly when the buffer is.
    pub(super) fn ndarray_over(
        &mut self,
        buffer: &PyObj,
        header: &NdHeader<'_>,
        fortran: bool,
    ) -> Result<PyObj, BuildError> {
        const WHAT: &str = "OUT_OF_BAND ndarray";
        let shape = self.shape_tuple(header.dims, WHAT)?;
        if header.itemsize == 0 {
            // numpy.frombuffer refuses item size 0; such an array has no data to share.
            let empty = self.numpy_attr(&NP_EMPTY, c"empty")?;
            return self.call(empty, &[shape.as_ptr(), header.dtype.as_ptr()], WHAT);
        }
        let frombuffer = self.numpy_attr(&NP_FROMBUFFER, c"frombuffer")?;
        let flat = self.call(frombuffer, &[buffer.as_ptr(), header.dtype.as_ptr()], WHAT)?;
        // SAFETY: flat is a live array we own; the Bound takes its own reference.
        let flat = unsafe { pyo3::Bound::from_borrowed_ptr(self.py, flat.as_ptr()) };
        // SAFETY: shape is a live tuple we own; the Bound takes its own reference.
        let shape = unsafe { pyo3::Bound::from_borrowed_ptr(self.py, shape.as_ptr()) };
        let reshaped = if fortran {
            let kwargs = pyo3::types::PyDict::new(self.py);
            kwargs
                .set_item("order", "F")
                .and_then(|()| flat.call_method("reshape", (shape,), Some(&kwargs)))
        } else {
            flat.call_method1("reshape", (shape,))
        };
        match reshaped {
            Ok(array) => PyObj::from_owned(array.into_ptr())
                .ok_or_else(|| invalid(String::from("numpy reshape gave nothing"))),
            Err(e) => {
                e.restore(self.py);
                Err(self.python_rejected(WHAT))
            }
        }
    }

    pub(super) fn numpy_scalar(&mut self, scalar: NumpyScalar<'_>) -> Result<PyObj, BuildError> {
        let (dtype, itemsize, _) = self.np_dtype("NUMPY_SCALAR", scalar.dtype)?;
        let data = scalar.data;
        if data.len() != itemsize {
            return Err(invalid(format!(
                "NUMPY_SCALAR data has {} bytes; its dtype's item size is {itemsize}",
                data.len()
            )));
        }
        // SAFETY: plain constructor.
        let shape = unsafe { ffi::PyTuple_New(0) };
        let shape = self.made(shape, "NUMPY_SCALAR")?;
        // Zeroed: numpy widens an itemsize-0 dtype (|S0, <U0) to one item of padding.
        let zeros = self.numpy_attr(&NP_ZEROS, c"zeros")?;
        let array = self.call(zeros, &[shape.as_ptr(), dtype.as_ptr()], "NUMPY_SCALAR")?;
        self.fill(&array, data)?;
        // arr[()] of a 0-d array is its scalar.
        // SAFETY: array and the empty tuple are live; NULL means an exception.
        let scalar = unsafe { ffi::PyObject_GetItem(array.as_ptr(), shape.as_ptr()) };
        self.made(scalar, "NUMPY_SCALAR")
    }

    /// Copies `data` into a fresh C-contiguous array of exactly that many bytes.
    fn fill(&mut self, array: &PyObj, data: &[u8]) -> Result<(), BuildError> {
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: a zeroed Py_buffer is the documented initial state for GetBuffer.
        let mut view = crate::buffer::BufferView(unsafe { std::mem::zeroed() });
        let flags = ffi::PyBUF_WRITABLE | ffi::PyBUF_C_CONTIGUOUS;
        // SAFETY: asks a fresh numpy array for a writable C-contiguous view; -1 means an
        // exception is set (and view.obj stays NULL, so dropping the view is a no-op).
        if unsafe { ffi::PyObject_GetBuffer(array.as_ptr(), &mut view.0, flags) } < 0 {
            return Err(self.python_rejected("numpy array buffer"));
        }
        if view.0.buf.is_null() || view.0.len.max(0) as usize != data.len() {
            return Err(invalid(format!(
                "numpy made a buffer of {} bytes for {} bytes of data",
                view.0.len,
                data.len()
            )));
        }
        // SAFETY: the view is a writable exported region of exactly data.len() bytes that
        // stays valid until `view` drops; the input slice does not overlap a fresh array,
        // which only this decoder holds.
        unsafe {
            crate::buffer::copy_detached(self.py, data, view.0.buf.cast::<u8>(), self.frozen_body);
        }
        drop(view);
        Ok(())
    }
}

/// The text of a str object.
fn str_of(s: &PyObj) -> Option<String> {
    crate::object::str_utf8(s).and_then(|b| String::from_utf8(b).ok())
}
