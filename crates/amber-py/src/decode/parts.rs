//! The OBJECT kinds built by their parts: subclasses of builtin types (MUTABLE_SUBCLASS,
//! VALUE_SUBCLASS), classes and functions by name (GLOBAL), `__reduce__` results (REDUCE,
//! NEWOBJ) and exceptions (EXCEPTION), allowed or as placeholders.
//!
//! The format's driver decides when an instance exists (spec 5.17.3); this file checks each
//! value against the kind's value rules as soon as it is complete (the rules are the format
//! crate's, `object::check_value`), keeps the values of the instances being decoded on a
//! stack (`PyBuilder::pending`: instances nest, and finish in the reverse order they start),
//! and hands the building to `amber._classes`, which calls only the allowed class or
//! callable and the builtin bases' own methods. A value's class is told by its exact type and
//! the encoder's own table of library types (`encode::ext_code_of`), without calling Python.

use amber_format::object::{check_value, ValueClass};
use amber_format::{BuildError, ErrorKind, ObjectKind};
use pyo3::prelude::*;
use pyo3::types::PyList;

use super::classes::{owned, ShapePlan};
use super::PyBuilder;
use crate::callbacks::Callback;
use crate::encode::ext_code_of;
use crate::object::{PyObj, Types};

/// _value_rule(kind, index, value) -> str | None
///
/// Why `value` may not be value `index` of an OBJECT of the kind named `kind` (spec 5.17.3),
/// or None when it may: the decoder's own rule, for the JSON reader and writer.
#[pyfunction]
#[pyo3(name = "_value_rule")]
pub fn value_rule(kind: &str, index: usize, value: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let kind = ObjectKind::from_spec_name(kind).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!("{kind:?} is not an object kind"))
    })?;
    // SAFETY: value is a live object; PyObj takes its own reference.
    let held = unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(value.as_ptr())) };
    Ok(check_value(kind, index, value_class(&held)).err())
}

/// What a decoded value is, as the value rules of the kinds look at it: its exact type (a
/// subclass instance is an OBJECT on the wire), then the EXT code its library type has.
fn value_class(value: &PyObj) -> ValueClass {
    let ptr = value.as_ptr();
    let t = Types::get();
    // SAFETY: value is a live object we hold.
    let ty = unsafe { pyo3_ffi::Py_TYPE(ptr) };
    if ptr == t.none() {
        ValueClass::None
    } else if ptr == t.true_() || ptr == t.false_() {
        ValueClass::Bool
    } else if ty == t.int() {
        ValueClass::Int
    } else if ty == t.float() {
        ValueClass::Float
    } else if ty == t.complex() {
        ValueClass::Complex
    } else if ty == t.str() {
        ValueClass::Str
    } else if ty == t.bytes() {
        ValueClass::Bytes
    } else if ty == t.bytearray() {
        ValueClass::ByteArray
    } else if ty == t.list() {
        ValueClass::List
    } else if ty == t.tuple() {
        ValueClass::Tuple
    } else if ty == t.dict() {
        ValueClass::Dict
    } else if ty == t.set() {
        ValueClass::Set
    } else if ty == t.frozenset() {
        ValueClass::FrozenSet
    } else {
        ext_code_of(ptr, ty).map_or(ValueClass::Object, ValueClass::Ext)
    }
}

impl PyBuilder<'_, '_> {
    /// A builtin exception or type of the spec's fixed tables (5.17.4), for a shape of the
    /// module `builtins` the caller did not list.
    pub(super) fn builtin_named(
        &mut self,
        key: &str,
        kind: ObjectKind,
    ) -> Result<Option<PyObj>, BuildError> {
        if !matches!(kind, ObjectKind::Exception | ObjectKind::Global) {
            return Ok(None);
        }
        let py = self.py;
        match Callback::BuiltinNamed.call(py, (key, kind as u8)) {
            Ok(found) if found.is_none() => Ok(None),
            Ok(found) => Ok(Some(owned(&found))),
            Err(e) => Err(self.class_failure(e, "looking up a builtin")),
        }
    }

    /// The kind of `shape`, and what builds it.
    fn parts_plan(&self, shape: usize) -> Result<(ObjectKind, Option<(PyObj, PyObj)>), BuildError> {
        match self.shape_plan(shape)? {
            ShapePlan::Parts { kind, target, plan } => {
                Ok((*kind, Some((target.clone(), plan.clone()))))
            }
            ShapePlan::Placeholder { kind, .. } => Ok((*kind, None)),
            _ => Err(BuildError::Host),
        }
    }

    /// Checks value `index` of an instance of `kind` against the kind's value rules.
    fn check_part(&self, kind: ObjectKind, index: usize, value: &PyObj) -> Result<(), BuildError> {
        check_value(kind, index, value_class(value))
            .map_err(|m| BuildError::Rejected(ErrorKind::BadState, m))
    }

    /// A placeholder for an instance of a kind built by its parts; its state is set when the
    /// values are complete.
    fn parts_placeholder(&mut self, shape: usize) -> Result<PyObj, BuildError> {
        let py = self.py;
        let ShapePlan::Placeholder {
            module,
            qualname,
            kind,
            ..
        } = self.shape_plan(shape)?
        else {
            return Err(BuildError::Host);
        };
        match Callback::Placeholder.call(py, (module, qualname, *kind as u8, py.None())) {
            Ok(p) => Ok(owned(&p)),
            Err(e) => Err(self.class_failure(e, "a placeholder")),
        }
    }

    /// An empty MUTABLE_SUBCLASS instance, before its values.
    pub(super) fn parts_begin(&mut self, shape: usize) -> Result<PyObj, BuildError> {
        let py = self.py;
        let obj = match self.parts_plan(shape)? {
            (_, Some((target, plan))) => {
                // SAFETY: both are live objects the shape plan holds.
                let (target, plan) = unsafe {
                    (
                        Bound::from_borrowed_ptr(py, target.as_ptr()),
                        Bound::from_borrowed_ptr(py, plan.as_ptr()),
                    )
                };
                match Callback::PartsBegin.call(py, (target, plan)) {
                    Ok(obj) => owned(&obj),
                    Err(e) => return Err(self.class_failure(e, "creating the instance")),
                }
            }
            (_, None) => self.parts_placeholder(shape)?,
        };
        self.pending.push(Vec::new());
        Ok(obj)
    }

    /// An instance made from its complete first value.
    pub(super) fn parts_from_first(
        &mut self,
        shape: usize,
        first: PyObj,
    ) -> Result<PyObj, BuildError> {
        let py = self.py;
        let (kind, built) = self.parts_plan(shape)?;
        self.check_part(kind, 0, &first)?;
        let obj = match built {
            Some((target, plan)) => {
                // SAFETY: live objects the shape plan and the decoder hold.
                let (target, plan, value) = unsafe {
                    (
                        Bound::from_borrowed_ptr(py, target.as_ptr()),
                        Bound::from_borrowed_ptr(py, plan.as_ptr()),
                        Bound::from_borrowed_ptr(py, first.as_ptr()),
                    )
                };
                match Callback::PartsFromFirst.call(py, (kind as u8, target, plan, value)) {
                    Ok(obj) => owned(&obj),
                    Err(e) => return Err(self.class_failure(e, "building the instance")),
                }
            }
            None => self.parts_placeholder(shape)?,
        };
        self.pending.push(vec![first]);
        Ok(obj)
    }

    /// Value `index` of the innermost instance being decoded.
    pub(super) fn parts_set(
        &mut self,
        shape: usize,
        index: usize,
        value: PyObj,
    ) -> Result<(), BuildError> {
        let (kind, _) = self.parts_plan(shape)?;
        self.check_part(kind, index, &value)?;
        match self.pending.last_mut() {
            Some(values) => {
                values.push(value);
                Ok(())
            }
            None => Err(BuildError::Host),
        }
    }

    /// Gives the innermost instance its values.
    pub(super) fn parts_finish(&mut self, obj: &PyObj, shape: usize) -> Result<(), BuildError> {
        let py = self.py;
        let values = self.pending.pop().ok_or(BuildError::Host)?;
        let (kind, built) = self.parts_plan(shape)?;
        let list = PyList::new(
            py,
            values.iter().map(|v| {
                // SAFETY: every value is a live object we hold.
                unsafe { Bound::from_borrowed_ptr(py, v.as_ptr()) }
            }),
        )
        .map_err(|e| self.class_failure(e, "the values"))?;
        // SAFETY: obj is the live instance the driver holds.
        let target_obj = unsafe { Bound::from_borrowed_ptr(py, obj.as_ptr()) };
        let done = match built {
            Some((_, plan)) => {
                // SAFETY: the plan is a live object the shape plan holds.
                let plan = unsafe { Bound::from_borrowed_ptr(py, plan.as_ptr()) };
                Callback::PartsFinish
                    .call(py, (kind as u8, target_obj, plan, list))
                    .map(drop)
            }
            None => target_obj.setattr("state", list.to_tuple()),
        };
        done.map_err(|e| self.class_failure(e, "giving the instance its values"))
    }

    /// A GLOBAL: the allowed object itself (no values).
    pub(super) fn parts_build(
        &mut self,
        shape: usize,
        values: Vec<PyObj>,
    ) -> Result<PyObj, BuildError> {
        if !values.is_empty() {
            return Err(BuildError::Host);
        }
        match self.parts_plan(shape)? {
            (ObjectKind::Global, Some((target, _))) => Ok(target),
            (ObjectKind::Global, None) => self.parts_placeholder(shape),
            _ => Err(BuildError::Host),
        }
    }
}
