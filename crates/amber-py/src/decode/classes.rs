//! OBJECT values: each shape is resolved against the caller's allow-list when it is defined,
//! before any instance is built; instances are then built from the plan made for the shape.
//!
//! A payload's names are only ever keys into the caller's dicts: nothing is imported and no
//! attribute of any module is looked up. Code runs only in classes the caller allowed
//! (their `__new__`, `__setstate__`, enum lookup, defaults) and in registered custom
//! decode functions.

use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};

use amber_format::{BuildError, ErrorKind, ObjectKind, ShapeDef};
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyList, PyString, PyTuple, PyWeakrefReference};
use pyo3_ffi as ffi;
use rustc_hash::FxHashMap;

use super::PyBuilder;
use crate::callbacks::Callback;
use crate::object::PyObj;
use crate::slot_offsets::{self, Access, SlotOffsets};
use crate::weak_class::refers_to;

/// What the caller allows a decode to build.
pub struct ClassOptions {
    /// The allowed classes and functions, and the custom decode functions, by
    /// `"module:qualname"`.
    pub allowed: crate::registry::Allowed,
    /// Refuse payload fields the local class does not declare.
    pub unknown_error: bool,
    /// Build `amber.Placeholder` objects for classes not allowed, instead of failing.
    pub placeholders: bool,
}

/// Where one payload field of an ATTRS shape goes (the `_classes.TO_*` codes).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum FieldAction {
    ToDict,
    SetAttr,
    Drop,
}

/// How instances of one shape are built.
pub enum ShapePlan {
    Attrs {
        cls: PyObj,
        plain_new: bool,
        actions: Vec<FieldAction>,
        names: Vec<PyObj>,
        defaults: Option<PyObj>,
        /// Where the `SetAttr` fields' slots are in an instance, when `object.__setattr__`
        /// would only store them there (see `slot_offsets.rs`).
        slots: Option<SlotOffsets>,
    },
    State {
        cls: PyObj,
    },
    Tuple {
        cls: PyObj,
        plan: PyObj,
    },
    Enum {
        cls: PyObj,
    },
    Custom {
        name: String,
        decode: PyObj,
    },
    Placeholder {
        module: String,
        qualname: String,
        kind: ObjectKind,
        names: Vec<PyObj>,
    },
    /// The kinds built by their parts in Python (see `parts.rs`): `target` is the allowed
    /// class or callable, `plan` what `decode_plan` said.
    Parts {
        kind: ObjectKind,
        target: PyObj,
        plan: PyObj,
    },
}

impl ShapePlan {
    /// Whether instances of this shape are built by `parts.rs`: the kinds added for
    /// subclasses, reduce, exceptions and references, allowed or as placeholders.
    pub(super) fn by_parts(&self) -> bool {
        match self {
            ShapePlan::Parts { .. } => true,
            ShapePlan::Placeholder { kind, .. } => is_parts_kind(*kind),
            _ => false,
        }
    }
}

/// The kinds `parts.rs` builds.
pub(super) fn is_parts_kind(kind: ObjectKind) -> bool {
    match kind {
        ObjectKind::MutableSubclass
        | ObjectKind::ValueSubclass
        | ObjectKind::Global
        | ObjectKind::Reduce
        | ObjectKind::NewObj
        | ObjectKind::Exception
        | ObjectKind::ReduceKw
        | ObjectKind::NewObjKw => true,
        ObjectKind::Attrs
        | ObjectKind::State
        | ObjectKind::TupleFields
        | ObjectKind::Enum
        | ObjectKind::Custom => false,
    }
}

/// What a decode plan depends on besides its class: the payload's kind and field names, and
/// the `unknown_fields` option.
#[derive(PartialEq, Eq, Hash)]
struct ShapeKey {
    kind: u8,
    fields: Vec<String>,
    unknown_error: bool,
}

/// The cached plans of one class, with a weak reference to it (a `weakref.ref` whose callback
/// removes this entry when the class dies): the cache never keeps a class alive.
struct ClassEntry {
    class: Py<PyAny>,
    plans: FxHashMap<ShapeKey, Py<PyAny>>,
    /// Bytes of field-name text in `plans`' keys.
    text: usize,
}

/// Plans already made, so that decoding many small payloads of one class plans it once. Keyed
/// by class address, for live classes only; a lookup uses an entry only if its weak reference
/// still refers to the class asked about (CPython clears it before the class is freed, so a
/// new class at a dead one's address finds nothing).
#[derive(Default)]
struct PlanCache {
    classes: FxHashMap<usize, ClassEntry>,
    /// Plans held, in all entries.
    plans: usize,
    /// Field-name bytes held, in all entries.
    text: usize,
}

/// Beyond this many plans (many shapes of live classes: a payload chooses its field names,
/// so one allowed class can have any number of shapes), the cache starts over.
const PLAN_CACHE_MAX: usize = 4096;
/// Beyond this many bytes of field names in its keys, the cache starts over too.
const PLAN_CACHE_TEXT_MAX: usize = 1 << 20;

fn plan_cache() -> &'static Mutex<PlanCache> {
    static CACHE: OnceLock<Mutex<PlanCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(PlanCache::default()))
}

/// The cached plan of the live class `class` for `key`, if there is one.
fn cached_plan(py: Python<'_>, class: *mut ffi::PyObject, key: &ShapeKey) -> Option<Py<PyAny>> {
    let cache = plan_cache().lock().ok()?;
    let entry = cache.classes.get(&(class as usize))?;
    if !refers_to(&entry.class, class) {
        return None;
    }
    entry.plans.get(key).map(|plan| plan.clone_ref(py))
}

/// Caches `plan` for `cls` and `key`. The first plan of a class makes its entry, with a weak
/// reference whose callback drops the entry when `cls` dies; a class that cannot be weakly
/// referenced is not cached.
fn remember_plan(py: Python<'_>, cls: &Bound<'_, PyAny>, key: ShapeKey, plan: Py<PyAny>) {
    let address = cls.as_ptr() as usize;
    // Anything taken out of the cache is dropped after the lock is released: a plan holds the
    // class's default values, whose deallocation may run Python code (`__del__`), which may
    // decode and so need the lock.
    let mut dropped: Vec<ClassEntry> = Vec::new();
    let mut made = None;
    let current = plan_cache().lock().ok().and_then(|c| {
        c.classes
            .get(&address)
            .map(|e| refers_to(&e.class, cls.as_ptr()))
    });
    if current != Some(true) {
        let forget = move |args: &Bound<'_, PyTuple>, _: Option<&Bound<'_, PyDict>>| {
            if let Ok(weak) = args.get_item(0) {
                forget_class(address, weak.as_ptr());
            }
        };
        let weak = PyCFunction::new_closure(py, Some(c"amber_forget_class_plans"), None, forget)
            .and_then(|callback| PyWeakrefReference::new_with(cls, callback));
        match weak {
            Ok(weak) => made = Some(weak.into_any().unbind()),
            Err(_) => return,
        }
    }
    let text = key.fields.iter().map(String::len).sum::<usize>();
    if let Ok(mut cache) = plan_cache().lock() {
        if cache.plans >= PLAN_CACHE_MAX || cache.text + text > PLAN_CACHE_TEXT_MAX {
            dropped.extend(std::mem::take(&mut cache.classes).into_values());
            cache.plans = 0;
            cache.text = 0;
        }
        if let Some(weak) = made {
            let fresh = ClassEntry {
                class: weak,
                plans: FxHashMap::default(),
                text: 0,
            };
            if let Some(old) = cache.classes.insert(address, fresh) {
                cache.plans -= old.plans.len();
                cache.text -= old.text;
                dropped.push(old);
            }
        }
        let mut added = (0, 0);
        if let Some(entry) = cache.classes.get_mut(&address) {
            if let std::collections::hash_map::Entry::Vacant(slot) = entry.plans.entry(key) {
                slot.insert(plan);
                entry.text += text;
                added = (1, text);
            }
        }
        cache.plans += added.0;
        cache.text += added.1;
    }
    drop(dropped);
}

/// The weak-reference callback of the class at `address`: drops its entry, if `weak` is still
/// that entry's weak reference.
fn forget_class(address: usize, weak: *mut ffi::PyObject) {
    let removed = match plan_cache().lock() {
        Ok(mut cache) => {
            let ours = cache
                .classes
                .get(&address)
                .is_some_and(|e| e.class.as_ptr() == weak);
            let removed = ours.then(|| cache.classes.remove(&address)).flatten();
            if let Some(entry) = &removed {
                cache.plans -= entry.plans.len();
                cache.text -= entry.text;
            }
            removed
        }
        Err(_) => None,
    };
    // Dropped with the lock released (see remember_plan).
    drop(removed);
}

pub(super) fn owned(obj: &Bound<'_, PyAny>) -> PyObj {
    // SAFETY: obj is a live object; we take a new strong reference.
    unsafe { PyObj::from_borrowed(NonNull::new_unchecked(obj.as_ptr())) }
}

fn kind_by_name(name: &str) -> ErrorKind {
    ErrorKind::ALL
        .iter()
        .copied()
        .find(|k| k.name() == name)
        .unwrap_or(ErrorKind::BadState)
}

impl PyBuilder<'_, '_> {
    /// Turns a Python exception from class code into a typed rejection: `Refusal` from
    /// `amber._classes` keeps its kind; anything else becomes `bad_state` with the message.
    pub(super) fn class_failure(&mut self, err: PyErr, context: &str) -> BuildError {
        let py = self.py;
        let value = err.value(py);
        let kind = value
            .getattr("kind")
            .ok()
            .and_then(|k| k.extract::<String>().ok())
            .map(|k| kind_by_name(&k));
        match kind {
            Some(kind) => BuildError::Rejected(kind, value.to_string()),
            None => {
                let type_name = value
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default();
                BuildError::Rejected(
                    ErrorKind::BadState,
                    format!("{context} raised {type_name}: {value}"),
                )
            }
        }
    }

    pub(super) fn class_define_shape(
        &mut self,
        index: usize,
        shape: ShapeDef,
    ) -> Result<(), BuildError> {
        debug_assert_eq!(index, self.shapes.len());
        let key = format!("{}:{}", shape.module, shape.qualname);
        let mut found = if shape.kind == ObjectKind::Custom {
            self.classes
                .allowed
                .decoder(self.py, &key)
                .map(|f| owned(&f))
        } else {
            self.classes.allowed.class(self.py, &key).map(|c| owned(&c))
        };
        if found.is_none() && shape.module == "builtins" {
            found = self.builtin_named(&key, shape.kind)?;
        }
        let plan = match found {
            None if self.classes.placeholders => ShapePlan::Placeholder {
                names: shape
                    .fields
                    .iter()
                    .map(|f| owned(PyString::new(self.py, f).as_any()))
                    .collect(),
                module: shape.module,
                qualname: shape.qualname,
                kind: shape.kind,
            },
            None => {
                let hint = if shape.kind == ObjectKind::Custom {
                    "register an amber.CustomType for it in custom=[...]"
                } else {
                    "pass it in types=[...] to allow it"
                };
                let message = format!(
                    "class {}.{} is not allowed: {hint}",
                    shape.module, shape.qualname
                );
                self.refused = Some((shape.module, shape.qualname));
                return Err(BuildError::Rejected(ErrorKind::ClassNotAllowed, message));
            }
            Some(decode) if shape.kind == ObjectKind::Custom => ShapePlan::Custom {
                name: format!("{}.{}", shape.module, shape.qualname),
                decode,
            },
            Some(cls) => self.plan_shape(cls, &shape)?,
        };
        self.shapes.push(plan);
        Ok(())
    }

    fn plan_shape(&mut self, cls: PyObj, shape: &ShapeDef) -> Result<ShapePlan, BuildError> {
        let py = self.py;
        // SAFETY: cls is a live object we own.
        let cls_bound = unsafe { Bound::from_borrowed_ptr(py, cls.as_ptr()) };
        // Not interned: interned strings may live as long as the process, and a payload must
        // not be able to grow that table. decode_plan swaps in the class's own (interned)
        // name objects for the fields it declares.
        let fields = PyTuple::new(py, shape.fields.iter().map(|f| PyString::new(py, f)))
            .map_err(|e| self.class_failure(e, "building the field tuple"))?;
        let key = ShapeKey {
            kind: shape.kind as u8,
            fields: shape.fields.clone(),
            unknown_error: self.classes.unknown_error,
        };
        let answer = match cached_plan(py, cls.as_ptr(), &key) {
            Some(plan) => plan.into_bound(py),
            None => {
                let answer = Callback::DecodePlan.call(
                    py,
                    (
                        cls_bound.clone(),
                        shape.kind as u8,
                        fields.clone(),
                        self.classes.unknown_error,
                    ),
                );
                let answer = match answer {
                    Ok(a) => a,
                    Err(e) => return Err(self.class_failure(e, "planning the class")),
                };
                remember_plan(py, &cls_bound, key, answer.clone().unbind());
                answer
            }
        };
        let parsed: PyResult<ShapePlan> = (|| {
            let t = answer.cast::<PyTuple>()?;
            Ok(match shape.kind {
                ObjectKind::Attrs => {
                    let actions: Vec<FieldAction> = t
                        .get_item(2)?
                        .extract::<Vec<u8>>()?
                        .into_iter()
                        .map(|a| match a {
                            0 => FieldAction::ToDict,
                            1 => FieldAction::SetAttr,
                            _ => FieldAction::Drop,
                        })
                        .collect();
                    let names: Vec<PyObj> = t
                        .get_item(3)?
                        .cast::<PyTuple>()?
                        .iter()
                        .map(|f| owned(&f))
                        .collect();
                    let defaults = t.get_item(4)?;
                    let set_attr = |i: usize| actions.get(i) == Some(&FieldAction::SetAttr);
                    // SAFETY: a type check of a live object.
                    let is_type = unsafe { ffi::PyType_Check(cls.as_ptr()) } != 0;
                    let slots = (is_type && (0..actions.len()).any(set_attr))
                        .then(|| {
                            SlotOffsets::resolve(cls.as_ptr().cast(), &names, Access::Set, set_attr)
                        })
                        .flatten();
                    ShapePlan::Attrs {
                        plain_new: t.get_item(1)?.extract()?,
                        actions,
                        names,
                        defaults: (defaults.len()? > 0).then(|| owned(&defaults)),
                        slots,
                        cls,
                    }
                }
                ObjectKind::State => ShapePlan::State { cls },
                ObjectKind::TupleFields => ShapePlan::Tuple {
                    cls,
                    plan: owned(answer.as_any()),
                },
                ObjectKind::Enum => ShapePlan::Enum { cls },
                ObjectKind::Custom => {
                    // Custom shapes are planned from the custom registry, never here.
                    return Err(pyo3::exceptions::PyTypeError::new_err(
                        "a custom shape cannot be planned from a class",
                    ));
                }
                ObjectKind::MutableSubclass
                | ObjectKind::ValueSubclass
                | ObjectKind::Global
                | ObjectKind::Reduce
                | ObjectKind::NewObj
                | ObjectKind::Exception
                | ObjectKind::ReduceKw
                | ObjectKind::NewObjKw => ShapePlan::Parts {
                    kind: shape.kind,
                    target: cls,
                    plan: owned(answer.as_any()),
                },
            })
        })();
        parsed.map_err(|e| self.class_failure(e, "reading the class plan"))
    }

    pub(super) fn shape_plan(&self, shape: usize) -> Result<&ShapePlan, BuildError> {
        self.shapes.get(shape).ok_or(BuildError::Host)
    }

    pub(super) fn class_begin(&mut self, shape: usize) -> Result<PyObj, BuildError> {
        let py = self.py;
        let made = match self.shape_plan(shape)? {
            ShapePlan::Attrs {
                cls,
                plain_new: true,
                ..
            } => {
                // SAFETY: object's tp_new with the allowed class, an empty args tuple and no
                // kwargs: what `object.__new__(cls)` does (it checks abstract classes).
                unsafe {
                    let args = ffi::PyTuple_New(0);
                    if args.is_null() {
                        return Err(self.host_failure());
                    }
                    let new = ffi::PyBaseObject_Type.tp_new;
                    let obj = match new {
                        Some(f) => f(cls.as_ptr().cast(), args, std::ptr::null_mut()),
                        None => std::ptr::null_mut(),
                    };
                    ffi::Py_DECREF(args);
                    PyObj::from_owned(obj).ok_or(())
                }
            }
            ShapePlan::Attrs { cls, .. } | ShapePlan::State { cls } => {
                // SAFETY: cls is live; `cls.__new__(cls)` returns a new reference or NULL.
                unsafe {
                    let name = c"__new__";
                    let new = ffi::PyObject_GetAttrString(cls.as_ptr(), name.as_ptr());
                    if new.is_null() {
                        return Err(self.host_failure());
                    }
                    let obj = ffi::PyObject_CallOneArg(new, cls.as_ptr());
                    ffi::Py_DECREF(new);
                    PyObj::from_owned(obj).ok_or(())
                }
            }
            ShapePlan::Placeholder {
                module,
                qualname,
                kind,
                ..
            } => {
                let state: Bound<'_, PyAny> = if *kind == ObjectKind::Attrs {
                    PyDict::new(py).into_any()
                } else {
                    py.None().into_bound(py)
                };
                Callback::Placeholder
                    .call(py, (module, qualname, *kind as u8, state))
                    .map(|p| owned(&p))
                    .map_err(|e| {
                        e.restore(py);
                    })
            }
            _ => return Err(BuildError::Host),
        };
        match made {
            Ok(obj) => Ok(obj),
            Err(()) => {
                let err = PyErr::fetch(py);
                Err(self.class_failure(err, "creating the instance"))
            }
        }
    }

    pub(super) fn class_set(
        &mut self,
        obj: &PyObj,
        shape: usize,
        index: usize,
        value: PyObj,
    ) -> Result<(), BuildError> {
        let py = self.py;
        let status = match self.shape_plan(shape)? {
            ShapePlan::Attrs {
                actions,
                names,
                slots,
                ..
            } => {
                let (Some(action), Some(name)) = (actions.get(index), names.get(index)) else {
                    return Err(BuildError::Host);
                };
                match action {
                    FieldAction::Drop => 0,
                    // SAFETY: obj is a live instance with a __dict__ (the plan says so);
                    // GenericGetDict returns a new reference or NULL; name and value are live.
                    FieldAction::ToDict => unsafe {
                        let dict = ffi::PyObject_GenericGetDict(obj.as_ptr(), std::ptr::null_mut());
                        if dict.is_null() {
                            -1
                        } else {
                            let status = ffi::PyDict_SetItem(dict, name.as_ptr(), value.as_ptr());
                            ffi::Py_DECREF(dict);
                            status
                        }
                    },
                    FieldAction::SetAttr => {
                        // SAFETY: a type read of a live object.
                        let ty = unsafe { ffi::Py_TYPE(obj.as_ptr()) };
                        let offset = slots
                            .as_ref()
                            .and_then(|slots| slots.for_type(ty, names))
                            .and_then(|offsets| offsets.get(index));
                        match offset {
                            Some(&offset) => {
                                // SAFETY: obj is a live instance of the class the offsets hold
                                // for, and this field's was asked for (a SetAttr field).
                                unsafe { slot_offsets::set(obj.as_ptr(), offset, value) };
                                0
                            }
                            // SAFETY: object.__setattr__ on a live instance with a live name
                            // and value.
                            None => unsafe {
                                ffi::PyObject_GenericSetAttr(
                                    obj.as_ptr(),
                                    name.as_ptr(),
                                    value.as_ptr(),
                                )
                            },
                        }
                    }
                }
            }
            ShapePlan::State { .. } => {
                // SAFETY: obj and value are live objects we hold.
                let (target, state) = unsafe {
                    (
                        Bound::from_borrowed_ptr(py, obj.as_ptr()),
                        Bound::from_borrowed_ptr(py, value.as_ptr()),
                    )
                };
                return match Callback::ApplyState.call(py, (target, state)) {
                    Ok(_) => Ok(()),
                    Err(e) => Err(self.class_failure(e, "__setstate__")),
                };
            }
            // Per field of the other kinds, so checked here rather than before the match.
            ShapePlan::Parts { .. } => return self.parts_set(shape, index, value),
            ShapePlan::Placeholder { kind, .. } if is_parts_kind(*kind) => {
                return self.parts_set(shape, index, value)
            }
            ShapePlan::Placeholder { kind, names, .. } => {
                // SAFETY: obj is a Placeholder we made; value is live.
                let (target, value) = unsafe {
                    (
                        Bound::from_borrowed_ptr(py, obj.as_ptr()),
                        Bound::from_borrowed_ptr(py, value.as_ptr()),
                    )
                };
                let done = if *kind == ObjectKind::Attrs {
                    match names.get(index) {
                        // SAFETY: the name is a live str we hold.
                        Some(name) => target.getattr("state").and_then(|s| {
                            s.set_item(
                                unsafe { Bound::from_borrowed_ptr(py, name.as_ptr()) },
                                value,
                            )
                        }),
                        None => return Err(BuildError::Host),
                    }
                } else {
                    target.setattr("state", value)
                };
                return done.map_err(|e| self.class_failure(e, "filling a placeholder"));
            }
            _ => return Err(BuildError::Host),
        };
        if status < 0 {
            let err = PyErr::fetch(py);
            return Err(self.class_failure(err, "setting a field"));
        }
        Ok(())
    }

    #[inline]
    pub(super) fn class_finish(&mut self, obj: &PyObj, shape: usize) -> Result<(), BuildError> {
        let py = self.py;
        let plan = self.shape_plan(shape)?;
        // Per instance, so the kinds built by their parts are told apart here, in the one
        // match, rather than by a check before it.
        if plan.by_parts() {
            return self.parts_finish(obj, shape);
        }
        if let ShapePlan::Attrs {
            defaults: Some(defaults),
            ..
        } = plan
        {
            // SAFETY: both are live objects we hold.
            let (target, defaults) = unsafe {
                (
                    Bound::from_borrowed_ptr(py, obj.as_ptr()),
                    Bound::from_borrowed_ptr(py, defaults.as_ptr()),
                )
            };
            if let Err(e) = Callback::FillDefaults.call(py, (target, defaults)) {
                return Err(self.class_failure(e, "filling defaults"));
            }
        }
        Ok(())
    }

    pub(super) fn class_build(
        &mut self,
        shape: usize,
        values: Vec<PyObj>,
    ) -> Result<PyObj, BuildError> {
        let py = self.py;
        // SAFETY: every value is a live object we own.
        let bound: Vec<Bound<'_, PyAny>> = values
            .iter()
            .map(|v| unsafe { Bound::from_borrowed_ptr(py, v.as_ptr()) })
            .collect();
        let first = bound
            .first()
            .cloned()
            .unwrap_or_else(|| py.None().into_bound(py));
        let result = match self.shape_plan(shape)? {
            ShapePlan::Tuple { cls, plan } => {
                // SAFETY: the plan owns live references to the class and its plan tuple.
                let (cls, plan) = unsafe {
                    (
                        Bound::from_borrowed_ptr(py, cls.as_ptr()),
                        Bound::from_borrowed_ptr(py, plan.as_ptr()),
                    )
                };
                let list =
                    PyList::new(py, &bound).map_err(|e| self.class_failure(e, "a named tuple"))?;
                Callback::BuildTuple
                    .call(py, (cls, plan, list))
                    .map_err(|e| (e, "a named tuple"))
            }
            ShapePlan::Enum { cls } => {
                // SAFETY: the plan owns a live reference to the class.
                let cls = unsafe { Bound::from_borrowed_ptr(py, cls.as_ptr()) };
                let fast = cls
                    .getattr("_value2member_map_")
                    .ok()
                    .and_then(|m| m.cast_into::<PyDict>().ok())
                    .and_then(|m| m.get_item(&first).ok().flatten());
                match fast {
                    Some(member) => Ok(member),
                    None => Callback::EnumMember
                        .call(py, (cls, first.clone()))
                        .map_err(|e| (e, "the enum lookup")),
                }
            }
            ShapePlan::Custom { name, decode } => {
                // SAFETY: the plan owns a live reference to the decode function.
                let decode = unsafe { Bound::from_borrowed_ptr(py, decode.as_ptr()) };
                let context = format!("the custom decode function of {name}");
                return decode
                    .call1((first,))
                    .map(|o| owned(&o))
                    .map_err(|e| self.class_failure(e, &context));
            }
            ShapePlan::Placeholder {
                module,
                qualname,
                kind,
                names,
            } => {
                let state: PyResult<Bound<'_, PyAny>> = if *kind == ObjectKind::TupleFields {
                    let dict = PyDict::new(py);
                    names
                        .iter()
                        .zip(&bound)
                        .try_for_each(|(n, v)| {
                            // SAFETY: the plan owns a live reference to each field name.
                            let name = unsafe { Bound::from_borrowed_ptr(py, n.as_ptr()) };
                            dict.set_item(name, v)
                        })
                        .map(|()| dict.into_any())
                } else {
                    Ok(first.clone())
                };
                state
                    .and_then(|s| {
                        Callback::Placeholder.call(py, (module, qualname, *kind as u8, s))
                    })
                    .map_err(|e| (e, "a placeholder"))
            }
            _ => return Err(BuildError::Host),
        };
        match result {
            Ok(obj) => Ok(owned(&obj)),
            Err((e, context)) => Err(self.class_failure(e, context)),
        }
    }
}
