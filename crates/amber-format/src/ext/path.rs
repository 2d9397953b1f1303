//! PATH (spec 5.16.3): a `pathlib` path as its flavour and `str(p)`, which may hold
//! surrogates (file names can hold undecodable bytes), so it is UTF-8 with surrogates as in
//! STR_SURROGATES (spec 5.8). Which classes the host can instantiate is the host's check.

use super::blob_reader::BlobReader;
use super::ExtError;
use crate::encode::Sink;
use crate::utf8::is_utf8_with_surrogates;

/// The `pathlib` class of a PATH: its flavour byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PathFlavour {
    /// 0: `PurePosixPath`.
    PurePosix,
    /// 1: `PureWindowsPath`.
    PureWindows,
    /// 2: `PosixPath`.
    Posix,
    /// 3: `WindowsPath`.
    Windows,
}

impl PathFlavour {
    /// Every flavour, by its byte.
    pub const ALL: [PathFlavour; 4] = [
        PathFlavour::PurePosix,
        PathFlavour::PureWindows,
        PathFlavour::Posix,
        PathFlavour::Windows,
    ];

    /// The flavour byte.
    pub const fn byte(self) -> u8 {
        match self {
            PathFlavour::PurePosix => 0,
            PathFlavour::PureWindows => 1,
            PathFlavour::Posix => 2,
            PathFlavour::Windows => 3,
        }
    }

    /// The `pathlib` class name.
    pub const fn class_name(self) -> &'static str {
        match self {
            PathFlavour::PurePosix => "PurePosixPath",
            PathFlavour::PureWindows => "PureWindowsPath",
            PathFlavour::Posix => "PosixPath",
            PathFlavour::Windows => "WindowsPath",
        }
    }
}

/// PATH (spec 5.16.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path<'a> {
    /// The class.
    pub flavour: PathFlavour,
    /// `str(p)` as UTF-8 that may encode surrogates (not necessarily in `str(p)`'s normal
    /// form: the decoder does not check that).
    pub text: &'a [u8],
}

impl<'a> Path<'a> {
    pub(crate) fn read(r: &mut BlobReader<'a>) -> Result<Path<'a>, ExtError> {
        let byte = r.u8("flavour")?;
        let Some(&flavour) = PathFlavour::ALL.get(usize::from(byte)) else {
            return Err(r.invalid(format_args!("flavour {byte} is not defined (0..3)")));
        };
        let text = r.rest();
        if !is_utf8_with_surrogates(text) {
            return Err(r.invalid(format_args!("string is not valid UTF-8")));
        }
        Ok(Path { flavour, text })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        1 + self.text.len()
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        out.push(self.flavour.byte());
        out.extend_from_slice(self.text);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtBlob, ExtCode};
    use super::*;

    #[test]
    fn valid_values_round_trip() {
        for flavour in PathFlavour::ALL {
            assert_eq!(PathFlavour::ALL[usize::from(flavour.byte())], flavour);
            for text in [
                &b""[..],
                b"/a/b.txt",
                b"C:\\x",
                b"a\xed\xa0\x80b",
                "é".as_bytes(),
            ] {
                let blob = ExtBlob::Path(Path { flavour, text });
                let mut bytes = Vec::new();
                blob.write(&mut bytes);
                assert_eq!(bytes.len(), blob.encoded_len());
                assert_eq!(ExtBlob::parse(ExtCode::Path, &bytes), Ok(blob));
            }
        }
    }

    #[test]
    fn every_rule_is_checked() {
        let cases: &[(&[u8], &str)] = &[
            (&[], "PATH blob ends before its flavour"),
            (&[4, b'/'], "PATH flavour 4 is not defined (0..3)"),
            (&[0, b'/', 0xff], "PATH string is not valid UTF-8"),
            // A surrogate written as four bytes is an overlong form.
            (
                &[0, 0xf0, 0x8d, 0xa0, 0x80],
                "PATH string is not valid UTF-8",
            ),
        ];
        for (blob, message) in cases {
            let e = ExtBlob::parse(ExtCode::Path, blob).expect_err("invalid");
            assert_eq!(e.message(), *message);
        }
    }
}
