//! Python objects from amber bytes: a [`Builder`](amber_format::Builder) for the format
//! crate's decoder, which does all the checking of the input. This side makes objects and
//! guards dict/set hashing.

mod classes;
mod containers;
mod dict_template;
mod float_run;
mod gc_pause;
mod hash_guard;
mod int_run;
mod key_cache;
mod known;
mod new_str;
mod numpy;
mod oob;
mod parts;
mod scalars;

use std::mem::ManuallyDrop;

use amber_format::envelope::BodyOrigin;
use amber_format::trace::{Trace, Tracer};
use amber_format::{decode_body, AllocBudget, BuildError, DecodeError, Limits};
use pyo3::prelude::*;

use crate::envelope::OpenConfig;
use crate::object::PyObj;
pub use classes::ClassOptions;
use hash_guard::HashGuard;
pub use parts::value_rule;

/// Builds Python objects for one decode.
pub struct PyBuilder<'py, 'o> {
    py: Python<'py>,
    guard: HashGuard,
    /// The Python exception behind a [`BuildError::Host`].
    error: Option<PyErr>,
    /// What the caller allows.
    classes: &'o ClassOptions,
    /// How to build each shape defined so far, by shape number.
    shapes: Vec<classes::ShapePlan>,
    /// The class named by a `class_not_allowed` error: module and qualname.
    refused: Option<(String, String)>,
    /// The caller's out-of-band buffers.
    oob: oob::Buffers<'o>,
    /// Dicts of repeated shapes seen so far.
    /// Handed to the next decode when the builder is dropped.
    templates: ManuallyDrop<Box<dict_template::Templates>>,
    /// No Python code can change the body meanwhile, so large copies out of it may run
    /// without the GIL (see `crate::buffer::copy_detached`).
    frozen_body: bool,
    /// The values of the instances built by their parts that are being decoded, innermost
    /// last (see `parts.rs`).
    pending: Vec<Vec<PyObj>>,
}

impl Drop for PyBuilder<'_, '_> {
    fn drop(&mut self) {
        // SAFETY: drop runs once and nothing reads the field after it; the GIL is held (the
        // `py` token the builder keeps).
        unsafe { ManuallyDrop::take(&mut self.templates).keep() };
    }
}

impl<'py, 'o> PyBuilder<'py, 'o> {
    fn new(
        py: Python<'py>,
        input_len: usize,
        classes: &'o ClassOptions,
        buffers: Option<&'o [PyObj]>,
        frozen_body: bool,
    ) -> Self {
        // The calls first, for the reason `amber_format::decode_body` gives.
        let guard = HashGuard::new(input_len);
        let oob = oob::Buffers::new(buffers);
        // SAFETY: the GIL is held (the `py` token).
        let templates = ManuallyDrop::new(unsafe { dict_template::Templates::resume() });
        PyBuilder {
            py,
            guard,
            error: None,
            classes,
            shapes: Vec::new(),
            refused: None,
            oob,
            templates,
            frozen_body,
            pending: Vec::new(),
        }
    }

    /// Turns a NULL from the C-API into [`BuildError::Host`], keeping the exception.
    #[inline]
    fn own(&mut self, ptr: *mut pyo3_ffi::PyObject) -> Result<PyObj, BuildError> {
        PyObj::from_owned(ptr).ok_or_else(|| self.host_failure())
    }

    #[cold]
    fn host_failure(&mut self) -> BuildError {
        self.error = PyErr::take(self.py);
        BuildError::Host
    }
}

/// What a failed decode raises: a format error, or the Python exception a builder hit.
pub enum DecodeFailure {
    /// The input is malformed or over a limit; for a refused class, its module and qualname.
    Format(DecodeError, Option<(String, String)>),
    /// Python failed (e.g. MemoryError).
    Python(PyErr),
}

/// Decodes `data` into a new Python object: opens its envelope as `envelope` allows (a plain
/// payload opens as it is; `now` is the clock for timestamps), then builds the body;
/// `buffers` are the caller's out-of-band buffers. `frozen`: `data` is a `bytes` object's, so
/// a large envelope may be opened without the GIL (see [`crate::envelope::open`]).
#[allow(clippy::too_many_arguments)]
pub fn decode_bytes(
    py: Python<'_>,
    data: &[u8],
    frozen: bool,
    limits: &Limits,
    envelope: &OpenConfig,
    now: u64,
    classes: &ClassOptions,
    buffers: Option<&[PyObj]>,
) -> Result<Py<PyAny>, DecodeFailure> {
    // One budget for the whole decode, from the input as given.
    let options = envelope.options(now, limits.alloc_budget(data.len()));
    // A plain payload's body, origin and budget are known without an `Opened`: moved out of
    // its Result, or its budget copied out, the plain path's fields were read by 16-byte
    // loads just after 8-byte stores had written them, a failed store forward that drew
    // about 10% of the profile samples of `loads(None)`. With the vectors of `PyBuilder::new`
    // and `decode_body` made after their calls, `loads(None)` went from 45 to 32.5 ns.
    let opened;
    let (body, origin, budget) = match amber_format::envelope::plain_body(data, &options) {
        Some(body) => (
            body,
            BodyOrigin::PLAIN,
            AllocBudget::unspent(options.alloc_budget),
        ),
        None => {
            opened = crate::envelope::open(py, data, &options, frozen)
                .map_err(|e| DecodeFailure::Format(e, None))?;
            (opened.body(), opened.origin(), opened.budget())
        }
    };
    // The hashing budget grows with what is decoded: a decompressed body may be longer
    // than the input.
    // A decompressed body is the decoder's own memory, which no Python code can reach.
    let frozen_body = frozen || matches!(origin, BodyOrigin::Decompressed);
    let mut builder = PyBuilder::new(
        py,
        body.len().max(data.len()),
        classes,
        buffers,
        frozen_body,
    );
    let _paused = gc_pause::GcPause::for_input(body.len());
    match decode_body(body, origin, limits.max_depth, budget, &mut builder) {
        // SAFETY: the builder returns an owned reference; ownership moves to the Py handle.
        Ok(obj) => Ok(unsafe { Bound::from_owned_ptr(py, obj.into_ptr()) }.unbind()),
        Err(err) => match builder.error.take() {
            Some(py_err) if err.kind == amber_format::ErrorKind::Host => {
                Err(DecodeFailure::Python(py_err))
            }
            _ => Err(DecodeFailure::Format(err, builder.refused.take())),
        },
    }
}

/// Decodes `data` as [`decode_bytes`] does (same checks, same objects), recording the first
/// `max_events` values' places in the payload (see `amber_format::trace`). The failure, if
/// any, comes with the trace of what was read before it.
pub fn trace_bytes(
    py: Python<'_>,
    data: &[u8],
    limits: &Limits,
    envelope: &OpenConfig,
    now: u64,
    classes: &ClassOptions,
    max_events: usize,
) -> (Trace<PyObj>, Option<DecodeFailure>) {
    let builder = PyBuilder::new(py, data.len(), classes, None, false);
    let options = envelope.options(now, limits.alloc_budget(data.len()));
    let (trace, mut builder) =
        Tracer::new(builder, max_events).run_opening(data, &options, limits.max_depth);
    let failure = trace
        .result
        .as_ref()
        .err()
        .map(|err| match builder.error.take() {
            Some(py_err) if err.kind == amber_format::ErrorKind::Host => {
                DecodeFailure::Python(py_err)
            }
            _ => DecodeFailure::Format(err.clone(), builder.refused.take()),
        });
    (trace, failure)
}
