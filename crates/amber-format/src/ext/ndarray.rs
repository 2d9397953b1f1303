//! NDARRAY and NUMPY_SCALAR (spec 5.16.3), and the NDARRAY header that an OUT_OF_BAND
//! ndarray shares (spec 5.16.6): the dimensions, the dtype text and the data length they
//! imply. What only numpy can tell (whether it accepts the dtype, whether the text is the
//! one it writes for it, a structured dtype's item size) is the host's check.

use super::blob_reader::BlobReader;
use super::ExtError;
use crate::encode::Sink;
use crate::varint::{read_varint, varint_len, write_varint};

/// Most dimensions an array may have (spec 8.5).
pub const MAX_NDIM: u64 = 64;
/// Longest dtype string of the `dtype.str` form (spec 8.5).
pub const MAX_DTYPE_LEN: u64 = 64;
/// Longest structured dtype text (JSON of numpy's `descr`); `amber._dtypes.MAX_TEXT` in the
/// Python package is the same.
pub const MAX_STRUCTURED_DTYPE_LEN: u64 = 4096;
/// dtype kinds whose items are plain bytes: bool, ints, floats, complex, timedelta64,
/// datetime64, bytes, str, unstructured void.
pub const PLAIN_KINDS: &[u8] = b"biufcmMSUV";

/// The dimensions of an array, as the minimal varints of the wire (so that a parsed header
/// borrows them instead of copying), with their product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims<'a> {
    ndim: u8,
    wire: &'a [u8],
    count: u64,
}

#[cold]
fn too_many_dims(r: &BlobReader<'_>, ndim: u64) -> ExtError {
    r.invalid(format_args!("ndim {ndim} is above {MAX_NDIM}"))
}

#[cold]
fn too_many_elements(r: &BlobReader<'_>, shape: &[u64]) -> ExtError {
    r.invalid(format_args!(
        "shape {shape:?} has more than 2^64-1 elements"
    ))
}

/// The dimensions of a [`Dims`], in order.
#[derive(Clone, Debug)]
pub struct DimsIter<'a> {
    wire: &'a [u8],
}

impl Iterator for DimsIter<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        // The bytes were read (or written) as minimal varints already.
        let (dim, used) = read_varint(self.wire).ok()?;
        self.wire = self.wire.get(used..).unwrap_or(&[]);
        Some(dim)
    }
}

impl<'a> Dims<'a> {
    /// Writes `shape` as wire varints into `scratch` (cleared first) and returns its
    /// dimensions, or an error if it has more than [`MAX_NDIM`] of them or more than 2^64 - 1
    /// elements.
    pub fn encode(shape: &[u64], scratch: &'a mut Vec<u8>) -> Result<Dims<'a>, ExtError> {
        let r = BlobReader::new("NDARRAY", &[]);
        if shape.len() as u64 > MAX_NDIM {
            return Err(too_many_dims(&r, shape.len() as u64));
        }
        let count =
            Dims::product(shape.iter().copied()).ok_or_else(|| too_many_elements(&r, shape))?;
        scratch.clear();
        for &dim in shape {
            write_varint(scratch, dim);
        }
        Ok(Dims {
            ndim: shape.len() as u8,
            wire: scratch.as_slice(),
            count,
        })
    }

    /// Reads `ndim` and the dimensions.
    fn read(r: &mut BlobReader<'a>) -> Result<Dims<'a>, ExtError> {
        let ndim = r.varint("ndim")?;
        if ndim > MAX_NDIM {
            return Err(too_many_dims(r, ndim));
        }
        let mut len = 0;
        let start = r.position();
        for _ in 0..ndim {
            r.varint("dimension")?;
            len += 1;
        }
        let wire = r.since(start);
        let dims = Dims {
            ndim: len,
            wire,
            count: 0,
        };
        match Dims::product(dims.iter()) {
            Some(count) => Ok(Dims { count, ..dims }),
            None => Err(too_many_elements(r, &dims.to_vec())),
        }
    }

    /// The product of the dimensions, taken in order, with overflow checks (so a shape
    /// whose running product overflows is refused even if a later dimension is 0).
    fn product(dims: impl IntoIterator<Item = u64>) -> Option<u64> {
        dims.into_iter().try_fold(1u64, u64::checked_mul)
    }

    /// The number of dimensions.
    pub fn len(&self) -> usize {
        usize::from(self.ndim)
    }

    /// Whether the array is 0-dimensional (one element).
    pub fn is_empty(&self) -> bool {
        self.ndim == 0
    }

    /// The dimensions, in order.
    pub fn iter(&self) -> DimsIter<'a> {
        DimsIter { wire: self.wire }
    }

    /// The number of elements: the product of the dimensions.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The dimensions as a vector, for messages.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }

    fn encoded_len(&self) -> usize {
        varint_len(u64::from(self.ndim)) + self.wire.len()
    }

    fn write<S: Sink>(&self, out: &mut S) {
        out.put_varint(u64::from(self.ndim));
        out.extend_from_slice(self.wire);
    }
}

/// A dtype of numpy's `dtype.str` form: a byte order (`<`, `>`, `|`), a kind letter from
/// [`PLAIN_KINDS`], the item size as decimal digits without leading zeros (for `U`, in
/// UCS-4 characters), and for `m` and `M` optionally a unit in brackets (`<M8[ns]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlainDtype<'a> {
    text: &'a str,
    item_size: u64,
}

impl<'a> PlainDtype<'a> {
    /// The text, such as `<f8`.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The kind letter.
    pub fn kind(&self) -> u8 {
        self.text.as_bytes().get(1).copied().unwrap_or(b'V')
    }

    /// The size of one item in bytes.
    pub fn item_size(&self) -> u64 {
        self.item_size
    }

    /// Checks the grammar of `text` (ASCII already).
    fn parse(r: &BlobReader<'_>, text: &'a str) -> Result<PlainDtype<'a>, ExtError> {
        let grammar = || {
            r.invalid(format_args!(
                "dtype {text:?} is not a numpy dtype.str: a byte order (< > |), a kind \
                 letter, the item size, and for m and M an optional [unit]"
            ))
        };
        let bytes = text.as_bytes();
        let Some((&[order, kind], rest)) = bytes.split_first_chunk::<2>() else {
            return Err(grammar());
        };
        if !matches!(order, b'<' | b'>' | b'|') {
            return Err(grammar());
        }
        if kind.is_ascii_alphabetic() && !PLAIN_KINDS.contains(&kind) {
            return Err(r.invalid(format_args!(
                "dtype {text:?} is not plain data (object and other dtypes are refused)"
            )));
        }
        if !PLAIN_KINDS.contains(&kind) {
            return Err(grammar());
        }
        let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        let (size, unit) = rest.split_at(digits);
        let unit_ok = match unit {
            [] => true,
            [b'[', inner @ .., b']'] if matches!(kind, b'm' | b'M') => {
                !inner.is_empty() && inner.iter().all(u8::is_ascii_alphanumeric)
            }
            _ => false,
        };
        if size.is_empty() || (size.len() > 1 && size.first() == Some(&b'0')) || !unit_ok {
            return Err(grammar());
        }
        let chars = size.iter().try_fold(0u64, |n, &d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        });
        let item_size = match kind {
            b'U' => chars.and_then(|n| n.checked_mul(4)),
            _ => chars,
        };
        let item_size = item_size
            .ok_or_else(|| r.invalid(format_args!("dtype {text:?} has too large an item size")))?;
        Ok(PlainDtype { text, item_size })
    }
}

/// The dtype of an NDARRAY, a NUMPY_SCALAR or an OUT_OF_BAND ndarray.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype<'a> {
    /// `dtype.str`, 1 to [`MAX_DTYPE_LEN`] bytes.
    Plain(PlainDtype<'a>),
    /// A structured dtype: JSON of numpy's `descr`, starting with `[`, at most
    /// [`MAX_STRUCTURED_DTYPE_LEN`] bytes of printable ASCII. That it is the text the
    /// reference encoder writes, and its item size, are for the host to find out.
    Structured(&'a str),
}

impl<'a> Dtype<'a> {
    /// The dtype for `text` (without its length prefix), as an encoder checks what it is
    /// about to write.
    pub fn from_text(text: &'a [u8]) -> Result<Dtype<'a>, ExtError> {
        let r = BlobReader::new("NDARRAY", text);
        let max = if text.first() == Some(&b'[') {
            MAX_STRUCTURED_DTYPE_LEN
        } else {
            MAX_DTYPE_LEN
        };
        if !(1..=max).contains(&(text.len() as u64)) {
            return Err(r.invalid(format_args!(
                "dtype length {} is out of range 1..{max}",
                text.len()
            )));
        }
        Dtype::classify(&r, text)
    }

    /// Reads the length-prefixed dtype text.
    fn read(r: &mut BlobReader<'a>) -> Result<Dtype<'a>, ExtError> {
        let n = r.varint("dtype length")?;
        let max = if r.peek() == Some(b'[') {
            MAX_STRUCTURED_DTYPE_LEN
        } else {
            MAX_DTYPE_LEN
        };
        if !(1..=max).contains(&n) {
            return Err(r.invalid(format_args!("dtype length {n} is out of range 1..{max}")));
        }
        let raw = r.take(n, "dtype")?;
        Dtype::classify(r, raw)
    }

    fn classify(r: &BlobReader<'_>, raw: &'a [u8]) -> Result<Dtype<'a>, ExtError> {
        let text = match std::str::from_utf8(raw) {
            // Spaces occur in structured dtypes (field names); the grammar refuses them in
            // the other form.
            Ok(t) if t.bytes().all(|c| c.is_ascii_graphic() || c == b' ') => t,
            _ => {
                return Err(r.invalid(format_args!(
                    "dtype {:?} is not printable ASCII",
                    String::from_utf8_lossy(raw)
                )))
            }
        };
        if text.starts_with('[') {
            Ok(Dtype::Structured(text))
        } else {
            PlainDtype::parse(r, text).map(Dtype::Plain)
        }
    }

    /// The text as written.
    pub fn text(&self) -> &'a str {
        match self {
            Dtype::Plain(plain) => plain.text,
            Dtype::Structured(text) => text,
        }
    }

    /// The item size, when the text tells it (not for a structured dtype).
    pub fn item_size(&self) -> Option<u64> {
        match self {
            Dtype::Plain(plain) => Some(plain.item_size),
            Dtype::Structured(_) => None,
        }
    }

    fn encoded_len(&self) -> usize {
        let n = self.text().len();
        varint_len(n as u64) + n
    }

    fn write<S: Sink>(&self, out: &mut S) {
        let text = self.text();
        out.put_varint(text.len() as u64);
        out.extend_from_slice(text.as_bytes());
    }
}

/// The NDARRAY header (spec 5.16.3): `ndim`, the dimensions and the dtype. An NDARRAY blob
/// and an OUT_OF_BAND ndarray (spec 5.16.6) both start with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NdArrayHeader<'a> {
    /// The shape.
    pub dims: Dims<'a>,
    /// The dtype.
    pub dtype: Dtype<'a>,
}

impl<'a> NdArrayHeader<'a> {
    pub(crate) fn read(r: &mut BlobReader<'a>) -> Result<NdArrayHeader<'a>, ExtError> {
        let dims = Dims::read(r)?;
        let dtype = Dtype::read(r)?;
        Ok(NdArrayHeader { dims, dtype })
    }

    /// The length of the data, when the dtype tells its item size; an error when the
    /// product overflows.
    pub(crate) fn data_len(&self, r: &BlobReader<'_>) -> Result<Option<u64>, ExtError> {
        let Some(item_size) = self.dtype.item_size() else {
            return Ok(None);
        };
        match self.dims.count().checked_mul(item_size) {
            Some(len) => Ok(Some(len)),
            None => Err(r.invalid(format_args!(
                "shape {:?} times item size {item_size} overflows",
                self.dims.to_vec()
            ))),
        }
    }

    pub(crate) fn encoded_len(&self) -> usize {
        self.dims.encoded_len() + self.dtype.encoded_len()
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        self.dims.write(out);
        self.dtype.write(out);
    }
}

/// NDARRAY (spec 5.16.3): the header, then the elements' raw bytes in C order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NdArray<'a> {
    /// Shape and dtype.
    pub header: NdArrayHeader<'a>,
    /// The elements: for a plain dtype, exactly the product of the dimensions times the
    /// item size.
    pub data: &'a [u8],
}

impl<'a> NdArray<'a> {
    pub(crate) fn read(r: &mut BlobReader<'a>) -> Result<NdArray<'a>, ExtError> {
        let header = NdArrayHeader::read(r)?;
        let data = r.rest();
        if let Some(need) = header.data_len(r)? {
            if need != data.len() as u64 {
                return Err(r.invalid(format_args!(
                    "data has {} bytes; shape {:?} and item size {} need {need}",
                    data.len(),
                    header.dims.to_vec(),
                    header.dtype.item_size().unwrap_or(0),
                )));
            }
        }
        Ok(NdArray { header, data })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        self.header.encoded_len() + self.data.len()
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        self.header.write(out);
        out.extend_from_slice(self.data);
    }
}

/// NUMPY_SCALAR (spec 5.16.3): the dtype, then the scalar's raw bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumpyScalar<'a> {
    /// The dtype.
    pub dtype: Dtype<'a>,
    /// Exactly one item, for a plain dtype.
    pub data: &'a [u8],
}

impl<'a> NumpyScalar<'a> {
    pub(crate) fn read(r: &mut BlobReader<'a>) -> Result<NumpyScalar<'a>, ExtError> {
        let dtype = Dtype::read(r)?;
        let data = r.rest();
        if let Some(item_size) = dtype.item_size() {
            if item_size != data.len() as u64 {
                return Err(r.invalid(format_args!(
                    "data has {} bytes; its dtype's item size is {item_size}",
                    data.len()
                )));
            }
        }
        Ok(NumpyScalar { dtype, data })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        self.dtype.encoded_len() + self.data.len()
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        self.dtype.write(out);
        out.extend_from_slice(self.data);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtBlob, ExtCode};
    use super::*;

    fn ndarray(shape: &[u64], dtype: &[u8], data: &[u8]) -> Vec<u8> {
        let mut blob = Vec::new();
        write_varint(&mut blob, shape.len() as u64);
        for &d in shape {
            write_varint(&mut blob, d);
        }
        write_varint(&mut blob, dtype.len() as u64);
        blob.extend_from_slice(dtype);
        blob.extend_from_slice(data);
        blob
    }

    fn scalar(dtype: &[u8], data: &[u8]) -> Vec<u8> {
        let mut blob = vec![dtype.len() as u8];
        blob.extend_from_slice(dtype);
        blob.extend_from_slice(data);
        blob
    }

    #[test]
    fn plain_dtypes() {
        for (text, size) in [
            ("<f8", 8),
            ("|b1", 1),
            ("<i4", 4),
            ("<M8[ns]", 8),
            ("<m8[25us]", 8),
            ("<U5", 20),
            ("|S3", 3),
            ("|V8", 8),
            ("|V0", 0),
            (">c16", 16),
        ] {
            let dtype = Dtype::from_text(text.as_bytes()).expect(text);
            assert_eq!(dtype.item_size(), Some(size), "{text}");
            assert_eq!(dtype.text(), text);
        }
        for bad in [
            "",
            "O",
            "<",
            "<f",
            "<f08",
            "=f8",
            "<x9",
            "<q9",
            "<i4,<f8",
            "<f8[ns]",
            "<M8[]",
            "<M8[n s]",
            "<M8ns",
            " <f8",
            "<U99999999999999999999",
        ] {
            assert!(Dtype::from_text(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert_eq!(
            Dtype::from_text(b"|O").unwrap_err().message(),
            "NDARRAY dtype \"|O\" is not plain data (object and other dtypes are refused)"
        );
        let structured = br#"[["a","<i4"],["b","<f8",[2]]]"#;
        assert_eq!(
            Dtype::from_text(structured),
            Ok(Dtype::Structured(r#"[["a","<i4"],["b","<f8",[2]]]"#))
        );
    }

    #[test]
    fn valid_values_round_trip() {
        let blobs = [
            (ExtCode::NdArray, ndarray(&[2, 3], b"<f8", &[0; 48])),
            (ExtCode::NdArray, ndarray(&[], b"|b1", &[1])),
            (ExtCode::NdArray, ndarray(&[0, u64::MAX], b"<i4", &[])),
            (ExtCode::NdArray, ndarray(&[5], b"|V0", &[])),
            (ExtCode::NdArray, ndarray(&[1; 64], b"<U2", &[0; 8])),
            (
                ExtCode::NdArray,
                ndarray(&[1], br#"[["a","<i4"]]"#, &[0; 3]),
            ),
            (ExtCode::NumpyScalar, scalar(b"<f8", &[0; 8])),
            (ExtCode::NumpyScalar, scalar(b"|S0", &[])),
            (ExtCode::NumpyScalar, scalar(br#"[["a","<i4"]]"#, &[0; 5])),
        ];
        for (code, bytes) in &blobs {
            let blob = ExtBlob::parse(*code, bytes).expect("valid");
            let mut again = Vec::new();
            blob.write(&mut again);
            assert_eq!(&again, bytes);
            assert_eq!(blob.encoded_len(), bytes.len());
        }
        let Ok(ExtBlob::NdArray(array)) = ExtBlob::parse(ExtCode::NdArray, &blobs[0].1) else {
            panic!("an ndarray");
        };
        assert_eq!(array.header.dims.to_vec(), [2, 3]);
        assert_eq!((array.header.dims.len(), array.header.dims.count()), (2, 6));
        let mut scratch = Vec::new();
        let dims = Dims::encode(&[2, 3], &mut scratch).expect("valid");
        assert_eq!(dims, array.header.dims);
        assert!(Dims::encode(&[1; 65], &mut scratch).is_err());
        assert!(Dims::encode(&[1 << 32, 1 << 32], &mut scratch).is_err());
    }

    #[test]
    fn every_rule_is_checked() {
        use ExtCode::{NdArray as N, NumpyScalar as S};
        let cases: Vec<(ExtCode, Vec<u8>, &str)> = vec![
            (N, ndarray(&[1; 65], b"|i1", &[0]), "NDARRAY ndim 65 is above 64"),
            (
                N,
                ndarray(&[2, 3], b"<f8", &[0; 8]),
                "NDARRAY data has 8 bytes; shape [2, 3] and item size 8 need 48",
            ),
            (
                N,
                ndarray(&[1], b"<f8", &[0; 9]),
                "NDARRAY data has 9 bytes; shape [1] and item size 8 need 8",
            ),
            (
                N,
                ndarray(&[1], b"|O", &[0; 8]),
                "NDARRAY dtype \"|O\" is not plain data (object and other dtypes are refused)",
            ),
            (N, vec![1, 0, 0], "NDARRAY dtype length 0 is out of range 1..64"),
            (
                N,
                ndarray(&[1], &[b'<'; 65], &[]),
                "NDARRAY dtype length 65 is out of range 1..64",
            ),
            (
                N,
                ndarray(&[1], b"<\x01f", &[]),
                "NDARRAY dtype \"<\\u{1}f\" is not printable ASCII",
            ),
            (
                N,
                ndarray(&[u64::MAX, u64::MAX], b"<f8", &[]),
                "NDARRAY shape [18446744073709551615, 18446744073709551615] has more than 2^64-1 elements",
            ),
            (
                N,
                ndarray(&[1 << 63, 2, 0], b"<f8", &[]),
                "NDARRAY shape [9223372036854775808, 2, 0] has more than 2^64-1 elements",
            ),
            (
                N,
                ndarray(&[1 << 62], b"<f8", &[]),
                "NDARRAY shape [4611686018427387904] times item size 8 overflows",
            ),
            (N, vec![], "NDARRAY blob ends before its ndim"),
            (N, vec![1, 0x80, 0], "NDARRAY dimension varint has a redundant final zero byte"),
            (
                S,
                scalar(b"<f8", &[0; 2]),
                "NUMPY_SCALAR data has 2 bytes; its dtype's item size is 8",
            ),
            (
                S,
                scalar(b"|b1", &[]),
                "NUMPY_SCALAR data has 0 bytes; its dtype's item size is 1",
            ),
            (S, vec![], "NUMPY_SCALAR blob ends before its dtype length"),
        ];
        for (code, blob, message) in cases {
            let e = ExtBlob::parse(code, &blob).expect_err("invalid");
            assert_eq!(e.message(), message, "{blob:02x?}");
        }
        let garbage = ExtBlob::parse(N, &ndarray(&[1], b"<f9]", &[0; 9])).unwrap_err();
        assert!(
            garbage.message().contains("is not a numpy dtype.str"),
            "{garbage}"
        );
    }
}
