//! Reads the fields of one EXT blob in order (spec 5.16.1, "Rules shared by all blob
//! layouts"): minimal varints, and every problem an [`ExtError`] that names the code and the
//! field, since inside a blob nothing is `truncated` (its length was checked against the
//! input already).

use super::ExtError;
use crate::varint::{read_varint, unzigzag, VarintError};

/// A cursor over one blob; `what` is the spec name used in messages (the name of the code
/// whose blob, or whose part of a blob, is being read).
pub(crate) struct BlobReader<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> BlobReader<'a> {
    /// A reader over `data`, the blob (or part of a blob) of the code named `what`.
    pub(crate) fn new(what: &'static str, data: &'a [u8]) -> Self {
        BlobReader { data, pos: 0, what }
    }

    /// An error about this blob: `detail` follows the spec name.
    #[cold]
    pub(crate) fn invalid(&self, detail: std::fmt::Arguments<'_>) -> ExtError {
        ExtError::new(format!("{} {detail}", self.what))
    }

    #[cold]
    fn short(&self, field: &str) -> ExtError {
        self.invalid(format_args!("blob ends before its {field}"))
    }

    /// How far the reader is into the blob.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// The bytes read since [`BlobReader::position`] gave `start`.
    pub(crate) fn since(&self, start: usize) -> &'a [u8] {
        let data: &'a [u8] = self.data;
        data.get(start..self.pos).unwrap_or(&[])
    }

    /// The next byte, without reading it.
    pub(crate) fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    /// One byte.
    pub(crate) fn u8(&mut self, field: &str) -> Result<u8, ExtError> {
        let b = *self.data.get(self.pos).ok_or_else(|| self.short(field))?;
        self.pos += 1;
        Ok(b)
    }

    /// A minimal LEB128 varint.
    pub(crate) fn varint(&mut self, field: &str) -> Result<u64, ExtError> {
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        match read_varint(rest) {
            Ok((v, used)) => {
                self.pos += used;
                Ok(v)
            }
            Err(VarintError::Truncated) => Err(self.short(field)),
            Err(VarintError::Overlong) => Err(self.invalid(format_args!(
                "{field} varint has a redundant final zero byte"
            ))),
            Err(VarintError::Overflow) => Err(self.invalid(format_args!(
                "{field} varint is longer than 10 bytes or above 2^64-1"
            ))),
        }
    }

    /// A zigzag varint.
    pub(crate) fn zigzag(&mut self, field: &str) -> Result<i64, ExtError> {
        self.varint(field).map(unzigzag)
    }

    /// An unsigned field that must lie in `lo..=hi`.
    pub(crate) fn in_range(&self, field: &str, v: u64, lo: u64, hi: u64) -> Result<u64, ExtError> {
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(self.invalid(format_args!("{field} {v} is out of range {lo}..{hi}")))
        }
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: u64, field: &str) -> Result<&'a [u8], ExtError> {
        let data: &'a [u8] = self.data;
        let slice = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .and_then(|end| data.get(self.pos..end))
            .ok_or_else(|| {
                self.invalid(format_args!(
                    "{field} needs {n} bytes but {} are left",
                    self.data.len().saturating_sub(self.pos)
                ))
            })?;
        self.pos += slice.len();
        Ok(slice)
    }

    /// Everything left.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let data: &'a [u8] = self.data;
        let rest = data.get(self.pos..).unwrap_or(&[]);
        self.pos = data.len();
        rest
    }

    /// Fails if bytes are left after the last field.
    pub(crate) fn end(&self) -> Result<(), ExtError> {
        match self.data.len().saturating_sub(self.pos) {
            0 => Ok(()),
            n => Err(self.invalid(format_args!("blob has {n} bytes after its last field"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_names_the_code_and_the_field() {
        let mut r = BlobReader::new("DATE", &[0x80, 0x00]);
        let e = r.varint("year").unwrap_err();
        assert_eq!(
            e.message(),
            "DATE year varint has a redundant final zero byte"
        );
        let mut r = BlobReader::new("DATE", &[0x80]);
        assert_eq!(
            r.varint("year").unwrap_err().message(),
            "DATE blob ends before its year"
        );
        let mut r = BlobReader::new("X", &[0xFF; 11]);
        assert!(r
            .varint("n")
            .unwrap_err()
            .message()
            .contains("longer than 10"));
        let mut r = BlobReader::new("X", &[1, 2]);
        assert_eq!(r.u8("a"), Ok(1));
        assert_eq!(
            r.end().unwrap_err().message(),
            "X blob has 1 bytes after its last field"
        );
        assert_eq!(
            r.take(2, "name").unwrap_err().message(),
            "X name needs 2 bytes but 1 are left"
        );
        assert!(r.take(u64::MAX, "name").is_err());
        assert_eq!(r.rest(), &[2]);
        assert_eq!(r.end(), Ok(()));
        assert_eq!(r.u8("b").unwrap_err().message(), "X blob ends before its b");
        assert_eq!(
            r.in_range("month", 13, 1, 12).unwrap_err().message(),
            "X month 13 is out of range 1..12"
        );
    }
}
