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
}

impl ExtCode {
    /// Every code, in code order.
    pub const ALL: [ExtCode; 21] = [
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
}
