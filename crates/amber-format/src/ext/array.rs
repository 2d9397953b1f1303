//! ARRAY (spec 5.16.3): `array.array` as its typecode and its items, little-endian, at the
//! format's item sizes. Whether the host's `array` has the typecode at that size is the host's
//! check.

use super::blob_reader::BlobReader;
use super::ExtError;
use crate::encode::Sink;

/// The size on the wire of one item of an ARRAY with this typecode, if the typecode is one
/// the format defines (`u` and `w` are UCS-4 code points, `l` and `L` 64 bits).
pub const fn array_wire_size(typecode: u8) -> Option<usize> {
    Some(match typecode {
        b'b' | b'B' => 1,
        b'h' | b'H' => 2,
        b'i' | b'I' | b'f' | b'u' | b'w' => 4,
        b'l' | b'L' | b'q' | b'Q' | b'd' => 8,
        _ => return None,
    })
}

/// A typecode the format defines: one of `b B u w h H i I l L q Q f d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArrayTypecode(u8);

impl ArrayTypecode {
    /// The typecode for this ASCII letter, if the format defines it.
    pub const fn from_byte(letter: u8) -> Option<ArrayTypecode> {
        match array_wire_size(letter) {
            Some(_) => Some(ArrayTypecode(letter)),
            None => None,
        }
    }

    /// The ASCII letter.
    pub const fn byte(self) -> u8 {
        self.0
    }

    /// The size of one item on the wire, whatever the platform.
    pub const fn wire_size(self) -> usize {
        match array_wire_size(self.0) {
            Some(size) => size,
            None => 1,
        }
    }

    /// Reads the typecode byte of an ARRAY, or of an OUT_OF_BAND array (`field` names it).
    pub(crate) fn read(r: &mut BlobReader<'_>, field: &str) -> Result<ArrayTypecode, ExtError> {
        let letter = r.u8(field)?;
        ArrayTypecode::from_byte(letter).ok_or_else(|| {
            r.invalid(format_args!(
                "{field} 0x{letter:02X} is not one of b B u w h H i I l L q Q f d"
            ))
        })
    }

    /// Fails unless `len` bytes hold whole items; `what` names the bytes in the message.
    pub(crate) fn check_len(
        self,
        r: &BlobReader<'_>,
        what: &str,
        len: u64,
    ) -> Result<(), ExtError> {
        let wire = self.wire_size();
        if len % wire as u64 == 0 {
            return Ok(());
        }
        Err(r.invalid(format_args!(
            "{what} of {len} bytes is not a multiple of the {wire}-byte items of typecode '{}'",
            self.0 as char
        )))
    }
}

/// ARRAY (spec 5.16.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Array<'a> {
    /// The array's type code.
    pub typecode: ArrayTypecode,
    /// The items, little-endian: a whole number of items.
    pub data: &'a [u8],
}

impl<'a> Array<'a> {
    pub(crate) fn read(r: &mut BlobReader<'a>) -> Result<Array<'a>, ExtError> {
        let typecode = ArrayTypecode::read(r, "typecode")?;
        let data = r.rest();
        typecode.check_len(r, "data", data.len() as u64)?;
        Ok(Array { typecode, data })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        1 + self.data.len()
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        out.push(self.typecode.byte());
        out.extend_from_slice(self.data);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtBlob, ExtCode};
    use super::*;

    #[test]
    fn valid_values_round_trip() {
        for letter in *b"bBuwhHiIlLqQfd" {
            let typecode = ArrayTypecode::from_byte(letter).expect("defined");
            assert_eq!(Some(typecode.wire_size()), array_wire_size(letter));
            let data = vec![7u8; typecode.wire_size() * 3];
            let blob = ExtBlob::Array(Array {
                typecode,
                data: &data,
            });
            let mut bytes = Vec::new();
            blob.write(&mut bytes);
            assert_eq!(bytes.len(), blob.encoded_len());
            assert_eq!(ExtBlob::parse(ExtCode::Array, &bytes), Ok(blob));
        }
    }

    #[test]
    fn every_rule_is_checked() {
        let cases: &[(&[u8], &str)] = &[
            (&[], "ARRAY blob ends before its typecode"),
            (
                b"x",
                "ARRAY typecode 0x78 is not one of b B u w h H i I l L q Q f d",
            ),
            (
                b"O\0\0\0\0\0\0\0\0",
                "ARRAY typecode 0x4F is not one of b B u w h H i I l L q Q f d",
            ),
            (
                b"h\0\0\0",
                "ARRAY data of 3 bytes is not a multiple of the 2-byte items of typecode 'h'",
            ),
            (
                b"d\0\0\0\0\0\0\0\0\0\0\0\0",
                "ARRAY data of 12 bytes is not a multiple of the 8-byte items of typecode 'd'",
            ),
        ];
        for (blob, message) in cases {
            let e = ExtBlob::parse(ExtCode::Array, blob).expect_err("invalid");
            assert_eq!(e.message(), *message);
        }
    }
}
