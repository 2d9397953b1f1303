//! The EXT code table: library types with a fixed layout on the wire.
//!
//! `spec/format.md` holds the same table; a test parses it and compares it with
//! [`ExtCode::ALL`]. A code's [`ExtLayout`] is all a generic decoder needs to walk the value;
//! what the blob bytes mean is the host builder's business.

/// How the body of an EXT value is laid out after its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtLayout {
    /// A varint length, then that many opaque bytes: an atom with no children.
    Blob,
    /// The object exists (and may be referred to) before its `n` values are decoded.
    CreateFirst(usize),
    /// The object is built from its `n` values once they are complete.
    BuildAfter(usize),
}

/// An EXT code.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExtCode {
    /// `datetime.date`.
    Date = 0x01,
    /// `datetime.time`.
    Time = 0x02,
    /// `datetime.datetime`.
    DateTime = 0x03,
    /// `datetime.timedelta`.
    TimeDelta = 0x04,
    /// `datetime.timezone` or `zoneinfo.ZoneInfo`.
    TzInfo = 0x05,
    /// `decimal.Decimal`.
    Decimal = 0x06,
    /// `uuid.UUID`.
    Uuid = 0x07,
    /// `fractions.Fraction`: numerator, denominator.
    Fraction = 0x08,
    /// `collections.deque`: maxlen, items.
    Deque = 0x09,
    /// `collections.OrderedDict`: a dict of its items.
    OrderedDict = 0x0A,
    /// `collections.Counter`: a dict of its counts.
    Counter = 0x0B,
    /// `collections.defaultdict`: factory name, a dict of its items.
    DefaultDict = 0x0C,
    /// `range`: start, stop, step.
    Range = 0x0D,
    /// `slice`: start, stop, step.
    Slice = 0x0E,
    /// `array.array`.
    Array = 0x0F,
    /// `pathlib` paths.
    Path = 0x10,
    /// `ipaddress` addresses.
    IpAddress = 0x11,
    /// `ipaddress` networks.
    IpNetwork = 0x12,
    /// `ipaddress` interfaces.
    IpInterface = 0x13,
    /// `numpy.ndarray`.
    NdArray = 0x14,
    /// A numpy scalar.
    NumpyScalar = 0x15,
    /// A reference to a buffer passed next to the payload (see [`OutOfBand`]).
    OutOfBand = 0x16,
}

impl ExtCode {
    /// Every code, in code order.
    pub const ALL: [ExtCode; 22] = [
        ExtCode::Date,
        ExtCode::Time,
        ExtCode::DateTime,
        ExtCode::TimeDelta,
        ExtCode::TzInfo,
        ExtCode::Decimal,
        ExtCode::Uuid,
        ExtCode::Fraction,
        ExtCode::Deque,
        ExtCode::OrderedDict,
        ExtCode::Counter,
        ExtCode::DefaultDict,
        ExtCode::Range,
        ExtCode::Slice,
        ExtCode::Array,
        ExtCode::Path,
        ExtCode::IpAddress,
        ExtCode::IpNetwork,
        ExtCode::IpInterface,
        ExtCode::NdArray,
        ExtCode::NumpyScalar,
        ExtCode::OutOfBand,
    ];

    /// The code's number on the wire.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The code for a number read from the wire, if it is defined.
    pub fn from_code(code: u64) -> Option<ExtCode> {
        let index = usize::try_from(code).ok()?.checked_sub(1)?;
        ExtCode::ALL.get(index).copied()
    }

    /// How the value is laid out after the code.
    pub const fn layout(self) -> ExtLayout {
        match self {
            ExtCode::Fraction => ExtLayout::BuildAfter(2),
            ExtCode::Deque | ExtCode::DefaultDict => ExtLayout::CreateFirst(2),
            ExtCode::OrderedDict | ExtCode::Counter => ExtLayout::CreateFirst(1),
            ExtCode::Range | ExtCode::Slice => ExtLayout::BuildAfter(3),
            _ => ExtLayout::Blob,
        }
    }

    /// The name used in `spec/format.md` and in the test vectors.
    pub const fn spec_name(self) -> &'static str {
        match self {
            ExtCode::Date => "DATE",
            ExtCode::Time => "TIME",
            ExtCode::DateTime => "DATETIME",
            ExtCode::TimeDelta => "TIMEDELTA",
            ExtCode::TzInfo => "TZINFO",
            ExtCode::Decimal => "DECIMAL",
            ExtCode::Uuid => "UUID",
            ExtCode::Fraction => "FRACTION",
            ExtCode::Deque => "DEQUE",
            ExtCode::OrderedDict => "ORDERED_DICT",
            ExtCode::Counter => "COUNTER",
            ExtCode::DefaultDict => "DEFAULTDICT",
            ExtCode::Range => "RANGE",
            ExtCode::Slice => "SLICE",
            ExtCode::Array => "ARRAY",
            ExtCode::Path => "PATH",
            ExtCode::IpAddress => "IP_ADDRESS",
            ExtCode::IpNetwork => "IP_NETWORK",
            ExtCode::IpInterface => "IP_INTERFACE",
            ExtCode::NdArray => "NDARRAY",
            ExtCode::NumpyScalar => "NUMPY_SCALAR",
            ExtCode::OutOfBand => "OUT_OF_BAND",
        }
    }

    /// The code with this spec name.
    pub fn from_spec_name(name: &str) -> Option<ExtCode> {
        ExtCode::ALL.iter().copied().find(|c| c.spec_name() == name)
    }
}

/// Whether `key` is a zoneinfo key a TZINFO may carry: 1 to 255 characters from
/// `A-Za-z0-9_+-/`, with no empty segment (so no leading, trailing or doubled `/`).
pub fn valid_zone_key(key: &[u8]) -> bool {
    (1..=255).contains(&key.len())
        && key
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'+' | b'-' | b'/'))
        && key.split(|&c| c == b'/').all(|segment| !segment.is_empty())
}

/// The size on the wire of one item of an ARRAY with this typecode, if the typecode is one
/// the format defines (`u` and `w` are UCS-4 code points, `l` and `L` 64 bits).
pub fn array_wire_size(typecode: u8) -> Option<usize> {
    Some(match typecode {
        b'b' | b'B' => 1,
        b'h' | b'H' => 2,
        b'i' | b'I' | b'f' | b'u' | b'w' => 4,
        b'l' | b'L' | b'q' | b'Q' | b'd' => 8,
        _ => return None,
    })
}

/// Data size, in bytes, from which the reference encoder writes a `bytes`, `bytearray`,
/// `array.array` or numpy array out of band when its caller takes buffers (1 MiB). Below it,
/// copying the data into the payload costs less than handing over and keeping track of a
/// separate buffer.
pub const OUT_OF_BAND_THRESHOLD: usize = 1 << 20;

/// What an OUT_OF_BAND buffer holds: the kind byte of the blob and what follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferKind {
    /// `bytes` (kind byte 0).
    Bytes,
    /// `bytearray` (kind byte 1).
    ByteArray,
    /// `array.array` with this typecode, its items little-endian as in an ARRAY blob (kind
    /// byte 2, then the typecode).
    Array(u8),
    /// `numpy.ndarray` (kind byte 3 for C order, 4 for Fortran order), then the NDARRAY
    /// header: ndim, the dimensions, the dtype.
    NdArray {
        /// The data is in Fortran (column-major) order rather than C order.
        fortran: bool,
    },
}

impl BufferKind {
    /// The kind byte on the wire.
    pub const fn code(self) -> u8 {
        match self {
            BufferKind::Bytes => 0,
            BufferKind::ByteArray => 1,
            BufferKind::Array(_) => 2,
            BufferKind::NdArray { fortran: false } => 3,
            BufferKind::NdArray { fortran: true } => 4,
        }
    }
}

/// The fields of an OUT_OF_BAND blob: which of the caller's buffers holds the value, how
/// long that buffer is, and what it holds.
///
/// [`OutOfBandRef::parse`] checks everything that can be checked without the host: minimal
/// varints, a defined kind byte, the ARRAY typecode and item size, and that nothing follows
/// the last field. The NDARRAY header of an ndarray is left to the host, which owns the
/// dtype rules (and checks that the header fills the rest of the blob).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfBandRef<'a> {
    /// Position of the buffer among those passed to the decoder, from 0.
    pub index: u64,
    /// The buffer's length in bytes.
    pub length: u64,
    /// What the buffer holds.
    pub kind: BufferKind,
    /// For an ndarray, the bytes after the kind byte (the NDARRAY header); empty otherwise.
    pub ndarray_header: &'a [u8],
}

impl<'a> OutOfBandRef<'a> {
    /// Reads an OUT_OF_BAND blob; the error is a sentence for an `invalid_ext` error.
    pub fn parse(blob: &'a [u8]) -> Result<Self, String> {
        let mut pos = 0;
        let mut varint = |field: &str| -> Result<u64, String> {
            let rest = blob.get(pos..).unwrap_or(&[]);
            match crate::varint::read_varint(rest) {
                Ok((v, used)) => {
                    pos += used;
                    Ok(v)
                }
                Err(crate::varint::VarintError::Truncated) => {
                    Err(format!("OUT_OF_BAND blob ends before its {field}"))
                }
                Err(crate::varint::VarintError::Overlong) => Err(format!(
                    "OUT_OF_BAND {field} varint has a redundant final zero byte"
                )),
                Err(crate::varint::VarintError::Overflow) => Err(format!(
                    "OUT_OF_BAND {field} varint is longer than 10 bytes or above 2^64-1"
                )),
            }
        };
        let index = varint("buffer index")?;
        let length = varint("byte length")?;
        let byte = |at: usize, field: &str| {
            blob.get(at)
                .copied()
                .ok_or_else(|| format!("OUT_OF_BAND blob ends before its {field}"))
        };
        let kind = match byte(pos, "kind")? {
            0 => BufferKind::Bytes,
            1 => BufferKind::ByteArray,
            2 => {
                let typecode = byte(pos + 1, "array typecode")?;
                let Some(wire) = array_wire_size(typecode) else {
                    return Err(format!(
                        "OUT_OF_BAND array typecode 0x{typecode:02X} is not one of b B u w h H i I l L q Q f d"
                    ));
                };
                if length % wire as u64 != 0 {
                    return Err(format!(
                        "OUT_OF_BAND array of {length} bytes is not a multiple of the {wire}-byte items of typecode '{}'",
                        typecode as char
                    ));
                }
                pos += 1;
                BufferKind::Array(typecode)
            }
            3 => BufferKind::NdArray { fortran: false },
            4 => BufferKind::NdArray { fortran: true },
            other => {
                return Err(format!(
                    "OUT_OF_BAND kind {other} is not one of 0 (bytes), 1 (bytearray), 2 (array), 3 and 4 (ndarray)"
                ))
            }
        };
        pos += 1;
        let rest = blob.get(pos..).unwrap_or(&[]);
        let ndarray_header = match kind {
            BufferKind::NdArray { .. } => rest,
            _ if rest.is_empty() => &[],
            _ => {
                return Err(format!(
                    "OUT_OF_BAND blob has {} bytes after its last field",
                    rest.len()
                ))
            }
        };
        Ok(OutOfBandRef {
            index,
            length,
            kind,
            ndarray_header,
        })
    }

    /// Appends the blob: index, length, kind byte (and typecode), then the ndarray header.
    pub fn write(&self, out: &mut Vec<u8>) {
        crate::varint::write_varint(out, self.index);
        crate::varint::write_varint(out, self.length);
        out.push(self.kind.code());
        if let BufferKind::Array(typecode) = self.kind {
            out.push(typecode);
        }
        out.extend_from_slice(self.ndarray_header);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_dense_from_one() {
        for (i, code) in ExtCode::ALL.iter().enumerate() {
            assert_eq!(usize::from(code.code()), i + 1);
            assert_eq!(ExtCode::from_code(u64::from(code.code())), Some(*code));
        }
        assert_eq!(ExtCode::from_code(0), None);
        assert_eq!(ExtCode::from_code(ExtCode::ALL.len() as u64 + 1), None);
        assert_eq!(ExtCode::from_code(u64::MAX), None);
    }

    #[test]
    fn zone_keys() {
        for good in [
            "UTC",
            "Europe/Berlin",
            "Etc/GMT+5",
            "America/Port-au-Prince",
        ] {
            assert!(valid_zone_key(good.as_bytes()), "{good}");
        }
        for bad in ["", "/etc/passwd", "a//b", "a/", "../x", "a b", "a\0"] {
            assert!(!valid_zone_key(bad.as_bytes()), "{bad:?}");
        }
        assert!(!valid_zone_key("a".repeat(256).as_bytes()));
    }

    #[test]
    fn out_of_band_blobs_round_trip() {
        let header = [1u8, 0x80, 0x01, 3, b'<', b'f', b'8'];
        for kind in [
            BufferKind::Bytes,
            BufferKind::ByteArray,
            BufferKind::Array(b'd'),
            BufferKind::NdArray { fortran: false },
            BufferKind::NdArray { fortran: true },
        ] {
            let r = OutOfBandRef {
                index: 300,
                length: 1 << 20,
                kind,
                ndarray_header: if matches!(kind, BufferKind::NdArray { .. }) {
                    &header
                } else {
                    &[]
                },
            };
            let mut blob = Vec::new();
            r.write(&mut blob);
            assert_eq!(OutOfBandRef::parse(&blob), Ok(r));
        }
        // index 0, 3 bytes, bytes: the smallest blob.
        let r = OutOfBandRef::parse(&[0, 3, 0]).expect("valid");
        assert_eq!((r.index, r.length, r.kind), (0, 3, BufferKind::Bytes));
    }

    #[test]
    fn out_of_band_blobs_are_checked() {
        let bad: [&[u8]; 11] = [
            &[],              // no index
            &[0],             // no length
            &[0, 3],          // no kind
            &[0, 3, 5],       // undefined kind
            &[0, 3, 0, 0],    // a byte after the kind
            &[0, 3, 1, 0],    // a byte after the kind (bytearray)
            &[0x80, 0, 3, 0], // overlong index
            &[0, 0x83, 0, 0], // overlong length
            &[0, 4, 2],       // no typecode
            &[0, 4, 2, b'x'], // unknown typecode
            &[0, 6, 2, b'i'], // 6 bytes of 4-byte items
        ];
        for blob in bad {
            assert!(OutOfBandRef::parse(blob).is_err(), "{blob:?}");
        }
        assert!(OutOfBandRef::parse(&[0, 8, 2, b'i', 0]).is_err());
        assert!(OutOfBandRef::parse(&[0, 8, 2, b'i']).is_ok());
        // An ndarray leaves its header to the host, even an empty one.
        let r = OutOfBandRef::parse(&[0, 8, 4]).expect("header unchecked here");
        assert_eq!(r.ndarray_header, &[] as &[u8]);
    }
}
