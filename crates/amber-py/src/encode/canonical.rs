//! Canonical order: set and frozenset elements (with `canonical`) and dict entries (with
//! `sort_keys`) are written in the byte order of their own canonical encodings (spec section
//! 6.7), so the output does not depend on hash seeds or insertion history.

use amber_format::header::HEADER_LEN;
use amber_format::Writer;
use pyo3_ffi as ffi;

use super::error::key_label;
use super::{encode, hold, EncodeFail, FailKind, Options, PyEncoder, Segment};
use crate::object::PyObj;

impl PyEncoder<'_> {
    /// A dict with its entries in key order. The entries are copied out first: making the
    /// sort keys runs encodes of the keys, which may run class code that changes the dict.
    #[inline(never)]
    pub(super) fn dict_sorted(&mut self, obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        if self.write_ref_if_seen(obj) {
            return Ok(());
        }
        let _held = hold(obj);
        self.enter()?;
        let mut entries: Vec<(PyObj, PyObj)> = Vec::new();
        let mut pos: ffi::Py_ssize_t = 0;
        let mut key: *mut ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: PyDict_Next stays within the dict's entries; key and value are borrowed,
        // and `hold` takes our own references before any code runs.
        while unsafe { ffi::PyDict_Next(obj, &mut pos, &mut key, &mut value) } != 0 {
            entries.push((hold(key), hold(value)));
        }
        self.pin_memo();
        let mut keyed = Vec::with_capacity(entries.len());
        for (index, (key, value)) in entries.into_iter().enumerate() {
            let order = self
                .sort_key(key.as_ptr())
                .map_err(|e| e.at(Segment::KeyOf(index), obj))?;
            keyed.push((order, key, value));
        }
        // Stable: keys with equal encodings (distinct objects that encode alike) keep the
        // dict's order.
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        self.writer.dict_header(keyed.len());
        for (index, (_, key, value)) in keyed.iter().enumerate() {
            self.nested_held_value(key.as_ptr())
                .map_err(|e| e.at(Segment::KeyOf(index), obj))?;
            self.nested_held_value(value.as_ptr())
                .map_err(|e| e.at(Segment::Key(key_label(self.py, key.as_ptr())), obj))?;
        }
        self.leave();
        Ok(())
    }

    /// Puts set elements in canonical order. The caller (`set`) has pinned the memo since it
    /// recorded the set, and nothing is recorded between that pin and this.
    pub(super) fn sort_elements(
        &mut self,
        set: *mut ffi::PyObject,
        items: Vec<PyObj>,
    ) -> Result<Vec<PyObj>, EncodeFail> {
        let mut keyed = Vec::with_capacity(items.len());
        for (index, item) in items.into_iter().enumerate() {
            let order = self
                .sort_key(item.as_ptr())
                .map_err(|e| e.at(Segment::Element(index), set))?;
            keyed.push((order, item));
        }
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(keyed.into_iter().map(|(_, item)| item).collect())
    }

    /// The canonical encoding of `obj` on its own (body only, identity scoped to `obj`): what
    /// elements and keys are ordered by.
    fn sort_key(&mut self, obj: *mut ffi::PyObject) -> Result<Vec<u8>, EncodeFail> {
        // SAFETY: obj is live (held by the caller) and the GIL is held.
        let ty = unsafe { ffi::Py_TYPE(obj) };
        if ty == self.types.str() {
            if let Some(utf8) = strict_utf8(obj) {
                let mut writer = Writer::with_capacity(HEADER_LEN + 10 + utf8.len());
                writer.str(utf8);
                return Ok(writer.as_bytes()[HEADER_LEN..].to_vec());
            }
        } else if ty == self.types.int() {
            // SAFETY: obj is an exact int.
            if let Some(v) = unsafe { crate::pylong::small_value(obj) } {
                let mut writer = Writer::with_capacity(HEADER_LEN + 10);
                writer.int(v);
                return Ok(writer.as_bytes()[HEADER_LEN..].to_vec());
            }
        }
        let max_depth = self.max_depth;
        let options = Options {
            max_depth: max_depth.saturating_sub(self.depth).max(1),
            ..self.options
        };
        let bytes =
            encode(self.py, obj, options, self.classes, None).map_err(|fail| match fail.kind {
                FailKind::TooDeep(_) => {
                    let mut fail = fail;
                    fail.kind = FailKind::TooDeep(max_depth);
                    fail
                }
                _ => fail,
            })?;
        // SAFETY: encode returns a bytes object, which we own.
        let payload = unsafe {
            std::slice::from_raw_parts(
                ffi::PyBytes_AS_STRING(bytes.as_ptr()).cast::<u8>(),
                ffi::Py_SIZE(bytes.as_ptr()) as usize,
            )
        };
        Ok(payload.get(HEADER_LEN..).unwrap_or_default().to_vec())
    }
}

/// The UTF-8 of a str without lone surrogates (those take the general path).
fn strict_utf8<'a>(obj: *mut ffi::PyObject) -> Option<&'a [u8]> {
    let mut size: ffi::Py_ssize_t = 0;
    // SAFETY: obj is an exact str; on success the UTF-8 stays valid while obj lives, which
    // the caller guarantees for as long as it uses the slice.
    let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(obj, &mut size) };
    if data.is_null() {
        // SAFETY: clearing the UnicodeEncodeError of a str with lone surrogates.
        unsafe { ffi::PyErr_Clear() };
        return None;
    }
    // SAFETY: data points to size bytes owned by obj.
    Some(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) })
}
