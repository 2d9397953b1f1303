//! The `__slots__` fields of an instance, read at their offsets in the instance rather than
//! through `getattr`.
//!
//! Why: an instance of a class with `__slots__` (a plain class, `@dataclass(slots=True)`,
//! `attrs.define`) is written field by field, and `getattr` of a slot looks the name up in
//! the class's attribute cache, checks the descriptor it finds is a data descriptor and
//! calls it: about 160 instructions a field. In a list of small slotted instances that is a
//! fifth of the encode.
//!
//! How: a slot is a member descriptor on the class, which records where in the instance the
//! value is kept. When a class's plan is made, each name is looked up the way
//! `object.__getattribute__` looks it up (`_PyType_Lookup`: the first match along the MRO).
//! If the class uses that `__getattribute__` and every name finds a plain object member
//! inside the instance layout, the offsets are kept with the class's version tag. CPython
//! gives the class a new tag whenever it or a base changes (an attribute set or deleted,
//! `__bases__` assigned), so while the tag is the same every lookup would find the same
//! descriptor, and reading the slot is all the descriptor would do. When the tag changed, the
//! names are looked up again once; if they still find the same offsets, the new tag is kept.
//!
//! Fallback: `None` from [`SlotOffsets::resolve`] or [`SlotOffsets::for_type`] when a name
//! is not a plain member (a property, a class attribute), when the class has its own
//! `__getattribute__` or `__getattr__`, when the class was changed so that a name finds
//! something else, or on interpreters whose layouts amber does not know. Callers then use
//! `getattr`, which does what Python would.

use std::sync::atomic::{AtomicU32, Ordering};

use pyo3::prelude::*;
use pyo3::types::PyString;
use pyo3_ffi as ffi;

#[cfg(amber_known_layouts)]
extern "C" {
    // CPython's attribute lookup along a type's MRO, through its method cache: what
    // `object.__getattribute__` and `object.__setattr__` call. Exported by every CPython
    // amber knows the layouts of (3.10 to 3.13); pyo3-ffi keeps its binding private. Returns a
    // borrowed reference or NULL, and sets no exception.
    fn _PyType_Lookup(ty: *mut ffi::PyTypeObject, name: *mut ffi::PyObject) -> *mut ffi::PyObject;
}

/// Where the named slots of one class's instances are, while the class is unchanged.
pub(crate) struct SlotOffsets {
    /// The class (its address; the plan that holds this is dropped when the class dies).
    class: usize,
    /// The class's version tag when the offsets were last found to hold. Atomic only so that
    /// the plan can be shared; it is read and written with the GIL held.
    tag: AtomicU32,
    /// One per name, in the names' order.
    offsets: Box<[isize]>,
}

impl SlotOffsets {
    /// The offsets of `names` in instances of `ty`, if each is a plain object slot that
    /// `getattr` would read (see the module notes).
    pub(crate) fn resolve(ty: *mut ffi::PyTypeObject, names: &[Py<PyString>]) -> Option<Self> {
        let offsets = lookup_all(ty, names)?;
        Some(SlotOffsets {
            class: ty as usize,
            tag: AtomicU32::new(valid_tag(ty)?),
            offsets,
        })
    }

    /// The offsets, one per name of `names` (the names they were resolved for), if they still
    /// hold for instances of `ty`.
    #[inline]
    pub(crate) fn for_type(
        &self,
        ty: *mut ffi::PyTypeObject,
        names: &[Py<PyString>],
    ) -> Option<&[isize]> {
        if ty as usize != self.class {
            return None;
        }
        if valid_tag(ty) == Some(self.tag.load(Ordering::Relaxed)) {
            return Some(&self.offsets);
        }
        self.revalidate(ty, names)
    }

    /// [`SlotOffsets::for_type`] after the class changed: looks the names up again.
    #[cold]
    #[inline(never)]
    fn revalidate(&self, ty: *mut ffi::PyTypeObject, names: &[Py<PyString>]) -> Option<&[isize]> {
        let offsets = lookup_all(ty, names)?;
        // The lookups gave the class a tag again, if it can have one.
        let tag = valid_tag(ty)?;
        if *offsets != *self.offsets {
            return None;
        }
        self.tag.store(tag, Ordering::Relaxed);
        Some(&self.offsets)
    }
}

/// The object in the slot at `offset` of `obj`, borrowed; NULL when the slot is empty (where
/// `getattr` raises `AttributeError`).
///
/// # Safety
/// `obj` is a live instance of a class whose [`SlotOffsets::for_type`] returned `offset`, and
/// the GIL is held.
#[inline(always)]
pub(crate) unsafe fn read(obj: *mut ffi::PyObject, offset: isize) -> *mut ffi::PyObject {
    // SAFETY: the caller's promise: `offset` is an object slot inside the layout of obj's
    // class, which holds a strong reference or NULL.
    unsafe { *obj.cast::<u8>().offset(offset).cast::<*mut ffi::PyObject>() }
}

/// The class's version tag, if it has a valid one.
#[cfg(amber_known_layouts)]
#[inline(always)]
fn valid_tag(ty: *mut ffi::PyTypeObject) -> Option<u32> {
    // SAFETY: field reads of a live type object, with the GIL held.
    let (flags, tag) = unsafe { ((*ty).tp_flags, (*ty).tp_version_tag) };
    (flags & ffi::Py_TPFLAGS_VALID_VERSION_TAG != 0 && tag != 0).then_some(tag)
}

#[cfg(not(amber_known_layouts))]
fn valid_tag(_ty: *mut ffi::PyTypeObject) -> Option<u32> {
    None
}

/// Each name's slot offset, found as `object.__getattribute__` would find its descriptor.
#[cfg(amber_known_layouts)]
fn lookup_all(ty: *mut ffi::PyTypeObject, names: &[Py<PyString>]) -> Option<Box<[isize]>> {
    // Compared as addresses: both are the interpreter's one exported function, which the
    // type's slot holds when the class defines neither `__getattribute__` nor `__getattr__`.
    let generic = ffi::PyObject_GenericGetAttr as *const () as usize;
    // SAFETY: a field read of a live type object.
    if unsafe { (*ty).tp_getattro }.map(|f| f as usize) != Some(generic) {
        return None;
    }
    names
        .iter()
        .map(|name| {
            // SAFETY: a live type and a live str, with the GIL held; the result is borrowed
            // and read before any code runs.
            unsafe {
                let descr = _PyType_Lookup(ty, name.as_ptr());
                if descr.is_null() {
                    return None;
                }
                descriptor_offset(ty.cast(), descr)
            }
        })
        .collect()
}

#[cfg(not(amber_known_layouts))]
fn lookup_all(_ty: *mut ffi::PyTypeObject, _names: &[Py<PyString>]) -> Option<Box<[isize]>> {
    None
}

/// The slot offset `descr` records, if it is a plain object member descriptor (what
/// `__slots__` makes) of `class` or a base of it, whose slot lies inside `class`'s instance
/// layout.
///
/// # Safety
/// `class` is a live type, `descr` a live object, and the GIL is held.
#[cfg(amber_known_layouts)]
pub(crate) unsafe fn descriptor_offset(
    class: *mut ffi::PyObject,
    descr: *mut ffi::PyObject,
) -> Option<isize> {
    // SAFETY: the caller's promise; descr is read as a member descriptor only after its exact
    // type is checked, and its member only after the class it belongs to is.
    unsafe {
        if ffi::Py_TYPE(descr) != std::ptr::addr_of_mut!(ffi::PyMemberDescr_Type) {
            return None;
        }
        let owner = (*descr.cast::<ffi::PyDescrObject>()).d_type;
        if ffi::PyType_IsSubtype(class.cast(), owner) == 0 {
            return None;
        }
        // pyo3 types this field as a getset definition before 3.11; CPython's is a member one.
        let member = (*descr.cast::<ffi::PyMemberDescrObject>())
            .d_member
            .cast::<ffi::PyMemberDef>();
        // No flags: not read-only, no audit hook on reads.
        let plain = (*member).type_code == ffi::Py_T_OBJECT_EX && (*member).flags == 0;
        let size = (*class.cast::<ffi::PyTypeObject>()).tp_basicsize;
        let offset = (*member).offset;
        let in_layout = offset >= std::mem::size_of::<ffi::PyObject>() as isize
            && offset + std::mem::size_of::<*mut ffi::PyObject>() as isize <= size;
        (plain && in_layout).then_some(offset)
    }
}
