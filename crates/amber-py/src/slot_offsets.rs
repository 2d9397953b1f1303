//! The `__slots__` fields of an instance, read and set at their offsets in the instance rather
//! than through `getattr` and `object.__setattr__`.
//!
//! Why: an instance of a class with `__slots__` (a plain class, `@dataclass(slots=True)`,
//! `attrs.define`) is written field by field, and `getattr` of a slot looks the name up in
//! the class's attribute cache, checks the descriptor it finds is a data descriptor and
//! calls it: about 160 instructions a field. In a list of small slotted instances that is a
//! fifth of the encode. The decoder's `object.__setattr__` of a field costs about 125.
//!
//! How: a slot is a member descriptor on the class, which records where in the instance the
//! value is kept. When a class is planned, each name is looked up the way
//! `object.__getattribute__` and `object.__setattr__` look it up (`_PyType_Lookup`: the first
//! match along the MRO). If every name finds a plain object member inside the instance
//! layout (and, for reads, the class uses the generic `__getattribute__`), the offsets are
//! kept with the class's version tag. CPython gives the class a new tag whenever it or a
//! base changes (an attribute set or deleted, `__bases__` assigned), so while the tag is the
//! same every lookup would find the same descriptor, and reading or storing the slot is all
//! the descriptor would do. When the tag changed, the names are looked up again once; if
//! they still find the same offsets, the new tag is kept.
//!
//! Fallback: `None` from [`SlotOffsets::resolve`] or [`SlotOffsets::for_type`] when a name
//! is not a plain member (a property, a class attribute), when the class has its own
//! `__getattribute__` or `__getattr__` (for reads), when the class was changed so that a name
//! finds something else, or on interpreters whose layouts amber does not know. Callers then
//! use `getattr` or `object.__setattr__`, which do what Python would.

use std::sync::atomic::{AtomicU32, Ordering};

use pyo3_ffi as ffi;

use crate::object::{NamePtr, PyObj};

#[cfg(amber_known_layouts)]
extern "C" {
    // CPython's attribute lookup along a type's MRO, through its method cache: what
    // `object.__getattribute__` and `object.__setattr__` call. Exported by every CPython
    // amber knows the layouts of (3.10 to 3.13); pyo3-ffi keeps its binding private. Returns a
    // borrowed reference or NULL, and sets no exception.
    fn _PyType_Lookup(ty: *mut ffi::PyTypeObject, name: *mut ffi::PyObject) -> *mut ffi::PyObject;
}

/// What the offsets stand in for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// `getattr`, which also runs the class's own `__getattribute__` or `__getattr__`.
    Read,
    /// `object.__setattr__`, the decoder's call, which runs neither `__setattr__` nor
    /// `__getattr__`.
    Set,
}

/// The offset kept for a name the caller did not ask for. Never a slot's: a slot lies past
/// the object's header.
const NOT_ASKED: isize = 0;

/// Where the named slots of one class's instances are, while the class is unchanged.
pub(crate) struct SlotOffsets {
    /// The class (its address; the plan that holds this is dropped with the class, or with
    /// the decode that holds the class).
    class: usize,
    /// The class's version tag when the offsets were last found to hold. Atomic only so that
    /// the plan can be shared; it is read and written with the GIL held.
    tag: AtomicU32,
    access: Access,
    /// One per name, in the names' order; [`NOT_ASKED`] for the names not asked for.
    offsets: Box<[isize]>,
}

impl SlotOffsets {
    /// The offsets of `names` in instances of `ty`, if each name `asked` picks is a plain
    /// object slot that `access` would read or set (see the module notes).
    pub(crate) fn resolve<N: NamePtr>(
        ty: *mut ffi::PyTypeObject,
        names: &[N],
        access: Access,
        asked: impl Fn(usize) -> bool,
    ) -> Option<Self> {
        let offsets = lookup_all(ty, names, access, asked)?;
        Some(SlotOffsets {
            class: ty as usize,
            tag: AtomicU32::new(valid_tag(ty)?),
            access,
            offsets,
        })
    }

    /// The offsets, one per name of `names` (the names they were resolved for), if they still
    /// hold for instances of `ty`.
    #[inline]
    pub(crate) fn for_type<N: NamePtr>(
        &self,
        ty: *mut ffi::PyTypeObject,
        names: &[N],
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
    fn revalidate<N: NamePtr>(&self, ty: *mut ffi::PyTypeObject, names: &[N]) -> Option<&[isize]> {
        let asked = |i: usize| self.offsets.get(i).is_some_and(|&o| o != NOT_ASKED);
        let offsets = lookup_all(ty, names, self.access, asked)?;
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
/// `obj` is a live instance of a class whose [`SlotOffsets::for_type`] returned `offset` for
/// a name it was asked for, and the GIL is held.
#[inline(always)]
pub(crate) unsafe fn read(obj: *mut ffi::PyObject, offset: isize) -> *mut ffi::PyObject {
    // SAFETY: the caller's promise: `offset` is an object slot inside the layout of obj's
    // class, which holds a strong reference or NULL.
    unsafe { *obj.cast::<u8>().offset(offset).cast::<*mut ffi::PyObject>() }
}

/// Stores `value` in the slot at `offset` of `obj` and releases what the slot held, as the
/// slot's descriptor does for `object.__setattr__`.
///
/// # Safety
/// As for [`read`], from a [`SlotOffsets`] resolved for [`Access::Set`].
#[inline(always)]
pub(crate) unsafe fn set(obj: *mut ffi::PyObject, offset: isize, value: PyObj) {
    // SAFETY: as in `read`; the slot takes the reference `value` owned, and the old value's
    // reference, which the slot owned, is released after the store (it may run code).
    unsafe {
        let slot = obj.cast::<u8>().offset(offset).cast::<*mut ffi::PyObject>();
        let old = *slot;
        *slot = value.into_ptr();
        ffi::Py_XDECREF(old);
    }
}

/// The class's version tag, if it has a valid one. Up to 3.12 a changed class loses a
/// flag (and 3.10 keeps its old tag until the next lookup gives it another); from 3.13 on
/// that flag is never set, and a changed class's tag is 0 until then.
#[cfg(amber_known_layouts)]
#[inline(always)]
fn valid_tag(ty: *mut ffi::PyTypeObject) -> Option<u32> {
    // SAFETY: a field read of a live type object, with the GIL held.
    let tag = unsafe { (*ty).tp_version_tag };
    #[cfg(not(Py_3_13))]
    // SAFETY: as above.
    let tag = match unsafe { (*ty).tp_flags } & ffi::Py_TPFLAGS_VALID_VERSION_TAG {
        0 => 0,
        _ => tag,
    };
    (tag != 0).then_some(tag)
}

#[cfg(not(amber_known_layouts))]
fn valid_tag(_ty: *mut ffi::PyTypeObject) -> Option<u32> {
    None
}

/// Each asked name's slot offset, found as `access` would find its descriptor.
#[cfg(amber_known_layouts)]
fn lookup_all<N: NamePtr>(
    ty: *mut ffi::PyTypeObject,
    names: &[N],
    access: Access,
    asked: impl Fn(usize) -> bool,
) -> Option<Box<[isize]>> {
    // Compared as addresses: both are the interpreter's one exported function, which the
    // type's slot holds when the class defines neither `__getattribute__` nor `__getattr__`.
    let generic = ffi::PyObject_GenericGetAttr as *const () as usize;
    // SAFETY: a field read of a live type object.
    if access == Access::Read && unsafe { (*ty).tp_getattro }.map(|f| f as usize) != Some(generic) {
        return None;
    }
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            if !asked(i) {
                return Some(NOT_ASKED);
            }
            // SAFETY: a live type and a live str, with the GIL held; the result is borrowed
            // and read before any code runs.
            unsafe {
                let descr = _PyType_Lookup(ty, name.name_ptr());
                if descr.is_null() {
                    return None;
                }
                descriptor_offset(ty.cast(), descr)
            }
        })
        .collect()
}

#[cfg(not(amber_known_layouts))]
fn lookup_all<N: NamePtr>(
    _ty: *mut ffi::PyTypeObject,
    _names: &[N],
    _access: Access,
    _asked: impl Fn(usize) -> bool,
) -> Option<Box<[isize]>> {
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
