//! The tag table: the first byte of every value.
//!
//! Bytes with bit 6 clear (`0x00-0x3F`, `0x80-0xBF`) are non-trackable codes whose 8 bits
//! all carry meaning. Bytes with bit 6 set are trackable kinds: `byte & 0x7F` names the kind
//! and bit 7 ([`TRACKED`]) says a later `REF` points at this value. `spec/format.md` holds the
//! same table; a test parses it and compares it with [`Tag::ALL`].

/// Bit 7 on a trackable tag: the value is the target of a later `REF`.
pub const TRACKED: u8 = 0x80;
/// Bit 6: set on every trackable kind.
pub const TRACKABLE: u8 = 0x40;

/// One row of the tag table, named by its first code. Ranged rows carry a small length or
/// value in the tag itself; [`Tag::last`] gives the end of the range.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    /// `0x00-0x3F`: the int `tag` (0..=63).
    SmallInt = 0x00,
    /// `0x40-0x57`: a str of `tag - 0x40` UTF-8 bytes.
    ShortStr = 0x40,
    /// `0x58-0x5B`: a list of `tag - 0x58` values.
    ShortList = 0x58,
    /// `0x5C-0x5F`: a tuple of `tag - 0x5C` values.
    ShortTuple = 0x5C,
    /// `0x60-0x67`: a dict of `tag - 0x60` key/value pairs.
    ShortDict = 0x60,
    /// varint length, strict UTF-8.
    Str = 0x68,
    /// varint length, UTF-8 that may also encode lone surrogates.
    StrSurrogates = 0x69,
    /// varint length, raw bytes.
    Bytes = 0x6A,
    /// varint length, raw bytes, decoded as a `bytearray`.
    ByteArray = 0x6B,
    /// zigzag varint, any i64.
    Int = 0x6C,
    /// varint length, minimal two's complement little-endian, outside the i64 range.
    BigInt = 0x6D,
    /// 8 bytes, IEEE-754 binary64 little-endian.
    Float64 = 0x6E,
    /// 4 bytes, IEEE-754 binary32 little-endian, widened exactly.
    Float32 = 0x6F,
    /// 16 bytes: real and imaginary binary64.
    Complex = 0x70,
    /// varint count, then the values.
    List = 0x71,
    /// varint count, then the values.
    Tuple = 0x72,
    /// varint count, then key/value pairs.
    Dict = 0x73,
    /// varint count, then the elements.
    Set = 0x74,
    /// varint count, then the elements.
    FrozenSet = 0x75,
    /// A library type by EXT code (see [`crate::ext::ExtCode`]).
    Ext = 0x76,
    /// A class instance by shape (see [`crate::object`]).
    Object = 0x77,
    /// varint count, then that many zigzag varints: a list of ints in the i64 range.
    PackedIntList = 0x78,
    /// varint count, then that many IEEE-754 binary64 little-endian values: a list of floats.
    PackedFloatList = 0x79,
    /// varint row count, varint width (at least 1), the keys, then the rows' values one row
    /// after the other: a list of dicts with the same keys, whose rows have no tags of their
    /// own.
    Records = 0x7B,
    /// varint row count, varint arity (at least 1), then the rows' items one row after the
    /// other: a list of same-length tuples whose rows have no tags of their own.
    TupleList = 0x7C,
    /// varint row count, a shape reference (with the definition when it is 0) of kind ATTRS,
    /// the float columns (a count, then strictly increasing field indexes), then the rows'
    /// fields one row after the other, a float column as 8 bytes of binary64: a list of
    /// instances of one shape whose rows have no tags of their own.
    ObjectRows = 0x7D,
    /// `0x80-0x8F`: the int `tag - 0x90` (-16..=-1).
    SmallNeg = 0x80,
    /// `None`.
    None = 0x90,
    /// `False`.
    False = 0x91,
    /// `True`.
    True = 0x92,
    /// varint body offset of an earlier tracked value: that same object.
    Ref = 0x93,
    /// A value that is decoded and dropped, then a `REF` that is the result.
    Supersede = 0x94,
}

impl Tag {
    /// Every row of the table, in code order.
    pub const ALL: [Tag; 32] = [
        Tag::SmallInt,
        Tag::ShortStr,
        Tag::ShortList,
        Tag::ShortTuple,
        Tag::ShortDict,
        Tag::Str,
        Tag::StrSurrogates,
        Tag::Bytes,
        Tag::ByteArray,
        Tag::Int,
        Tag::BigInt,
        Tag::Float64,
        Tag::Float32,
        Tag::Complex,
        Tag::List,
        Tag::Tuple,
        Tag::Dict,
        Tag::Set,
        Tag::FrozenSet,
        Tag::Ext,
        Tag::Object,
        Tag::PackedIntList,
        Tag::PackedFloatList,
        Tag::Records,
        Tag::TupleList,
        Tag::ObjectRows,
        Tag::SmallNeg,
        Tag::None,
        Tag::False,
        Tag::True,
        Tag::Ref,
        Tag::Supersede,
    ];

    /// The first code of this row.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The last code of this row (equal to [`Tag::code`] for single-code rows).
    pub const fn last(self) -> u8 {
        match self {
            Tag::SmallInt => 0x3F,
            Tag::ShortStr => 0x57,
            Tag::ShortList => 0x5B,
            Tag::ShortTuple => 0x5F,
            Tag::ShortDict => 0x67,
            Tag::SmallNeg => 0x8F,
            other => other as u8,
        }
    }

    /// The row's name in the spec's tag table.
    pub const fn spec_name(self) -> &'static str {
        match self {
            Tag::SmallInt => "SMALL_INT",
            Tag::ShortStr => "SHORT_STR",
            Tag::ShortList => "SHORT_LIST",
            Tag::ShortTuple => "SHORT_TUPLE",
            Tag::ShortDict => "SHORT_DICT",
            Tag::Str => "STR",
            Tag::StrSurrogates => "STR_SURROGATES",
            Tag::Bytes => "BYTES",
            Tag::ByteArray => "BYTEARRAY",
            Tag::Int => "INT",
            Tag::BigInt => "BIGINT",
            Tag::Float64 => "FLOAT64",
            Tag::Float32 => "FLOAT32",
            Tag::Complex => "COMPLEX",
            Tag::List => "LIST",
            Tag::Tuple => "TUPLE",
            Tag::Dict => "DICT",
            Tag::Set => "SET",
            Tag::FrozenSet => "FROZENSET",
            Tag::Ext => "EXT",
            Tag::Object => "OBJECT",
            Tag::PackedIntList => "PACKED_INT_LIST",
            Tag::PackedFloatList => "PACKED_FLOAT_LIST",
            Tag::Records => "RECORDS",
            Tag::TupleList => "TUPLE_LIST",
            Tag::ObjectRows => "OBJECT_ROWS",
            Tag::SmallNeg => "SMALL_NEG",
            Tag::None => "NONE",
            Tag::False => "FALSE",
            Tag::True => "TRUE",
            Tag::Ref => "REF",
            Tag::Supersede => "SUPERSEDE",
        }
    }

    /// Whether the row is a trackable kind (bit 6 set).
    pub const fn is_trackable(self) -> bool {
        self as u8 & TRACKABLE != 0
    }

    /// The row a tag byte belongs to, with the tracked flag stripped; `None` for reserved codes.
    pub fn of_byte(byte: u8) -> Option<Tag> {
        let code = if byte & TRACKABLE != 0 {
            byte & !TRACKED
        } else {
            byte
        };
        Tag::ALL
            .iter()
            .copied()
            .find(|t| (t.code()..=t.last()).contains(&code))
    }
}

/// Largest length carried in a `SHORT_STR` tag.
pub const SHORT_STR_MAX: usize = 23;
/// Largest length carried in a `SHORT_LIST` or `SHORT_TUPLE` tag.
pub const SHORT_SEQ_MAX: usize = 3;
/// Fewest items a list needs before the reference encoder writes it packed: shorter lists
/// take `SHORT_LIST`, which has no count byte, so packing them would never save a byte.
pub const PACKED_MIN: usize = SHORT_SEQ_MAX + 1;
/// Fewest tuples a list needs before the reference encoder writes it as `TUPLE_LIST`: the
/// threshold of packed lists. Shorter lists take `SHORT_LIST`, whose count is in its tag, so
/// rows would save at most a byte or two there.
pub const TUPLE_LIST_MIN: usize = PACKED_MIN;
/// Fewest dicts a list needs before the reference encoder writes it as `RECORDS`: for one dict
/// the form is a byte longer than the `SHORT_LIST`, for two it already saves the second dict's
/// tag and keys.
pub const RECORDS_MIN: usize = 2;
/// Fewest keys the dicts of a `RECORDS` the reference encoder writes have: a row of one key can
/// take a single byte, less than the default allocation budget grants a dict (`crate::limits`),
/// so such a payload might not decode with the default limits; from 2 keys on every row takes
/// at least 2 bytes, which cover it.
pub const RECORDS_MIN_WIDTH: usize = 2;
/// Fewest instances a list needs before the reference encoder writes it as `OBJECT_ROWS`: for
/// one the form is a byte longer than the `SHORT_LIST` of one `OBJECT`, for two it already
/// saves the second instance's tag and shape number.
pub const OBJECT_ROWS_MIN: usize = 2;
/// The bytes of a float column's value in an `OBJECT_ROWS` row: a binary64 without a tag.
pub const COLUMN_FLOAT_LEN: usize = 8;
/// Largest pair count carried in a `SHORT_DICT` tag.
pub const SHORT_DICT_MAX: usize = 7;
/// Smallest int written as `SMALL_NEG`.
pub const SMALL_INT_MIN: i64 = -16;
/// Largest int written as `SMALL_INT`.
pub const SMALL_INT_MAX: i64 = 63;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_ordered_and_disjoint() {
        for pair in Tag::ALL.windows(2) {
            assert!(
                pair[0].last() < pair[1].code(),
                "{:?} overlaps {:?}",
                pair[0],
                pair[1]
            );
        }
    }

    #[test]
    fn trackable_rows_stay_in_the_trackable_half() {
        for tag in Tag::ALL {
            let all_trackable = (tag.code()..=tag.last()).all(|c| c & TRACKABLE != 0);
            let none_trackable = (tag.code()..=tag.last()).all(|c| c & TRACKABLE == 0);
            assert!(all_trackable || none_trackable, "{tag:?} straddles bit 6");
            assert!(tag.code() & TRACKED == 0 || !tag.is_trackable());
        }
    }

    #[test]
    fn tracked_form_maps_to_the_same_row() {
        assert_eq!(Tag::of_byte(0x71 | TRACKED), Some(Tag::List));
        assert_eq!(Tag::of_byte(0x45 | TRACKED), Some(Tag::ShortStr));
        assert_eq!(Tag::of_byte(0x95), None);
        assert_eq!(Tag::of_byte(0x76 | TRACKED), Some(Tag::Ext));
        assert_eq!(Tag::of_byte(0x78 | TRACKED), Some(Tag::PackedIntList));
        assert_eq!(Tag::of_byte(0x79), Some(Tag::PackedFloatList));
        assert_eq!(Tag::of_byte(0x7A), None);
        assert_eq!(Tag::of_byte(0x7A | TRACKED), None);
        assert_eq!(Tag::of_byte(0x7B), Some(Tag::Records));
        assert_eq!(Tag::of_byte(0x7B | TRACKED), Some(Tag::Records));
        assert_eq!(Tag::of_byte(0x7C), Some(Tag::TupleList));
        assert_eq!(Tag::of_byte(0x7C | TRACKED), Some(Tag::TupleList));
        assert_eq!(Tag::of_byte(0x7D), Some(Tag::ObjectRows));
        assert_eq!(Tag::of_byte(0x7D | TRACKED), Some(Tag::ObjectRows));
        assert_eq!(Tag::of_byte(0x7E), None);
        assert_eq!(Tag::of_byte(0x7F | TRACKED), None);
        assert_eq!(Tag::of_byte(0x85), Some(Tag::SmallNeg));
    }
}
