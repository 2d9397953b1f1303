//! EXT values (spec 5.16): the code table, and every byte rule of the blob layouts.
//!
//! `spec/format.md` holds the same table; a test parses it and compares it with
//! [`ExtCode::ALL`]. A code's [`ExtLayout`] tells a decoder how to walk the value. A blob is
//! parsed into an [`ExtBlob`], one typed value per code, borrowing from the blob; its
//! [`ExtBlob::write`] writes the same layout back. Each family of codes has a module of its
//! own, and the value rules of the composite codes are in [`composite`]. What only a host can
//! know (whether a time-zone key is in its database, its decimal exponent range, its `array`
//! item sizes, which path classes it has, what numpy accepts) is left to the host's builder.

mod array;
mod blob_reader;
pub mod composite;
mod datetime;
mod decimal;
mod ip;
mod ndarray;
mod out_of_band;
mod path;
mod singleton;
mod uuid;

use std::fmt;

use crate::encode::Sink;
use crate::error::{BuildError, ErrorKind};
use blob_reader::BlobReader;

pub use array::{array_wire_size, Array, ArrayTypecode};
pub use datetime::{
    days_in_month, valid_zone_key, Date, DateTime, Time, TimeDelta, Tz, MAX_ZONE_KEY_LEN,
};
pub use decimal::{Decimal, DecimalValue};
pub use ip::{IpAddr, IpAddress, IpPrefixed};
pub use ndarray::{
    Dims, DimsIter, Dtype, NdArray, NdArrayHeader, NumpyScalar, PlainDtype, MAX_DTYPE_LEN,
    MAX_NDIM, MAX_STRUCTURED_DTYPE_LEN, PLAIN_KINDS,
};
pub use out_of_band::{BufferKind, OutOfBand, OUT_OF_BAND_THRESHOLD};
pub use path::{Path, PathFlavour};
pub use singleton::Singleton;
pub use uuid::{SafeUuid, Uuid};

/// How the body of an EXT value is laid out after its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtLayout {
    /// A varint length, then that many bytes laid out as the code's [`ExtBlob`] says: an
    /// atom with no children.
    Blob,
    /// The object exists (and may be referred to) before its values are decoded.
    CreateFirst(CreateFirstCode),
    /// The object is built from its values once they are complete.
    BuildAfter(BuildAfterCode),
}

impl ExtLayout {
    /// How many values follow the code (none for a blob, whose bytes follow).
    pub const fn values(self) -> usize {
        match self {
            ExtLayout::Blob => 0,
            ExtLayout::CreateFirst(code) => code.composite().values(),
            ExtLayout::BuildAfter(code) => code.composite().values(),
        }
    }
}

/// The create-first codes (spec 5.16.1), which a builder makes empty before their values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CreateFirstCode {
    /// DEQUE: maxlen, items.
    Deque,
    /// ORDERED_DICT: a dict of the items.
    OrderedDict,
    /// COUNTER: a dict of the counts.
    Counter,
    /// DEFAULTDICT: the factory, a dict of the items.
    DefaultDict,
    /// NAMESPACE: a dict of the attributes.
    Namespace,
}

impl CreateFirstCode {
    /// The composite code, for its value rules.
    pub const fn composite(self) -> CompositeCode {
        match self {
            CreateFirstCode::Deque => CompositeCode::Deque,
            CreateFirstCode::OrderedDict => CompositeCode::OrderedDict,
            CreateFirstCode::Counter => CompositeCode::Counter,
            CreateFirstCode::DefaultDict => CompositeCode::DefaultDict,
            CreateFirstCode::Namespace => CompositeCode::Namespace,
        }
    }

    /// The EXT code.
    pub const fn code(self) -> ExtCode {
        self.composite().code()
    }
}

/// The build-after codes (spec 5.16.1), which a builder makes from their complete values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BuildAfterCode {
    /// FRACTION: numerator, denominator.
    Fraction,
    /// RANGE: start, stop, step.
    Range,
    /// SLICE: start, stop, step.
    Slice,
}

impl BuildAfterCode {
    /// The composite code, for its value rules.
    pub const fn composite(self) -> CompositeCode {
        match self {
            BuildAfterCode::Fraction => CompositeCode::Fraction,
            BuildAfterCode::Range => CompositeCode::Range,
            BuildAfterCode::Slice => CompositeCode::Slice,
        }
    }

    /// The EXT code.
    pub const fn code(self) -> ExtCode {
        self.composite().code()
    }
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
    /// `types.SimpleNamespace`: a dict of its attributes.
    Namespace = 0x17,
    /// `Ellipsis` or `NotImplemented` (see [`Singleton`]).
    Singleton = 0x18,
}

impl ExtCode {
    /// Every code, in code order.
    pub const ALL: [ExtCode; 24] = [
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
        ExtCode::Namespace,
        ExtCode::Singleton,
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

    /// The code as a composite code, or `None` for a blob code.
    pub const fn composite(self) -> Option<CompositeCode> {
        match self {
            ExtCode::Fraction => Some(CompositeCode::Fraction),
            ExtCode::Deque => Some(CompositeCode::Deque),
            ExtCode::OrderedDict => Some(CompositeCode::OrderedDict),
            ExtCode::Counter => Some(CompositeCode::Counter),
            ExtCode::DefaultDict => Some(CompositeCode::DefaultDict),
            ExtCode::Range => Some(CompositeCode::Range),
            ExtCode::Slice => Some(CompositeCode::Slice),
            ExtCode::Namespace => Some(CompositeCode::Namespace),
            ExtCode::Date
            | ExtCode::Time
            | ExtCode::DateTime
            | ExtCode::TimeDelta
            | ExtCode::TzInfo
            | ExtCode::Decimal
            | ExtCode::Uuid
            | ExtCode::Array
            | ExtCode::Path
            | ExtCode::IpAddress
            | ExtCode::IpNetwork
            | ExtCode::IpInterface
            | ExtCode::NdArray
            | ExtCode::NumpyScalar
            | ExtCode::OutOfBand
            | ExtCode::Singleton => None,
        }
    }

    /// How the value is laid out after the code.
    pub const fn layout(self) -> ExtLayout {
        match self.composite() {
            Some(composite) => composite.layout(),
            None => ExtLayout::Blob,
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
            ExtCode::Namespace => "NAMESPACE",
            ExtCode::Singleton => "SINGLETON",
        }
    }

    /// The code with this spec name.
    pub fn from_spec_name(name: &str) -> Option<ExtCode> {
        ExtCode::ALL.iter().copied().find(|c| c.spec_name() == name)
    }
}

/// The EXT codes whose values are other values (spec 5.16.4): the codes for which
/// [`ExtCode::composite`] is `Some`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompositeCode {
    /// FRACTION.
    Fraction,
    /// DEQUE.
    Deque,
    /// ORDERED_DICT.
    OrderedDict,
    /// COUNTER.
    Counter,
    /// DEFAULTDICT.
    DefaultDict,
    /// RANGE.
    Range,
    /// SLICE.
    Slice,
    /// NAMESPACE.
    Namespace,
}

impl CompositeCode {
    /// The EXT code.
    pub const fn code(self) -> ExtCode {
        match self {
            CompositeCode::Fraction => ExtCode::Fraction,
            CompositeCode::Deque => ExtCode::Deque,
            CompositeCode::OrderedDict => ExtCode::OrderedDict,
            CompositeCode::Counter => ExtCode::Counter,
            CompositeCode::DefaultDict => ExtCode::DefaultDict,
            CompositeCode::Range => ExtCode::Range,
            CompositeCode::Slice => ExtCode::Slice,
            CompositeCode::Namespace => ExtCode::Namespace,
        }
    }

    /// Whether the object is created before its values or built from them.
    pub const fn layout(self) -> ExtLayout {
        match self {
            CompositeCode::Fraction => ExtLayout::BuildAfter(BuildAfterCode::Fraction),
            CompositeCode::Range => ExtLayout::BuildAfter(BuildAfterCode::Range),
            CompositeCode::Slice => ExtLayout::BuildAfter(BuildAfterCode::Slice),
            CompositeCode::Deque => ExtLayout::CreateFirst(CreateFirstCode::Deque),
            CompositeCode::OrderedDict => ExtLayout::CreateFirst(CreateFirstCode::OrderedDict),
            CompositeCode::Counter => ExtLayout::CreateFirst(CreateFirstCode::Counter),
            CompositeCode::DefaultDict => ExtLayout::CreateFirst(CreateFirstCode::DefaultDict),
            CompositeCode::Namespace => ExtLayout::CreateFirst(CreateFirstCode::Namespace),
        }
    }

    /// How many values follow the code.
    pub const fn values(self) -> usize {
        match self {
            CompositeCode::OrderedDict | CompositeCode::Counter | CompositeCode::Namespace => 1,
            CompositeCode::Fraction | CompositeCode::Deque | CompositeCode::DefaultDict => 2,
            CompositeCode::Range | CompositeCode::Slice => 3,
        }
    }
}

/// A blob that breaks its code's layout (an `invalid_ext` error): a sentence for people that
/// starts with the code's spec name, such as `DATE month 13 is out of range 1..12`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtError {
    message: String,
}

impl ExtError {
    #[cold]
    pub(crate) fn new(message: String) -> ExtError {
        ExtError { message }
    }

    /// The sentence.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The sentence, owned.
    pub fn into_message(self) -> String {
        self.message
    }
}

impl fmt::Display for ExtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExtError {}

impl From<ExtError> for BuildError {
    fn from(e: ExtError) -> BuildError {
        BuildError::Rejected(ErrorKind::InvalidExt, e.message)
    }
}

/// The value of an EXT blob (spec 5.16.3 and 5.16.6): one variant per code whose layout is
/// [`ExtLayout::Blob`], borrowing its strings and data from the blob. [`ExtBlob::parse`]
/// makes every check of the layout that the bytes allow; a value it returns is valid, and
/// [`ExtBlob::write`] writes it back.
///
/// The values are built from public fields, so an encoder can make one; `write` writes what
/// it is given, and it is the encoder's part to give it values within the ranges the field
/// docs state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtBlob<'a> {
    /// DATE.
    Date(Date),
    /// TIME.
    Time(Time<'a>),
    /// DATETIME.
    DateTime(DateTime<'a>),
    /// TIMEDELTA.
    TimeDelta(TimeDelta),
    /// TZINFO: a `tz` field other than [`Tz::Naive`].
    TzInfo(Tz<'a>),
    /// DECIMAL.
    Decimal(Decimal<'a>),
    /// UUID.
    Uuid(Uuid),
    /// ARRAY.
    Array(Array<'a>),
    /// PATH.
    Path(Path<'a>),
    /// IP_ADDRESS.
    IpAddress(IpAddress<'a>),
    /// IP_NETWORK: the address has no host bits set.
    IpNetwork(IpPrefixed<'a>),
    /// IP_INTERFACE.
    IpInterface(IpPrefixed<'a>),
    /// NDARRAY.
    NdArray(NdArray<'a>),
    /// NUMPY_SCALAR.
    NumpyScalar(NumpyScalar<'a>),
    /// OUT_OF_BAND.
    OutOfBand(OutOfBand<'a>),
    /// SINGLETON.
    Singleton(Singleton),
}

impl<'a> ExtBlob<'a> {
    /// Parses the blob of an EXT value of `code`, checking its layout (spec 5.16.1: minimal
    /// varints, every field present and in range, nothing after the last).
    pub fn parse(code: ExtCode, blob: &'a [u8]) -> Result<ExtBlob<'a>, ExtError> {
        let mut r = BlobReader::new(code.spec_name(), blob);
        let value = match code {
            ExtCode::Date => ExtBlob::Date(Date::read(&mut r)?),
            ExtCode::Time => ExtBlob::Time(Time::read(&mut r)?),
            ExtCode::DateTime => ExtBlob::DateTime(DateTime::read(&mut r)?),
            ExtCode::TimeDelta => ExtBlob::TimeDelta(TimeDelta::read(&mut r)?),
            ExtCode::TzInfo => ExtBlob::TzInfo(Tz::read(&mut r, false)?),
            ExtCode::Decimal => ExtBlob::Decimal(Decimal::read(&mut r)?),
            ExtCode::Uuid => ExtBlob::Uuid(Uuid::read(&mut r)?),
            ExtCode::Array => ExtBlob::Array(Array::read(&mut r)?),
            ExtCode::Path => ExtBlob::Path(Path::read(&mut r)?),
            ExtCode::IpAddress => ExtBlob::IpAddress(IpAddress::read(&mut r)?),
            ExtCode::IpNetwork => ExtBlob::IpNetwork(IpPrefixed::read(&mut r, true)?),
            ExtCode::IpInterface => ExtBlob::IpInterface(IpPrefixed::read(&mut r, false)?),
            ExtCode::NdArray => ExtBlob::NdArray(NdArray::read(&mut r)?),
            ExtCode::NumpyScalar => ExtBlob::NumpyScalar(NumpyScalar::read(&mut r)?),
            ExtCode::OutOfBand => ExtBlob::OutOfBand(OutOfBand::read(&mut r)?),
            ExtCode::Singleton => ExtBlob::Singleton(Singleton::read(&mut r)?),
            ExtCode::Fraction
            | ExtCode::Deque
            | ExtCode::OrderedDict
            | ExtCode::Counter
            | ExtCode::DefaultDict
            | ExtCode::Range
            | ExtCode::Slice
            | ExtCode::Namespace => {
                return Err(r.invalid(format_args!("is not a blob code")));
            }
        };
        r.end()?;
        Ok(value)
    }

    /// The value's code.
    pub const fn code(&self) -> ExtCode {
        match self {
            ExtBlob::Date(_) => ExtCode::Date,
            ExtBlob::Time(_) => ExtCode::Time,
            ExtBlob::DateTime(_) => ExtCode::DateTime,
            ExtBlob::TimeDelta(_) => ExtCode::TimeDelta,
            ExtBlob::TzInfo(_) => ExtCode::TzInfo,
            ExtBlob::Decimal(_) => ExtCode::Decimal,
            ExtBlob::Uuid(_) => ExtCode::Uuid,
            ExtBlob::Array(_) => ExtCode::Array,
            ExtBlob::Path(_) => ExtCode::Path,
            ExtBlob::IpAddress(_) => ExtCode::IpAddress,
            ExtBlob::IpNetwork(_) => ExtCode::IpNetwork,
            ExtBlob::IpInterface(_) => ExtCode::IpInterface,
            ExtBlob::NdArray(_) => ExtCode::NdArray,
            ExtBlob::NumpyScalar(_) => ExtCode::NumpyScalar,
            ExtBlob::OutOfBand(_) => ExtCode::OutOfBand,
            ExtBlob::Singleton(_) => ExtCode::Singleton,
        }
    }

    /// The length of the blob [`ExtBlob::write`] writes, so that a writer can put the
    /// length first and the data straight after it, without a copy in between.
    pub fn encoded_len(&self) -> usize {
        match self {
            ExtBlob::Date(v) => v.encoded_len(),
            ExtBlob::Time(v) => v.encoded_len(),
            ExtBlob::DateTime(v) => v.encoded_len(),
            ExtBlob::TimeDelta(v) => v.encoded_len(),
            ExtBlob::TzInfo(v) => v.encoded_len(),
            ExtBlob::Decimal(v) => v.encoded_len(),
            ExtBlob::Uuid(v) => v.encoded_len(),
            ExtBlob::Array(v) => v.encoded_len(),
            ExtBlob::Path(v) => v.encoded_len(),
            ExtBlob::IpAddress(v) => v.encoded_len(),
            ExtBlob::IpNetwork(v) | ExtBlob::IpInterface(v) => v.encoded_len(),
            ExtBlob::NdArray(v) => v.encoded_len(),
            ExtBlob::NumpyScalar(v) => v.encoded_len(),
            ExtBlob::OutOfBand(v) => v.encoded_len(),
            ExtBlob::Singleton(v) => v.encoded_len(),
        }
    }

    /// Appends the blob (without its length; see [`crate::Writer::ext`] for the whole EXT
    /// value).
    pub fn write<S: Sink>(&self, out: &mut S) {
        match self {
            ExtBlob::Date(v) => v.write(out),
            ExtBlob::Time(v) => v.write(out),
            ExtBlob::DateTime(v) => v.write(out),
            ExtBlob::TimeDelta(v) => v.write(out),
            ExtBlob::TzInfo(v) => v.write(out),
            ExtBlob::Decimal(v) => v.write(out),
            ExtBlob::Uuid(v) => v.write(out),
            ExtBlob::Array(v) => v.write(out),
            ExtBlob::Path(v) => v.write(out),
            ExtBlob::IpAddress(v) => v.write(out),
            ExtBlob::IpNetwork(v) | ExtBlob::IpInterface(v) => v.write(out),
            ExtBlob::NdArray(v) => v.write(out),
            ExtBlob::NumpyScalar(v) => v.write(out),
            ExtBlob::OutOfBand(v) => v.write(out),
            ExtBlob::Singleton(v) => v.write(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composite_codes_map_back() {
        for code in ExtCode::ALL {
            match code.composite() {
                Some(composite) => assert_eq!(composite.code(), code),
                None => assert_eq!(code.layout(), ExtLayout::Blob),
            }
        }
    }

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
    fn exactly_the_blob_codes_parse() {
        for code in ExtCode::ALL {
            match (code.layout(), ExtBlob::parse(code, &[])) {
                (ExtLayout::Blob, Ok(blob)) => panic!("an empty {code:?} blob parsed: {blob:?}"),
                (ExtLayout::Blob, Err(e)) => assert!(e.message().starts_with(code.spec_name())),
                (_, Err(e)) => assert!(e.message().ends_with("is not a blob code"), "{e}"),
                (_, Ok(blob)) => panic!("a composite parsed as a blob: {blob:?}"),
            }
        }
    }

    #[test]
    fn errors_are_invalid_ext() {
        let e = ExtBlob::parse(ExtCode::Date, &[]).expect_err("empty");
        assert_eq!(e.to_string(), "DATE blob ends before its year");
        assert_eq!(
            BuildError::from(e),
            BuildError::Rejected(
                ErrorKind::InvalidExt,
                String::from("DATE blob ends before its year")
            )
        );
    }
}
