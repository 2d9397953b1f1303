//! Instances written by their parts: subclasses of builtin types (MUTABLE_SUBCLASS,
//! VALUE_SUBCLASS), classes with their own `__reduce__` (REDUCE, NEWOBJ), exceptions
//! (EXCEPTION), and classes and functions themselves (GLOBAL).
//!
//! Which kind, which names and which values an instance has depends on the instance (what its
//! `__reduce_ex__` returns, which callable it names), so `amber._classes.instance_parts`
//! works it out for each one; the class plan only says whether instances of the class are
//! created first. The names may be those of another object than the instance's class (the
//! callable of a REDUCE, the class itself for GLOBAL): that object keys the shape, and it is
//! held until the encode ends so that its address stays its own.

use amber_format::object::Creation;
use amber_format::ObjectKind;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3_ffi as ffi;

use super::classes::checked_names;
use super::{hold, EncodeFail, FailKind, PyEncoder, Segment};
use crate::callbacks::Callback;
use crate::object::PyObj;

/// What `instance_parts` returned for one instance.
struct Parts {
    kind: ObjectKind,
    module: String,
    qualname: String,
    /// The object the names belong to, held by the encoder.
    named: *mut ffi::PyObject,
    /// The values, held by the encoder.
    values: Vec<*mut ffi::PyObject>,
}

/// How a value of each kind is shown in an error path.
pub(super) fn value_label(kind: ObjectKind, index: usize) -> &'static str {
    let labels: &[&'static str] = match kind {
        ObjectKind::MutableSubclass | ObjectKind::ValueSubclass => {
            &["<builtin value>", "__getstate__()"]
        }
        ObjectKind::Reduce | ObjectKind::NewObj | ObjectKind::ReduceKw | ObjectKind::NewObjKw => &[
            "<reduce args>",
            "<reduce state>",
            "<reduce list items>",
            "<reduce dict items>",
        ],
        ObjectKind::Exception => &[
            "args",
            "<exception state>",
            "__cause__",
            "__context__",
            "__suppress_context__",
        ],
        ObjectKind::Attrs
        | ObjectKind::State
        | ObjectKind::TupleFields
        | ObjectKind::Enum
        | ObjectKind::Custom
        | ObjectKind::Global => &[],
    };
    labels.get(index).copied().unwrap_or("<value>")
}

impl PyEncoder<'_> {
    /// Writes an instance whose class plan says it is written by its parts.
    pub(super) fn parts_instance(
        &mut self,
        obj: *mut ffi::PyObject,
        creates_first: bool,
    ) -> Result<(), EncodeFail> {
        if creates_first {
            if self.write_ref_if_seen(obj) {
                return Ok(());
            }
            let _held = hold(obj);
            let parts = self.parts_of(obj)?;
            if parts.kind.creation() != Creation::First {
                return Err(EncodeFail::new(FailKind::Refused(format!(
                    "{}.{} instances are created first, but this one came out as {}",
                    parts.module,
                    parts.qualname,
                    parts.kind.spec_name()
                ))));
            }
            self.enter()?;
            self.parts_body(obj, &parts, None)?;
            self.leave();
            return Ok(());
        }
        let Some(token) = self.begin_immutable(obj, true)? else {
            return Ok(());
        };
        let _held = hold(obj);
        let parts = self.parts_of(obj)?;
        if parts.kind.creation() == Creation::First {
            return Err(EncodeFail::new(FailKind::Refused(format!(
                "{}.{}: a {} instance of a class whose instances are not created first",
                parts.module,
                parts.qualname,
                parts.kind.spec_name()
            ))));
        }
        self.parts_body(obj, &parts, token.as_ref())?;
        self.end_immutable(obj, token);
        Ok(())
    }

    /// The shape and the values. For a kind made from its first value, the memo learns the
    /// object once that value is written, where the decoder records it.
    fn parts_body(
        &mut self,
        obj: *mut ffi::PyObject,
        parts: &Parts,
        token: Option<&amber_format::ImmutableToken>,
    ) -> Result<(), EncodeFail> {
        self.shape_by_text(
            parts.named as usize,
            &parts.module,
            &parts.qualname,
            parts.kind,
            Vec::new(),
        )?;
        for (i, &value) in parts.values.iter().enumerate() {
            self.nested_value(value)
                .map_err(|e| e.at(Segment::Attr(String::from(value_label(parts.kind, i))), obj))?;
            if i == 0 && parts.kind.creation() == Creation::FromFirstValue {
                if let Some(token) = token {
                    self.memo.first_value_complete(obj, token);
                }
            }
        }
        Ok(())
    }

    /// Asks `amber._classes.instance_parts` for the parts of `obj`, and holds them.
    fn parts_of(&mut self, obj: *mut ffi::PyObject) -> Result<Parts, EncodeFail> {
        let py = self.py;
        // SAFETY: obj is live (held by its container and by the caller's hold).
        let bound = unsafe { Bound::from_borrowed_ptr(py, obj) };
        let answer = Callback::InstanceParts
            .call(py, (bound.clone(),))
            .map_err(
                |e| match e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) {
                    true => EncodeFail::new(FailKind::Refused(e.value(py).to_string())),
                    false => EncodeFail::new(FailKind::Python(e)),
                },
            )?;
        let python = |e: PyErr| EncodeFail::new(FailKind::Python(e));
        let tuple = answer.cast::<PyTuple>().map_err(|e| python(e.into()))?;
        let code: u8 = tuple
            .get_item(0)
            .and_then(|k| k.extract())
            .map_err(python)?;
        let kind = ObjectKind::from_code(code).ok_or_else(|| {
            EncodeFail::new(FailKind::Refused(format!(
                "instance_parts gave object kind {code}"
            )))
        })?;
        let module: String = tuple
            .get_item(1)
            .and_then(|m| m.extract())
            .map_err(python)?;
        let qualname: String = tuple
            .get_item(2)
            .and_then(|q| q.extract())
            .map_err(python)?;
        let (module, qualname) =
            checked_names(module, qualname).map_err(|fail| match fail.into_kind() {
                FailKind::Refused(why) => {
                    let what = bound
                        .get_type()
                        .qualname()
                        .map(|q| q.to_string())
                        .unwrap_or_default();
                    let why = why.split_once(": ").map_or(why.as_str(), |(_, w)| w);
                    EncodeFail::new(FailKind::Refused(format!(
                        "unsupported type {what}: {why}, so amber cannot write it by name \
                         (a lambda or a function made at run time has no importable name)"
                    )))
                }
                other => EncodeFail::new(other),
            })?;
        let named = tuple.get_item(3).map_err(python)?;
        let named = self.keep_alive(named);
        let values = tuple.get_item(4).map_err(python)?;
        let values = values.cast::<PyTuple>().map_err(|e| python(e.into()))?;
        if values.len() != kind.value_count(0) {
            return Err(EncodeFail::new(FailKind::Refused(format!(
                "{module}.{qualname}: {} values for a {} object",
                values.len(),
                kind.spec_name()
            ))));
        }
        let mut kept = Vec::with_capacity(values.len());
        for value in values.iter() {
            // SAFETY: a live item of a live tuple; a new strong reference for the encoder.
            let value =
                unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(value.as_ptr())) };
            kept.push(self.keep_alive_obj(value));
        }
        Ok(Parts {
            kind,
            module,
            qualname,
            named,
            values: kept,
        })
    }
}
