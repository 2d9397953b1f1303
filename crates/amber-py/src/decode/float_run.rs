//! A PACKED_FLOAT_LIST's floats made straight into their list's item array, each through a
//! direct call.
//!
//! Why, first: going through `packed_float` one item at a time wrapped each float in a
//! `Result` and repeated `list_set`'s check that no Python code has touched the list, about
//! 17 instructions a float on top of the ~70 that CPython's `PyFloat_FromDouble` and its
//! allocator take. Nothing can touch the list while it fills: making a float never runs
//! Python code (floats are not tracked by the garbage collector, so their allocation never
//! starts a collection). So the list is checked once, filled, and its size set to what was
//! stored.
//!
//! Why, second: in that loop LLVM loads `PyFloat_FromDouble`'s address from the GOT once and
//! calls it through a register. On the bench machine (a virtualised Xeon), that register
//! call cost about 1.3 ns a float more than a direct call to a stub that jumps through the
//! GOT, which is how C extensions reach libpython (through the PLT): 4.7 against 3.4 ns a
//! float, for lists of 1,000 to 100,000 floats, with the same instructions otherwise. Making
//! the whole build call through the PLT (`-C relro-level=partial` with `-z now` put back)
//! gave the same gain here but moved other payloads by up to 10% either way, so only this
//! loop, which runs one libpython call per 8 input bytes, goes through the stub.
//!
//! Fallback: a list not in the state `packed_list` leaves it in (size 0, room for every
//! float) goes through `packed_float` item by item, as every other builder does.

use amber_format::{packed_floats_one_by_one, BuildError};
use pyo3_ffi as ffi;

use super::PyBuilder;
use crate::object::PyObj;

impl PyBuilder<'_, '_> {
    /// Fills `list`, fresh from `packed_list`, with the binary64 values of `raw`.
    pub(super) fn fill_floats(
        &mut self,
        list: &PyObj,
        raw: &[u8],
    ) -> Result<(), (usize, BuildError)> {
        let n = raw.len() / 8;
        let target = list.as_ptr().cast::<ffi::PyListObject>();
        // SAFETY: `list` is a live list and the GIL is held.
        let fresh = unsafe {
            (*target).ob_base.ob_size == 0 && (*target).allocated >= n as ffi::Py_ssize_t
        };
        if !fresh {
            return packed_floats_one_by_one(self, list, raw);
        }
        // SAFETY: the list has room for `n` items and a size of 0 (checked above), so slots
        // 0..n are allocated and unseen. No Python code runs until this returns (module
        // header), so nothing else can change the list meanwhile. The size is set to the
        // number of slots filled, on success and on failure alike, so the list never shows
        // an unset slot; each slot takes the new reference `new_float` returns.
        unsafe {
            let items = (*target).ob_item;
            for (i, item) in raw.chunks_exact(8).enumerate() {
                let bits: [u8; 8] = item.try_into().unwrap_or_default();
                let float = new_float(f64::from_le_bytes(bits));
                if float.is_null() {
                    (*target).ob_base.ob_size = i as ffi::Py_ssize_t;
                    return Err((i, self.host_failure()));
                }
                *items.add(i) = float;
            }
            (*target).ob_base.ob_size = n as ffi::Py_ssize_t;
        }
        Ok(())
    }
}

/// `PyFloat_FromDouble`, reached by a direct call (module header): never inlined, so that
/// the loop calls this function by its address and this function jumps on to CPython's.
#[inline(never)]
unsafe extern "C" fn new_float(v: f64) -> *mut ffi::PyObject {
    // SAFETY: the caller holds the GIL; a plain constructor, NULL only with an exception set.
    unsafe { ffi::PyFloat_FromDouble(v) }
}
