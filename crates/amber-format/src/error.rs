//! Decode errors: one enum of kinds, always with the byte offset where the problem is.

use std::fmt;

/// What was wrong with the input. The snake_case name ([`ErrorKind::name`]) is the `kind`
/// attribute of Python's `DecodeError` and the `error` field of `spec/vectors/errors.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The input does not start with the amber magic bytes.
    BadMagic,
    /// The header's version is not one this decoder reads.
    UnsupportedVersion,
    /// A header flag names a feature this decoder does not implement.
    UnsupportedFeature,
    /// The input ends in the middle of a value.
    Truncated,
    /// Bytes follow the root value.
    TrailingBytes,
    /// A reserved tag byte.
    UnknownTag,
    /// A varint with a redundant final zero byte.
    OverlongVarint,
    /// A varint longer than 10 bytes or above 2^64-1.
    VarintOverflow,
    /// A string's bytes are not valid UTF-8 (or, for `STR_SURROGATES`, UTF-8 with surrogates).
    InvalidUtf8,
    /// A `BIGINT` that is not minimal or that fits in an i64.
    NoncanonicalInt,
    /// A container declares more elements than the input has bytes left.
    LengthTooLarge,
    /// Containers nest deeper than `max_depth`.
    DepthLimit,
    /// The decode would allocate more than `max_alloc` bytes.
    AllocLimit,
    /// Too many keys with one hash, or too much work hashing keys.
    HashLimit,
    /// A `REF` that does not point back at the start of a tracked value.
    BadReference,
    /// A `REF` to a tuple or frozenset that is still being built.
    IncompleteReference,
    /// A `SUPERSEDE` whose second part is not a `REF`.
    SupersedeWithoutRef,
    /// A dict key or set element that cannot be hashed.
    Unhashable,
    /// A dict key equal to an earlier key of the same dict.
    DuplicateKey,
    /// A set element equal to an earlier element of the same set.
    DuplicateElement,
    /// The host (e.g. Python) failed to build a value; details are kept by the builder.
    Host,
    /// An EXT code this decoder does not define.
    UnknownExt,
    /// An EXT value whose contents break its layout (a month 13, a 15-byte UUID, ...).
    InvalidExt,
    /// An OBJECT shape that is malformed or a shape number not yet defined.
    BadShape,
    /// A module, qualname or field name that is empty, too long, not UTF-8 or not dotted.
    BadName,
    /// An OBJECT names a class the caller did not allow.
    ClassNotAllowed,
    /// The local class has a field the payload lacks and that has no default.
    MissingField,
    /// The payload has a field the local class does not declare (when refused by option).
    UnknownField,
    /// The class refused the decoded state (no enum member with that value, a failing
    /// `__setstate__` or custom decode function).
    BadState,
    /// An OUT_OF_BAND value refers to a buffer the caller did not pass (no buffers at all, or
    /// an index past the last one).
    MissingBuffer,
    /// The buffer an OUT_OF_BAND value refers to does not fit it: a length other than the one
    /// the payload declares, or not one contiguous block of bytes.
    BufferMismatch,
    /// A stream frame declares a payload longer than the reader's `max_message` (spec section
    /// 11, [`crate::stream`]).
    MessageLimit,
    /// A decoder given keys met a payload that is not signed.
    SignatureRequired,
    /// A signed payload met a decoder given no key.
    KeyRequired,
    /// The payload's key id names none of the keys given.
    UnknownKey,
    /// The HMAC tag does not match the payload.
    BadSignature,
    /// The payload was signed longer ago than `max_age`.
    Expired,
    /// The payload's timestamp is further ahead of the clock than the allowed skew.
    TimestampInFuture,
    /// `max_age` was given and the payload has no timestamp.
    TimestampRequired,
    /// The envelope's fields break its layout (a key id length of 0, reserved signature
    /// flags, a decompressed size of 0).
    BadEnvelope,
    /// A compression algorithm code that is not defined.
    UnknownCompression,
    /// The compressed data is not valid for its algorithm.
    BadCompression,
    /// The compressed data does not decompress to exactly the declared size.
    SizeMismatch,
    /// The declared decompressed size exceeds `max_decompressed` or what is left of the
    /// allocation budget.
    DecompressedTooLarge,
}

impl ErrorKind {
    /// Every kind, for tables and tests.
    pub const ALL: [ErrorKind; 44] = [
        ErrorKind::BadMagic,
        ErrorKind::UnsupportedVersion,
        ErrorKind::UnsupportedFeature,
        ErrorKind::Truncated,
        ErrorKind::TrailingBytes,
        ErrorKind::UnknownTag,
        ErrorKind::OverlongVarint,
        ErrorKind::VarintOverflow,
        ErrorKind::InvalidUtf8,
        ErrorKind::NoncanonicalInt,
        ErrorKind::LengthTooLarge,
        ErrorKind::DepthLimit,
        ErrorKind::AllocLimit,
        ErrorKind::HashLimit,
        ErrorKind::BadReference,
        ErrorKind::IncompleteReference,
        ErrorKind::SupersedeWithoutRef,
        ErrorKind::Unhashable,
        ErrorKind::DuplicateKey,
        ErrorKind::DuplicateElement,
        ErrorKind::Host,
        ErrorKind::UnknownExt,
        ErrorKind::InvalidExt,
        ErrorKind::BadShape,
        ErrorKind::BadName,
        ErrorKind::ClassNotAllowed,
        ErrorKind::MissingField,
        ErrorKind::UnknownField,
        ErrorKind::BadState,
        ErrorKind::MissingBuffer,
        ErrorKind::BufferMismatch,
        ErrorKind::MessageLimit,
        ErrorKind::SignatureRequired,
        ErrorKind::KeyRequired,
        ErrorKind::UnknownKey,
        ErrorKind::BadSignature,
        ErrorKind::Expired,
        ErrorKind::TimestampInFuture,
        ErrorKind::TimestampRequired,
        ErrorKind::BadEnvelope,
        ErrorKind::UnknownCompression,
        ErrorKind::BadCompression,
        ErrorKind::SizeMismatch,
        ErrorKind::DecompressedTooLarge,
    ];

    /// The snake_case name used by the spec, the vectors and Python.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorKind::BadMagic => "bad_magic",
            ErrorKind::UnsupportedVersion => "unsupported_version",
            ErrorKind::UnsupportedFeature => "unsupported_feature",
            ErrorKind::Truncated => "truncated",
            ErrorKind::TrailingBytes => "trailing_bytes",
            ErrorKind::UnknownTag => "unknown_tag",
            ErrorKind::OverlongVarint => "overlong_varint",
            ErrorKind::VarintOverflow => "varint_overflow",
            ErrorKind::InvalidUtf8 => "invalid_utf8",
            ErrorKind::NoncanonicalInt => "noncanonical_int",
            ErrorKind::LengthTooLarge => "length_too_large",
            ErrorKind::DepthLimit => "depth_limit",
            ErrorKind::AllocLimit => "alloc_limit",
            ErrorKind::HashLimit => "hash_limit",
            ErrorKind::BadReference => "bad_reference",
            ErrorKind::IncompleteReference => "incomplete_reference",
            ErrorKind::SupersedeWithoutRef => "supersede_without_ref",
            ErrorKind::Unhashable => "unhashable",
            ErrorKind::DuplicateKey => "duplicate_key",
            ErrorKind::DuplicateElement => "duplicate_element",
            ErrorKind::Host => "host",
            ErrorKind::UnknownExt => "unknown_ext",
            ErrorKind::InvalidExt => "invalid_ext",
            ErrorKind::BadShape => "bad_shape",
            ErrorKind::BadName => "bad_name",
            ErrorKind::ClassNotAllowed => "class_not_allowed",
            ErrorKind::MissingField => "missing_field",
            ErrorKind::UnknownField => "unknown_field",
            ErrorKind::BadState => "bad_state",
            ErrorKind::MissingBuffer => "missing_buffer",
            ErrorKind::BufferMismatch => "buffer_mismatch",
            ErrorKind::MessageLimit => "message_limit",
            ErrorKind::SignatureRequired => "signature_required",
            ErrorKind::KeyRequired => "key_required",
            ErrorKind::UnknownKey => "unknown_key",
            ErrorKind::BadSignature => "bad_signature",
            ErrorKind::Expired => "expired",
            ErrorKind::TimestampInFuture => "timestamp_in_future",
            ErrorKind::TimestampRequired => "timestamp_required",
            ErrorKind::BadEnvelope => "bad_envelope",
            ErrorKind::UnknownCompression => "unknown_compression",
            ErrorKind::BadCompression => "bad_compression",
            ErrorKind::SizeMismatch => "size_mismatch",
            ErrorKind::DecompressedTooLarge => "decompressed_too_large",
        }
    }

    /// Whether the kind is a configurable limit rather than malformed input.
    pub const fn is_limit(self) -> bool {
        matches!(
            self,
            ErrorKind::DepthLimit
                | ErrorKind::AllocLimit
                | ErrorKind::HashLimit
                | ErrorKind::MessageLimit
                | ErrorKind::DecompressedTooLarge
        )
    }

    /// Whether the kind is about the signature or its timestamp: a payload that is not
    /// authentic (or not fresh) for this decoder, rather than a malformed one.
    pub const fn is_signature(self) -> bool {
        matches!(
            self,
            ErrorKind::SignatureRequired
                | ErrorKind::KeyRequired
                | ErrorKind::UnknownKey
                | ErrorKind::BadSignature
                | ErrorKind::Expired
                | ErrorKind::TimestampInFuture
                | ErrorKind::TimestampRequired
        )
    }
}

/// A decode failure: what, where (absolute offset in the input) and a human detail.
///
/// The fields live behind a box (see [`DecodeErrorFields`]), so that the decoder's many
/// `Result<_, DecodeError>` returns stay small enough for registers on the happy path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError(Box<DecodeErrorFields>);

/// The parts of a [`DecodeError`], reached through `Deref` (`err.kind`, `err.offset`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeErrorFields {
    /// What was wrong.
    pub kind: ErrorKind,
    /// Absolute byte offset in the input given to the decoder.
    pub offset: usize,
    /// A sentence for people: what was expected and found.
    pub detail: String,
}

impl DecodeError {
    /// An error of `kind` at `offset` with a human `detail`.
    #[cold]
    pub fn new(kind: ErrorKind, offset: usize, detail: impl Into<String>) -> Self {
        DecodeError(Box::new(DecodeErrorFields {
            kind,
            offset,
            detail: detail.into(),
        }))
    }

    /// The fields, unboxed.
    pub fn into_fields(self) -> DecodeErrorFields {
        *self.0
    }
}

impl std::ops::Deref for DecodeError {
    type Target = DecodeErrorFields;
    fn deref(&self) -> &DecodeErrorFields {
        &self.0
    }
}

impl std::ops::DerefMut for DecodeError {
    fn deref_mut(&mut self) -> &mut DecodeErrorFields {
        &mut self.0
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at byte {} ({})",
            self.detail,
            self.offset,
            self.kind.name()
        )
    }
}

impl std::error::Error for DecodeError {}

/// What a [`crate::decode::Builder`] reports when it cannot add a value; the decoder adds the
/// offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// The key or element cannot be hashed.
    Unhashable,
    /// The key or element equals an earlier one in the same container.
    Duplicate,
    /// Hash-flooding defence tripped.
    HashLimit,
    /// String bytes are not valid for the string kind.
    InvalidUtf8,
    /// The host failed for its own reasons (e.g. out of memory); the builder keeps the detail.
    Host,
    /// The host refused the value for a reason the format names (an invalid EXT blob, a class
    /// not allowed, a missing field), with a sentence for people.
    Rejected(ErrorKind, String),
}
