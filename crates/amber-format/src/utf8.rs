//! Strict UTF-8 to code points, for hosts that store strs in fixed-width units.
//!
//! A host like CPython stores a str in the narrowest of 1-, 2- or 4-byte units that holds
//! every character, so it must know the widest character and the count before it allocates.
//! [`scan`] finds both while validating, with no stores; [`decode_into`] then writes the
//! units. Both step over ASCII eight bytes at a time, since most non-ASCII text is mostly
//! ASCII. `str::from_utf8` followed by `chars()` does the same work in three walks, each with
//! setup that dominates a short str.

const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Whether the eight bytes at the start of `chunk` are all ASCII.
#[inline(always)]
fn ascii_word(chunk: &[u8]) -> bool {
    let mut word = [0u8; 8];
    word.copy_from_slice(chunk);
    u64::from_le_bytes(word) & HIGH_BITS == 0
}

/// What [`scan`] learns from valid UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    /// Number of code points.
    pub count: usize,
    /// Bitwise OR of the code points above U+007F (0 if there are none): a bit at or above
    /// position 8 (16) is set exactly when some code point is at least U+0100 (U+10000).
    pub seen: u32,
}

/// Validates strict UTF-8 (what `str::from_utf8` accepts: no overlongs, no surrogates, nothing
/// above U+10FFFF) and counts its code points; `None` if `bytes` is not valid.
#[inline]
pub fn scan(bytes: &[u8]) -> Option<Scan> {
    let mut read = 0;
    let mut count = 0;
    let mut seen = 0u32;
    loop {
        while let Some(chunk) = bytes.get(read..read + 8) {
            if !ascii_word(chunk) {
                break;
            }
            read += 8;
            count += 8;
        }
        // A word that is not all ASCII: step to its first non-ASCII byte.
        while let Some(&byte) = bytes.get(read) {
            if byte >= 0x80 {
                break;
            }
            read += 1;
            count += 1;
        }
        let Some(&lead) = bytes.get(read) else {
            return Some(Scan { count, seen });
        };
        let (point, width) = sequence(lead, bytes.get(read + 1..).unwrap_or(&[]))?;
        seen |= point;
        read += width;
        count += 1;
    }
}

/// A fixed-width unit of a host's str: each code point is stored truncated to it.
pub trait Unit: Copy {
    /// The unit holding `point` (truncated; the caller picks a unit wide enough).
    fn from_point(point: u32) -> Self;
    /// The code point this unit holds (a host encoding its strs reads them this way).
    fn point(self) -> u32;
}

impl Unit for u8 {
    #[inline(always)]
    fn from_point(point: u32) -> Self {
        point as u8
    }
    #[inline(always)]
    fn point(self) -> u32 {
        u32::from(self)
    }
}

impl Unit for u16 {
    #[inline(always)]
    fn from_point(point: u32) -> Self {
        point as u16
    }
    #[inline(always)]
    fn point(self) -> u32 {
        u32::from(self)
    }
}

impl Unit for u32 {
    #[inline(always)]
    fn from_point(point: u32) -> Self {
        point
    }
    #[inline(always)]
    fn point(self) -> u32 {
        self
    }
}

/// Writes the code points of `bytes`, which [`scan`] has accepted, into `out` as units, and
/// returns how many it wrote: the smaller of `out.len()` and the count. Bytes that are not
/// valid UTF-8 give unspecified units, never a panic.
#[inline]
pub fn decode_into<T: Unit>(bytes: &[u8], out: &mut [T]) -> usize {
    let mut read = 0;
    let mut written = 0;
    loop {
        while let (Some(chunk), Some(dst)) =
            (bytes.get(read..read + 8), out.get_mut(written..written + 8))
        {
            if !ascii_word(chunk) {
                break;
            }
            for (unit, &byte) in dst.iter_mut().zip(chunk) {
                *unit = T::from_point(u32::from(byte));
            }
            read += 8;
            written += 8;
        }
        while let (Some(&byte), Some(unit)) = (bytes.get(read), out.get_mut(written)) {
            if byte >= 0x80 {
                break;
            }
            *unit = T::from_point(u32::from(byte));
            read += 1;
            written += 1;
        }
        let (Some(&lead), Some(unit)) = (bytes.get(read), out.get_mut(written)) else {
            return written;
        };
        let cont = |i: usize| u32::from(bytes.get(read + i).map_or(0, |b| b & 0x3F));
        let (point, width) = match lead {
            0..=0x7F => (u32::from(lead), 1),
            0x80..=0xDF => ((u32::from(lead & 0x1F) << 6) | cont(1), 2),
            0xE0..=0xEF => ((u32::from(lead & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3),
            _ => (
                (u32::from(lead & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
                4,
            ),
        };
        *unit = T::from_point(point);
        written += 1;
        read += width;
    }
}

/// The code point and length of a multi-byte sequence starting with `lead`, whose
/// continuation bytes start `rest`.
#[inline]
fn sequence(lead: u8, rest: &[u8]) -> Option<(u32, usize)> {
    let cont = |b: u8| u32::from(b & 0x3F);
    let is_cont = |b: u8| b & 0xC0 == 0x80;
    match lead {
        0xC2..=0xDF => match rest {
            [b1, ..] if is_cont(*b1) => Some(((u32::from(lead & 0x1F) << 6) | cont(*b1), 2)),
            _ => None,
        },
        0xE0..=0xEF => match rest {
            [b1, b2, ..] if is_cont(*b2) => {
                // The second byte's range excludes overlongs (E0) and surrogates (ED).
                let second_ok = match lead {
                    0xE0 => (0xA0..=0xBF).contains(b1),
                    0xED => (0x80..=0x9F).contains(b1),
                    _ => is_cont(*b1),
                };
                second_ok.then(|| {
                    (
                        (u32::from(lead & 0x0F) << 12) | (cont(*b1) << 6) | cont(*b2),
                        3,
                    )
                })
            }
            _ => None,
        },
        0xF0..=0xF4 => match rest {
            [b1, b2, b3, ..] if is_cont(*b2) && is_cont(*b3) => {
                // The second byte's range excludes overlongs (F0) and points above U+10FFFF (F4).
                let second_ok = match lead {
                    0xF0 => (0x90..=0xBF).contains(b1),
                    0xF4 => (0x80..=0x8F).contains(b1),
                    _ => is_cont(*b1),
                };
                second_ok.then(|| {
                    (
                        (u32::from(lead & 0x07) << 18)
                            | (cont(*b1) << 12)
                            | (cont(*b2) << 6)
                            | cont(*b3),
                        4,
                    )
                })
            }
            _ => None,
        },
        _ => None,
    }
}

/// Walks UTF-8 in which surrogate code points (U+D800-U+DFFF) may also appear, each on its
/// own as a 3-byte sequence (spec 5.8: what Python's `surrogatepass` reads), giving each code
/// point to `point`. Returns whether all of `bytes` had that form; on `false`, `point` has
/// seen the code points before the first bad sequence.
pub fn walk_with_surrogates(bytes: &[u8], mut point: impl FnMut(u32)) -> bool {
    let mut i = 0;
    while let Some(&lead) = bytes.get(i) {
        let (len, min, init) = match lead {
            0x00..=0x7F => (1, 0, u32::from(lead)),
            0xC2..=0xDF => (2, 0x80, u32::from(lead & 0x1F)),
            0xE0..=0xEF => (3, 0x800, u32::from(lead & 0x0F)),
            0xF0..=0xF4 => (4, 0x10000, u32::from(lead & 0x07)),
            _ => return false,
        };
        let mut cp = init;
        for k in 1..len {
            match bytes.get(i + k) {
                Some(&cont) if cont & 0xC0 == 0x80 => cp = (cp << 6) | u32::from(cont & 0x3F),
                _ => return false,
            }
        }
        if cp < min || cp > 0x10FFFF {
            return false;
        }
        point(cp);
        i += len;
    }
    true
}

/// Whether `bytes` is UTF-8 that may also encode surrogates (see [`walk_with_surrogates`]).
pub fn is_utf8_with_surrogates(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok() || walk_with_surrogates(bytes, |_| {})
}

#[cfg(test)]
mod tests {
    use super::{decode_into, scan, Scan};

    fn check(bytes: &[u8]) {
        let got = scan(bytes);
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                let points: Vec<u32> = text.chars().map(u32::from).collect();
                let seen = points
                    .iter()
                    .filter(|&&p| p > 0x7F)
                    .fold(0, |acc, p| acc | p);
                let count = points.len();
                assert_eq!(got, Some(Scan { count, seen }), "{bytes:02X?}");
                let mut out = vec![0u32; count];
                assert_eq!(decode_into(bytes, &mut out), count, "{bytes:02X?}");
                assert_eq!(out, points, "{bytes:02X?}");
                if count > 0 {
                    let mut short = vec![0u32; count - 1];
                    assert_eq!(decode_into(bytes, &mut short), count - 1, "{bytes:02X?}");
                    assert_eq!(short[..], points[..count - 1], "{bytes:02X?}");
                }
            }
            Err(_) => {
                assert_eq!(got, None, "{bytes:02X?}");
                // Unspecified units, but no panic and no write past the buffer.
                let mut out = vec![0u32; bytes.len()];
                assert!(decode_into(bytes, &mut out) <= bytes.len());
            }
        }
    }

    /// Every sequence of one or two bytes, and of three with the third byte at the edges of
    /// the continuation range, agrees with the standard library's validator and decoder.
    #[test]
    fn agrees_with_std_on_every_short_sequence() {
        let edges = [0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF];
        for a in 0..=255u8 {
            check(&[a]);
            check(&[b'x', a]);
            for b in 0..=255u8 {
                check(&[a, b]);
                check(&[a, b, b'z']);
                for &c in &edges {
                    check(&[a, b, c]);
                }
            }
        }
    }

    /// Four-byte sequences: every lead byte from EE up with every second byte, and
    /// continuation bytes at their edges, plus truncations.
    #[test]
    fn agrees_with_std_on_four_byte_sequences() {
        let edges = [0x00, 0x7F, 0x80, 0x8F, 0x90, 0xBF, 0xC0, 0xFF];
        for a in 0xEEu8..=0xFF {
            for b in 0..=255u8 {
                for &c in &edges {
                    for &d in &edges {
                        check(&[a, b, c, d]);
                        check(&[a, b, c, d, b'y']);
                    }
                    check(&[a, b, c]);
                }
            }
        }
    }

    /// ASCII runs of every length around the eight-byte step, with a multi-byte or invalid
    /// sequence after them, and more ASCII after that.
    #[test]
    fn agrees_with_std_around_ascii_runs() {
        let tails: [&[u8]; 5] = [
            b"\xCE\xB1",
            b"\xE2\x82\xAC",
            b"\xF0\x9F\x98\x80",
            b"\x80",
            b"\xCE",
        ];
        for run in 0..20 {
            for tail in tails {
                let mut bytes = vec![b'a'; run];
                bytes.extend_from_slice(tail);
                check(&bytes);
                bytes.extend_from_slice(b"bcdefghijklmnopq");
                check(&bytes);
            }
        }
    }

    #[test]
    fn narrow_units_truncate_each_point() {
        let text = "aé€";
        let mut bytes = [0u8; 3];
        assert_eq!(decode_into(text.as_bytes(), &mut bytes), 3);
        assert_eq!(bytes, [b'a', 0xE9, 0xAC]);
        let mut units = [0u16; 3];
        assert_eq!(decode_into(text.as_bytes(), &mut units), 3);
        assert_eq!(units, [0x61, 0xE9, 0x20AC]);
    }

    #[test]
    fn reports_the_widest_kind_through_the_or() {
        let seen = |t: &str| scan(t.as_bytes()).map(|s| s.seen);
        assert_eq!(seen("plain"), Some(0));
        assert!(seen("é").is_some_and(|s| (0x80..0x100).contains(&s)));
        assert!(seen("aα").is_some_and(|s| (0x100..0x10000).contains(&s)));
        assert!(seen("a😀").is_some_and(|s| s >= 0x10000));
    }
}
