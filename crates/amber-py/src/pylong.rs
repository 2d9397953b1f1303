//! Reading small ints straight from CPython's int objects.
//!
//! `PyLong_AsLongLongAndOverflow` is a call and a loop for every int; ints of one or two
//! 30-bit digits (below 2^60 in magnitude, nearly every int a program holds) can be read from
//! the object in a few instructions. The layout is CPython's private one, so it is followed
//! per version (3.12 packed the sign and digit count into `lv_tag`) and only used when the
//! interpreter was built with 30-bit digits, which module init checks.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3_ffi as ffi;

static DIGITS_ARE_30_BITS: AtomicBool = AtomicBool::new(false);

/// Records whether the running interpreter uses 30-bit digits (`sys.int_info`). Where
/// build.rs did not set `amber_known_layouts` (a CPython whose int layout this does not
/// know), never: every int then goes through `PyLong_AsLongLongAndOverflow`.
pub fn set_digit_bits(bits: u32) {
    DIGITS_ARE_30_BITS.store(cfg!(amber_known_layouts) && bits == 30, Ordering::Relaxed);
}

#[cfg(not(Py_3_12))]
#[repr(C)]
struct LongLayout {
    ob_base: ffi::PyVarObject,
    ob_digit: [u32; 1],
}

#[cfg(Py_3_12)]
#[repr(C)]
struct LongLayout {
    ob_base: ffi::PyObject,
    lv_tag: usize,
    ob_digit: [u32; 1],
}

/// Whether [`small_value`] reads ints on this interpreter: if so, an int it returns `None`
/// for has three digits or more (at least 2^60 in magnitude).
#[inline(always)]
pub fn small_values_readable() -> bool {
    DIGITS_ARE_30_BITS.load(Ordering::Relaxed)
}

/// The value of an exact int of at most two digits, or `None` (a bigger int, or an
/// interpreter whose layout this does not know).
///
/// # Safety
/// `obj` must be a live object of exact type `int`.
#[inline(always)]
pub unsafe fn small_value(obj: *mut ffi::PyObject) -> Option<i64> {
    if !DIGITS_ARE_30_BITS.load(Ordering::Relaxed) {
        return None;
    }
    let long = obj.cast::<LongLayout>();
    // SAFETY: per the contract obj is an int; its header is followed by `ndigits` digits
    // (at least one is allocated even for zero), and the second digit is read only when
    // the size says it exists.
    unsafe {
        #[cfg(not(Py_3_12))]
        let (ndigits, negative) = {
            let size = (*long).ob_base.ob_size;
            (size.unsigned_abs(), size < 0)
        };
        #[cfg(Py_3_12)]
        let (ndigits, negative) = {
            let tag = (*long).lv_tag;
            (tag >> 3, tag & 3 == 2)
        };
        let digits = std::ptr::addr_of!((*long).ob_digit).cast::<u32>();
        let magnitude = match ndigits {
            0 => 0,
            1 => i64::from(*digits),
            2 => i64::from(*digits) | (i64::from(*digits.add(1)) << 30),
            _ => return None,
        };
        Some(if negative { -magnitude } else { magnitude })
    }
}
