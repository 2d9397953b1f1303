//! Python objects onto the amber writer. [`PyEncoder::value`] is the one place that picks the
//! encoder for a value: exact-type checks, hottest types first, then a cold fallback.

mod classes;
mod containers;
mod error;
mod known;
mod numpy;
mod scalars;

use amber_format::decode::{STACK_RED_ZONE, STACK_SEGMENT};
use amber_format::{RefTracker, Writer};
use pyo3::Python;
use pyo3_ffi as ffi;

pub use error::{EncodeFail, FailKind, Segment};

use crate::object::{PyObj, Types};

/// Encoder options, validated by the caller.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Track identity: shared objects are written once, cycles survive.
    pub refs: bool,
    /// Deepest nesting of containers.
    pub max_depth: u32,
}

/// One encode of one root object.
pub struct PyEncoder<'py> {
    py: Python<'py>,
    writer: Writer,
    tracker: Option<RefTracker>,
    depth: u32,
    max_depth: u32,
    types: Types,
    /// Shapes of class instances written so far in this pass.
    shapes: classes::ShapeTable,
    /// Objects made during the encode (states, temporary lists), alive until it ends.
    temporaries: Vec<PyObj>,
    /// The caller's custom encode functions by exact type (a dict), if any.
    custom: Option<PyObj>,
    /// The value being written that the encoder holds an extra reference to (see `shared`),
    /// or NULL.
    held: *mut ffi::PyObject,
    /// The class plan used last, by type: instances of one class tend to come in runs.
    last_plan: Option<(usize, std::sync::Arc<classes::ClassPlan>)>,
    /// Plans of the caller's custom types met so far, by type.
    custom_plans: rustc_hash::FxHashMap<usize, std::sync::Arc<classes::ClassPlan>>,
    /// Field names and values of the instances being written, innermost last (see
    /// `attrs_instance`).
    attr_names: Vec<PyObj>,
    attr_values: Vec<PyObj>,
}

/// Encodes `obj` into a complete payload.
pub fn encode(
    py: Python<'_>,
    obj: *mut ffi::PyObject,
    options: Options,
    custom: Option<PyObj>,
) -> Result<Vec<u8>, EncodeFail> {
    let mut encoder = PyEncoder {
        py,
        writer: Writer::default(),
        tracker: options.refs.then(RefTracker::new),
        depth: 0,
        max_depth: options.max_depth,
        types: Types::get(),
        shapes: classes::ShapeTable::default(),
        temporaries: Vec::new(),
        custom,
        held: std::ptr::null_mut(),
        last_plan: None,
        custom_plans: rustc_hash::FxHashMap::default(),
        attr_names: Vec::new(),
        attr_values: Vec::new(),
    };
    loop {
        let again = match encoder.value(obj) {
            Err(fail) if matches!(fail.kind, FailKind::Restart) => true,
            Err(fail) => return Err(fail.finish(options.refs)),
            Ok(()) => encoder
                .tracker
                .as_ref()
                .is_some_and(RefTracker::needs_rerun),
        };
        if !again {
            return Ok(encoder.writer.into_bytes());
        }
        // A cycle through a tuple showed up: encode again knowing it.
        if let Some(tracker) = encoder.tracker.as_mut() {
            tracker.reset(true);
        }
        encoder.writer.reset();
        encoder.shapes.clear();
        encoder.attr_names.clear();
        encoder.attr_values.clear();
        encoder.depth = 0;
    }
}

/// A strong reference to `obj` for as long as it is being written: class code run by a child
/// may drop the last other reference to it. Taken only after the identity memo has looked at
/// `obj`, since it changes the reference count [`shared`] reads.
#[inline]
fn hold(obj: *mut ffi::PyObject) -> PyObj {
    // SAFETY: obj is a live, non-NULL object for this call (its container or the caller
    // holds it); the GIL is held.
    unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(obj)) }
}

/// Whether anything besides its container holds `obj`; an object held once cannot be met
/// twice (except inside a cyclic tuple, see `RefTracker::track_everything`). `held` is an
/// object the encoder itself holds one extra reference to while writing it (a class
/// instance's attribute value), which does not count.
#[inline]
fn shared(obj: *mut ffi::PyObject, held: *mut ffi::PyObject) -> bool {
    // SAFETY: obj is live and the GIL is held.
    unsafe { ffi::Py_REFCNT(obj) - ffi::Py_ssize_t::from(obj == held) > 1 }
}

impl PyEncoder<'_> {
    /// Writes one value. `obj` is a borrowed reference kept alive by its container (or the
    /// caller, for the root) for the whole encode.
    #[inline]
    pub(crate) fn value(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // SAFETY: obj is a live object (see above) and the GIL is held.
        let ty = unsafe { ffi::Py_TYPE(obj) };
        let t = &self.types;
        if ty == t.str {
            self.str(obj)
        } else if ty == t.int {
            self.int(obj)
        } else if ty == t.dict {
            self.dict(obj)
        } else if ty == t.list {
            self.list(obj)
        } else if ty == t.float {
            self.float(obj);
            Ok(())
        } else if ty == t.tuple {
            self.tuple(obj)
        } else if obj == t.none {
            self.writer.none();
            Ok(())
        } else if obj == t.true_ || obj == t.false_ {
            self.writer.bool(obj == t.true_);
            Ok(())
        } else {
            self.cold_value(obj, ty)
        }
    }

    #[inline(never)]
    fn cold_value(
        &mut self,
        obj: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
    ) -> Result<(), EncodeFail> {
        let t = &self.types;
        if ty == t.bytes {
            self.bytes(obj)
        } else if ty == t.set {
            self.set(obj, false)
        } else if ty == t.frozenset {
            self.set(obj, true)
        } else if ty == t.bytearray {
            self.bytearray(obj)
        } else if ty == t.complex {
            self.complex(obj);
            Ok(())
        } else if let Some(done) = self.known_value(obj, ty) {
            done
        } else if let Some(done) = self.numpy_value(obj, ty) {
            done
        } else {
            self.class_instance(obj, ty)
        }
    }

    /// If `obj` was written before, writes a `REF` to it and returns true; otherwise records
    /// where it is about to be written. Objects only one container holds are skipped: they
    /// cannot be met twice.
    #[inline]
    fn write_ref_if_seen(&mut self, obj: *mut ffi::PyObject) -> bool {
        let Some(tracker) = self.tracker.as_mut() else {
            return false;
        };
        if !tracker.track_everything() && !shared(obj, self.held) {
            return false;
        }
        match tracker.seen_or_record(obj as usize, self.writer.body_pos()) {
            Some(offset) => {
                self.writer.reference(offset);
                true
            }
            None => {
                // Class code may drop objects during the encode; a memoized one must stay
                // alive so its address cannot be reused by a new object taken for it.
                // SAFETY: obj is live for this call (held by its container or the caller).
                self.temporaries
                    .push(unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(obj)) });
                false
            }
        }
    }

    #[inline]
    fn enter(&mut self) -> Result<(), EncodeFail> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(EncodeFail::new(FailKind::TooDeep(self.max_depth)));
        }
        Ok(())
    }

    /// Writes a value the encoder holds an extra reference to (one it copied out of an
    /// instance's `__dict__` or slots), without that reference making it look shared.
    #[inline]
    fn nested_held_value(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        self.held = obj;
        let result = self.nested_value(obj);
        self.held = std::ptr::null_mut();
        result
    }

    /// Writes a container's child on a stack with room to spare (see the decoder's `nested`).
    #[inline]
    fn nested_value(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.value(obj))
    }

    #[inline]
    fn leave(&mut self) {
        self.depth -= 1;
    }
}
