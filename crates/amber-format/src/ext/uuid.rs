//! UUID (spec 5.16.3): the 16 bytes of `uuid.UUID` in big-endian order, then optionally its
//! `is_safe`.

use super::blob_reader::BlobReader;
use super::ExtError;
use crate::encode::Sink;

/// `uuid.SafeUUID`: whether the UUID was made in a multiprocessing-safe way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SafeUuid {
    /// `SafeUUID.safe`: the 17th byte is 0.
    Safe,
    /// `SafeUUID.unsafe`: the 17th byte is 1.
    Unsafe,
    /// `SafeUUID.unknown`: no 17th byte.
    Unknown,
}

/// UUID (spec 5.16.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uuid {
    /// The UUID, big-endian (`u.bytes`).
    pub bytes: [u8; 16],
    /// `u.is_safe`.
    pub is_safe: SafeUuid,
}

impl Uuid {
    pub(crate) fn read(r: &mut BlobReader<'_>) -> Result<Uuid, ExtError> {
        let blob = r.rest();
        let (bytes, is_safe) = match blob.split_first_chunk::<16>() {
            Some((bytes, [])) => (bytes, SafeUuid::Unknown),
            Some((bytes, [0])) => (bytes, SafeUuid::Safe),
            Some((bytes, [1])) => (bytes, SafeUuid::Unsafe),
            Some((_, [b])) => {
                return Err(r.invalid(format_args!(
                    "is_safe byte {b} is not 0 (safe) or 1 (unsafe)"
                )))
            }
            _ => return Err(r.invalid(format_args!("blob has {} bytes, not 16 or 17", blob.len()))),
        };
        Ok(Uuid {
            bytes: *bytes,
            is_safe,
        })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        match self.is_safe {
            SafeUuid::Unknown => 16,
            SafeUuid::Safe | SafeUuid::Unsafe => 17,
        }
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        out.extend_from_slice(&self.bytes);
        match self.is_safe {
            SafeUuid::Safe => out.push(0),
            SafeUuid::Unsafe => out.push(1),
            SafeUuid::Unknown => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtBlob, ExtCode};
    use super::*;

    #[test]
    fn valid_values_round_trip() {
        for is_safe in [SafeUuid::Safe, SafeUuid::Unsafe, SafeUuid::Unknown] {
            let blob = ExtBlob::Uuid(Uuid {
                bytes: *b"0123456789abcdef",
                is_safe,
            });
            let mut bytes = Vec::new();
            blob.write(&mut bytes);
            assert_eq!(bytes.len(), blob.encoded_len());
            assert_eq!(ExtBlob::parse(ExtCode::Uuid, &bytes), Ok(blob));
        }
    }

    #[test]
    fn every_rule_is_checked() {
        let cases: &[(&[u8], &str)] = &[
            (&[0; 15], "UUID blob has 15 bytes, not 16 or 17"),
            (&[0; 18], "UUID blob has 18 bytes, not 16 or 17"),
            (&[], "UUID blob has 0 bytes, not 16 or 17"),
            (
                &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                "UUID is_safe byte 2 is not 0 (safe) or 1 (unsafe)",
            ),
        ];
        for (blob, message) in cases {
            let e = ExtBlob::parse(ExtCode::Uuid, blob).expect_err("invalid");
            assert_eq!(e.message(), *message);
        }
    }
}
