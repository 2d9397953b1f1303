//! The amber wire format, without Python: tags, varints, header, limits, errors, a
//! [`encode::Writer`] with an identity tracker, a [`decode::decode`] driver generic over
//! a [`decode::Builder`], the [`envelope`] that signs and compresses payloads, and the
//! [`stream`] framing that puts many payloads in one byte sequence.
//! `spec/format.md` is the normative description; this crate is the reference implementation
//! the Python extension is built on.
//!
//! Every byte rule of the format lives here, those of the EXT blobs included: [`ext`] parses
//! each blob into a typed [`ExtBlob`] (and writes it back), the driver checks every blob's
//! layout before a builder sees it, and [`ext::composite`] holds the value rules of the
//! composite EXT codes. A builder is left with what only its host knows (for Python: the
//! time-zone database, the decimal exponent range, `array` item sizes, path classes, numpy).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod decode;
pub mod encode;
pub mod envelope;
pub mod error;
pub mod ext;
pub mod fibonacci;
pub mod header;
mod identity;
pub mod limits;
pub mod model;
pub mod object;
mod recent_refs;
pub mod stack;
pub mod stream;
pub mod tag;
pub mod trace;
pub mod utf8;
pub mod varint;
mod varint_word;

pub use decode::{
    decode, decode_body, packed_floats_one_by_one, packed_ints_one_by_one, Builder, PairPlace,
};
pub use encode::{ImmutableStart, ImmutableToken, Recorded, RefTracker, Sink, Writer};
pub use envelope::{open, seal, OpenOptions, Opened, SealOptions, SigningKey};
pub use error::{BuildError, DecodeError, ErrorKind};
pub use ext::{
    BuildAfterCode, CompositeCode, CreateFirstCode, ExtBlob, ExtCode, ExtError, ExtLayout,
};
pub use limits::{AllocBudget, Limits};
pub use object::{ObjectKind, ShapeDef};
pub use tag::Tag;
