//! Python objects onto the amber writer. [`PyEncoder::value`] is the one place that picks the
//! encoder for a value: exact-type checks, hottest types first, then a cold fallback.

mod canonical;
mod class_work;
mod classes;
mod containers;
mod error;
mod known;
mod memo;
mod numpy;
mod object_rows;
mod oob;
mod packed;
mod parts;
mod prefetch;
mod records;
mod rows;
mod scalars;
mod sink;
// Reads CPython's str layouts: only where build.rs knows them.
#[cfg(amber_known_layouts)]
mod wide_str;

use amber_format::Writer;
use pyo3::Python;
use pyo3_ffi as ffi;

pub use error::{EncodeFail, FailKind, Segment};
pub(crate) use known::ext_code_of;
use memo::Memo;
pub use oob::OutOfBand;
use sink::BytesSink;

use crate::object::{PyObj, Types};

/// The caller's class tables of one encode: `custom=` encode functions by exact type, and
/// the names `types=` allows (`crate::registry`), which refuse every shape a decoder given
/// the same list would refuse. Borrowed from the caller, who holds them for the whole encode:
/// a `dumps` whose options are remembered builds its custom table on its own stack, and
/// sharing it would cost an allocation per call.
#[derive(Clone, Copy, Default)]
pub struct ClassTables<'a> {
    pub custom: Option<&'a crate::registry::CustomEncoders>,
    pub allowed: Option<&'a crate::registry::Names>,
}

/// Encoder options, validated by the caller.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Track identity: shared objects are written once, cycles survive.
    pub refs: bool,
    /// Deepest nesting of containers.
    pub max_depth: u32,
    /// Canonical output: immutable values are written by value (never as a `REF`), and set
    /// and frozenset elements in the order of their own canonical encodings.
    pub canonical: bool,
    /// Dict entries in the order of their keys' canonical encodings.
    pub sort_keys: bool,
}

/// One encode of one root object.
pub struct PyEncoder<'py> {
    py: Python<'py>,
    writer: Writer<BytesSink>,
    /// Which objects were written where (see `memo.rs`).
    memo: Memo,
    /// See `amber_format::stack`.
    stack_limit: usize,
    depth: u32,
    max_depth: u32,
    types: Types,
    /// The class state, made when the first instance needs it (see `class_work.rs`).
    class_work: Option<Box<class_work::ClassWork>>,
    /// The caller's custom encode functions and allow-list.
    classes: ClassTables<'py>,
    /// Field names and values of the instances being written, innermost last (see
    /// `attrs_instance`).
    attr_names: Vec<PyObj>,
    attr_values: Vec<PyObj>,
    /// The out-of-band buffers written so far (none unless the caller takes them).
    oob: OutOfBand,
    /// The options of this encode, for the nested encodes that make canonical sort keys.
    options: Options,
    /// The lists of dicts or instances (by owner: the list, or a deque) whose rows turned
    /// out, while they were being written as RECORDS or OBJECT_ROWS, not to have the first
    /// row's keys or fields: the encode started again, and these are written as LISTs (see
    /// `records.rs`, `object_rows.rs`). Kept across restarts.
    plain_records: rustc_hash::FxHashSet<usize>,
    /// The float columns (by owner and field) of lists of instances that turned out, while
    /// they were being written as OBJECT_ROWS, to hold a value that is not an unshared float:
    /// the encode started again, and these are tagged (see `object_rows.rs`). Kept across
    /// restarts.
    tagged_columns: rustc_hash::FxHashSet<(usize, usize)>,
    /// Emptied lists of a RECORDS' keys, for the next list of records to fill (see
    /// `records.rs`): a JSON document holds hundreds of short lists of records, and a new
    /// vector for each, grown key by key, cost a catalog's encode 3.5% of its instructions.
    spare_key_lists: Vec<Vec<PyObj>>,
}

/// Encodes `obj` into a complete payload, a `bytes` object. With `oob`, large data goes out
/// of band and `oob` holds its buffers afterwards.
pub fn encode<'py>(
    py: Python<'py>,
    obj: *mut ffi::PyObject,
    options: Options,
    classes: ClassTables<'py>,
    mut oob: Option<&mut OutOfBand>,
) -> Result<PyObj, EncodeFail> {
    // The calls before the sink, for the reason `amber_format::decode_body` gives: made
    // first, the sink was kept aside across them, then copied in with 16-byte loads just
    // after the 8-byte stores that made it, which drew 5% of the profile samples of
    // `dumps(None)`. With `BytesSink::finish` in place, `dumps(None)` went from 48 to 43 ns.
    let memo = Memo::new(options.refs, options.canonical);
    let stack_limit = amber_format::stack::limit();
    let mut encoder = PyEncoder {
        py,
        writer: Writer::on(BytesSink::new()),
        memo,
        stack_limit,
        depth: 0,
        max_depth: options.max_depth,
        types: Types::get(),
        class_work: None,
        classes,
        attr_names: Vec::new(),
        attr_values: Vec::new(),
        oob: oob.as_deref_mut().map(std::mem::take).unwrap_or_default(),
        options,
        plain_records: rustc_hash::FxHashSet::default(),
        spare_key_lists: Vec::new(),
        tagged_columns: rustc_hash::FxHashSet::default(),
    };
    let result = encoder.run(obj, options.refs);
    if let Some(slot) = oob {
        *slot = std::mem::take(&mut encoder.oob);
    }
    encoder.memo.recycle();
    result?;
    encoder
        .writer
        .sink_mut()
        .finish()
        .map_err(|e| EncodeFail::new(FailKind::Python(e)))
}

impl PyEncoder<'_> {
    fn run(&mut self, obj: *mut ffi::PyObject, refs: bool) -> Result<(), EncodeFail> {
        loop {
            let again = match self.value(obj) {
                Err(fail) if matches!(fail.kind, FailKind::Restart) => true,
                Err(fail) => return Err(fail.finish(refs)),
                Ok(()) => self.memo.needs_rerun(),
            };
            if !again {
                return Ok(());
            }
            // A cycle through a tuple showed up: encode again knowing it.
            self.memo.restart();
            self.writer.reset();
            if let Some(work) = self.class_work.as_mut() {
                work.restart();
            }
            self.attr_names.clear();
            self.attr_values.clear();
            self.oob.restart();
            self.depth = 0;
        }
    }

    /// Pins the memo (see `memo.rs`): called before anything that can run Python code or
    /// start a garbage collection.
    #[inline]
    pub(crate) fn pin_memo(&mut self) {
        self.memo.pin();
    }
}

/// A strong reference to `obj` for as long as it is being written: class code run by a child
/// may drop the last other reference to it. Taken only after the identity memo has looked at
/// `obj`, since it changes the reference count that the memo's floors are compared with
/// (`Memo::set_floors` in `memo.rs`).
#[inline]
fn hold(obj: *mut ffi::PyObject) -> PyObj {
    // SAFETY: obj is a live, non-NULL object for this call (its container or the caller
    // holds it); the GIL is held.
    unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(obj)) }
}

impl PyEncoder<'_> {
    /// Writes one value. `obj` is a borrowed reference kept alive by its container (or the
    /// caller, for the root) for the whole encode.
    #[inline]
    pub(crate) fn value(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // SAFETY: obj is a live object (see above) and the GIL is held.
        let ty = unsafe { ffi::Py_TYPE(obj) };
        let t = &self.types;
        if ty == t.str() {
            self.str(obj)
        } else if ty == t.int() {
            self.int(obj)
        } else if ty == t.dict() {
            self.dict(obj)
        } else if ty == t.list() {
            self.list(obj)
        } else if ty == t.float() {
            self.float(obj);
            Ok(())
        } else if ty == t.tuple() {
            self.tuple(obj)
        } else if obj == t.none() {
            self.writer.none();
            Ok(())
        } else if obj == t.true_() || obj == t.false_() {
            self.writer.bool(obj == t.true_());
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
        if ty == t.bytes() {
            return self.bytes(obj);
        } else if ty == t.bytearray() {
            return self.bytearray(obj);
        } else if ty == t.complex() {
            self.complex(obj);
            return Ok(());
        }
        if self.singleton(obj) {
            return Ok(());
        }
        // Everything below may allocate tracked objects or run class code.
        self.pin_memo();
        let t = &self.types;
        if ty == t.set() {
            self.set(obj, false)
        } else if ty == t.frozenset() {
            self.set(obj, true)
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
    #[inline(always)]
    fn write_ref_if_seen(&mut self, obj: *mut ffi::PyObject) -> bool {
        self.ref_if_seen::<false>(obj)
    }

    /// [`PyEncoder::write_ref_if_seen`] for an immutable value (str, int, float, bytes, an
    /// immutable library type): in canonical mode these are written by value every time,
    /// so that equal values give equal bytes whichever of them happen to be one object.
    #[inline(always)]
    fn write_value_ref_if_seen(&mut self, obj: *mut ffi::PyObject) -> bool {
        self.ref_if_seen::<true>(obj)
    }

    #[inline(always)]
    fn ref_if_seen<const BY_VALUE: bool>(&mut self, obj: *mut ffi::PyObject) -> bool {
        self.memo.ref_if_seen::<BY_VALUE>(obj, &mut self.writer)
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
        self.memo.set_held(obj);
        let result = self.nested_value(obj);
        self.memo.set_held(std::ptr::null_mut());
        result
    }

    /// Writes a container's child on a stack with room to spare (see the decoder's `nested`).
    ///
    /// The commonest leaves (int, str, float) are written right here, inlined into the
    /// container's loop: they cannot recurse, and going through [`PyEncoder::value`] would
    /// cost a call with a large frame for each of them.
    #[inline(always)]
    fn nested_value(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        // SAFETY: obj is a live object (held by its container) and the GIL is held.
        let ty = unsafe { ffi::Py_TYPE(obj) };
        if ty == self.types.int() {
            return self.int(obj);
        }
        if ty == self.types.str() {
            return self.str(obj);
        }
        if ty == self.types.float() {
            self.float(obj);
            return Ok(());
        }
        if amber_format::stack::here() > self.stack_limit {
            self.value(obj)
        } else {
            amber_format::stack::grow(self, |e| &mut e.stack_limit, |e| e.value(obj))
        }
    }

    #[inline]
    fn leave(&mut self) {
        self.depth -= 1;
    }
}
