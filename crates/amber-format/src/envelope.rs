//! Signed and compressed payloads (header flags `0x20` and `0x10`, spec section 12).
//!
//! An envelope wraps a plain body: after the header come the signing fields (signed
//! payloads), then either the body or its compressed form, then the HMAC-SHA256 tag (signed
//! payloads). [`seal`] makes one from a plain payload; [`open`] checks one and hands back the
//! body for [`crate::decode::decode_body`]. The signature is checked before anything is
//! decompressed or decoded, and decompression allocates only what the caller's allocation
//! budget allows, before a byte of it is produced.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use zstd::zstd_safe;
use zstd_safe::zstd_sys::ZSTD_ErrorCode as ZstdError;

use crate::error::{DecodeError, ErrorKind};
use crate::header::{read_header, FLAG_COMPRESSED, FLAG_SIGNED, HEADER_LEN, PLAIN_HEADER};
use crate::limits::AllocBudget;
use crate::varint::{read_varint, write_varint, VarintError};

type HmacSha256 = Hmac<Sha256>;

/// Shortest secret a [`SigningKey`] accepts, in bytes: anything shorter is guessable.
pub const MIN_KEY_LENGTH: usize = 16;
/// Longest key id on the wire, in bytes.
pub const MAX_KEY_ID_LENGTH: usize = 64;
/// Length of a key id derived from the secret.
pub const DERIVED_KEY_ID_LENGTH: usize = 8;
/// Length of the HMAC-SHA256 tag that ends a signed payload.
pub const TAG_LENGTH: usize = 32;
/// How far ahead of the decoder's clock a timestamp may be, in seconds, before it is refused
/// (the signer's clock may run a little fast).
pub const MAX_CLOCK_SKEW: u64 = 60;
/// zstd levels an encoder may ask for.
pub const ZSTD_LEVELS: std::ops::RangeInclusive<i32> = 1..=22;
/// The zstd level used when the caller names none.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// What the derived key id is the HMAC of, under the secret: a fixed message, so that the id
/// says nothing about the secret beyond telling keys apart.
const KEY_ID_MESSAGE: &[u8] = b"amber key id";
/// `sig_flags` bit 0: a timestamp follows. The other bits are reserved.
const SIG_FLAG_TIMESTAMP: u8 = 0x01;
/// The four bytes every zstd frame starts with (skippable frames and legacy formats do not).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// zstd's smallest window is 1 KiB.
const ZSTD_MIN_WINDOW_LOG: u32 = 10;
/// zstd's largest window on 64-bit builds.
const ZSTD_MAX_WINDOW_LOG: u32 = 31;

/// A secret for signing and verifying payloads, with the id that names it on the wire.
///
/// The secret is kept only as a keyed HMAC state, and `Debug` shows the id alone.
#[derive(Clone)]
pub struct SigningKey {
    id: Vec<u8>,
    mac: HmacSha256,
}

/// Why a [`SigningKey`] could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// The secret has fewer than [`MIN_KEY_LENGTH`] bytes.
    SecretTooShort {
        /// Its length.
        length: usize,
    },
    /// The id is empty or longer than [`MAX_KEY_ID_LENGTH`] bytes.
    BadId {
        /// Its length.
        length: usize,
    },
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::SecretTooShort { length } => write!(
                f,
                "a signing key needs at least {MIN_KEY_LENGTH} bytes of secret, got {length}"
            ),
            KeyError::BadId { length } => write!(
                f,
                "a key id needs 1 to {MAX_KEY_ID_LENGTH} bytes, got {length}"
            ),
        }
    }
}

impl std::error::Error for KeyError {}

impl SigningKey {
    /// A key from its secret; without an `id`, the id is derived from the secret
    /// ([`SigningKey::derived_id`]).
    pub fn new(secret: &[u8], id: Option<&[u8]>) -> Result<SigningKey, KeyError> {
        if secret.len() < MIN_KEY_LENGTH {
            return Err(KeyError::SecretTooShort {
                length: secret.len(),
            });
        }
        // HMAC takes keys of any length: this cannot fail, but is not unwrapped either.
        let mac = HmacSha256::new_from_slice(secret).map_err(|_| KeyError::SecretTooShort {
            length: secret.len(),
        })?;
        let id = match id {
            Some(id) if (1..=MAX_KEY_ID_LENGTH).contains(&id.len()) => id.to_vec(),
            Some(id) => return Err(KeyError::BadId { length: id.len() }),
            None => {
                let digest = mac.clone().chain_update(KEY_ID_MESSAGE).finalize();
                digest.into_bytes()[..DERIVED_KEY_ID_LENGTH].to_vec()
            }
        };
        Ok(SigningKey { id, mac })
    }

    /// The id of `secret` when none is given: the first 8 bytes of
    /// HMAC-SHA256(secret, "amber key id"). Knowing it does not help to find the secret.
    pub fn derived_id(secret: &[u8]) -> Result<Vec<u8>, KeyError> {
        SigningKey::new(secret, None).map(|key| key.id)
    }

    /// The key id written into payloads this key signs.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    fn tag(&self, signed: &[u8]) -> [u8; TAG_LENGTH] {
        self.mac
            .clone()
            .chain_update(signed)
            .finalize()
            .into_bytes()
            .into()
    }

    /// Constant-time comparison of `tag` with the tag of `signed`.
    fn verifies(&self, signed: &[u8], tag: &[u8]) -> bool {
        self.mac
            .clone()
            .chain_update(signed)
            .verify_slice(tag)
            .is_ok()
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey(id={})", describe_key_id(&self.id))
    }
}

/// A key id for people: as text when it is printable ASCII, else as hex.
pub fn describe_key_id(id: &[u8]) -> String {
    if !id.is_empty() && id.iter().all(|b| (0x20..=0x7E).contains(b)) {
        format!("{:?}", String::from_utf8_lossy(id))
    } else {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{hex}")
    }
}

/// A compression algorithm, by its code on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Algorithm {
    /// One zstd frame.
    Zstd = 1,
    /// One raw LZ4 block, without the LZ4 frame format.
    Lz4 = 2,
}

impl Algorithm {
    /// The algorithm of a code byte, if it is defined.
    pub const fn from_code(code: u8) -> Option<Algorithm> {
        match code {
            1 => Some(Algorithm::Zstd),
            2 => Some(Algorithm::Lz4),
            _ => None,
        }
    }

    /// Its name in the spec and in Python (`"zstd"`, `"lz4"`).
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::Zstd => "zstd",
            Algorithm::Lz4 => "lz4",
        }
    }

    /// The algorithm of a name, if it is one.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        [Algorithm::Zstd, Algorithm::Lz4]
            .into_iter()
            .find(|a| a.name() == name)
    }
}

/// How [`seal`] compresses the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// zstd at a level in [`ZSTD_LEVELS`].
    Zstd {
        /// The compression level.
        level: i32,
    },
    /// LZ4 (it has no levels).
    Lz4,
}

/// What [`seal`] does to a plain payload.
#[derive(Clone, Copy, Debug, Default)]
pub struct SealOptions<'k> {
    /// Sign with this key.
    pub key: Option<&'k SigningKey>,
    /// Put this timestamp (seconds since 1970-01-01T00:00:00Z) into the signing fields; only
    /// with a key.
    pub timestamp: Option<u64>,
    /// Compress the body, unless that does not make the payload smaller.
    pub compression: Option<Compression>,
}

/// Why [`seal`] refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SealError {
    /// The input is not a plain payload (it lacks the header `ab 41 01`).
    NotPlain,
    /// A timestamp was asked for without a key: unsigned, it would prove nothing.
    TimestampWithoutKey,
    /// A zstd level outside [`ZSTD_LEVELS`].
    BadLevel(i32),
    /// The compressor failed (out of memory).
    Compressor(String),
    /// [`Sealed::write_into`] was given room of another length than the payload's.
    OutputLength {
        /// The sealed payload's length.
        expected: usize,
        /// The room given.
        got: usize,
    },
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SealError::NotPlain => {
                write!(f, "only a plain payload (header ab 41 01) can be sealed")
            }
            SealError::TimestampWithoutKey => {
                write!(
                    f,
                    "a timestamp needs a signing key: unsigned, it would prove nothing"
                )
            }
            SealError::BadLevel(level) => write!(
                f,
                "zstd level must be between {} and {}, got {level}",
                ZSTD_LEVELS.start(),
                ZSTD_LEVELS.end()
            ),
            SealError::Compressor(detail) => write!(f, "compression failed: {detail}"),
            SealError::OutputLength { expected, got } => write!(
                f,
                "the sealed payload takes {expected} bytes, but room for {got} was given"
            ),
        }
    }
}

impl std::error::Error for SealError {}

/// Wraps a plain payload (header `ab 41 01` and body) in an envelope: compresses the body
/// when asked and when that makes the payload smaller, then signs everything when given a
/// key. Without a key and without (worthwhile) compression the result is the payload itself.
pub fn seal(payload: &[u8], options: &SealOptions<'_>) -> Result<Vec<u8>, SealError> {
    let sealed = prepare(payload, options)?;
    let mut out = vec![0; sealed.len()];
    sealed.write_into(&mut out)?;
    Ok(out)
}

/// A payload about to be sealed: compressed already, signed as it is written. [`seal`] in two
/// steps, so that the caller can allocate the output itself (the extension writes straight
/// into a Python `bytes` object) once it knows [`Sealed::len`].
#[derive(Debug)]
pub struct Sealed<'a> {
    flags: u8,
    key: Option<&'a SigningKey>,
    timestamp: Option<u64>,
    /// The body, or the compression section.
    content: Cow<'a, [u8]>,
}

/// Checks the options and compresses the body of `payload`, as [`seal`] does.
pub fn prepare<'a>(payload: &'a [u8], options: &SealOptions<'a>) -> Result<Sealed<'a>, SealError> {
    if options.timestamp.is_some() && options.key.is_none() {
        return Err(SealError::TimestampWithoutKey);
    }
    if let Some(Compression::Zstd { level }) = options.compression {
        if !ZSTD_LEVELS.contains(&level) {
            return Err(SealError::BadLevel(level));
        }
    }
    let body = match payload.split_first_chunk::<HEADER_LEN>() {
        Some((header, body)) if *header == PLAIN_HEADER => body,
        _ => return Err(SealError::NotPlain),
    };
    let compressed = match options.compression {
        Some(compression) => compress(body, compression)?,
        None => None,
    };
    let mut flags = 0;
    if compressed.is_some() {
        flags |= FLAG_COMPRESSED;
    }
    if options.key.is_some() {
        flags |= FLAG_SIGNED;
    }
    Ok(Sealed {
        flags,
        key: options.key,
        timestamp: options.timestamp,
        content: compressed.map_or(Cow::Borrowed(body), Cow::Owned),
    })
}

impl Sealed<'_> {
    fn signing_fields_len(&self) -> usize {
        match (self.key, self.timestamp) {
            (None, _) => 0,
            (Some(key), None) => 2 + key.id.len(),
            (Some(key), Some(_)) => 10 + key.id.len(),
        }
    }

    /// The length of the sealed payload.
    pub fn len(&self) -> usize {
        let tag = if self.key.is_some() { TAG_LENGTH } else { 0 };
        HEADER_LEN + self.signing_fields_len() + self.content.len() + tag
    }

    /// Always false: a payload has a header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the sealed payload into `out`, which must be exactly [`Sealed::len`] bytes.
    pub fn write_into(&self, out: &mut [u8]) -> Result<(), SealError> {
        if out.len() != self.len() {
            return Err(SealError::OutputLength {
                expected: self.len(),
                got: out.len(),
            });
        }
        let (header, rest) = out.split_at_mut(HEADER_LEN);
        header.copy_from_slice(&[
            PLAIN_HEADER[0],
            PLAIN_HEADER[1],
            PLAIN_HEADER[2] | self.flags,
        ]);
        let (fields, rest) = rest.split_at_mut(self.signing_fields_len());
        if let Some(key) = self.key {
            // The id's length is bounded by SigningKey::new.
            fields[0] = key.id.len() as u8;
            let (id, flags_and_time) = fields[1..].split_at_mut(key.id.len());
            id.copy_from_slice(&key.id);
            if let Some(timestamp) = self.timestamp {
                flags_and_time[0] = SIG_FLAG_TIMESTAMP;
                flags_and_time[1..].copy_from_slice(&timestamp.to_le_bytes());
            }
        }
        rest[..self.content.len()].copy_from_slice(&self.content);
        if let Some(key) = self.key {
            let (signed, tag) = out.split_at_mut(out.len() - TAG_LENGTH);
            tag.copy_from_slice(&key.tag(signed));
        }
        Ok(())
    }
}

/// The compression section for `body` (algorithm, size, data), or `None` when it would not be
/// shorter than the body itself.
fn compress(body: &[u8], compression: Compression) -> Result<Option<Vec<u8>>, SealError> {
    let mut size = Vec::with_capacity(crate::varint::MAX_VARINT_LEN);
    write_varint(&mut size, body.len() as u64);
    // The section is worth it only if algorithm + size + data < body.
    let Some(room) = body.len().checked_sub(1 + size.len()) else {
        return Ok(None);
    };
    if room == 0 {
        return Ok(None);
    }
    let (algorithm, data) = match compression {
        Compression::Zstd { level } => {
            // zstd stops as soon as its output would not fit, so the buffer never needs to
            // be bigger than a worthwhile result.
            let mut data = Vec::with_capacity(room - 1);
            let compressed = with_context(&ZSTD_CCTX, zstd_safe::CCtx::try_create, |cctx| {
                cctx.compress(&mut data, body, level)
            })
            .ok_or_else(|| SealError::Compressor("cannot create a zstd context".into()))?;
            match compressed {
                Ok(_) => {}
                Err(code) if code == zstd_error(ZstdError::ZSTD_error_dstSize_tooSmall) => {
                    return Ok(None)
                }
                Err(code) => {
                    return Err(SealError::Compressor(
                        zstd_safe::get_error_name(code).to_owned(),
                    ))
                }
            }
            (Algorithm::Zstd, data)
        }
        Compression::Lz4 => (Algorithm::Lz4, lz4_flex::block::compress(body)),
    };
    if data.len() >= room {
        return Ok(None);
    }
    let mut section = Vec::with_capacity(1 + size.len() + data.len());
    section.push(algorithm as u8);
    section.extend_from_slice(&size);
    section.extend_from_slice(&data);
    Ok(Some(section))
}

/// A zstd context grown beyond this (by a high level on a large input) is freed after use
/// rather than kept for the thread's next call.
const ZSTD_CONTEXT_KEEP_LIMIT: usize = 8 << 20;

thread_local! {
    // Creating a context costs more than compressing or decompressing a small payload, so
    // each thread keeps one of each.
    static ZSTD_CCTX: Cell<Option<zstd_safe::CCtx<'static>>> = const { Cell::new(None) };
    static ZSTD_DCTX: Cell<Option<zstd_safe::DCtx<'static>>> = const { Cell::new(None) };
}

/// How much memory a zstd context holds.
trait ContextMemory {
    fn memory(&self) -> usize;
}

impl ContextMemory for zstd_safe::CCtx<'static> {
    fn memory(&self) -> usize {
        self.sizeof()
    }
}

impl ContextMemory for zstd_safe::DCtx<'static> {
    fn memory(&self) -> usize {
        self.sizeof()
    }
}

/// Runs `f` with this thread's context from `slot` (made by `create` if there is none) and
/// puts it back unless it grew too big; `None` if no context could be made.
fn with_context<C: ContextMemory, T>(
    slot: &'static std::thread::LocalKey<Cell<Option<C>>>,
    create: fn() -> Option<C>,
    f: impl FnOnce(&mut C) -> T,
) -> Option<T> {
    // Taken out of the slot while in use, so a nested call (there is none today) would
    // make its own instead of sharing it.
    let mut context = slot.with(Cell::take).or_else(create)?;
    let result = f(&mut context);
    if context.memory() <= ZSTD_CONTEXT_KEEP_LIMIT {
        slot.with(|cell| cell.set(Some(context)));
    }
    Some(result)
}

/// The `size_t` a zstd function returns for an error of kind `kind`.
fn zstd_error(kind: ZstdError) -> usize {
    0usize.wrapping_sub(kind as usize)
}

/// What [`open`] checks and allows.
#[derive(Clone, Copy, Debug)]
pub struct OpenOptions<'k> {
    /// The keys to verify with; empty for a decoder that takes no signed payloads. Given any,
    /// the payload must be signed by one of them.
    pub keys: &'k [SigningKey],
    /// Refuse a payload signed longer ago than this many seconds (it must then carry a
    /// timestamp). Only with keys.
    pub max_age: Option<u64>,
    /// The decoder's clock: seconds since 1970-01-01T00:00:00Z. Read only with `max_age`.
    pub now: u64,
    /// Refuse a body that declares more decompressed bytes than this.
    pub max_decompressed: Option<u64>,
    /// The allocation budget of the whole decode ([`crate::Limits::alloc_budget`] of the
    /// input); a decompressed body is charged to it before it is made.
    pub alloc_budget: u64,
}

impl OpenOptions<'_> {
    /// The options of a decoder given no keys (a plain `loads`): unsigned payloads only, no
    /// cap on the decompressed size beyond the allocation budget.
    pub fn unsigned(alloc_budget: u64) -> OpenOptions<'static> {
        OpenOptions {
            keys: &[],
            max_age: None,
            now: 0,
            max_decompressed: None,
            alloc_budget,
        }
    }
}

/// What an envelope says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvelopeInfo {
    /// Whether the payload is signed.
    pub signed: bool,
    /// The id of the key that signed it.
    pub key_id: Option<Vec<u8>>,
    /// When it was signed, in seconds since 1970-01-01T00:00:00Z, if the signer said.
    pub timestamp: Option<u64>,
    /// How the body is compressed, if it is.
    pub compression: Option<Algorithm>,
    /// The length of the compressed data, if the body is compressed.
    pub compressed_size: Option<usize>,
    /// The length of the body: as declared when compressed, else as found.
    pub size: u64,
}

impl EnvelopeInfo {
    fn plain(size: usize) -> EnvelopeInfo {
        EnvelopeInfo {
            signed: false,
            key_id: None,
            timestamp: None,
            compression: None,
            compressed_size: None,
            size: size as u64,
        }
    }
}

/// Where a body's bytes are, for error offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyOrigin {
    /// In the input, from this absolute offset on.
    Input(usize),
    /// Made by decompression: offsets count from its first byte.
    Decompressed,
}

impl BodyOrigin {
    /// Where a plain payload's body is: in the input, right after the header.
    pub const PLAIN: BodyOrigin = BodyOrigin::Input(HEADER_LEN);

    /// Turns an error at an offset in the body into one the caller can place: an absolute
    /// offset for a body in the input; for a decompressed body the offset stays relative to
    /// it and the detail says so.
    pub fn locate(self, mut err: DecodeError) -> DecodeError {
        match self {
            BodyOrigin::Input(start) => err.offset = err.offset.saturating_add(start),
            BodyOrigin::Decompressed => {
                err.detail = format!("in the decompressed body: {}", err.detail);
            }
        }
        err
    }
}

/// A checked envelope: its body, ready for [`crate::decode::decode_body`].
#[derive(Debug)]
pub struct Opened<'a> {
    body: Cow<'a, [u8]>,
    origin: BodyOrigin,
    info: EnvelopeInfo,
    budget: AllocBudget,
}

impl<'a> Opened<'a> {
    /// The body: the root value and nothing else.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body, taken out: owned when it was decompressed, borrowed from the input otherwise.
    pub fn into_body(self) -> Cow<'a, [u8]> {
        self.body
    }

    /// Where the body's bytes are.
    pub fn origin(&self) -> BodyOrigin {
        self.origin
    }

    /// What the envelope says about itself.
    pub fn info(&self) -> &EnvelopeInfo {
        &self.info
    }

    /// The allocation budget, with the decompressed body already charged to it.
    pub fn budget(&self) -> AllocBudget {
        self.budget
    }
}

/// The signing fields and tag of a signed payload.
struct Signature<'a> {
    key_id: &'a [u8],
    sig_flags_at: usize,
    /// The timestamp and its offset.
    timestamp: Option<(u64, usize)>,
    /// Everything the tag covers.
    signed: &'a [u8],
    tag: &'a [u8],
}

/// An envelope taken apart, nothing verified yet.
struct Parts<'a> {
    flags: u8,
    signature: Option<Signature<'a>>,
    /// The body, or the compression section; and its absolute offset.
    content: &'a [u8],
    content_at: usize,
}

/// The compression section taken apart.
struct Section<'a> {
    algorithm: Algorithm,
    size: u64,
    size_at: usize,
    data: &'a [u8],
    data_at: usize,
}

fn truncated(at: usize, what: &str) -> DecodeError {
    DecodeError::new(
        ErrorKind::Truncated,
        at,
        format!("input ends inside the envelope's {what}"),
    )
}

/// Splits `data` into header, signing fields, content and tag, checking only their form.
fn parts<'a>(data: &'a [u8], keys: Option<&[SigningKey]>) -> Result<Parts<'a>, DecodeError> {
    let flags = read_header(data)?;
    let signed = flags & FLAG_SIGNED != 0;
    match keys {
        Some([]) if signed => {
            return Err(DecodeError::new(
                ErrorKind::KeyRequired,
                2,
                "the payload is signed: pass key= (the signing key) to verify and decode it",
            ))
        }
        Some([_, ..]) if !signed => {
            return Err(DecodeError::new(
                ErrorKind::SignatureRequired,
                2,
                "the payload is not signed, but a key was given: only signed payloads are accepted",
            ))
        }
        _ => {}
    }
    if !signed {
        return Ok(Parts {
            flags,
            signature: None,
            content: data.get(HEADER_LEN..).unwrap_or(&[]),
            content_at: HEADER_LEN,
        });
    }
    let key_id_at = HEADER_LEN;
    let Some(&id_len) = data.get(key_id_at) else {
        return Err(truncated(key_id_at, "key id length"));
    };
    let id_len = usize::from(id_len);
    if id_len == 0 || id_len > MAX_KEY_ID_LENGTH {
        return Err(DecodeError::new(
            ErrorKind::BadEnvelope,
            key_id_at,
            format!("key id length {id_len} is not between 1 and {MAX_KEY_ID_LENGTH}"),
        ));
    }
    let id_start = key_id_at + 1;
    let Some(key_id) = data.get(id_start..id_start + id_len) else {
        return Err(DecodeError::new(
            ErrorKind::Truncated,
            key_id_at,
            format!(
                "key id declares {id_len} bytes but {} are left",
                data.len() - id_start
            ),
        ));
    };
    let sig_flags_at = id_start + id_len;
    let Some(&sig_flags) = data.get(sig_flags_at) else {
        return Err(truncated(sig_flags_at, "signature flags"));
    };
    if sig_flags & !SIG_FLAG_TIMESTAMP != 0 {
        return Err(DecodeError::new(
            ErrorKind::BadEnvelope,
            sig_flags_at,
            format!("signature flags 0x{sig_flags:02X} set reserved bits (only bit 0 is defined)"),
        ));
    }
    let mut fields_end = sig_flags_at + 1;
    let timestamp = if sig_flags & SIG_FLAG_TIMESTAMP != 0 {
        let at = fields_end;
        let Some(bytes) = data.get(at..).and_then(|rest| rest.first_chunk::<8>()) else {
            return Err(truncated(at, "timestamp"));
        };
        fields_end += 8;
        Some((u64::from_le_bytes(*bytes), at))
    } else {
        None
    };
    let signature = Signature {
        key_id,
        sig_flags_at,
        timestamp,
        signed: &[],
        tag: &[],
    };
    if let Some(keys @ [_, ..]) = keys {
        if !keys.iter().any(|k| k.id == key_id) {
            return Err(DecodeError::new(
                ErrorKind::UnknownKey,
                key_id_at,
                format!(
                    "the payload is signed with key id {}, which is not among the {} key{} given",
                    describe_key_id(key_id),
                    keys.len(),
                    if keys.len() == 1 { "" } else { "s" }
                ),
            ));
        }
    }
    let Some(tag_at) = data
        .len()
        .checked_sub(TAG_LENGTH)
        .filter(|&at| at >= fields_end)
    else {
        return Err(DecodeError::new(
            ErrorKind::Truncated,
            fields_end,
            format!(
                "input ends before the {TAG_LENGTH}-byte signature tag ({} bytes follow the signing fields)",
                data.len() - fields_end
            ),
        ));
    };
    Ok(Parts {
        flags,
        signature: Some(Signature {
            signed: &data[..tag_at],
            tag: &data[tag_at..],
            ..signature
        }),
        content: &data[fields_end..tag_at],
        content_at: fields_end,
    })
}

/// Checks the tag with the keys of the payload's id, then the timestamp.
fn authenticate(
    signature: &Signature<'_>,
    keys: &[SigningKey],
    max_age: Option<u64>,
    now: u64,
) -> Result<(), DecodeError> {
    // Keys sharing an id are tried in turn; the id spares trying the others.
    let verified = keys
        .iter()
        .filter(|k| k.id == signature.key_id)
        .any(|k| k.verifies(signature.signed, signature.tag));
    if !verified {
        return Err(DecodeError::new(
            ErrorKind::BadSignature,
            signature.signed.len(),
            format!(
                "the signature does not match: the payload was altered, or signed with another secret under key id {}",
                describe_key_id(signature.key_id)
            ),
        ));
    }
    let Some(max_age) = max_age else {
        return Ok(());
    };
    let Some((timestamp, at)) = signature.timestamp else {
        return Err(DecodeError::new(
            ErrorKind::TimestampRequired,
            signature.sig_flags_at,
            format!("max_age={max_age} needs a timestamp, and the payload has none (sign it with timestamp=True)"),
        ));
    };
    if timestamp > now.saturating_add(MAX_CLOCK_SKEW) {
        return Err(DecodeError::new(
            ErrorKind::TimestampInFuture,
            at,
            format!(
                "the payload's timestamp is {} s ahead of this clock, more than the {MAX_CLOCK_SKEW} s allowed",
                timestamp - now
            ),
        ));
    }
    let age = now.saturating_sub(timestamp);
    if age > max_age {
        return Err(DecodeError::new(
            ErrorKind::Expired,
            at,
            format!("the payload was signed {age} s ago, more than max_age={max_age}"),
        ));
    }
    Ok(())
}

/// Reads the algorithm and size in front of compressed data.
fn section(content: &[u8], content_at: usize) -> Result<Section<'_>, DecodeError> {
    let Some((&code, rest)) = content.split_first() else {
        return Err(truncated(content_at, "compression algorithm"));
    };
    let Some(algorithm) = Algorithm::from_code(code) else {
        return Err(DecodeError::new(
            ErrorKind::UnknownCompression,
            content_at,
            format!("compression algorithm {code} is not defined (1 is zstd, 2 is lz4)"),
        ));
    };
    let size_at = content_at + 1;
    let (size, used) = read_varint(rest).map_err(|e| match e {
        VarintError::Truncated => truncated(size_at, "decompressed size"),
        VarintError::Overlong => DecodeError::new(
            ErrorKind::OverlongVarint,
            size_at,
            "decompressed size: varint has a redundant final zero byte",
        ),
        VarintError::Overflow => DecodeError::new(
            ErrorKind::VarintOverflow,
            size_at,
            "decompressed size: varint is longer than 10 bytes or above 2^64-1",
        ),
    })?;
    if size == 0 {
        return Err(DecodeError::new(
            ErrorKind::BadEnvelope,
            size_at,
            "decompressed size is 0: a body holds at least one value",
        ));
    }
    let data_at = size_at + used;
    Ok(Section {
        algorithm,
        size,
        size_at,
        data: &rest[used..],
        data_at,
    })
}

fn info(parts: &Parts<'_>, section: Option<&Section<'_>>) -> EnvelopeInfo {
    let signature = parts.signature.as_ref();
    EnvelopeInfo {
        signed: signature.is_some(),
        key_id: signature.map(|s| s.key_id.to_vec()),
        timestamp: signature.and_then(|s| s.timestamp).map(|(t, _)| t),
        compression: section.map(|s| s.algorithm),
        compressed_size: section.map(|s| s.data.len()),
        size: section.map_or(parts.content.len() as u64, |s| s.size),
    }
}

fn compressed_section<'a>(parts: &Parts<'a>) -> Result<Option<Section<'a>>, DecodeError> {
    if parts.flags & FLAG_COMPRESSED == 0 {
        return Ok(None);
    }
    section(parts.content, parts.content_at).map(Some)
}

/// What the envelope says about itself, WITHOUT checking the signature: for tools. Checks the
/// form of the header, the signing fields and the compression fields.
pub fn inspect(data: &[u8]) -> Result<EnvelopeInfo, DecodeError> {
    let parts = parts(data, None)?;
    let section = compressed_section(&parts)?;
    Ok(info(&parts, section.as_ref()))
}

/// Checks the signature with `keys` and, with `max_age`, the timestamp, and returns what
/// the envelope says about itself. Nothing is decompressed. As in [`open`], `keys` decide
/// which payloads pass: given any, only signed ones; given none, only unsigned ones.
pub fn verify(
    data: &[u8],
    keys: &[SigningKey],
    max_age: Option<u64>,
    now: u64,
) -> Result<EnvelopeInfo, DecodeError> {
    let parts = parts(data, Some(keys))?;
    if let Some(signature) = &parts.signature {
        authenticate(signature, keys, max_age, now)?;
    }
    let section = compressed_section(&parts)?;
    Ok(info(&parts, section.as_ref()))
}

/// Checks an envelope in the order of spec section 12.5 and returns its body: header; the
/// signing fields, the key, the tag and the timestamp (when signed); then the compression
/// fields, the size caps, and decompression into exactly the declared size.
///
/// A plain payload opens too (with no keys), with its body in place.
#[inline]
pub fn open<'a>(data: &'a [u8], options: &OpenOptions<'_>) -> Result<Opened<'a>, DecodeError> {
    if let Some(body) = plain_body(data, options) {
        return Ok(Opened {
            body: Cow::Borrowed(body),
            origin: BodyOrigin::PLAIN,
            info: EnvelopeInfo::plain(body.len()),
            budget: AllocBudget::unspent(options.alloc_budget),
        });
    }
    open_envelope(data, options)
}

/// The body of `data` when it is a plain payload (no envelope) and `options` has no keys,
/// the common case: what [`open`] would find, without its checks for an envelope. Such a
/// body is at [`BodyOrigin::PLAIN`], with nothing spent of `options.alloc_budget`. `None` for
/// anything else, which only [`open`] can tell about.
#[inline]
pub fn plain_body<'a>(data: &'a [u8], options: &OpenOptions<'_>) -> Option<&'a [u8]> {
    if !options.keys.is_empty() {
        return None;
    }
    match data.split_first_chunk::<HEADER_LEN>() {
        Some((&PLAIN_HEADER, body)) => Some(body),
        _ => None,
    }
}

fn open_envelope<'a>(data: &'a [u8], options: &OpenOptions<'_>) -> Result<Opened<'a>, DecodeError> {
    let parts = parts(data, Some(options.keys))?;
    if let Some(signature) = &parts.signature {
        authenticate(signature, options.keys, options.max_age, options.now)?;
    }
    let mut budget = AllocBudget::unspent(options.alloc_budget);
    let Some(section) = compressed_section(&parts)? else {
        return Ok(Opened {
            body: Cow::Borrowed(parts.content),
            origin: BodyOrigin::Input(parts.content_at),
            info: info(&parts, None),
            budget,
        });
    };
    if let Some(cap) = options.max_decompressed {
        if section.size > cap {
            return Err(DecodeError::new(
                ErrorKind::DecompressedTooLarge,
                section.size_at,
                format!(
                    "the body declares {} bytes decompressed, more than max_decompressed={cap}",
                    section.size
                ),
            ));
        }
    }
    let left = budget.limit.saturating_sub(budget.spent);
    if section.size > left {
        return Err(DecodeError::new(
            ErrorKind::DecompressedTooLarge,
            section.size_at,
            format!(
                "the body declares {} bytes decompressed, more than the allocation budget of {} bytes (max_alloc; raise it to decode this payload)",
                section.size, budget.limit
            ),
        ));
    }
    budget.spent += section.size;
    let Ok(size) = usize::try_from(section.size) else {
        return Err(DecodeError::new(
            ErrorKind::DecompressedTooLarge,
            section.size_at,
            format!(
                "the body declares {} bytes decompressed, more than this machine can address",
                section.size
            ),
        ));
    };
    if section.data.is_empty() {
        return Err(truncated(section.data_at, "compressed data"));
    }
    let body = decompress(&section, size)?;
    Ok(Opened {
        body: Cow::Owned(body),
        origin: BodyOrigin::Decompressed,
        info: info(&parts, Some(&section)),
        budget,
    })
}

fn bad_compression(section: &Section<'_>, detail: String) -> DecodeError {
    DecodeError::new(
        ErrorKind::BadCompression,
        section.data_at,
        format!(
            "the {} data is not valid: {detail}",
            section.algorithm.name()
        ),
    )
}

fn size_mismatch(section: &Section<'_>, found: &str) -> DecodeError {
    DecodeError::new(
        ErrorKind::SizeMismatch,
        section.size_at,
        format!(
            "the body declares {} bytes decompressed, but the {} data holds {found}",
            section.size,
            section.algorithm.name()
        ),
    )
}

/// A buffer for the body, or an error if the allocator refuses it.
fn body_buffer(section: &Section<'_>, size: usize) -> Result<Vec<u8>, DecodeError> {
    let mut buffer = Vec::new();
    buffer.try_reserve_exact(size).map_err(|_| {
        DecodeError::new(
            ErrorKind::DecompressedTooLarge,
            section.size_at,
            format!("cannot allocate {size} bytes for the decompressed body"),
        )
    })?;
    Ok(buffer)
}

/// Decompresses into a buffer of exactly the declared size: data that would make more stops
/// when the buffer is full, data that makes less is found out at the end.
fn decompress(section: &Section<'_>, size: usize) -> Result<Vec<u8>, DecodeError> {
    match section.algorithm {
        Algorithm::Zstd => zstd_decompress(section, size),
        Algorithm::Lz4 => {
            let mut body = body_buffer(section, size)?;
            body.resize(size, 0);
            match lz4_flex::block::decompress_into(section.data, &mut body) {
                Ok(n) if n == size => Ok(body),
                Ok(n) => Err(size_mismatch(section, &format!("{n} bytes"))),
                Err(lz4_flex::block::DecompressError::OutputTooSmall { .. }) => {
                    Err(size_mismatch(section, "more bytes"))
                }
                Err(e) => Err(bad_compression(section, e.to_string())),
            }
        }
    }
}

fn zstd_decompress(section: &Section<'_>, size: usize) -> Result<Vec<u8>, DecodeError> {
    let data = section.data;
    if !data.starts_with(&ZSTD_MAGIC) {
        return Err(bad_compression(
            section,
            "it does not start with a zstd frame (28 B5 2F FD)".into(),
        ));
    }
    match zstd_safe::find_frame_compressed_size(data) {
        Ok(n) if n == data.len() => {}
        Ok(n) => {
            return Err(bad_compression(
                section,
                format!(
                    "{} bytes follow the zstd frame (exactly one frame is allowed)",
                    data.len() - n
                ),
            ))
        }
        Err(code) => {
            return Err(bad_compression(
                section,
                zstd_safe::get_error_name(code).into(),
            ))
        }
    }
    // A frame that records its size is checked before anything is allocated.
    match zstd_safe::get_frame_content_size(data) {
        Ok(Some(n)) if n != section.size => {
            return Err(size_mismatch(
                section,
                &format!("{n} bytes (its frame header says so)"),
            ))
        }
        Ok(_) => {}
        Err(_) => {
            return Err(bad_compression(
                section,
                "the zstd frame header is malformed".into(),
            ))
        }
    }
    // One-shot decompression writes into the output buffer and keeps no window of its own;
    // the cap refuses frames that claim a window larger than the body could need, should
    // the decoder ever keep one.
    let window_log = (usize::BITS - size.saturating_sub(1).leading_zeros())
        .clamp(ZSTD_MIN_WINDOW_LOG, ZSTD_MAX_WINDOW_LOG);
    let mut body = body_buffer(section, size)?;
    let decompressed = with_context(&ZSTD_DCTX, zstd_safe::DCtx::try_create, |dctx| {
        dctx.set_parameter(zstd_safe::DParameter::WindowLogMax(window_log))?;
        dctx.decompress(&mut body, data)
    })
    .ok_or_else(|| bad_compression(section, "cannot create a zstd context".into()))?;
    match decompressed {
        Ok(n) if n == size => Ok(body),
        Ok(n) => Err(size_mismatch(section, &format!("{n} bytes"))),
        Err(code) if code == zstd_error(ZstdError::ZSTD_error_dstSize_tooSmall) => {
            Err(size_mismatch(section, "more bytes"))
        }
        Err(code) => Err(bad_compression(
            section,
            zstd_safe::get_error_name(code).into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::model::Graph;

    /// The first 8 bytes of HMAC-SHA256(secret, "amber key id") for this secret, computed
    /// with Python's `hmac` module.
    const SECRET: &[u8] = b"amber envelope test secret one!!";
    const SECRET_ID: [u8; 8] = [0xb0, 0xa1, 0x5e, 0x4f, 0x00, 0xa3, 0x59, 0xda];

    fn key() -> SigningKey {
        SigningKey::new(SECRET, None).expect("a valid key")
    }

    fn other_key() -> SigningKey {
        SigningKey::new(b"another secret of enough bytes", Some(b"other")).expect("a valid key")
    }

    /// A payload that compresses well: a list of 200 equal (unshared) 10-byte strings.
    fn compressible() -> Vec<u8> {
        let mut payload = PLAIN_HEADER.to_vec();
        payload.extend_from_slice(&[0x71, 0xC8, 0x01]);
        for _ in 0..200 {
            payload.push(0x4A);
            payload.extend_from_slice(b"abcdefghij");
        }
        payload
    }

    fn options(keys: &[SigningKey]) -> OpenOptions<'_> {
        OpenOptions {
            keys,
            max_age: None,
            now: 0,
            max_decompressed: None,
            alloc_budget: 1 << 20,
        }
    }

    fn open_decode(data: &[u8], options: &OpenOptions<'_>) -> Result<Graph, DecodeError> {
        let opened = open(data, options)?;
        Graph::decode_opened(&opened, 100)
    }

    #[test]
    fn derived_key_id_is_the_hmac_of_a_fixed_message() {
        assert_eq!(key().id(), SECRET_ID);
        assert_eq!(SigningKey::derived_id(SECRET), Ok(SECRET_ID.to_vec()));
        assert_eq!(
            SigningKey::new(SECRET, Some(b"mine")).map(|k| k.id().to_vec()),
            Ok(b"mine".to_vec())
        );
    }

    #[test]
    fn short_secrets_and_bad_ids_are_refused() {
        assert_eq!(
            SigningKey::new(&[7; 15], None).err(),
            Some(KeyError::SecretTooShort { length: 15 })
        );
        assert_eq!(
            SigningKey::new(b"", None).err(),
            Some(KeyError::SecretTooShort { length: 0 })
        );
        assert!(SigningKey::new(&[7; 16], None).is_ok());
        assert_eq!(
            SigningKey::new(&[7; 16], Some(b"")).err(),
            Some(KeyError::BadId { length: 0 })
        );
        assert_eq!(
            SigningKey::new(&[7; 16], Some(&[1; 65])).err(),
            Some(KeyError::BadId { length: 65 })
        );
        assert!(SigningKey::new(&[7; 16], Some(&[1; 64])).is_ok());
    }

    #[test]
    fn debug_shows_the_id_and_never_the_secret() {
        let shown = format!(
            "{:?}",
            SigningKey::new(b"0123456789abcdefXYZ", Some(b"k1")).unwrap()
        );
        assert_eq!(shown, "SigningKey(id=\"k1\")");
        let hex = format!("{:?}", key());
        assert_eq!(hex, "SigningKey(id=0xb0a15e4f00a359da)");
    }

    #[test]
    fn every_combination_round_trips_with_its_layout() {
        let payload = compressible();
        let body = &payload[HEADER_LEN..];
        let expected = Graph::decode(&payload, &Limits::default()).unwrap();
        let key = key();
        for signed in [false, true] {
            for compression in [
                None,
                Some(Compression::Zstd { level: 3 }),
                Some(Compression::Lz4),
            ] {
                for timestamp in [None, Some(1_700_000_000u64)] {
                    if timestamp.is_some() && !signed {
                        continue;
                    }
                    let seal_options = SealOptions {
                        key: signed.then_some(&key),
                        timestamp,
                        compression,
                    };
                    let sealed = seal(&payload, &seal_options).unwrap();
                    let what = format!("signed={signed} {compression:?} {timestamp:?}");
                    let flags = sealed[2] & 0xF0;
                    assert_eq!(flags & FLAG_SIGNED != 0, signed, "{what}");
                    assert_eq!(
                        flags & FLAG_COMPRESSED != 0,
                        compression.is_some(),
                        "{what}"
                    );
                    let mut at = HEADER_LEN;
                    if signed {
                        assert_eq!(&sealed[at..at + 9], &[&[8u8][..], &SECRET_ID].concat()[..]);
                        at += 9;
                        assert_eq!(sealed[at], u8::from(timestamp.is_some()), "{what}");
                        at += 1;
                        if let Some(t) = timestamp {
                            assert_eq!(sealed[at..at + 8], t.to_le_bytes());
                            at += 8;
                        }
                    }
                    if let Some(compression) = compression {
                        let code = match compression {
                            Compression::Zstd { .. } => 1,
                            Compression::Lz4 => 2,
                        };
                        assert_eq!(sealed[at], code, "{what}");
                        assert_eq!(read_varint(&sealed[at + 1..]), Ok((body.len() as u64, 2)));
                        assert!(sealed.len() < payload.len(), "{what}: not smaller");
                    } else {
                        let end = sealed.len() - if signed { TAG_LENGTH } else { 0 };
                        assert_eq!(&sealed[at..end], body, "{what}");
                    }
                    let keys = if signed { vec![key.clone()] } else { vec![] };
                    let graph = open_decode(&sealed, &options(&keys)).unwrap();
                    assert_eq!(expected.same_as(&graph), Ok(()), "{what}");
                }
            }
        }
    }

    #[test]
    fn zstd_output_is_one_frame_that_records_its_size() {
        let payload = compressible();
        let options = SealOptions {
            compression: Some(Compression::Zstd { level: 19 }),
            ..SealOptions::default()
        };
        let sealed = seal(&payload, &options).unwrap();
        let data = &sealed[HEADER_LEN + 3..];
        assert!(data.starts_with(&ZSTD_MAGIC));
        assert_eq!(zstd_safe::find_frame_compressed_size(data), Ok(data.len()));
        assert_eq!(
            zstd_safe::get_frame_content_size(data).ok().flatten(),
            Some((payload.len() - HEADER_LEN) as u64)
        );
    }

    #[test]
    fn compression_is_skipped_when_it_does_not_shrink_the_payload() {
        let tiny = [PLAIN_HEADER.as_slice(), &[0x5A, 0x01, 0x02]].concat();
        for compression in [Compression::Zstd { level: 22 }, Compression::Lz4] {
            let options = SealOptions {
                compression: Some(compression),
                ..SealOptions::default()
            };
            assert_eq!(seal(&tiny, &options).unwrap(), tiny);
            let key = key();
            let signed = seal(
                &tiny,
                &SealOptions {
                    key: Some(&key),
                    ..options
                },
            )
            .unwrap();
            assert_eq!(signed[2], 0x21, "signed but not compressed");
        }
    }

    #[test]
    fn prepared_payloads_write_into_room_of_exactly_their_length() {
        let key = key();
        let options = SealOptions {
            key: Some(&key),
            timestamp: Some(9),
            compression: Some(Compression::Lz4),
        };
        let payload = compressible();
        let sealed = prepare(&payload, &options).unwrap();
        let mut out = vec![0; sealed.len()];
        sealed.write_into(&mut out).unwrap();
        assert_eq!(out, seal(&payload, &options).unwrap());
        for wrong in [sealed.len() - 1, sealed.len() + 1] {
            assert_eq!(
                sealed.write_into(&mut vec![0; wrong]),
                Err(SealError::OutputLength {
                    expected: sealed.len(),
                    got: wrong
                })
            );
        }
    }

    #[test]
    fn seal_refuses_bad_options_and_non_payloads() {
        let payload = compressible();
        let no_key = SealOptions {
            timestamp: Some(1),
            ..SealOptions::default()
        };
        assert_eq!(seal(&payload, &no_key), Err(SealError::TimestampWithoutKey));
        for level in [0, 23, -1] {
            let options = SealOptions {
                compression: Some(Compression::Zstd { level }),
                ..SealOptions::default()
            };
            assert_eq!(seal(&payload, &options), Err(SealError::BadLevel(level)));
        }
        let key = key();
        let signed = seal(
            &payload,
            &SealOptions {
                key: Some(&key),
                ..SealOptions::default()
            },
        )
        .unwrap();
        assert_eq!(
            seal(&signed, &SealOptions::default()),
            Err(SealError::NotPlain)
        );
        assert_eq!(
            seal(&[0xAB], &SealOptions::default()),
            Err(SealError::NotPlain)
        );
    }

    /// Every bit of a signed (and of a signed and compressed) payload matters: each flipped
    /// bit is refused before anything is decompressed or decoded.
    #[test]
    fn every_flipped_bit_is_refused() {
        let payload = compressible();
        let key = key();
        for compression in [
            None,
            Some(Compression::Zstd { level: 3 }),
            Some(Compression::Lz4),
        ] {
            let sealed = seal(
                &payload,
                &SealOptions {
                    key: Some(&key),
                    timestamp: Some(1_700_000_000),
                    compression,
                },
            )
            .unwrap();
            let keys = [other_key(), key.clone()];
            assert!(open(&sealed, &options(&keys)).is_ok());
            for bit in 0..sealed.len() * 8 {
                let mut bad = sealed.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                let err = open(&bad, &options(&keys)).expect_err("a flipped bit opens");
                let malformed = matches!(
                    err.kind,
                    ErrorKind::BadMagic
                        | ErrorKind::UnsupportedVersion
                        | ErrorKind::UnsupportedFeature
                        | ErrorKind::Truncated
                        | ErrorKind::BadEnvelope
                );
                assert!(
                    err.kind.is_signature() || malformed,
                    "bit {bit}: {err} ({compression:?})"
                );
            }
        }
    }

    #[test]
    fn every_truncation_is_refused() {
        let payload = compressible();
        let key = key();
        for compression in [
            None,
            Some(Compression::Zstd { level: 3 }),
            Some(Compression::Lz4),
        ] {
            for signed in [false, true] {
                let sealed = seal(
                    &payload,
                    &SealOptions {
                        key: signed.then_some(&key),
                        timestamp: None,
                        compression,
                    },
                )
                .unwrap();
                let keys = if signed { vec![key.clone()] } else { vec![] };
                for end in 0..sealed.len() {
                    assert!(
                        open_decode(&sealed[..end], &options(&keys)).is_err(),
                        "prefix of {end} bytes decodes (signed={signed}, {compression:?})"
                    );
                }
            }
        }
    }

    #[test]
    fn keys_sharing_an_id_are_tried_in_turn() {
        let first = SigningKey::new(b"the first secret, id shared", Some(b"k")).unwrap();
        let second = SigningKey::new(b"the second secret, id shared", Some(b"k")).unwrap();
        let sealed = seal(
            &compressible(),
            &SealOptions {
                key: Some(&second),
                ..SealOptions::default()
            },
        )
        .unwrap();
        assert!(open(&sealed, &options(&[first.clone(), second])).is_ok());
        let err = open(&sealed, &options(&[first])).unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadSignature);
    }

    #[test]
    fn unknown_key_names_the_id_and_the_number_of_keys() {
        let sealed = seal(
            &compressible(),
            &SealOptions {
                key: Some(&other_key()),
                ..SealOptions::default()
            },
        )
        .unwrap();
        let err = open(&sealed, &options(&[key(), key()])).unwrap_err();
        assert_eq!((err.kind, err.offset), (ErrorKind::UnknownKey, 3));
        assert!(err.detail.contains("\"other\""), "{}", err.detail);
        assert!(err.detail.contains("2 keys"), "{}", err.detail);
    }

    /// One budget for the whole decode: the decompressed body is charged before it is made,
    /// and the value decoder gets what is left.
    #[test]
    fn the_decompressed_body_and_the_values_share_one_budget() {
        let payload = compressible();
        let body_len = (payload.len() - HEADER_LEN) as u64;
        let sealed = seal(
            &payload,
            &SealOptions {
                compression: Some(Compression::Lz4),
                ..SealOptions::default()
            },
        )
        .unwrap();
        let mut opts = options(&[]);
        opts.alloc_budget = body_len - 1;
        let err = open(&sealed, &opts).unwrap_err();
        assert_eq!(err.kind, ErrorKind::DecompressedTooLarge);
        assert!(err.detail.contains("max_alloc"), "{}", err.detail);

        // The list and its 200 strings are charged 25,672 bytes (crate::limits::cost): a
        // budget of 26,000 decodes the plain payload, not the compressed one, whose body
        // took its share first.
        let limit = 26_000;
        opts.alloc_budget = limit;
        let opened = open(&sealed, &opts).unwrap();
        assert_eq!(
            opened.budget(),
            AllocBudget {
                limit,
                spent: body_len
            }
        );
        let err = Graph::decode_opened(&opened, 100).unwrap_err();
        assert_eq!(err.kind, ErrorKind::AllocLimit);
        let plain = Limits {
            max_alloc: Some(limit),
            ..Limits::default()
        };
        assert!(Graph::decode(&payload, &plain).is_ok());
    }

    #[test]
    fn errors_in_a_decompressed_body_say_where_they_are() {
        // LZ4 literals "90 95": None, then a reserved tag at body offset 1.
        let data = [&PLAIN_HEADER[..2], &[0x11, 2, 2, 0x20, 0x90, 0x95]].concat();
        let err = open_decode(&data, &options(&[])).unwrap_err();
        assert_eq!((err.kind, err.offset), (ErrorKind::TrailingBytes, 1));
        assert!(
            err.detail.starts_with("in the decompressed body"),
            "{}",
            err.detail
        );
    }

    #[test]
    fn inspect_reads_without_a_key_and_verify_needs_the_right_one() {
        let sealed = seal(
            &compressible(),
            &SealOptions {
                key: Some(&key()),
                timestamp: Some(5),
                compression: Some(Compression::Lz4),
            },
        )
        .unwrap();
        let info = inspect(&sealed).unwrap();
        assert_eq!(info.key_id.as_deref(), Some(&SECRET_ID[..]));
        assert_eq!(info.timestamp, Some(5));
        assert_eq!(info.compression, Some(Algorithm::Lz4));
        assert_eq!(verify(&sealed, &[key()], None, 0), Ok(info));
        assert_eq!(
            verify(&sealed, &[other_key()], None, 0).unwrap_err().kind,
            ErrorKind::UnknownKey
        );
        assert_eq!(
            verify(&sealed, &[key()], Some(10), 100).unwrap_err().kind,
            ErrorKind::Expired
        );
    }
}
