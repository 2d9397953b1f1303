//! The 3-byte header: magic `AB 41`, then version (low nibble) and flags (high nibble).

use crate::error::{DecodeError, ErrorKind};

/// The two magic bytes. 0xAB has the high bit set, so 7-bit mangling shows.
pub const MAGIC: [u8; 2] = [0xAB, 0x41];
/// The format version this crate reads and writes.
pub const VERSION: u8 = 1;
/// Bytes before the body.
pub const HEADER_LEN: usize = 3;

/// Header flag: the body is compressed (spec section 12).
pub const FLAG_COMPRESSED: u8 = 0x10;
/// Header flag: the payload is signed (spec section 12).
pub const FLAG_SIGNED: u8 = 0x20;
/// Header flag: a string table precedes the root value (reserved).
pub const FLAG_STRING_TABLE: u8 = 0x40;
/// Header flag: more header bytes follow (reserved).
pub const FLAG_EXTENDED: u8 = 0x80;
/// The flags of the envelope ([`crate::envelope`]); the others are still reserved.
pub const ENVELOPE_FLAGS: u8 = FLAG_COMPRESSED | FLAG_SIGNED;

/// The header of an unflagged v1 payload.
pub const PLAIN_HEADER: [u8; HEADER_LEN] = [MAGIC[0], MAGIC[1], VERSION];

/// Checks the header and returns its envelope flags ([`FLAG_COMPRESSED`], [`FLAG_SIGNED`]);
/// the flags of features not defined yet are refused. What follows the header is for
/// [`crate::envelope`] to read.
pub fn read_header(data: &[u8]) -> Result<u8, DecodeError> {
    for (i, &m) in MAGIC.iter().enumerate() {
        match data.get(i) {
            Some(&b) if b == m => {}
            Some(_) => {
                return Err(DecodeError::new(
                    ErrorKind::BadMagic,
                    0,
                    "not an amber payload: it does not start with the bytes AB 41",
                ))
            }
            None => {
                return Err(DecodeError::new(
                    ErrorKind::Truncated,
                    data.len(),
                    "input ends inside the 3-byte header",
                ))
            }
        }
    }
    let Some(&version_byte) = data.get(2) else {
        return Err(DecodeError::new(
            ErrorKind::Truncated,
            data.len(),
            "input ends inside the 3-byte header",
        ));
    };
    let version = version_byte & 0x0F;
    if version != VERSION {
        return Err(DecodeError::new(
            ErrorKind::UnsupportedVersion,
            2,
            format!(
                "format version {version} is not supported (this decoder reads version {VERSION})"
            ),
        ));
    }
    let flags = version_byte & 0xF0;
    if flags & !ENVELOPE_FLAGS != 0 {
        let feature = if flags & FLAG_STRING_TABLE != 0 {
            "the payload has a string table, which this decoder does not support"
        } else {
            "the payload has an extended header, which this decoder does not support"
        };
        return Err(DecodeError::new(ErrorKind::UnsupportedFeature, 2, feature));
    }
    Ok(flags)
}
