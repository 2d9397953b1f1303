//! OUT_OF_BAND (spec 5.16.6): a value whose data is one of the buffers passed next to the
//! payload. The blob names the buffer, its length and what it holds. Looking the buffer up
//! (`missing_buffer`, `buffer_mismatch`) is the host's business; that each index backs at
//! most one value is the decoder's (it sees every blob of a payload, in order).

use super::array::ArrayTypecode;
use super::blob_reader::BlobReader;
use super::ndarray::NdArrayHeader;
use super::ExtError;
use crate::encode::Sink;
use crate::varint::varint_len;

/// Data size, in bytes, from which the reference encoder writes a `bytes`, `bytearray`,
/// `array.array` or numpy array out of band when its caller takes buffers (1 MiB). Below it,
/// copying the data into the payload costs less than handing over and keeping track of a
/// separate buffer.
pub const OUT_OF_BAND_THRESHOLD: usize = 1 << 20;

/// What an OUT_OF_BAND buffer holds: the kind byte of the blob and what follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferKind<'a> {
    /// `bytes` (kind byte 0).
    Bytes,
    /// `bytearray` (kind byte 1).
    ByteArray,
    /// `array.array` with this typecode, its items little-endian as in an ARRAY blob (kind
    /// byte 2, then the typecode).
    Array(ArrayTypecode),
    /// `numpy.ndarray` (kind byte 3 for C order, 4 for Fortran order), then the NDARRAY
    /// header.
    NdArray {
        /// The data is in Fortran (column-major) order rather than C order.
        fortran: bool,
        /// Shape and dtype.
        header: NdArrayHeader<'a>,
    },
}

impl BufferKind<'_> {
    /// The kind byte on the wire.
    pub const fn code(&self) -> u8 {
        match self {
            BufferKind::Bytes => 0,
            BufferKind::ByteArray => 1,
            BufferKind::Array(_) => 2,
            BufferKind::NdArray { fortran: false, .. } => 3,
            BufferKind::NdArray { fortran: true, .. } => 4,
        }
    }
}

/// OUT_OF_BAND (spec 5.16.6): which of the caller's buffers holds the value, how long that
/// buffer is, and what it holds. A parsed value has a `length` that fits its kind: a whole
/// number of array items, or for an ndarray of a plain dtype exactly its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfBand<'a> {
    /// Position of the buffer among those passed to the decoder, from 0.
    pub index: u64,
    /// The buffer's length in bytes.
    pub length: u64,
    /// What the buffer holds.
    pub kind: BufferKind<'a>,
}

impl<'a> OutOfBand<'a> {
    pub(crate) fn read(r: &mut BlobReader<'a>) -> Result<OutOfBand<'a>, ExtError> {
        let index = r.varint("buffer index")?;
        let length = r.varint("byte length")?;
        let kind = match r.u8("kind")? {
            0 => BufferKind::Bytes,
            1 => BufferKind::ByteArray,
            2 => {
                let typecode = ArrayTypecode::read(r, "array typecode")?;
                typecode.check_len(r, "array", length)?;
                BufferKind::Array(typecode)
            }
            code @ (3 | 4) => {
                let header = NdArrayHeader::read(r)?;
                // The header fills the rest of the blob; check that before the length.
                r.end()?;
                if let Some(need) = header.data_len(r)? {
                    if need != length {
                        return Err(r.invalid(format_args!(
                            "length {length} does not match shape {:?} and item size {}, which need {need}",
                            header.dims.to_vec(),
                            header.dtype.item_size().unwrap_or(0),
                        )));
                    }
                }
                BufferKind::NdArray {
                    fortran: code == 4,
                    header,
                }
            }
            other => {
                return Err(r.invalid(format_args!(
                "kind {other} is not one of 0 (bytes), 1 (bytearray), 2 (array), 3 and 4 (ndarray)"
            )))
            }
        };
        Ok(OutOfBand {
            index,
            length,
            kind,
        })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        varint_len(self.index)
            + varint_len(self.length)
            + 1
            + match &self.kind {
                BufferKind::Bytes | BufferKind::ByteArray => 0,
                BufferKind::Array(_) => 1,
                BufferKind::NdArray { header, .. } => header.encoded_len(),
            }
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        out.put_varint(self.index);
        out.put_varint(self.length);
        out.push(self.kind.code());
        match &self.kind {
            BufferKind::Bytes | BufferKind::ByteArray => {}
            BufferKind::Array(typecode) => out.push(typecode.byte()),
            BufferKind::NdArray { header, .. } => header.write(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtBlob, ExtCode};
    use super::*;

    #[test]
    fn valid_values_round_trip() {
        let header_bytes = [1u8, 0x80, 0x01, 3, b'<', b'f', b'8'];
        let array_blob = [&header_bytes[..], &[0; 1024]].concat();
        let Ok(ExtBlob::NdArray(array)) = ExtBlob::parse(ExtCode::NdArray, &array_blob) else {
            panic!("an ndarray");
        };
        let typecode = ArrayTypecode::from_byte(b'd').expect("defined");
        for (kind, length) in [
            (BufferKind::Bytes, 1 << 20),
            (BufferKind::ByteArray, 0),
            (BufferKind::Array(typecode), 1 << 20),
            (
                BufferKind::NdArray {
                    fortran: false,
                    header: array.header,
                },
                1024,
            ),
            (
                BufferKind::NdArray {
                    fortran: true,
                    header: array.header,
                },
                1024,
            ),
        ] {
            let blob = ExtBlob::OutOfBand(OutOfBand {
                index: 300,
                length,
                kind,
            });
            let mut bytes = Vec::new();
            blob.write(&mut bytes);
            assert_eq!(bytes.len(), blob.encoded_len());
            assert_eq!(ExtBlob::parse(ExtCode::OutOfBand, &bytes), Ok(blob));
        }
        // index 0, 3 bytes, bytes: the smallest blob.
        assert_eq!(
            ExtBlob::parse(ExtCode::OutOfBand, &[0, 3, 0]),
            Ok(ExtBlob::OutOfBand(OutOfBand {
                index: 0,
                length: 3,
                kind: BufferKind::Bytes
            }))
        );
        // The spec's example: a 2x3 <f8 array in Fortran order as buffer 1.
        let spec = [0x01, 0x30, 0x04, 0x02, 0x02, 0x03, 0x03, 0x3c, 0x66, 0x38];
        assert!(ExtBlob::parse(ExtCode::OutOfBand, &spec).is_ok());
    }

    #[test]
    fn every_rule_is_checked() {
        let cases: &[(&[u8], &str)] = &[
            (&[], "OUT_OF_BAND blob ends before its buffer index"),
            (&[0], "OUT_OF_BAND blob ends before its byte length"),
            (&[0, 3], "OUT_OF_BAND blob ends before its kind"),
            (
                &[0, 3, 5],
                "OUT_OF_BAND kind 5 is not one of 0 (bytes), 1 (bytearray), 2 (array), 3 and 4 (ndarray)",
            ),
            (&[0, 3, 0, 0], "OUT_OF_BAND blob has 1 bytes after its last field"),
            (&[0, 3, 1, 0], "OUT_OF_BAND blob has 1 bytes after its last field"),
            (
                &[0x80, 0, 3, 0],
                "OUT_OF_BAND buffer index varint has a redundant final zero byte",
            ),
            (
                &[0, 0x83, 0, 0],
                "OUT_OF_BAND byte length varint has a redundant final zero byte",
            ),
            (&[0, 4, 2], "OUT_OF_BAND blob ends before its array typecode"),
            (
                &[0, 4, 2, b'x'],
                "OUT_OF_BAND array typecode 0x78 is not one of b B u w h H i I l L q Q f d",
            ),
            (
                &[0, 6, 2, b'i'],
                "OUT_OF_BAND array of 6 bytes is not a multiple of the 4-byte items of typecode 'i'",
            ),
            (&[0, 8, 2, b'i', 0], "OUT_OF_BAND blob has 1 bytes after its last field"),
            (
                &[0, 0x2f, 3, 2, 2, 3, 3, b'<', b'f', b'8'],
                "OUT_OF_BAND length 47 does not match shape [2, 3] and item size 8, which need 48",
            ),
            (
                &[0, 0x30, 3, 2, 2, 3, 3, b'<', b'f', b'8', 0],
                "OUT_OF_BAND blob has 1 bytes after its last field",
            ),
            (
                &[0, 8, 3, 1, 1, 2, b'|', b'O'],
                "OUT_OF_BAND dtype \"|O\" is not plain data (object and other dtypes are refused)",
            ),
            (&[0, 8, 4], "OUT_OF_BAND blob ends before its ndim"),
        ];
        for (blob, message) in cases {
            let e = ExtBlob::parse(ExtCode::OutOfBand, blob).expect_err("invalid");
            assert_eq!(e.message(), *message, "{blob:02x?}");
        }
        assert!(ExtBlob::parse(ExtCode::OutOfBand, &[0, 8, 2, b'i']).is_ok());
    }
}
