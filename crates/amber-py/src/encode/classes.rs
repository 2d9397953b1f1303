//! Class instances written as OBJECT values: enums, named tuples, attribute classes
//! (dataclasses, attrs, plain and `__slots__` classes), `__getstate__` classes and the
//! caller's custom types.
//!
//! What a class is, and which fields it has, is worked out once per class by
//! `amber._classes.encode_plan` and cached in [`plan_cache`], keyed by the class's address.
//! The cache does not keep the class alive: each entry holds a weak reference to its class,
//! whose callback removes the entry when the class dies, and a lookup uses an entry only if
//! its weak reference still refers to the class asked about. CPython clears a weak reference
//! before it frees the object, so a new class at the address of a dead one never finds the
//! dead one's plan, even where the callback has not run. Within one encode every class met is
//! held (see [`ShapeTable::plans`]), so the per-encode shortcuts keyed by address stay valid.

use std::sync::{Arc, Mutex, OnceLock};

use amber_format::object::{dotted_name, field_name};
use amber_format::ObjectKind;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyString, PyTuple, PyWeakrefReference};
use pyo3_ffi as ffi;
use rustc_hash::FxHashMap;

use super::{hold, EncodeFail, FailKind, PyEncoder, Segment};
use crate::callbacks::Callback;
use crate::object::{NamePtr, PyObj};
use crate::slot_offsets::{self, Access, SlotOffsets};
use crate::weak_class::refers_to;

/// `encode_plan`'s code for `amber.Placeholder`, which is not a payload kind.
const PLACEHOLDER: u8 = 255;
/// `encode_plan`'s code for classes whose instances are written by their parts (see
/// `parts.rs`), worked out per instance.
const PARTS: u8 = 254;

/// How instances of one class are written. It holds no reference to the class: the process-wide
/// cache must not keep classes alive, and an encode holds the classes it uses itself.
pub(crate) struct ClassPlan {
    /// For `amber.Placeholder`: written as the class it names, not as itself.
    placeholder: bool,
    /// For instances written by their parts: whether they are created first (a subclass of
    /// a mutable builtin) rather than made from their first value or built after.
    pub(super) parts: Option<bool>,
    kind: ObjectKind,
    module: String,
    qualname: String,
    /// ATTRS: whether instances have a `__dict__`.
    has_dict: bool,
    /// ATTRS: slot names; TUPLE_FIELDS: field names.
    names: Vec<Py<PyString>>,
    /// ATTRS: where the slots of `names` are in an instance, when `getattr` would only read
    /// them there (see `slot_offsets.rs`).
    slot_offsets: Option<SlotOffsets>,
}

/// A cached plan and a weak reference to its class (a `weakref.ref` whose callback removes
/// this entry when the class dies).
struct CacheEntry {
    class: Py<PyAny>,
    plan: Arc<ClassPlan>,
}

/// Plans by class address, for live classes only: an entry goes when its class dies, so the
/// cache holds at most one entry per class alive in the process.
type PlanCache = Mutex<FxHashMap<usize, CacheEntry>>;

fn plan_cache() -> &'static PlanCache {
    static CACHE: OnceLock<PlanCache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(FxHashMap::default()))
}

/// The cached plan of the live class `ty`, if there is one.
fn cached_plan(ty: *mut ffi::PyTypeObject) -> Option<Arc<ClassPlan>> {
    let cache = plan_cache().lock().ok()?;
    let entry = cache.get(&(ty as usize))?;
    refers_to(&entry.class, ty.cast()).then(|| entry.plan.clone())
}

/// Caches `plan` for `cls` with a weak reference whose callback drops the entry when `cls`
/// dies. A class that cannot be weakly referenced is not cached (its plan is made again by
/// each encode that meets it).
fn remember_plan(py: Python<'_>, cls: &Bound<'_, PyAny>, plan: Arc<ClassPlan>) {
    let key = cls.as_ptr() as usize;
    let forget = move |args: &Bound<'_, PyTuple>, _: Option<&Bound<'_, pyo3::types::PyDict>>| {
        if let Ok(weak) = args.get_item(0) {
            forget_plan(key, weak.as_ptr());
        }
    };
    let weak = PyCFunction::new_closure(py, Some(c"amber_forget_class_plan"), None, forget)
        .and_then(|callback| PyWeakrefReference::new_with(cls, callback));
    let Ok(weak) = weak else {
        return;
    };
    let entry = CacheEntry {
        class: weak.into_any().unbind(),
        plan,
    };
    let replaced = match plan_cache().lock() {
        Ok(mut cache) => cache.insert(key, entry),
        Err(_) => Some(entry),
    };
    // Dropped with the lock released: dropping Python objects must never run under it.
    drop(replaced);
}

/// The weak-reference callback of the class at `key`: drops its entry, if `weak` is still its
/// entry's weak reference (another thread may have replaced it).
fn forget_plan(key: usize, weak: *mut ffi::PyObject) {
    let removed = match plan_cache().lock() {
        Ok(mut cache) if cache.get(&key).is_some_and(|e| e.class.as_ptr() == weak) => {
            cache.remove(&key)
        }
        _ => None,
    };
    // Dropped with the lock released (a weakref and strs: no code runs, but never under it).
    drop(removed);
}

/// Shapes written so far in one payload.
#[derive(Default)]
pub(crate) struct ShapeTable {
    /// By class and field names.
    numbers: FxHashMap<(usize, Vec<String>), usize>,
    /// The last shape of each class with its field-name objects: instances of one class
    /// almost always share their attribute-name objects, so most lookups end in a pointer
    /// comparison here. The names are held, so no other string can take their addresses.
    last: FxHashMap<usize, (Vec<PyObj>, usize)>,
    count: usize,
    /// Every class this encode has met, held until it ends, with its plan: the encoder's
    /// shortcuts are keyed by class address (`last_plan`, the shapes above), so no class may
    /// die and give its address to another while they are in use. The first class met is
    /// kept apart, so that a payload of one class allocates no table for it.
    first_plan: Option<(usize, PyObj, Arc<ClassPlan>)>,
    plans: FxHashMap<usize, (PyObj, Arc<ClassPlan>)>,
}

impl ShapeTable {
    /// Forgets every shape (for a new pass over the same payload).
    /// The classes met stay held: the encoder's `last_plan` may still name one of them.
    pub(crate) fn clear(&mut self) {
        self.numbers.clear();
        self.last.clear();
        self.count = 0;
    }
}

/// Where the fields of the instances of a list written as rows come from.
pub(super) enum RowSource {
    /// Instances of a plain class, by its plan (`PyEncoder::attrs_fields`).
    Attrs(Arc<ClassPlan>),
    /// Placeholders of ATTRS instances (`PyEncoder::placeholder_fields`).
    Placeholder,
}

/// Where a shape is written: after an OBJECT tag, or in the head of an OBJECT_ROWS (spec
/// 5.17.9), which has no OBJECT tag.
#[derive(Clone, Copy)]
pub(super) enum ShapeUse {
    Object,
    Rows,
}

fn refused(message: String) -> EncodeFail {
    EncodeFail::new(FailKind::Refused(message))
}

impl PyEncoder<'_> {
    /// Writes an instance of a class by module and qualified name.
    pub(super) fn class_instance(
        &mut self,
        obj: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
    ) -> Result<(), EncodeFail> {
        if let Some(encode) = self.custom_encoder(ty)? {
            return self.custom_instance(obj, ty, encode);
        }
        let plan = self.plan_for(ty)?;
        if plan.placeholder {
            return self.placeholder_instance(obj);
        }
        if let Some(creates_first) = plan.parts {
            return self.parts_instance(obj, creates_first);
        }
        match plan.kind {
            ObjectKind::Attrs => self.attrs_instance(obj, ty, &plan),
            ObjectKind::State => self.state_instance(obj, ty, &plan),
            ObjectKind::TupleFields => self.tuple_fields_instance(obj, ty, &plan),
            ObjectKind::Enum => self.enum_instance(obj, ty, &plan),
            // Custom types come from the caller's table, and these kinds are worked out per
            // instance (`plan.parts`): no class plan names them.
            ObjectKind::Custom
            | ObjectKind::MutableSubclass
            | ObjectKind::ValueSubclass
            | ObjectKind::Global
            | ObjectKind::Reduce
            | ObjectKind::NewObj
            | ObjectKind::Exception
            | ObjectKind::ReduceKw
            | ObjectKind::NewObjKw => Err(EncodeFail::unsupported(self.py, obj)),
        }
    }

    /// How the instances of `ty` would be written as rows (spec 5.17.9): `None` unless each
    /// would be an ATTRS OBJECT, as an instance of a plain class or as a placeholder.
    pub(super) fn row_source(
        &mut self,
        ty: *mut ffi::PyTypeObject,
    ) -> Result<Option<RowSource>, EncodeFail> {
        if self.custom_encoder(ty)?.is_some() {
            return Ok(None);
        }
        let plan = self.plan_for(ty)?;
        Ok(if plan.placeholder {
            Some(RowSource::Placeholder)
        } else if plan.parts.is_none() && plan.kind == ObjectKind::Attrs {
            Some(RowSource::Attrs(plan))
        } else {
            None
        })
    }

    /// Pushes the field names and values of `obj`, a placeholder, on the attribute stacks
    /// when it stands for an ATTRS instance, and returns its module and qualified name;
    /// `None` for any other kind or state (the caller drops whatever was pushed).
    pub(super) fn placeholder_fields(
        &mut self,
        obj: *mut ffi::PyObject,
    ) -> Result<Option<(String, String)>, EncodeFail> {
        let py = self.py;
        // SAFETY: obj is a live Placeholder.
        let bound = unsafe { Bound::from_borrowed_ptr(py, obj) };
        let python = |e: PyErr| EncodeFail::new(FailKind::Python(e));
        let text = |name: &str| -> Result<String, EncodeFail> {
            bound
                .getattr(name)
                .and_then(|v| v.extract())
                .map_err(python)
        };
        if ObjectKind::from_spec_name(&text("kind")?) != Some(ObjectKind::Attrs) {
            return Ok(None);
        }
        let (module, qualname) = checked_names(text("module")?, text("qualname")?)?;
        let state = bound.getattr("state").map_err(python)?;
        let Ok(dict) = state.cast::<pyo3::types::PyDict>() else {
            return Ok(None);
        };
        for (name, value) in dict.iter() {
            if !name.is_exact_instance_of::<PyString>() {
                return Ok(None);
            }
            self.attr_names.push(owned(&name));
            self.attr_values.push(owned(&value));
        }
        Ok(Some((module, qualname)))
    }

    fn custom_encoder(&mut self, ty: *mut ffi::PyTypeObject) -> Result<Option<PyObj>, EncodeFail> {
        let Some(table) = self.classes.custom.as_ref() else {
            return Ok(None);
        };
        // SAFETY: a borrowed reference the table holds for the whole encode, taken at once.
        Ok(table
            .get(ty)
            .and_then(std::ptr::NonNull::new)
            .map(|f| unsafe { PyObj::from_borrowed(f) }))
    }

    fn plan_for(&mut self, ty: *mut ffi::PyTypeObject) -> Result<Arc<ClassPlan>, EncodeFail> {
        let work = self.class_work();
        if let Some((last, plan)) = &work.last_plan {
            if *last == ty as usize {
                return Ok(plan.clone());
            }
        }
        let key = ty as usize;
        let held = match &work.shapes.first_plan {
            Some((first, _, plan)) if *first == key => Some(plan.clone()),
            _ => work.shapes.plans.get(&key).map(|(_, plan)| plan.clone()),
        };
        let plan = match held {
            Some(plan) => plan,
            None => {
                let plan = self.plan_from_cache(ty)?;
                // Held until the encode ends: see ShapeTable::plans.
                let class = hold(ty.cast());
                let shapes = &mut self.class_work().shapes;
                match shapes.first_plan {
                    None => shapes.first_plan = Some((key, class, plan.clone())),
                    Some(_) => {
                        shapes.plans.insert(key, (class, plan.clone()));
                    }
                }
                plan
            }
        };
        self.class_work().last_plan = Some((key, plan.clone()));
        Ok(plan)
    }

    /// The plan of a custom type, made once per encode (the custom table is the caller's).
    fn custom_plan_for(
        &mut self,
        ty: *mut ffi::PyTypeObject,
    ) -> Result<Arc<ClassPlan>, EncodeFail> {
        if let Some(plan) = self.class_work().custom_plans.get(&(ty as usize)) {
            return Ok(plan.clone());
        }
        // SAFETY: ty is the live type of a live object.
        let cls = unsafe { Bound::from_borrowed_ptr(self.py, ty.cast()) };
        let plan = Arc::new(custom_plan(self.py, &cls)?);
        self.class_work()
            .custom_plans
            .insert(ty as usize, plan.clone());
        Ok(plan)
    }

    fn plan_from_cache(
        &mut self,
        ty: *mut ffi::PyTypeObject,
    ) -> Result<Arc<ClassPlan>, EncodeFail> {
        if let Some(plan) = cached_plan(ty) {
            return Ok(plan);
        }
        let py = self.py;
        // SAFETY: ty is the live type of a live object.
        let cls = unsafe { Bound::from_borrowed_ptr(py, ty.cast()) };
        let answer = Callback::EncodePlan.call(py, (cls.clone(),)).map_err(|e| {
            match e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) {
                true => refused(e.value(py).to_string()),
                false => EncodeFail::new(FailKind::Python(e)),
            }
        })?;
        let mut plan = parse_plan(py, &answer).map_err(|e| EncodeFail::new(FailKind::Python(e)))?;
        if plan.kind == ObjectKind::Attrs && !plan.placeholder && !plan.names.is_empty() {
            plan.slot_offsets = SlotOffsets::resolve(ty, &plan.names, Access::Read, |_| true);
        }
        let plan = Arc::new(plan);
        remember_plan(py, &cls, plan.clone());
        Ok(plan)
    }

    /// Writes the OBJECT tag and shape (defining it on first use) for `names`.
    fn shape<N: NamePtr>(
        &mut self,
        ty: *mut ffi::PyTypeObject,
        plan: &ClassPlan,
        names: &[N],
    ) -> Result<(), EncodeFail> {
        self.shape_as(ty, plan, names, ShapeUse::Object)
    }

    /// [`PyEncoder::shape`] for an OBJECT or for the head of an OBJECT_ROWS.
    pub(super) fn shape_as<N: NamePtr>(
        &mut self,
        ty: *mut ffi::PyTypeObject,
        plan: &ClassPlan,
        names: &[N],
        using: ShapeUse,
    ) -> Result<(), EncodeFail> {
        let key = ty as usize;
        if let Some((held, number)) = self.class_work().shapes.last.get(&key) {
            if held.len() == names.len()
                && held
                    .iter()
                    .zip(names)
                    .all(|(h, n)| h.as_ptr() == n.name_ptr())
            {
                let number = *number;
                self.write_shape_number(number, using);
                return Ok(());
            }
        }
        let mut texts = Vec::with_capacity(names.len());
        for name in names {
            texts.push(name_text(self.py, name.name_ptr())?);
        }
        let number =
            self.shape_by_text_as(key, &plan.module, &plan.qualname, plan.kind, texts, using)?;
        let held = names.iter().map(|n| hold(n.name_ptr())).collect();
        self.class_work().shapes.last.insert(key, (held, number));
        Ok(())
    }

    /// Writes the OBJECT tag and a shape found by its text (`key` tells classes apart),
    /// defining the shape on first use; returns its number.
    pub(super) fn shape_by_text(
        &mut self,
        key: usize,
        module: &str,
        qualname: &str,
        kind: ObjectKind,
        texts: Vec<String>,
    ) -> Result<usize, EncodeFail> {
        self.shape_by_text_as(key, module, qualname, kind, texts, ShapeUse::Object)
    }

    /// [`PyEncoder::shape_by_text`] for an OBJECT or for the head of an OBJECT_ROWS.
    pub(super) fn shape_by_text_as(
        &mut self,
        key: usize,
        module: &str,
        qualname: &str,
        kind: ObjectKind,
        mut texts: Vec<String>,
        using: ShapeUse,
    ) -> Result<usize, EncodeFail> {
        // The key's text part also names the class, for placeholders (one type, many names).
        texts.push(format!("{module}:{qualname}:{}", kind.spec_name()));
        if let Some(&number) = self.class_work().shapes.numbers.get(&(key, texts.clone())) {
            self.write_shape_number(number, using);
            return Ok(number);
        }
        let label = texts.pop().unwrap_or_default();
        self.check_allowed(module, qualname, kind)?;
        for text in &texts {
            field_name(text.as_bytes()).map_err(|p| {
                refused(format!(
                    "field name {text:?} of {module}.{qualname} {}",
                    p.describe()
                ))
            })?;
        }
        let shapes = &mut self.class_work().shapes;
        let number = shapes.count;
        shapes.count += 1;
        let names = texts.iter().map(|t| t.as_bytes());
        match using {
            ShapeUse::Object => self.writer.object_defining_names(
                module.as_bytes(),
                qualname.as_bytes(),
                kind as u8,
                names,
                texts.len(),
            ),
            ShapeUse::Rows => self.writer.shape_definition_names(
                module.as_bytes(),
                qualname.as_bytes(),
                kind as u8,
                names,
                texts.len(),
            ),
        }
        texts.push(label);
        self.class_work()
            .shapes
            .numbers
            .insert((key, texts), number);
        Ok(number)
    }

    /// A shape defined before, by its number: an OBJECT's tag and reference, or an
    /// OBJECT_ROWS's reference.
    fn write_shape_number(&mut self, number: usize, using: ShapeUse) {
        match using {
            ShapeUse::Object => self.writer.object_of_shape(number),
            ShapeUse::Rows => self.writer.shape_reference(number),
        }
    }

    /// The OBJECT of a shape without fields (STATE, ENUM, CUSTOM), then its one value.
    fn single_value(
        &mut self,
        obj: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
        plan: &ClassPlan,
        value: *mut ffi::PyObject,
        label: &str,
    ) -> Result<(), EncodeFail> {
        self.shape::<PyObj>(ty, plan, &[])?;
        self.nested_value(value)
            .map_err(|e| e.at(Segment::Attr(String::from(label)), obj))
    }

    fn attrs_instance(
        &mut self,
        obj: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
        plan: &ClassPlan,
    ) -> Result<(), EncodeFail> {
        if self.write_ref_if_seen(obj) {
            return Ok(());
        }
        let _held = hold(obj);
        // The instance's names and values go on the encoder's attribute stacks (no
        // allocation per instance); nested instances push above them and pop back.
        let base = self.attr_names.len();
        let result = self.attrs_body(obj, ty, plan, base);
        self.attr_names.truncate(base);
        self.attr_values.truncate(base);
        result
    }

    fn attrs_body(
        &mut self,
        obj: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
        plan: &ClassPlan,
        base: usize,
    ) -> Result<(), EncodeFail> {
        self.attrs_fields(obj, plan)?;
        self.enter()?;
        // Nothing is pushed while the shape is written, so the stack can lend its slice.
        let names = std::mem::take(&mut self.attr_names);
        let shaped = self.shape(ty, plan, names.get(base..).unwrap_or_default());
        self.attr_names = names;
        shaped?;
        let end = self.attr_values.len();
        for i in base..end {
            let Some(value) = self.attr_values.get(i).map(PyObj::as_ptr) else {
                break;
            };
            self.nested_held_value(value).map_err(|e| {
                let name = self.attr_names.get(i).map(PyObj::as_ptr);
                let label = name.and_then(|n| name_text(self.py, n).ok());
                e.at(Segment::Attr(label.unwrap_or_default()), obj)
            })?;
        }
        self.leave();
        Ok(())
    }

    /// Pushes the field names and values of `obj`, an instance of an ATTRS class, on the
    /// attribute stacks: its `__dict__` items in order, then its set slots (spec 5.17.7, rule
    /// 10).
    pub(super) fn attrs_fields(
        &mut self,
        obj: *mut ffi::PyObject,
        plan: &ClassPlan,
    ) -> Result<(), EncodeFail> {
        if plan.has_dict {
            // SAFETY: obj is a live instance of a class whose instances have a __dict__;
            // GenericGetDict returns a new reference (or NULL with an exception).
            let dict = PyObj::from_owned(unsafe {
                ffi::PyObject_GenericGetDict(obj, std::ptr::null_mut())
            })
            .ok_or_else(|| EncodeFail::python(self.py))?;
            let mut pos: ffi::Py_ssize_t = 0;
            let mut key: *mut ffi::PyObject = std::ptr::null_mut();
            let mut value: *mut ffi::PyObject = std::ptr::null_mut();
            // SAFETY: iterating a dict we hold; no Python code runs inside the loop; key
            // and value are borrowed and at once held on the attribute stacks.
            while unsafe { ffi::PyDict_Next(dict.as_ptr(), &mut pos, &mut key, &mut value) } != 0 {
                // SAFETY: a type check of a live key.
                if unsafe { ffi::PyUnicode_CheckExact(key) } == 0 {
                    return Err(refused(format!(
                        "{}.{} instance has a non-str attribute name in its __dict__",
                        plan.module, plan.qualname
                    )));
                }
                self.attr_names.push(hold(key));
                self.attr_values.push(hold(value));
            }
        }
        // SAFETY: a type read of a live object.
        let ty = unsafe { ffi::Py_TYPE(obj) };
        if let Some(offsets) = plan
            .slot_offsets
            .as_ref()
            .and_then(|slots| slots.for_type(ty, &plan.names))
        {
            for (slot, &offset) in plan.names.iter().zip(offsets) {
                // SAFETY: obj is a live instance of the class the offsets hold for.
                let value = unsafe { slot_offsets::read(obj, offset) };
                if !value.is_null() {
                    self.attr_names.push(hold(slot.as_ptr()));
                    self.attr_values.push(hold(value));
                }
            }
            return Ok(());
        }
        for slot in &plan.names {
            // SAFETY: obj and the slot name are live; GetAttr returns a new reference or NULL.
            let got = unsafe { ffi::PyObject_GetAttr(obj, slot.as_ptr()) };
            match PyObj::from_owned(got) {
                Some(value) => {
                    self.attr_names.push(hold(slot.as_ptr()));
                    self.attr_values.push(value);
                }
                None => {
                    let err = PyErr::fetch(self.py);
                    if !err.is_instance_of::<pyo3::exceptions::PyAttributeError>(self.py) {
                        return Err(EncodeFail::new(FailKind::Python(err)));
                    }
                }
            }
        }
        Ok(())
    }

    fn state_instance(
        &mut self,
        obj: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
        plan: &ClassPlan,
    ) -> Result<(), EncodeFail> {
        if self.write_ref_if_seen(obj) {
            return Ok(());
        }
        // SAFETY: obj is live.
        let bound = unsafe { Bound::from_borrowed_ptr(self.py, obj) };
        let state = Callback::DefaultState
            .call(self.py, (bound,))
            .map_err(|e| EncodeFail::new(FailKind::Python(e)))?;
        let state = self.keep_alive(state);
        self.enter()?;
        self.single_value(obj, ty, plan, state, "__getstate__()")?;
        self.leave();
        Ok(())
    }

    fn tuple_fields_instance(
        &mut self,
        obj: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
        plan: &ClassPlan,
    ) -> Result<(), EncodeFail> {
        // SAFETY: obj is a tuple subclass instance.
        let n = unsafe { ffi::PyTuple_GET_SIZE(obj) }.max(0) as usize;
        if n != plan.names.len() {
            return Err(refused(format!(
                "{}.{} instance has {n} items but {} fields",
                plan.module,
                plan.qualname,
                plan.names.len()
            )));
        }
        let Some(token) = self.begin_value(obj, true)? else {
            return Ok(());
        };
        let _held = hold(obj);
        self.shape(ty, plan, &plan.names)?;
        for (i, name) in plan.names.iter().enumerate() {
            // SAFETY: 0 <= i < n = len(tuple) (checked above); tuples are immutable and obj
            // is kept alive by its holder.
            let item = unsafe { ffi::PyTuple_GET_ITEM(obj, i as ffi::Py_ssize_t) };
            self.nested_value(item).map_err(|e| {
                e.at(
                    Segment::Attr(name_text(self.py, name.as_ptr()).unwrap_or_default()),
                    obj,
                )
            })?;
        }
        self.end_immutable(obj, token);
        Ok(())
    }

    fn enum_instance(
        &mut self,
        obj: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
        plan: &ClassPlan,
    ) -> Result<(), EncodeFail> {
        let Some(token) = self.begin_immutable(obj, true)? else {
            return Ok(());
        };
        // SAFETY: obj is live; GetAttr returns a new reference or NULL.
        let value =
            PyObj::from_owned(unsafe { ffi::PyObject_GetAttrString(obj, c"_value_".as_ptr()) })
                .ok_or_else(|| EncodeFail::python(self.py))?;
        let value = self.keep_alive_obj(value);
        self.single_value(obj, ty, plan, value, "value")?;
        self.end_immutable(obj, token);
        Ok(())
    }

    fn custom_instance(
        &mut self,
        obj: *mut ffi::PyObject,
        ty: *mut ffi::PyTypeObject,
        encode: PyObj,
    ) -> Result<(), EncodeFail> {
        let Some(token) = self.begin_immutable(obj, true)? else {
            return Ok(());
        };
        let _held = hold(obj);
        let plan = self.custom_plan_for(ty)?;
        // SAFETY: encode is a live callable and obj a live object; new reference or NULL.
        let state = PyObj::from_owned(unsafe { ffi::PyObject_CallOneArg(encode.as_ptr(), obj) })
            .ok_or_else(|| EncodeFail::python(self.py))?;
        let state = self.keep_alive_obj(state);
        self.single_value(obj, ty, &plan, state, "<custom state>")?;
        self.end_immutable(obj, token);
        Ok(())
    }

    /// Writes an `amber.Placeholder` as the instance it stands for, so that a payload read
    /// with `placeholders=True` is written back unchanged.
    fn placeholder_instance(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        let py = self.py;
        // SAFETY: obj is a live Placeholder.
        let bound = unsafe { Bound::from_borrowed_ptr(py, obj) };
        let python = |e: PyErr| EncodeFail::new(FailKind::Python(e));
        let module: String = bound
            .getattr("module")
            .and_then(|v| v.extract())
            .map_err(python)?;
        let qualname: String = bound
            .getattr("qualname")
            .and_then(|v| v.extract())
            .map_err(python)?;
        let kind_name: String = bound
            .getattr("kind")
            .and_then(|v| v.extract())
            .map_err(python)?;
        let state = bound.getattr("state").map_err(python)?;
        let (module, qualname) = checked_names(module, qualname)?;
        let kind = ObjectKind::from_spec_name(&kind_name).ok_or_else(|| {
            refused(format!(
                "placeholder kind {kind_name:?} is not an object kind"
            ))
        })?;
        let mut texts = Vec::new();
        let mut values: Vec<PyObj> = Vec::new();
        if kind.has_fields() {
            let dict = state.cast::<pyo3::types::PyDict>().map_err(|_| {
                refused(format!(
                    "placeholder state of {module}.{qualname} must be a dict"
                ))
            })?;
            for (name, value) in dict.iter() {
                texts.push(name.extract::<String>().map_err(|_| {
                    refused(format!(
                        "placeholder of {module}.{qualname} has a non-str field name"
                    ))
                })?);
                values.push(owned(&value));
            }
        } else {
            match kind.value_count(0) {
                // GLOBAL: the names are the whole value.
                0 if state.is_none() => {}
                0 => {
                    return Err(refused(format!(
                        "placeholder state of {module}.{qualname} must be None for a GLOBAL"
                    )))
                }
                1 => values.push(owned(&state)),
                // The kinds with several values: a tuple of them, in order (spec 5.17.6).
                count => {
                    let tuple = state
                        .cast::<pyo3::types::PyTuple>()
                        .ok()
                        .filter(|t| t.len() == count)
                        .ok_or_else(|| {
                            refused(format!(
                                "placeholder state of {module}.{qualname} must be a tuple of \
                                 {count} values for a {kind_name}"
                            ))
                        })?;
                    values.extend(tuple.iter().map(|v| owned(&v)));
                }
            }
        }
        let token = if kind.creates_first() {
            if self.write_ref_if_seen(obj) {
                return Ok(());
            }
            self.enter()?;
            None
        } else {
            match self.begin_immutable(obj, true)? {
                None => return Ok(()),
                Some(token) => Some(token),
            }
        };
        let kept: Vec<*mut ffi::PyObject> =
            values.into_iter().map(|v| self.keep_alive_obj(v)).collect();
        self.shape_by_text(0, &module, &qualname, kind, texts.clone())?;
        let from_first = kind.creation() == amber_format::object::Creation::FromFirstValue;
        for (i, value) in kept.into_iter().enumerate() {
            let label = match texts.get(i) {
                Some(text) => text.clone(),
                None if kind.value_count(0) > 1 => String::from(super::parts::value_label(kind, i)),
                None => String::from("state"),
            };
            self.nested_value(value)
                .map_err(|e| e.at(Segment::Attr(label), obj))?;
            // Where the decoder records the instance it stands for (spec 5.17.3).
            if i == 0 && from_first {
                if let Some(Some(token)) = token.as_ref() {
                    self.memo.first_value_complete(obj, token);
                }
            }
        }
        match token {
            Some(token) => self.end_immutable(obj, token),
            None => self.leave(),
        }
        Ok(())
    }

    /// With `types=`, refuses a shape a decoder given the same list would refuse (spec
    /// 5.17.4): one whose names are neither in the list nor in the fixed tables of builtins.
    /// Custom types need no listing (the caller's `custom=` decodes them).
    fn check_allowed(
        &mut self,
        module: &str,
        qualname: &str,
        kind: ObjectKind,
    ) -> Result<(), EncodeFail> {
        let Some(allowed) = self.classes.allowed.as_ref() else {
            return Ok(());
        };
        if kind == ObjectKind::Custom {
            return Ok(());
        }
        let py = self.py;
        let key = format!("{module}:{qualname}");
        if allowed.allows(&key) {
            return Ok(());
        }
        if module == "builtins" {
            let fixed = Callback::BuiltinNamed.call(py, (&key, kind as u8));
            if fixed.is_ok_and(|found| !found.is_none()) {
                return Ok(());
            }
        }
        Err(refused(format!(
            "class {module}.{qualname} is not in types=[...]: a decoder given the same types \
             would refuse it"
        )))
    }

    /// Keeps a temporary alive until the encode ends, so its address is never reused by
    /// another object while the identity memo may hold it.
    pub(crate) fn keep_alive(&mut self, obj: Bound<'_, PyAny>) -> *mut ffi::PyObject {
        let ptr = obj.as_ptr();
        // SAFETY: into_ptr hands over a strong reference, which PyObj then owns.
        self.class_work()
            .temporaries
            .push(unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(ptr)) });
        ptr
    }

    /// [`PyEncoder::keep_alive`] for an owned reference.
    pub(crate) fn keep_alive_obj(&mut self, obj: PyObj) -> *mut ffi::PyObject {
        let ptr = obj.as_ptr();
        self.class_work().temporaries.push(obj);
        ptr
    }
}

fn owned(obj: &Bound<'_, PyAny>) -> PyObj {
    // SAFETY: obj is live; we take a new strong reference.
    unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(obj.as_ptr())) }
}

pub(super) fn name_text(py: Python<'_>, name: *mut ffi::PyObject) -> Result<String, EncodeFail> {
    // SAFETY: name is a live object (held by its caller).
    let bound = unsafe { Bound::from_borrowed_ptr(py, name) };
    bound
        .extract::<String>()
        .map_err(|_| refused(String::from("an attribute name is not encodable as UTF-8")))
}

pub(super) fn checked_names(
    module: String,
    qualname: String,
) -> Result<(String, String), EncodeFail> {
    for (what, name) in [("module", &module), ("qualname", &qualname)] {
        dotted_name(name.as_bytes()).map_err(|p| {
            refused(format!(
                "class {module}.{qualname}: its {what} {name:?} {}",
                p.describe()
            ))
        })?;
    }
    Ok((module, qualname))
}

fn parse_plan(py: Python<'_>, answer: &Bound<'_, PyAny>) -> PyResult<ClassPlan> {
    let tuple = answer.cast::<PyTuple>()?;
    let kind_code: u8 = tuple.get_item(0)?.extract()?;
    if kind_code == PARTS {
        return Ok(ClassPlan {
            placeholder: false,
            parts: Some(tuple.get_item(1)?.extract()?),
            kind: ObjectKind::Global,
            module: String::new(),
            qualname: String::new(),
            has_dict: false,
            names: Vec::new(),
            slot_offsets: None,
        });
    }
    let placeholder = kind_code == PLACEHOLDER;
    let kind = match placeholder {
        true => ObjectKind::Custom,
        false => ObjectKind::from_code(kind_code)
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("bad plan kind"))?,
    };
    let module: String = tuple.get_item(1)?.extract()?;
    let qualname: String = tuple.get_item(2)?.extract()?;
    let (module, qualname) = checked_names(module, qualname).map_err(|f| match f.into_kind() {
        FailKind::Refused(m) => pyo3::exceptions::PyTypeError::new_err(m),
        _ => pyo3::exceptions::PyTypeError::new_err("bad class name"),
    })?;
    let (has_dict, names) = match kind {
        ObjectKind::Attrs => (
            tuple.get_item(3)?.extract::<bool>()?,
            tuple.get_item(4)?.extract::<Vec<Bound<'_, PyString>>>()?,
        ),
        ObjectKind::TupleFields => (
            false,
            tuple.get_item(3)?.extract::<Vec<Bound<'_, PyString>>>()?,
        ),
        _ => (false, Vec::new()),
    };
    let _ = py;
    Ok(ClassPlan {
        placeholder,
        parts: None,
        kind,
        module,
        qualname,
        has_dict,
        names: names.into_iter().map(Bound::unbind).collect(),
        slot_offsets: None,
    })
}

fn custom_plan(py: Python<'_>, cls: &Bound<'_, PyAny>) -> Result<ClassPlan, EncodeFail> {
    let module: String = cls
        .getattr("__module__")
        .and_then(|m| m.extract())
        .map_err(|e| EncodeFail::new(FailKind::Python(e)))?;
    let qualname: String = cls
        .getattr("__qualname__")
        .and_then(|m| m.extract())
        .map_err(|e| EncodeFail::new(FailKind::Python(e)))?;
    let (module, qualname) = checked_names(module, qualname)?;
    let _ = py;
    Ok(ClassPlan {
        placeholder: false,
        parts: None,
        kind: ObjectKind::Custom,
        module,
        qualname,
        has_dict: false,
        names: Vec::new(),
        slot_offsets: None,
    })
}
