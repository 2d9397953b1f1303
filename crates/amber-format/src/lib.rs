//! The amber wire format, without Python: tags, varints, header, limits, errors, a
//! [`encode::Writer`] with an identity tracker, a [`decode::decode`] driver generic over
//! a [`decode::Builder`], the [`envelope`] that signs and compresses payloads, and the
//! [`stream`] framing that puts many payloads in one byte sequence.
//! `spec/format.md` is the normative description; this crate is the reference implementation
//! the Python extension is built on.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod decode;
pub mod encode;
pub mod envelope;
pub mod error;
pub mod ext;
pub mod header;
mod identity;
pub mod limits;
pub mod model;
pub mod object;
pub mod stack;
pub mod stream;
pub mod tag;
pub mod trace;
pub mod utf8;
pub mod varint;

pub use decode::{decode, decode_body, Builder, PairPlace};
pub use encode::{ImmutableStart, ImmutableToken, RefTracker, Sink, Writer};
pub use envelope::{open, seal, OpenOptions, Opened, SealOptions, SigningKey};
pub use error::{BuildError, DecodeError, ErrorKind};
pub use ext::{ExtCode, ExtLayout};
pub use limits::{AllocBudget, Limits};
pub use object::{ObjectKind, ShapeDef};
pub use tag::Tag;
