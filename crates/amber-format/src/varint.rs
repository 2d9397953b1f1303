//! LEB128 varints (at most 10 bytes, minimal) and zigzag mapping for signed values.

/// Longest varint: 10 groups of 7 bits cover 64 bits.
pub const MAX_VARINT_LEN: usize = 10;

/// Why a varint could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarintError {
    /// The input ended before the last byte.
    Truncated,
    /// A multi-byte varint whose last byte is zero.
    Overlong,
    /// More than 10 bytes, or a value above 2^64-1.
    Overflow,
}

/// Appends `value` as a minimal LEB128 varint.
#[inline]
pub fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// How many bytes [`write_varint`] writes for `value`: blob writers size a blob before they
/// write it, so that its length prefix comes first without a scratch copy.
#[inline]
pub const fn varint_len(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Reads a varint from the start of `input`; returns the value and the bytes it used.
#[inline]
pub fn read_varint(input: &[u8]) -> Result<(u64, usize), VarintError> {
    let mut value: u64 = 0;
    for (i, &byte) in input.iter().enumerate() {
        if i == MAX_VARINT_LEN - 1 && byte > 1 {
            return Err(VarintError::Overflow);
        }
        value |= u64::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            if byte == 0 && i > 0 {
                return Err(VarintError::Overlong);
            }
            return Ok((value, i + 1));
        }
        if i == MAX_VARINT_LEN - 1 {
            return Err(VarintError::Overflow);
        }
    }
    Err(VarintError::Truncated)
}

/// Maps a signed value to unsigned so that small magnitudes stay small.
#[inline]
pub const fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub const fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(&mut out, v);
        assert_eq!(read_varint(&out), Ok((v, out.len())));
        out
    }

    #[test]
    fn widths_at_every_boundary() {
        assert_eq!(round(0), [0x00]);
        assert_eq!(round(127), [0x7F]);
        assert_eq!(round(128), [0x80, 0x01]);
        assert_eq!(round(16383).len(), 2);
        assert_eq!(round(16384).len(), 3);
        assert_eq!(round(u64::MAX).len(), 10);
        for k in 0..64 {
            for v in [1u64 << k, (1u64 << k) - 1] {
                assert_eq!(round(v).len(), varint_len(v), "{v}");
            }
        }
    }

    #[test]
    fn rejects_bad_forms() {
        assert_eq!(read_varint(&[0x80, 0x00]), Err(VarintError::Overlong));
        assert_eq!(read_varint(&[0x80]), Err(VarintError::Truncated));
        assert_eq!(read_varint(&[]), Err(VarintError::Truncated));
        let mut ten = vec![0xFF; 9];
        ten.push(0x02);
        assert_eq!(read_varint(&ten), Err(VarintError::Overflow));
        let eleven = vec![0xFF; 11];
        assert_eq!(read_varint(&eleven), Err(VarintError::Overflow));
    }

    #[test]
    fn zigzag_is_a_bijection_on_edges() {
        for n in [0, -1, 1, -2, i64::MIN, i64::MAX, 4096, -4097] {
            assert_eq!(unzigzag(zigzag(n)), n);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
    }
}
