//! DECIMAL (spec 5.16.3): `decimal.Decimal` as a form byte, then an exponent and the
//! coefficient's digits, or a NaN's payload. The exponent range is the host's to check.

use super::blob_reader::BlobReader;
use super::ExtError;
use crate::encode::Sink;
use crate::varint::{varint_len, zigzag};

/// What a DECIMAL is, besides its sign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecimalValue<'a> {
    /// A finite number: coefficient × 10^exponent.
    Finite {
        /// The exponent (trailing zeros are kept, so `1.50` is 150E-2).
        exponent: i64,
        /// ASCII digits, at least one, no leading `0` unless exactly `0`.
        coefficient: &'a str,
    },
    /// Infinity.
    Infinity,
    /// A NaN.
    NaN {
        /// sNaN rather than a quiet NaN.
        signaling: bool,
        /// The diagnostic payload: ASCII digits, possibly none, no leading `0`.
        payload: &'a str,
    },
}

/// DECIMAL (spec 5.16.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decimal<'a> {
    /// Bit 0 of the form byte.
    pub negative: bool,
    /// The kind (bits 1-2 of the form byte) and what follows it.
    pub value: DecimalValue<'a>,
}

/// `digits` as a digit string: ASCII `0`-`9`, no leading `0` unless it is exactly "0".
fn digit_str<'a>(r: &BlobReader<'_>, field: &str, digits: &'a [u8]) -> Result<&'a str, ExtError> {
    if let Some(bad) = digits.iter().find(|c| !c.is_ascii_digit()) {
        return Err(r.invalid(format_args!("{field} holds byte 0x{bad:02X}, not a digit")));
    }
    if digits.len() > 1 && digits.first() == Some(&b'0') {
        return Err(r.invalid(format_args!("{field} has a leading zero")));
    }
    // All ASCII digits, so this cannot fail.
    std::str::from_utf8(digits).map_err(|_| r.invalid(format_args!("{field} is not ASCII")))
}

impl<'a> Decimal<'a> {
    pub(crate) fn read(r: &mut BlobReader<'a>) -> Result<Decimal<'a>, ExtError> {
        let form = r.u8("form")?;
        if form & !0b111 != 0 {
            return Err(r.invalid(format_args!("form 0x{form:02X} sets bits other than 0-2")));
        }
        let value = match form >> 1 {
            0 => {
                let exponent = r.zigzag("exponent")?;
                let digits = r.rest();
                if digits.is_empty() {
                    return Err(r.invalid(format_args!("coefficient has no digits")));
                }
                DecimalValue::Finite {
                    exponent,
                    coefficient: digit_str(r, "coefficient", digits)?,
                }
            }
            1 => DecimalValue::Infinity,
            kind => {
                let payload = r.rest();
                if payload == b"0" {
                    return Err(r.invalid(format_args!("NaN payload has a leading zero")));
                }
                DecimalValue::NaN {
                    signaling: kind == 3,
                    payload: digit_str(r, "NaN payload", payload)?,
                }
            }
        };
        Ok(Decimal {
            negative: form & 1 != 0,
            value,
        })
    }

    fn form(&self) -> u8 {
        let kind = match self.value {
            DecimalValue::Finite { .. } => 0,
            DecimalValue::Infinity => 1,
            DecimalValue::NaN {
                signaling: false, ..
            } => 2,
            DecimalValue::NaN {
                signaling: true, ..
            } => 3,
        };
        u8::from(self.negative) | kind << 1
    }

    pub(crate) fn encoded_len(&self) -> usize {
        1 + match self.value {
            DecimalValue::Finite {
                exponent,
                coefficient,
            } => varint_len(zigzag(exponent)) + coefficient.len(),
            DecimalValue::Infinity => 0,
            DecimalValue::NaN { payload, .. } => payload.len(),
        }
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        out.push(self.form());
        match self.value {
            DecimalValue::Finite {
                exponent,
                coefficient,
            } => {
                out.put_varint(zigzag(exponent));
                out.extend_from_slice(coefficient.as_bytes());
            }
            DecimalValue::Infinity => {}
            DecimalValue::NaN { payload, .. } => out.extend_from_slice(payload.as_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtBlob, ExtCode};
    use super::*;

    #[test]
    fn valid_values_round_trip() {
        let values = [
            DecimalValue::Finite {
                exponent: -2,
                coefficient: "1250",
            },
            DecimalValue::Finite {
                exponent: i64::MIN,
                coefficient: "0",
            },
            DecimalValue::Infinity,
            DecimalValue::NaN {
                signaling: false,
                payload: "",
            },
            DecimalValue::NaN {
                signaling: true,
                payload: "123",
            },
        ];
        for value in values {
            for negative in [false, true] {
                let blob = ExtBlob::Decimal(Decimal { negative, value });
                let mut bytes = Vec::new();
                blob.write(&mut bytes);
                assert_eq!(bytes.len(), blob.encoded_len());
                assert_eq!(ExtBlob::parse(ExtCode::Decimal, &bytes), Ok(blob));
            }
        }
        // The spec's example: Decimal("-12.50").
        let mut bytes = Vec::new();
        ExtBlob::Decimal(Decimal {
            negative: true,
            value: values[0],
        })
        .write(&mut bytes);
        assert_eq!(bytes, [0x01, 0x03, b'1', b'2', b'5', b'0']);
    }

    #[test]
    fn every_rule_is_checked() {
        let cases: &[(&[u8], &str)] = &[
            (
                &[0x08, 0, b'1'],
                "DECIMAL form 0x08 sets bits other than 0-2",
            ),
            (&[0, 0], "DECIMAL coefficient has no digits"),
            (
                &[0, 0, b'0', b'1'],
                "DECIMAL coefficient has a leading zero",
            ),
            (
                &[0, 0, b'1', b'.', b'5'],
                "DECIMAL coefficient holds byte 0x2E, not a digit",
            ),
            (&[2, b'1'], "DECIMAL blob has 1 bytes after its last field"),
            (&[4, b'0'], "DECIMAL NaN payload has a leading zero"),
            (&[6, b'0', b'7'], "DECIMAL NaN payload has a leading zero"),
            (
                &[4, b'x'],
                "DECIMAL NaN payload holds byte 0x78, not a digit",
            ),
            (&[], "DECIMAL blob ends before its form"),
            (&[0], "DECIMAL blob ends before its exponent"),
        ];
        for (blob, message) in cases {
            let e = ExtBlob::parse(ExtCode::Decimal, blob).expect_err("invalid");
            assert_eq!(e.message(), *message, "{blob:02x?}");
        }
    }
}
