//! Dicts of a repeated shape, built from a template.
//!
//! Record payloads hold thousands of dicts with the same str keys in the same order. Building
//! each one with `PyDict_SetItem` probes the table and inserts every key, and makes the keys
//! table as the first key goes in: on 3.11 that is about 1,100 instructions for a 3-key dict.
//! Once the decoder has completed two dicts with the same first key (the same str object, as
//! the key cache and REFs hand out) and the same length, the second is copied into a private
//! template. A later dict starting with that key and length becomes a copy of the template:
//! `PyDict_Merge` into an empty dict copies a clean keys table whole. Each value is then stored
//! into its entry, once the key decoded at that index is checked to be the template's key
//! object itself. A key that differs turns the dict back into a plain one holding the pairs so
//! far, and the rest go in with `PyDict_SetItem`.
//!
//! Storing into an entry follows CPython's private table layout ([`dict_layout`]); where
//! module init could not confirm it, no template is made and every dict is built with
//! `PyDict_SetItem`.
//!
//! **Across decodes.** A service decodes message after message of the same few shapes (task
//! messages, cache values), each holding every shape once, so a decode alone never meets a
//! shape twice. Their keys are short strs that the key cache hands out as the same objects
//! payload after payload, so templates carry over: a decode takes those the last one left
//! ([`Templates::resume`]) and leaves its own when it ends ([`Templates::keep`]). Only a
//! template whose keys are all the key cache's own strs is carried: another decode can meet
//! those objects again, while keys made for one payload (repeated through REFs) never match
//! and would only take places. A template holds its keys and None for every value, never a
//! value of the payload it was learned from, so nothing a caller decoded is kept alive. A
//! decode leaves those it learned or used, at most [`MAX_SHAPES`], and the templates it found
//! do not count against the [`MAX_SHAPES`] it may learn. What a decode builds is the same
//! either way: a template only changes how a dict's table is made.

use std::cell::UnsafeCell;

use pyo3_ffi as ffi;

use super::key_cache;
use crate::dict_layout;
use crate::object::PyObj;

/// Whether dicts of `len` pairs are built through templates: where the dict layout is known
/// (module init checked it), and for records, 2 to [`MAX_LEN`] pairs. The bound keeps the
/// templates of one decode small (16 of at most 63 pairs) whatever the input holds.
#[inline(always)]
pub fn applies(len: usize) -> bool {
    (2..=MAX_LEN).contains(&len) && dict_layout::known()
}

/// The most pairs a dict built through a template has.
pub const MAX_LEN: usize = 63;

/// Templates of one slot that may turn out wrong (a later key differs) before the slot stops
/// making them: bounds the work a payload of alternating shapes can cause.
const MAX_MISSES: u8 = 4;

/// Whether `dict` was made from a template: its items are all in place while the decoder is
/// still at pair `index`. A plain dict holds exactly `index` items then.
///
/// # Safety
/// `dict` must be a live exact dict and the GIL held.
#[inline(always)]
pub unsafe fn is_from_template(dict: *mut ffi::PyObject, index: usize) -> bool {
    // SAFETY: per the contract.
    unsafe { (*dict.cast::<ffi::PyDictObject>()).ma_used as usize != index }
}

/// Stores `value` as the value of entry `index` of a dict made from a template, if that
/// entry's key is `key` itself; gives the value back otherwise.
///
/// # Safety
/// `dict` must be a live dict made from a template (see [`is_from_template`]) that nothing
/// outside the decoder can reach; the GIL held.
#[inline(always)]
pub unsafe fn store(
    dict: *mut ffi::PyObject,
    index: usize,
    key: *mut ffi::PyObject,
    value: PyObj,
) -> Result<(), PyObj> {
    // SAFETY: str_entry checks the table holds entry `index`; nothing else can reach the
    // dict, so replacing a value in place is invisible.
    unsafe {
        let entry = match dict_layout::str_entry(dict, index) {
            Some(entry) if (*entry).key == key && !(*entry).value.is_null() => entry,
            _ => return Err(value),
        };
        let new = value.into_ptr();
        let old = std::mem::replace(&mut (*entry).value, new);
        ffi::Py_DECREF(old);
        keep_tracking(dict, new);
        Ok(())
    }
}

/// Starts GC tracking of `dict` when `value` may be part of a cycle, as `PyDict_SetItem`
/// does: a copied template is untracked if the template's values were all atomic.
///
/// # Safety
/// Both live, the GIL held.
#[inline(always)]
unsafe fn keep_tracking(dict: *mut ffi::PyObject, value: *mut ffi::PyObject) {
    // SAFETY: per the contract; the GC functions are public API.
    unsafe {
        if ffi::PyType_IS_GC(ffi::Py_TYPE(value)) == 0 || ffi::PyObject_GC_IsTracked(dict) != 0 {
            return;
        }
        // An untracked tuple holds only atomic values, so it cannot close a cycle.
        if ffi::PyTuple_CheckExact(value) != 0 && ffi::PyObject_GC_IsTracked(value) == 0 {
            return;
        }
        ffi::PyObject_GC_Track(dict.cast());
    }
}

/// The first key of a dict of one or more pairs (borrowed).
///
/// # Safety
/// `dict` must be a live exact dict with at least one pair, the GIL held, and [`applies`]
/// true for its length.
#[inline(always)]
pub unsafe fn first_key(dict: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: per the contract.
    unsafe { dict_layout::Items::new(dict) }
        .next()
        .map_or(std::ptr::null_mut(), |(key, _)| key)
}

/// Turns a dict made from a template, whose pairs before `index` are filled, back into a
/// plain dict holding only those pairs. Returns false with a Python error set on failure.
///
/// # Safety
/// As for [`store`].
#[cold]
#[inline(never)]
pub unsafe fn unfill(dict: *mut ffi::PyObject, index: usize) -> bool {
    // SAFETY: per the contract the first `index` entries are the decoded pairs; they are
    // held while the dict is cleared and put back.
    unsafe {
        let mut kept = Vec::with_capacity(index);
        for i in 0..index {
            match dict_layout::str_entry(dict, i) {
                Some(entry) if !(*entry).key.is_null() && !(*entry).value.is_null() => {
                    ffi::Py_INCREF((*entry).key);
                    ffi::Py_INCREF((*entry).value);
                    kept.push(((*entry).key, (*entry).value));
                }
                _ => {}
            }
        }
        ffi::PyDict_Clear(dict);
        let mut ok = true;
        for (key, value) in kept {
            if ok && ffi::PyDict_SetItem(dict, key, value) < 0 {
                ok = false;
            }
            ffi::Py_DECREF(key);
            ffi::Py_DECREF(value);
        }
        ok
    }
}

/// A shape with a template: the address of its first key (held by the template) and its
/// length. A template that one of its copies found wrong is dropped; its entry stays, to count
/// the misses.
struct Shape {
    first_key: usize,
    len: usize,
    template: Option<PyObj>,
    misses: u8,
    /// The template's keys are the key cache's: it may serve the next decode.
    carried: bool,
    /// A dict of this decode was made from the template.
    used: std::cell::Cell<bool>,
    /// This decode learned the shape.
    fresh: bool,
}

/// The templates of one decode.
#[derive(Default)]
pub struct Templates {
    /// Shapes with a template (or that had one), searched in order: those the last decode
    /// left, then at most [`MAX_SHAPES`] learned by this one.
    shapes: Vec<Shape>,
    /// How many of `shapes` this decode learned.
    learned: usize,
    /// The last shapes completed once, as (first key address, length), round robin.
    candidates: [(usize, usize); CANDIDATES],
    next_candidate: usize,
}

/// Shapes with templates per decode.
const MAX_SHAPES: usize = 16;
/// Shapes completed once that are remembered, waiting for a second dict of the same shape.
const CANDIDATES: usize = 4;

/// The templates the last decode left for the next one. Boxed, so that handing them over
/// moves a pointer: moving the 100-byte struct in and out of the slot cost a small `loads`
/// about 55 instructions (callgrind).
struct Carried(UnsafeCell<Option<Box<Templates>>>);

// SAFETY: only `Templates::resume` and `Templates::keep` touch it, with the GIL held (the
// module does not declare itself free-threading safe, so CPython keeps the GIL on while it
// is loaded); the GIL serialises every access.
unsafe impl Sync for Carried {}

static CARRIED: Carried = Carried(UnsafeCell::new(None));

impl Templates {
    /// The templates the last decode left (see the module notes), or none. A decode nested
    /// in another (inside a class's code) finds none: the outer one holds them. Where the
    /// dict layout is unknown no template is ever learned ([`applies`]), so the box passed
    /// from decode to decode stays empty.
    ///
    /// # Safety
    /// The GIL must be held.
    pub unsafe fn resume() -> Box<Templates> {
        // SAFETY: the GIL is held (caller), so nothing else touches the slot.
        unsafe { (*CARRIED.0.get()).take() }.unwrap_or_else(Templates::boxed)
    }

    /// Templates for the first decode, or for a nested one.
    #[cold]
    #[inline(never)]
    fn boxed() -> Box<Templates> {
        Box::default()
    }

    /// Leaves these templates for the next decode: those whose keys the key cache holds and
    /// that this decode learned or used (a shape a service no longer sends is let go), at
    /// most [`MAX_SHAPES`], those it used first.
    ///
    /// # Safety
    /// The GIL must be held.
    pub unsafe fn keep(mut self: Box<Self>) {
        self.shapes.retain(|shape| {
            shape.carried && shape.template.is_some() && (shape.used.get() || shape.fresh)
        });
        if self.shapes.len() > MAX_SHAPES {
            // Stable: among the used, and among the rest, the order stays.
            self.shapes.sort_by_key(|shape| !shape.used.get());
            self.shapes.truncate(MAX_SHAPES);
        }
        for shape in &mut self.shapes {
            shape.used.set(false);
            shape.fresh = false;
        }
        self.learned = 0;
        // SAFETY: the GIL is held (caller), so nothing else touches the slot. What was there
        // (left by a decode nested in this one) is dropped after the slot is written: a
        // dict's release runs no code that could reach the slot, but nothing here relies on
        // it.
        let dropped = unsafe { (*CARRIED.0.get()).replace(self) };
        drop(dropped);
    }

    /// The template for a dict of `len` pairs whose first key is `first_key`, if there is one.
    #[inline(always)]
    pub fn find(&self, first_key: *mut ffi::PyObject, len: usize) -> Option<&PyObj> {
        let shape = self
            .shapes
            .iter()
            .find(|shape| shape.first_key == first_key as usize && shape.len == len)?;
        let template = shape.template.as_ref()?;
        shape.used.set(true);
        Some(template)
    }

    /// Whether some template has `len` keys: a dict of that length is made empty rather than
    /// presized, since a template would replace its table.
    #[inline(always)]
    pub fn has_length(&self, len: usize) -> bool {
        self.shapes
            .iter()
            .any(|shape| shape.len == len && shape.template.is_some())
    }

    /// Learns from a plain dict of `len` pairs just completed: the second one of a shape
    /// gives its template. Returns false with a Python error set on failure.
    ///
    /// # Safety
    /// `dict` must be a live exact dict of `len` pairs and the GIL held, and [`applies`] true
    /// for `len`.
    pub unsafe fn learn(&mut self, dict: *mut ffi::PyObject, len: usize) -> bool {
        // SAFETY: per the contract.
        let first_key = unsafe { first_key(dict) } as usize;
        let shape = (first_key, len);
        if !self.candidates.contains(&shape) {
            // The address only names a candidate: a template made on a match holds its own
            // first key, so a reused address can at worst make a template of another shape.
            self.candidates[self.next_candidate] = shape;
            self.next_candidate = (self.next_candidate + 1) % CANDIDATES;
            return true;
        }
        let known = self
            .shapes
            .iter()
            .position(|known| known.first_key == first_key && known.len == len);
        if let Some(index) = known {
            let known = &self.shapes[index];
            if known.template.is_some() || known.misses >= MAX_MISSES {
                return true;
            }
        } else if self.learned >= MAX_SHAPES {
            return true;
        }
        // SAFETY: dict is a live dict; the GIL is held.
        let (template, carried) = match unsafe { template_of(dict, len) } {
            Err(()) => return false,
            Ok(Some((template, carried))) => (Some(template), carried),
            Ok(None) => (None, false),
        };
        let misses = if template.is_some() { 0 } else { MAX_MISSES };
        match known {
            Some(index) => {
                let shape = &mut self.shapes[index];
                shape.template = template;
                shape.misses = shape.misses.max(misses);
                shape.carried = carried;
                shape.fresh = true;
            }
            None => {
                self.learned += 1;
                self.shapes.push(Shape {
                    first_key,
                    len,
                    template,
                    misses,
                    carried,
                    used: std::cell::Cell::new(false),
                    fresh: true,
                });
            }
        }
        true
    }

    /// Drops the template that `first_key` and `len` found, after one of its copies met a
    /// different key; the shape may get a new template, up to [`MAX_MISSES`] times.
    #[cold]
    pub fn missed(&mut self, first_key: *mut ffi::PyObject, len: usize) {
        if let Some(shape) = self
            .shapes
            .iter_mut()
            .find(|shape| shape.first_key == first_key as usize && shape.len == len)
        {
            shape.template = None;
            shape.misses = shape.misses.saturating_add(1);
        }
    }
}

/// A template with `dict`'s `len` keys, each with the value None, and whether it may be
/// carried to the next decode (its keys are all the key cache's); `None` when a copy of it would not be a str-keys table copied whole (see
/// [`dict_layout::copies_whole`]). `Err` with a Python error set on failure.
///
/// The template is built by inserting into a new dict rather than copied: a dict made
/// presized starts with a table for keys of any type, which the template must not inherit.
/// Its values are None, not the dict's: a template outlives the decode, and holding a value
/// would keep it alive. (A copy's values are all replaced before the dict is handed out.)
///
/// # Safety
/// `dict` must be a live dict and the GIL held, and [`applies`] true for `len`.
#[cold]
unsafe fn template_of(dict: *mut ffi::PyObject, len: usize) -> Result<Option<(PyObj, bool)>, ()> {
    // SAFETY: per the contract; the pairs are lent in order, and SetItem takes its own
    // references.
    unsafe {
        let template = PyObj::from_owned(ffi::PyDict_New()).ok_or(())?;
        let mut carried = true;
        for (key, _) in dict_layout::Items::new(dict) {
            if ffi::PyDict_SetItem(template.as_ptr(), key, ffi::Py_None()) < 0 {
                return Err(());
            }
            carried = carried && key_cache::holds(key);
        }
        if !dict_layout::copies_whole(template.as_ptr(), len) {
            return Ok(None);
        }
        Ok(Some((template, carried)))
    }
}
