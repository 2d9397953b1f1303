//! The three fields of an `amber.CustomType` (`cls`, `encode`, `decode`), read from their
//! slots rather than through `getattr`.
//!
//! Why: a `custom=` list is read on every call that passes one, and `getattr` on a
//! `__slots__` field walks the class's MRO for the descriptor and calls it, about 80
//! instructions a field; `dumps(x, custom=[...])` read two per entry and `loads` one, a tenth
//! of a small payload's encode.
//!
//! How: `CustomType` declares `__slots__`, so CPython keeps each field at a fixed offset in
//! the instance, which the field's member descriptor on the class records. The offsets are
//! read once from those descriptors; an object whose type is exactly `CustomType` keeps its
//! fields there. `CustomType` refuses assignment, so what the slot holds is what `__init__`
//! checked and stored.
//!
//! Fallback: `None` when the object is not exactly a `CustomType`, when a slot is empty (an
//! instance made without `__init__`), when a descriptor is not a plain object member (the
//! class was changed), or on interpreters whose layouts amber does not know. Callers then use
//! `getattr`, which raises what Python would.

use pyo3_ffi as ffi;

use crate::object::Cached;

/// One field of a `CustomType`.
#[derive(Clone, Copy)]
pub enum Field {
    Cls = 0,
    Encode = 1,
    Decode = 2,
}

/// The class `amber._classes.CustomType`, or NULL (with a Python exception set) if it cannot
/// be imported.
pub fn class() -> *mut ffi::PyObject {
    static CUSTOM_TYPE: Cached = Cached::new();
    CUSTOM_TYPE.imported_attr(c"amber._classes", c"CustomType")
}

/// Whether `obj` is exactly a `CustomType` (`class` is [`class`]'s result).
#[inline]
pub fn is_custom_type(obj: *mut ffi::PyObject, class: *mut ffi::PyObject) -> bool {
    // SAFETY: a type read of a live object.
    !class.is_null() && unsafe { ffi::Py_TYPE(obj) }.cast() == class
}

/// `field` of `obj`, borrowed, if `obj` is exactly a `CustomType` and the field is set (see
/// the module notes for when this is None).
#[cfg(amber_known_layouts)]
pub fn field(obj: *mut ffi::PyObject, field: Field) -> Option<*mut ffi::PyObject> {
    let class = class();
    if class.is_null() {
        // SAFETY: the GIL is held; the failed import is the fallback's to report.
        unsafe { ffi::PyErr_Clear() };
        return None;
    }
    if !is_custom_type(obj, class) {
        return None;
    }
    let offset = offsets(class)?[field as usize];
    // SAFETY: obj is a live instance of exactly the class the offsets were read from, and
    // each offset is an object slot of its layout (checked in `offsets`); the slot holds a
    // strong reference or NULL.
    let value = unsafe { *obj.cast::<u8>().offset(offset).cast::<*mut ffi::PyObject>() };
    (!value.is_null()).then_some(value)
}

/// The `cls`, `encode` and `decode` fields of `obj`, borrowed, if `obj` is exactly a
/// `CustomType` (`class` is [`class`]'s result, not NULL) and all are set: read with one
/// type check, for an encode table and for the keyword cache's record of a `custom=` list.
#[cfg(amber_known_layouts)]
#[inline]
pub fn fields(
    obj: *mut ffi::PyObject,
    class: *mut ffi::PyObject,
) -> Option<[*mut ffi::PyObject; 3]> {
    if !is_custom_type(obj, class) {
        return None;
    }
    let offsets = offsets(class)?;
    // SAFETY: as in `field`: object slots of exactly the class the offsets were read from.
    let fields = offsets
        .map(|offset| unsafe { *obj.cast::<u8>().offset(offset).cast::<*mut ffi::PyObject>() });
    fields.iter().all(|f| !f.is_null()).then_some(fields)
}

/// See the module notes: without known layouts, every caller uses `getattr`.
#[cfg(not(amber_known_layouts))]
pub fn fields(
    _obj: *mut ffi::PyObject,
    _class: *mut ffi::PyObject,
) -> Option<[*mut ffi::PyObject; 3]> {
    None
}

/// See the module notes: without known layouts, every caller uses `getattr`.
#[cfg(not(amber_known_layouts))]
pub fn field(_obj: *mut ffi::PyObject, _field: Field) -> Option<*mut ffi::PyObject> {
    None
}

/// The slot offsets of `cls`, `encode` and `decode` in a `CustomType`, read once from the
/// class's member descriptors; None if any is not an object member.
#[cfg(amber_known_layouts)]
fn offsets(class: *mut ffi::PyObject) -> Option<[isize; 3]> {
    static OFFSETS: std::sync::OnceLock<Option<[isize; 3]>> = std::sync::OnceLock::new();
    *OFFSETS.get_or_init(|| {
        let mut found = [0isize; 3];
        for (at, name) in [c"cls", c"encode", c"decode"].into_iter().enumerate() {
            found[at] = member_offset(class, name)?;
        }
        Some(found)
    })
}

/// The offset of the object slot `name` of `class`, from its member descriptor.
#[cfg(amber_known_layouts)]
fn member_offset(class: *mut ffi::PyObject, name: &std::ffi::CStr) -> Option<isize> {
    // SAFETY: C-API calls with the GIL held on a live type (kept alive by `Cached`) and a
    // NUL-terminated name; the new reference is released after it is read. (A member
    // descriptor got from its class is the descriptor itself.)
    unsafe {
        let descr = ffi::PyObject_GetAttrString(class, name.as_ptr());
        if descr.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        let offset = crate::slot_offsets::descriptor_offset(class, descr);
        ffi::Py_DECREF(descr);
        offset
    }
}
