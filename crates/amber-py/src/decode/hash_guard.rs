//! Hash-flooding defence for dict keys and set elements.
//!
//! str and bytes hashes are randomized per process, and ints below 2^61 hash to themselves,
//! so those keys cannot be made to collide and skip the guard entirely. Every other key
//! (floats, big ints, tuples, frozensets, complex) has a hash anyone can compute, so:
//! - at most [`MAX_EQUAL_HASHES`] keys of one container may share a hash value, which caps
//!   the probe chains CPython walks;
//! - tuples and big ints re-hash their contents every time (no cache), so the total hashing
//!   work is charged against a budget linear in the input size.

use std::mem::ManuallyDrop;
use std::os::raw::c_int;

use amber_format::BuildError;
use pyo3::prelude::*;
use pyo3_ffi as ffi;
use rustc_hash::FxHashMap;

use super::PyBuilder;
use crate::object::PyObj;

/// Keys of one dict or set that may share a hash value.
pub const MAX_EQUAL_HASHES: u32 = 64;
/// Hashing work allowed per input byte, in units of one element hashed ...
const WORK_PER_INPUT_BYTE: u64 = 64;
/// ... plus this much for small inputs.
const WORK_BASE: u64 = 1_000_000;
/// Ints with a magnitude below this hash to themselves (CPython's modulus is 2^61 - 1).
const SELF_HASHING_INT: i64 = 1 << 60;

/// Per-decode state of the guard.
pub struct HashGuard {
    work: u64,
    budget: u64,
    /// Made by the first key the guard does not exempt. Most payloads have none, and the
    /// two maps in line cost every `loads` their making and an out-of-line drop. Dropped
    /// by hand (see the `Drop` impl).
    counts: ManuallyDrop<Option<Box<Counts>>>,
}

impl Drop for HashGuard {
    /// The test for counts is made in line: the compiler's own drop of the field was a
    /// call that saved six registers before finding nothing to drop.
    #[inline(always)]
    fn drop(&mut self) {
        if self.counts.is_some() {
            // SAFETY: the field is taken once, here, and never read again.
            drop_counts(unsafe { ManuallyDrop::take(&mut self.counts) });
        }
    }
}

#[cold]
#[inline(never)]
fn drop_counts(counts: Option<Box<Counts>>) {
    drop(counts);
}

/// What the guard counts, once some key needs counting.
#[derive(Default)]
struct Counts {
    /// (container address, hash) -> keys seen with that hash.
    equal_hashes: FxHashMap<(usize, ffi::Py_hash_t), u32>,
    /// Hashing cost of tuples already measured; the reference keeps the address from being
    /// reused by another tuple during this decode.
    tuple_weights: FxHashMap<usize, (u64, PyObj)>,
}

impl HashGuard {
    pub fn new(input_len: usize) -> Self {
        HashGuard {
            work: 0,
            budget: (input_len as u64)
                .saturating_mul(WORK_PER_INPUT_BYTE)
                .saturating_add(WORK_BASE),
            counts: ManuallyDrop::new(None),
        }
    }

    fn counts(&mut self) -> &mut Counts {
        self.counts.get_or_insert_with(Box::default)
    }
}

impl PyBuilder<'_, '_> {
    /// Checks a key (or set element) before it goes into `container`.
    #[inline]
    pub(super) fn guard_key(&mut self, container: &PyObj, key: &PyObj) -> Result<(), BuildError> {
        let k = key.as_ptr();
        // SAFETY: k is a live object we hold.
        let ty = unsafe { ffi::Py_TYPE(k) };
        let (str_type, bytes_type, int_type) = (
            &raw mut ffi::PyUnicode_Type,
            &raw mut ffi::PyBytes_Type,
            &raw mut ffi::PyLong_Type,
        );
        if ty == str_type || ty == bytes_type {
            return Ok(());
        }
        if ty == int_type {
            let mut overflow: c_int = 0;
            // SAFETY: k is an exact int; overflow is reported, not raised.
            let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(k, &mut overflow) };
            if overflow == 0 && v.unsigned_abs() < SELF_HASHING_INT as u64 {
                return Ok(());
            }
        }
        self.check_key_slow(container.as_ptr() as usize, key)
    }

    #[inline(never)]
    fn check_key_slow(&mut self, container: usize, key: &PyObj) -> Result<(), BuildError> {
        let weight = self.hash_weight(key)?;
        let guard = &mut self.guard;
        guard.work = guard.work.saturating_add(weight);
        if guard.work > guard.budget {
            return Err(BuildError::HashLimit);
        }
        // SAFETY: key is live; a -1 result with an exception set means it is unhashable.
        let hash = unsafe { ffi::PyObject_Hash(key.as_ptr()) };
        if hash == -1 && !unsafe { ffi::PyErr_Occurred() }.is_null() {
            // SAFETY: an exception is set (checked just above).
            if unsafe { ffi::PyErr_ExceptionMatches(ffi::PyExc_TypeError) } != 0 {
                // SAFETY: discarding the TypeError we classified.
                unsafe { ffi::PyErr_Clear() };
                return Err(BuildError::Unhashable);
            }
            return Err(self.host_failure());
        }
        let before = match self.guard.counts().equal_hashes.get(&(container, hash)) {
            Some(&n) => n,
            // The exempt keys (ints below 2^60 hash to themselves) were not counted: the
            // first counted key with this hash also counts those already present.
            None => self.exempt_ints_with_hash(container, hash)?,
        };
        let count = before + 1;
        self.guard
            .counts()
            .equal_hashes
            .insert((container, hash), count);
        if count > MAX_EQUAL_HASHES {
            return Err(BuildError::HashLimit);
        }
        Ok(())
    }

    /// How many exempt int keys of `container` have hash value `hash` (0, 1 or 2: -1 and -2
    /// both hash to -2).
    fn exempt_ints_with_hash(
        &mut self,
        container: usize,
        hash: ffi::Py_hash_t,
    ) -> Result<u32, BuildError> {
        if (hash as i64).unsigned_abs() >= SELF_HASHING_INT as u64 {
            return Ok(0);
        }
        let candidates: &[i64] = if hash == -2 {
            &[-2, -1]
        } else {
            &[hash as i64]
        };
        let container = container as *mut ffi::PyObject;
        let mut found = 0;
        for &v in candidates {
            // SAFETY: plain constructor; NULL only with an exception set.
            let int = self.own(unsafe { ffi::PyLong_FromLongLong(v) })?;
            // SAFETY: container is the live dict or set being filled (the caller holds it).
            let present = unsafe {
                if ffi::PyDict_CheckExact(container) != 0 {
                    ffi::PyDict_Contains(container, int.as_ptr())
                } else {
                    ffi::PySet_Contains(container, int.as_ptr())
                }
            };
            match present {
                1 => found += 1,
                0 => {}
                _ => return Err(self.host_failure()),
            }
        }
        Ok(found)
    }

    /// Roughly how many element hashes hashing `obj` costs (CPython caches str, bytes and
    /// frozenset hashes but not tuple or int ones).
    fn hash_weight(&mut self, obj: &PyObj) -> Result<u64, BuildError> {
        let ptr = obj.as_ptr();
        // SAFETY: ptr is live; type checks read the type pointer only.
        let (is_tuple, is_int, is_frozenset) = unsafe {
            (
                ffi::PyTuple_CheckExact(ptr) != 0,
                ffi::PyLong_CheckExact(ptr) != 0,
                ffi::PyFrozenSet_CheckExact(ptr) != 0,
            )
        };
        if is_tuple {
            if let Some((weight, _)) = self.guard.counts().tuple_weights.get(&(ptr as usize)) {
                return Ok(*weight);
            }
            // SAFETY: ptr is an exact tuple.
            let n = unsafe { ffi::PyTuple_GET_SIZE(ptr) };
            let mut weight: u64 = 1;
            for i in 0..n {
                // SAFETY: 0 <= i < len; the tuple is complete (the decoder never hands out
                // a tuple that is being filled) and holds its items.
                let item = unsafe { ffi::PyTuple_GET_ITEM(ptr, i) };
                let Some(item) = std::ptr::NonNull::new(item) else {
                    return Err(BuildError::Unhashable);
                };
                // SAFETY: item is a live object borrowed from the tuple.
                let item = unsafe { PyObj::from_borrowed(item) };
                weight = weight.saturating_add(self.hash_weight(&item)?);
            }
            self.guard
                .counts()
                .tuple_weights
                .insert(ptr as usize, (weight, obj.clone()));
            return Ok(weight);
        }
        if is_int {
            // SAFETY: ptr is a live int.
            let int = unsafe { Bound::from_borrowed_ptr(self.py, ptr) };
            let bits: u64 = int
                .call_method0("bit_length")
                .and_then(|b| b.extract())
                .map_err(|e| {
                    self.error = Some(e);
                    BuildError::Host
                })?;
            return Ok(1 + bits / 30);
        }
        if is_frozenset {
            // SAFETY: ptr is a frozenset.
            let n = unsafe { ffi::PySet_Size(ptr) };
            return Ok(1 + n.max(0) as u64);
        }
        Ok(1)
    }
}
