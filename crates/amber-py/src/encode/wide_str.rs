//! Non-ASCII strs, written as UTF-8 straight from the 1-, 2- or 4-byte units CPython keeps
//! them in.
//!
//! Why: CPython's own conversion, `PyUnicode_AsUTF8AndSize`, keeps the UTF-8 it makes inside
//! the str for the rest of the str's life. The first encode of a non-ASCII str therefore paid
//! an allocation (about 440 instructions a str) and left that memory behind in every str of
//! the caller's data, and later encodes read the copy from a block of its own, a cache miss
//! per str. The units sit inside the object, right after its header; converting them on the
//! way out costs neither.
//!
//! How: in one pass, right after room for the head (`amber_format::encode::str_head`: a tag,
//! and for more than 23 bytes a varint length) the str most likely has: one byte for at most
//! 23 units, else the head of the longest text the units can make (their count times the
//! widest UTF-8 of their kind's characters). The head is written once the length is known;
//! when the guess was off (at most 23 units making more than 23 bytes, or a length with fewer
//! varint bytes than the longest), the text moves along by a byte or two, one `memmove` that
//! costs less than the counting pass it replaces. A lone surrogate, which strict UTF-8
//! cannot hold, sends the str to STR_SURROGATES.
//!
//! A str that already holds CPython's UTF-8 copy (something else asked for it) is written
//! from that copy, which costs nothing more to read.
//!
//! The checked fallback: legacy strs, and builds that do not know CPython's layouts, go
//! through `PyUnicode_AsUTF8AndSize` (`scalars.rs`); `tests/test_wide_str.py` compares the
//! bytes of every path with Python's own encoder, around each boundary above, and
//! `tests/_same_bytes.py` those of this build and the fallback's.

use amber_format::encode::str_head;
use amber_format::utf8::Unit;
use pyo3_ffi as ffi;

use super::{EncodeFail, PyEncoder};

/// Room for the longest head (`str_head`): a tag and a varint.
const HEAD_ROOM: usize = 1 + amber_format::varint::MAX_VARINT_LEN;

/// A unit of one of CPython's three str kinds.
trait Units: Unit {
    /// The most UTF-8 bytes one unit of this kind can make.
    const MAX_UTF8: usize;

    /// If the first units (a word's worth: eight of u8, four of u16) are all ASCII, stores
    /// them at `to` as bytes and returns how many; `None` (storing nothing) if they are not,
    /// or too few are left. Most non-ASCII text is mostly ASCII, and one load, one test and
    /// one store per word beat a branch per character.
    ///
    /// # Safety
    /// `to` must be valid for as many bytes of writes as units are left.
    #[inline(always)]
    unsafe fn ascii_run(units: &[Self], to: *mut u8) -> Option<usize> {
        let _ = (units, to);
        None
    }

    /// Writes this unit's character as UTF-8 at `at` and returns where the next one goes;
    /// sets `invalid` for a lone surrogate or a value beyond Unicode.
    ///
    /// # Safety
    /// `at` must be valid for `MAX_UTF8` bytes of writes.
    unsafe fn put(self, at: *mut u8, invalid: &mut bool) -> *mut u8;
}

impl Units for u8 {
    const MAX_UTF8: usize = 2;

    #[inline(always)]
    unsafe fn put(self, at: *mut u8, _invalid: &mut bool) -> *mut u8 {
        // SAFETY: the caller's room holds MAX_UTF8 = 2 bytes at `at`.
        unsafe {
            if self < 0x80 {
                *at = self;
                at.add(1)
            } else {
                *at = 0xC0 | (self >> 6);
                *at.add(1) = cont(u32::from(self), 0);
                at.add(2)
            }
        }
    }

    #[inline(always)]
    unsafe fn ascii_run(units: &[u8], to: *mut u8) -> Option<usize> {
        let eight = *units.first_chunk::<8>()?;
        if u64::from_ne_bytes(eight) & 0x8080_8080_8080_8080 != 0 {
            return None;
        }
        // SAFETY: 8 units are left, so the caller's room holds 8 bytes.
        unsafe { std::ptr::write_unaligned(to.cast::<[u8; 8]>(), eight) };
        Some(8)
    }
}

impl Units for u16 {
    const MAX_UTF8: usize = 3;

    #[inline(always)]
    unsafe fn put(self, at: *mut u8, invalid: &mut bool) -> *mut u8 {
        let point = u32::from(self);
        // SAFETY: the caller's room holds MAX_UTF8 = 3 bytes at `at`.
        unsafe {
            if point < 0x80 {
                *at = point as u8;
                at.add(1)
            } else if point < 0x800 {
                *at = 0xC0 | (point >> 6) as u8;
                *at.add(1) = cont(point, 0);
                at.add(2)
            } else {
                *invalid |= (point & 0xF800) == 0xD800;
                *at = 0xE0 | (point >> 12) as u8;
                *at.add(1) = cont(point, 6);
                *at.add(2) = cont(point, 0);
                at.add(3)
            }
        }
    }

    /// Four units at a time. (Eight at a time through SSE2 took 7% fewer instructions on
    /// the bench's alpha_strings and no less time, so the portable form stays.)
    #[inline(always)]
    unsafe fn ascii_run(units: &[u16], to: *mut u8) -> Option<usize> {
        let &[a, b, c, d] = units.first_chunk::<4>()?;
        if (a | b | c | d) >= 0x80 {
            return None;
        }
        let bytes = [a as u8, b as u8, c as u8, d as u8];
        // SAFETY: 4 units are left, so the caller's room holds 4 bytes.
        unsafe { std::ptr::write_unaligned(to.cast::<[u8; 4]>(), bytes) };
        Some(4)
    }
}

impl Units for u32 {
    const MAX_UTF8: usize = 4;

    #[inline(always)]
    unsafe fn put(self, at: *mut u8, invalid: &mut bool) -> *mut u8 {
        let point = self;
        // SAFETY: the caller's room holds MAX_UTF8 = 4 bytes at `at`.
        unsafe {
            if point < 0x80 {
                *at = point as u8;
                at.add(1)
            } else if point < 0x800 {
                *at = 0xC0 | (point >> 6) as u8;
                *at.add(1) = cont(point, 0);
                at.add(2)
            } else if point < 0x1_0000 {
                *invalid |= (point & 0xF800) == 0xD800;
                *at = 0xE0 | (point >> 12) as u8;
                *at.add(1) = cont(point, 6);
                *at.add(2) = cont(point, 0);
                at.add(3)
            } else {
                *invalid |= point > 0x10_FFFF;
                *at = 0xF0 | ((point >> 18) & 0x07) as u8;
                *at.add(1) = cont(point, 12);
                *at.add(2) = cont(point, 6);
                *at.add(3) = cont(point, 0);
                at.add(4)
            }
        }
    }
}

/// The UTF-8 copy a compact str that is not ASCII keeps once something made one
/// (`PyUnicode_AsUTF8`, which orjson and many C extensions call), if it has one. Read in line
/// by the str encoder: through [`PyEncoder::compact_wide_str`], whose transcoding needs many
/// registers, each such str paid about 20 instructions of call, saves and restores.
///
/// # Safety
/// `obj` must be a live, compact, exact str that is not ASCII, held for as long as the slice
/// is used.
#[inline(always)]
pub(super) unsafe fn cached_utf8<'a>(obj: *mut ffi::PyObject) -> Option<&'a [u8]> {
    // SAFETY: such a str (per the contract) is laid out as a PyCompactUnicodeObject: its utf8
    // field is NULL or points to utf8_length bytes it owns for as long as it lives.
    unsafe {
        let compact = obj.cast::<ffi::PyCompactUnicodeObject>();
        let utf8 = (*compact).utf8;
        (!utf8.is_null())
            .then(|| std::slice::from_raw_parts(utf8.cast::<u8>(), (*compact).utf8_length as usize))
    }
}

impl PyEncoder<'_> {
    /// A compact str that is not ASCII and has no UTF-8 copy ([`cached_utf8`] is `None`).
    ///
    /// # Safety
    /// `obj` must be a live, compact, exact str that is not ASCII, held for the whole encode.
    #[inline(never)]
    pub(super) unsafe fn compact_wide_str(
        &mut self,
        obj: *mut ffi::PyObject,
    ) -> Result<(), EncodeFail> {
        // SAFETY: a compact str that is not ASCII (per the contract) has its length-many units
        // of its kind's width after the header, aligned for that width, for as long as it
        // lives.
        unsafe {
            let n = ffi::PyUnicode_GET_LENGTH(obj) as usize;
            let data = ffi::PyUnicode_DATA(obj);
            match ffi::PyUnicode_KIND(obj) {
                ffi::PyUnicode_1BYTE_KIND => {
                    self.units(std::slice::from_raw_parts(data.cast::<u8>(), n), obj)
                }
                ffi::PyUnicode_2BYTE_KIND => {
                    self.units(std::slice::from_raw_parts(data.cast::<u16>(), n), obj)
                }
                _ => self.units(std::slice::from_raw_parts(data.cast::<u32>(), n), obj),
            }
        }
    }

    #[inline(always)]
    fn units<T: Units>(&mut self, units: &[T], obj: *mut ffi::PyObject) -> Result<(), EncodeFail> {
        match write_str(self.writer.sink_mut(), units) {
            Some(()) => Ok(()),
            None => self.str_with_surrogates(obj),
        }
    }
}

/// `units` as a str, head and UTF-8, in one pass; `None`, writing nothing, if one of them
/// is a lone surrogate.
#[inline(always)]
fn write_str<T: Units>(sink: &mut super::sink::BytesSink, units: &[T]) -> Option<()> {
    let most = units.len() * T::MAX_UTF8;
    // The text's length is between units.len() and most: so is its head's.
    let guess = if units.len() <= amber_format::tag::SHORT_STR_MAX {
        1
    } else {
        str_head(most).1
    };
    // A failed allocation writes nothing; the sink reports it when the encode ends.
    let Some(mut run) = sink.run(HEAD_ROOM + most) else {
        return Some(());
    };
    let start = run.position();
    // SAFETY: the run has room for HEAD_ROOM >= guess head bytes and `most` bytes of text,
    // the most `convert` writes, after `start`.
    let len = unsafe { convert(units, start.add(guess))? };
    let (head, head_len) = str_head(len);
    // SAFETY: all inside the room made: the head is at most HEAD_ROOM bytes and the text,
    // moved to just after it, ends at or before start + HEAD_ROOM + most.
    unsafe {
        if head_len != guess {
            // The guess was one byte short (at most 23 units made more than 23 bytes) or
            // long (a length of fewer varint bytes than `most`'s): the text moves along.
            std::ptr::copy(start.add(guess), start.add(head_len), len);
        }
        // Fixed stores for the common heads rather than a copy of a variable length, which
        // is a `memcpy` call.
        match head_len {
            1 => *start = head as u8,
            2 => std::ptr::write_unaligned(start.cast::<[u8; 2]>(), (head as u16).to_le_bytes()),
            _ => std::ptr::copy_nonoverlapping(head.to_le_bytes().as_ptr(), start, head_len),
        }
        run.advance(head_len + len);
    }
    run.commit();
    Some(())
}

/// Writes `units` as UTF-8 at `to` and returns how many bytes that took, or `None` if one of
/// them is a lone surrogate (or a value beyond Unicode), with some bytes written.
///
/// # Safety
/// `to` must be valid for `units.len() * T::MAX_UTF8` bytes of writes.
#[inline(always)]
unsafe fn convert<T: Units>(units: &[T], to: *mut u8) -> Option<usize> {
    let mut at = to;
    let mut units = units;
    let mut invalid = false;
    // SAFETY: every unit writes at most MAX_UTF8 bytes (`Units::put`, `Units::ascii_run`),
    // so what is written stays inside the caller's room of units.len() * MAX_UTF8 bytes.
    unsafe {
        // A leading run of ASCII, a word at a time; then a character at a time. (Looking for
        // runs again after each other character cost more than it saved on the short strs
        // of records.)
        while let Some(stored) = T::ascii_run(units, at) {
            units = units.get_unchecked(stored..);
            at = at.add(stored);
        }
        for &unit in units {
            at = unit.put(at, &mut invalid);
        }
        (!invalid).then(|| at.offset_from(to) as usize)
    }
}

/// The continuation byte holding bits `shift..shift + 6` of `point`.
#[inline(always)]
fn cont(point: u32, shift: u32) -> u8 {
    0x80 | ((point >> shift) & 0x3F) as u8
}
