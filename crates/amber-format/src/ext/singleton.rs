//! SINGLETON (spec 5.16.3): one byte naming one of Python's constants that are neither None
//! nor a bool, so that `...` and `NotImplemented` keep their identity without a class lookup.

use super::blob_reader::BlobReader;
use super::ExtError;
use crate::encode::Sink;

/// The constants SINGLETON names, by their byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Singleton {
    /// `Ellipsis` (`...`): byte 0.
    Ellipsis,
    /// `NotImplemented`: byte 1.
    NotImplemented,
}

impl Singleton {
    /// Every constant, in byte order.
    pub const ALL: [Singleton; 2] = [Singleton::Ellipsis, Singleton::NotImplemented];

    /// The byte on the wire.
    pub const fn byte(self) -> u8 {
        match self {
            Singleton::Ellipsis => 0,
            Singleton::NotImplemented => 1,
        }
    }

    pub(crate) fn read(r: &mut BlobReader<'_>) -> Result<Singleton, ExtError> {
        match r.rest() {
            [0] => Ok(Singleton::Ellipsis),
            [1] => Ok(Singleton::NotImplemented),
            [b] => Err(r.invalid(format_args!(
                "byte {b} names no constant (0 is Ellipsis, 1 is NotImplemented)"
            ))),
            other => Err(r.invalid(format_args!("blob has {} bytes, not 1", other.len()))),
        }
    }

    pub(crate) const fn encoded_len(self) -> usize {
        1
    }

    pub(crate) fn write<S: Sink>(self, out: &mut S) {
        out.push(self.byte());
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtBlob, ExtCode};
    use super::*;

    #[test]
    fn both_constants_round_trip() {
        for constant in Singleton::ALL {
            let blob = ExtBlob::Singleton(constant);
            let mut bytes = Vec::new();
            blob.write(&mut bytes);
            assert_eq!(bytes, [constant.byte()]);
            assert_eq!(ExtBlob::parse(ExtCode::Singleton, &bytes), Ok(blob));
        }
    }

    #[test]
    fn every_rule_is_checked() {
        let cases: &[(&[u8], &str)] = &[
            (
                &[2],
                "SINGLETON byte 2 names no constant (0 is Ellipsis, 1 is NotImplemented)",
            ),
            (&[], "SINGLETON blob has 0 bytes, not 1"),
            (&[0, 0], "SINGLETON blob has 2 bytes, not 1"),
        ];
        for (blob, message) in cases {
            let e = ExtBlob::parse(ExtCode::Singleton, blob).expect_err("invalid");
            assert_eq!(e.message(), *message);
        }
    }
}
