//! The value rules of the composite EXT codes (spec 5.16.4): which kinds of values FRACTION,
//! DEQUE, ORDERED_DICT, COUNTER, DEFAULTDICT, RANGE and SLICE take, and their ranges. A
//! builder describes each decoded value as a [`Part`] (it knows its own objects) and
//! [`check`] applies the rules, so that every builder refuses the same payloads with the same
//! words.

use super::{CompositeCode, ExtCode, ExtError};

/// Longest FRACTION operand, in bits (spec 8.5): reducing a fraction costs a gcd whose time
/// grows with the square of the operand size.
pub const FRACTION_MAX_BITS: u64 = 1 << 16;

/// An int value (not a bool), as the rules look at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Int {
    /// In the i64 range.
    Small(i64),
    /// Outside the i64 range.
    Big {
        /// Below zero.
        negative: bool,
        /// Bits of the magnitude (Python's `int.bit_length()`).
        bits: u64,
    },
}

impl Int {
    /// The int whose minimal two's complement little-endian digits are `twos_le` (a BIGINT's
    /// bytes), which lies outside the i64 range.
    pub fn big_from_twos_le(twos_le: &[u8]) -> Int {
        let negative = twos_le.last().is_some_and(|&top| top & 0x80 != 0);
        let mut magnitude = twos_le.to_vec();
        if negative {
            // -v = !v + 1
            let mut carry = true;
            for byte in &mut magnitude {
                let (sum, overflow) = (!*byte).overflowing_add(u8::from(carry));
                *byte = sum;
                carry = overflow;
            }
        }
        let bits = match magnitude.iter().rposition(|&b| b != 0) {
            Some(top) => {
                let lead = magnitude.get(top).copied().unwrap_or(0);
                top as u64 * 8 + u64::from(8 - lead.leading_zeros())
            }
            None => 0,
        };
        Int::Big { negative, bits }
    }

    fn bits(self) -> u64 {
        match self {
            Int::Small(v) => u64::from(64 - v.unsigned_abs().leading_zeros()),
            Int::Big { bits, .. } => bits,
        }
    }

    fn is_positive(self) -> bool {
        match self {
            Int::Small(v) => v > 0,
            Int::Big { negative, .. } => !negative,
        }
    }
}

/// A value of a composite, as far as the rules of spec 5.16.4 look at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part<'a> {
    /// `None`.
    None,
    /// An int (SMALL_INT, SMALL_NEG, INT, BIGINT, or a REF to one), not a bool.
    Int(Int),
    /// A str, when it is strict UTF-8 (one holding surrogates is [`Part::Other`]).
    Str(&'a str),
    /// A list.
    List,
    /// A dict with a key that is not a str.
    Dict,
    /// A dict whose keys are all str (an empty dict included).
    StrKeyDict,
    /// Anything else.
    Other,
}

/// The builtin types a DEFAULTDICT factory may name: a fixed table, never a module lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Factory {
    /// `list`.
    List,
    /// `dict`.
    Dict,
    /// `set`.
    Set,
    /// `int`.
    Int,
    /// `float`.
    Float,
    /// `str`.
    Str,
    /// `bytes`.
    Bytes,
    /// `tuple`.
    Tuple,
    /// `frozenset`.
    FrozenSet,
    /// `bool`.
    Bool,
    /// `complex`.
    Complex,
    /// `bytearray`.
    ByteArray,
}

impl Factory {
    /// Every factory, in the spec's order.
    pub const ALL: [Factory; 12] = [
        Factory::List,
        Factory::Dict,
        Factory::Set,
        Factory::Int,
        Factory::Float,
        Factory::Str,
        Factory::Bytes,
        Factory::Tuple,
        Factory::FrozenSet,
        Factory::Bool,
        Factory::Complex,
        Factory::ByteArray,
    ];

    /// The builtin's name, as written on the wire.
    pub const fn name(self) -> &'static str {
        match self {
            Factory::List => "list",
            Factory::Dict => "dict",
            Factory::Set => "set",
            Factory::Int => "int",
            Factory::Float => "float",
            Factory::Str => "str",
            Factory::Bytes => "bytes",
            Factory::Tuple => "tuple",
            Factory::FrozenSet => "frozenset",
            Factory::Bool => "bool",
            Factory::Complex => "complex",
            Factory::ByteArray => "bytearray",
        }
    }

    /// The factory with this name.
    pub fn from_name(name: &str) -> Option<Factory> {
        Factory::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The names, comma-separated, for messages.
    pub fn names() -> String {
        Factory::ALL.map(Factory::name).join(", ")
    }
}

/// What [`check`] found that the builder needs beyond the values themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checked {
    /// The values fit; nothing more to know.
    Fits,
    /// A DEFAULTDICT's factory: `None` for no factory.
    Factory(Option<Factory>),
}

#[cold]
fn invalid(message: String) -> ExtError {
    ExtError::new(message)
}

fn int_field(code: ExtCode, field: &str, part: Part<'_>) -> Result<Int, ExtError> {
    match part {
        Part::Int(int) => Ok(int),
        _ => Err(invalid(format!(
            "{} {field} is not an int",
            code.spec_name()
        ))),
    }
}

fn fraction_operand(field: &str, part: Part<'_>) -> Result<Int, ExtError> {
    let int = int_field(ExtCode::Fraction, field, part)?;
    if int.bits() > FRACTION_MAX_BITS {
        return Err(invalid(format!(
            "FRACTION {field} has more than {FRACTION_MAX_BITS} bits: it exceeds the \
             {FRACTION_MAX_BITS}-bit limit"
        )));
    }
    Ok(int)
}

fn dict_items(code: ExtCode, items: Part<'_>) -> Result<(), ExtError> {
    match items {
        Part::Dict | Part::StrKeyDict => Ok(()),
        _ => Err(invalid(format!(
            "{} items are not a dict",
            code.spec_name()
        ))),
    }
}

/// Checks the values of a composite `code` (spec 5.16.4), in order, once they are complete.
/// The checks come in the order the values do, except that a container's items are checked
/// before the value that configures it (a deque's `maxlen`, a defaultdict's factory).
pub fn check(composite: CompositeCode, values: &[Part<'_>]) -> Result<Checked, ExtError> {
    let code = composite.code();
    let what = code.spec_name();
    let count = composite.values();
    if values.len() != count {
        return Err(invalid(format!("{what} got {} values", values.len())));
    }
    let part = |i: usize| values.get(i).copied().unwrap_or(Part::Other);
    match composite {
        CompositeCode::Fraction => {
            fraction_operand("numerator", part(0))?;
            if !fraction_operand("denominator", part(1))?.is_positive() {
                return Err(invalid(String::from(
                    "FRACTION denominator is not positive",
                )));
            }
        }
        CompositeCode::Deque => {
            if part(1) != Part::List {
                return Err(invalid(String::from("DEQUE items are not a list")));
            }
            match part(0) {
                Part::None => {}
                Part::Int(Int::Small(v)) if v >= 0 => {}
                _ => {
                    return Err(invalid(String::from(
                        "DEQUE maxlen is not None or an int in 0..2^63",
                    )))
                }
            }
        }
        CompositeCode::OrderedDict | CompositeCode::Counter => dict_items(code, part(0))?,
        CompositeCode::DefaultDict => {
            dict_items(code, part(1))?;
            let factory = match part(0) {
                Part::None => None,
                Part::Str(name) => Some(Factory::from_name(name).ok_or_else(|| {
                    invalid(format!(
                        "DEFAULTDICT factory {name:?} is not None or one of {}",
                        Factory::names()
                    ))
                })?),
                _ => {
                    return Err(invalid(format!(
                        "DEFAULTDICT factory a non-str value is not None or one of {}",
                        Factory::names()
                    )))
                }
            };
            return Ok(Checked::Factory(factory));
        }
        CompositeCode::Range => {
            int_field(code, "start", part(0))?;
            int_field(code, "stop", part(1))?;
            if int_field(code, "step", part(2))? == Int::Small(0) {
                return Err(invalid(String::from("RANGE step is zero")));
            }
        }
        CompositeCode::Slice => {}
        CompositeCode::Namespace => match part(0) {
            Part::StrKeyDict => {}
            Part::Dict => {
                return Err(invalid(String::from(
                    "NAMESPACE attributes have a key that is not a str",
                )))
            }
            _ => return Err(invalid(String::from("NAMESPACE attributes are not a dict"))),
        },
    }
    Ok(Checked::Fits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(code: CompositeCode, values: &[Part<'_>]) -> String {
        check(code, values)
            .expect_err("invalid")
            .message()
            .to_owned()
    }

    #[test]
    fn big_ints_know_their_sign_and_size() {
        // 2^64: 00 .. 00 01 (and a zero byte for the sign).
        let mut two_64 = vec![0u8; 8];
        two_64.push(1);
        assert_eq!(
            Int::big_from_twos_le(&two_64),
            Int::Big {
                negative: false,
                bits: 65
            }
        );
        // -2^63 - 1: ff ff ff ff ff ff ff 7f ff.
        let mut below = vec![0xFF; 7];
        below.extend([0x7F, 0xFF]);
        assert_eq!(
            Int::big_from_twos_le(&below),
            Int::Big {
                negative: true,
                bits: 64
            }
        );
        // -2^64: 00 .. 00 ff (the magnitude is a power of two).
        let mut power = vec![0u8; 8];
        power.push(0xFF);
        assert_eq!(
            Int::big_from_twos_le(&power),
            Int::Big {
                negative: true,
                bits: 65
            }
        );
        assert_eq!(Int::Small(i64::MIN).bits(), 64);
        assert_eq!(Int::Small(0).bits(), 0);
    }

    #[test]
    fn valid_values_pass() {
        let int = |v| Part::Int(Int::Small(v));
        assert_eq!(
            check(CompositeCode::Fraction, &[int(-7), int(2)]),
            Ok(Checked::Fits)
        );
        let limit = Part::Int(Int::Big {
            negative: true,
            bits: FRACTION_MAX_BITS,
        });
        assert_eq!(
            check(CompositeCode::Fraction, &[limit, int(3)]),
            Ok(Checked::Fits)
        );
        assert_eq!(
            check(CompositeCode::Deque, &[Part::None, Part::List]),
            Ok(Checked::Fits)
        );
        assert_eq!(
            check(CompositeCode::Deque, &[int(0), Part::List]),
            Ok(Checked::Fits)
        );
        assert_eq!(
            check(CompositeCode::Counter, &[Part::Dict]),
            Ok(Checked::Fits)
        );
        assert_eq!(
            check(CompositeCode::OrderedDict, &[Part::Dict]),
            Ok(Checked::Fits)
        );
        for factory in Factory::ALL {
            assert_eq!(Factory::from_name(factory.name()), Some(factory));
            assert_eq!(
                check(
                    CompositeCode::DefaultDict,
                    &[Part::Str(factory.name()), Part::Dict]
                ),
                Ok(Checked::Factory(Some(factory)))
            );
        }
        assert_eq!(
            check(CompositeCode::DefaultDict, &[Part::None, Part::Dict]),
            Ok(Checked::Factory(None))
        );
        let big = Part::Int(Int::Big {
            negative: false,
            bits: 100,
        });
        assert_eq!(
            check(CompositeCode::Range, &[int(1), big, int(-1)]),
            Ok(Checked::Fits)
        );
        assert_eq!(
            check(
                CompositeCode::Slice,
                &[Part::Other, Part::Str("x"), Part::None]
            ),
            Ok(Checked::Fits)
        );
    }

    #[test]
    fn every_rule_is_checked() {
        let int = |v| Part::Int(Int::Small(v));
        let huge = Part::Int(Int::Big {
            negative: false,
            bits: FRACTION_MAX_BITS + 1,
        });
        let cases: &[(CompositeCode, &[Part<'_>], &str)] = &[
            (
                CompositeCode::Fraction,
                &[int(1), int(0)],
                "FRACTION denominator is not positive",
            ),
            (
                CompositeCode::Fraction,
                &[int(1), int(-3)],
                "FRACTION denominator is not positive",
            ),
            (
                CompositeCode::Fraction,
                &[Part::Other, int(3)],
                "FRACTION numerator is not an int",
            ),
            (
                CompositeCode::Fraction,
                &[huge, int(3)],
                "FRACTION numerator has more than 65536 bits: it exceeds the 65536-bit limit",
            ),
            (
                CompositeCode::Fraction,
                &[int(1), huge],
                "FRACTION denominator has more than 65536 bits: it exceeds the 65536-bit limit",
            ),
            (CompositeCode::Fraction, &[int(1)], "FRACTION got 1 values"),
            (
                CompositeCode::Deque,
                &[int(-1), Part::List],
                "DEQUE maxlen is not None or an int in 0..2^63",
            ),
            (
                CompositeCode::Deque,
                &[Part::Str("3"), Part::List],
                "DEQUE maxlen is not None or an int in 0..2^63",
            ),
            (
                CompositeCode::Deque,
                &[Part::None, Part::Dict],
                "DEQUE items are not a list",
            ),
            (
                CompositeCode::OrderedDict,
                &[Part::List],
                "ORDERED_DICT items are not a dict",
            ),
            (
                CompositeCode::Counter,
                &[Part::List],
                "COUNTER items are not a dict",
            ),
            (
                CompositeCode::DefaultDict,
                &[Part::Str("eval"), Part::Dict],
                "DEFAULTDICT factory \"eval\" is not None or one of list, dict, set, int, \
                 float, str, bytes, tuple, frozenset, bool, complex, bytearray",
            ),
            (
                CompositeCode::DefaultDict,
                &[int(5), Part::Dict],
                "DEFAULTDICT factory a non-str value is not None or one of list, dict, set, \
                 int, float, str, bytes, tuple, frozenset, bool, complex, bytearray",
            ),
            (
                CompositeCode::DefaultDict,
                &[Part::Str("list"), Part::List],
                "DEFAULTDICT items are not a dict",
            ),
            (
                CompositeCode::Range,
                &[int(0), int(10), int(0)],
                "RANGE step is zero",
            ),
            (
                CompositeCode::Range,
                &[Part::Str("a"), int(10), int(1)],
                "RANGE start is not an int",
            ),
            (
                CompositeCode::Range,
                &[int(0), Part::Other, int(1)],
                "RANGE stop is not an int",
            ),
        ];
        for (code, values, want) in cases {
            assert_eq!(message(*code, values), *want, "{values:?}");
        }
    }
}
