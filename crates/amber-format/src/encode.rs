//! The writing side: [`Writer`] emits constructs, [`RefTracker`] decides when an object is
//! written again as a `REF` and handles cycles that pass through immutable containers.
//!
//! Callers walk their own object graph (Python objects, the test [`crate::model::Graph`]) and
//! call these in depth-first order.

use rustc_hash::FxHashMap;

use crate::ext::{ExtBlob, ExtCode};
use crate::header::{HEADER_LEN, PLAIN_HEADER};
use crate::identity::{Entry, IdentityMap, NoRoom};
use crate::object::ShapeDef;
use crate::tag::{self, Tag, TRACKED};
use crate::varint::zigzag;

/// Where a [`Writer`] puts its bytes: a growable byte buffer. `Vec<u8>` is one; the Python
/// extension has another that writes straight into the `bytes` object it returns, so a large
/// payload is not copied once more at the end.
pub trait Sink {
    /// Bytes written so far.
    fn len(&self) -> usize;
    /// Whether nothing is written yet.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Appends one byte.
    fn push(&mut self, byte: u8);
    /// Appends `bytes`.
    fn extend_from_slice(&mut self, bytes: &[u8]);
    /// Drops everything from `len` on.
    fn truncate(&mut self, len: usize);
    /// The byte at `index`, if written.
    fn get_mut(&mut self, index: usize) -> Option<&mut u8>;
    /// Makes room for `additional` more bytes.
    fn reserve(&mut self, additional: usize);
    /// The bytes written so far.
    fn as_slice(&self) -> &[u8];
    /// Appends `value` as a minimal LEB128 varint. Sinks override this to write the bytes in
    /// place: a copy of a few bytes through `extend_from_slice` costs a `memcpy` call.
    #[inline]
    fn put_varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.push(value as u8);
    }
    /// Appends a tag byte and then a varint (the shape of most constructs).
    #[inline]
    fn put_tag_varint(&mut self, tag: u8, value: u64) {
        self.push(tag);
        self.put_varint(value);
    }
    /// Appends a tag byte and then `bytes` (a short str). Sinks override this with one
    /// check for room and a copy made of a few loads and stores, for the reason given at
    /// [`Sink::put_varint`].
    #[inline]
    fn put_tag_bytes(&mut self, tag: u8, bytes: &[u8]) {
        self.push(tag);
        self.extend_from_slice(bytes);
    }
    /// Appends a tag byte and then `N` fixed bytes (floats). Sinks override this with
    /// fixed-size stores, for the reason given at [`Sink::put_varint`].
    #[inline]
    fn put_tag_fixed<const N: usize>(&mut self, tag: u8, bytes: [u8; N]) {
        self.push(tag);
        self.extend_from_slice(&bytes);
    }
}

impl Sink for Vec<u8> {
    #[inline]
    fn len(&self) -> usize {
        Vec::len(self)
    }
    #[inline]
    fn push(&mut self, byte: u8) {
        Vec::push(self, byte);
    }
    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes);
    }
    #[inline]
    fn truncate(&mut self, len: usize) {
        Vec::truncate(self, len);
    }
    #[inline]
    fn get_mut(&mut self, index: usize) -> Option<&mut u8> {
        <[u8]>::get_mut(self, index)
    }
    #[inline]
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }
    #[inline]
    fn as_slice(&self) -> &[u8] {
        self
    }
}

/// The bytes that begin a str of `n` bytes of strict UTF-8, SHORT_STR's tag or STR's tag and
/// length (as [`Writer::str`] writes them), little-endian in one integer, and how many of them
/// there are (at most 11): for a host that converts its text straight into the output, so
/// writes them itself around that text. (An integer rather than an array: an array was built
/// byte by byte on the stack, which cost more than the rest of a short str's head.)
#[inline(always)]
pub fn str_head(n: usize) -> (u128, usize) {
    if n <= tag::SHORT_STR_MAX {
        return (u128::from(Tag::ShortStr.code() + n as u8), 1);
    }
    let mut head = u128::from(Tag::Str.code());
    let mut len = 1;
    let mut value = n as u64;
    while value >= 0x80 {
        head |= u128::from((value as u8) | 0x80) << (8 * len);
        value >>= 7;
        len += 1;
    }
    head |= u128::from(value as u8) << (8 * len);
    (head, len + 1)
}

/// A growing payload: header first, then the body.
#[derive(Clone, Debug)]
pub struct Writer<S: Sink = Vec<u8>> {
    buf: S,
}

impl Default for Writer {
    fn default() -> Self {
        Writer::with_capacity(256)
    }
}

impl Writer {
    /// A writer holding just the header, with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Writer::on(Vec::with_capacity(capacity.max(HEADER_LEN)))
    }
}

/// Largest int the reference encoder never memoizes (spec 6.4, rule 1): CPython keeps one
/// object for each int up to here, so tracking them would only cost lookups.
pub const INLINE_INT_MAX: i64 = 256;

impl Writer {
    /// Whether `v` is written inline in the tag (and so is never tracked).
    #[inline]
    pub const fn is_small_int(v: i64) -> bool {
        tag::SMALL_INT_MIN <= v && v <= tag::SMALL_INT_MAX
    }

    /// Whether the reference encoder never memoizes the int `v` (spec 6.4, rule 1), so that
    /// it never counts as shared.
    #[inline]
    pub const fn is_inline_int(v: i64) -> bool {
        tag::SMALL_INT_MIN <= v && v <= INLINE_INT_MAX
    }

    /// Whether `v` is written as FLOAT32 (spec 5.5): it is not a NaN and binary32 holds it
    /// exactly, subnormals included.
    #[inline(always)]
    pub fn is_float32_exact(v: f64) -> bool {
        !v.is_nan() && f64::from(v as f32).to_bits() == v.to_bits()
    }

    /// Whether a list of `n` unshared floats, `exact` of them float32-exact, is written as
    /// PACKED_FLOAT_LIST (spec 5.10.1): 8 bytes an item is never more than the 5 of a FLOAT32
    /// and 9 of a FLOAT64 item it replaces when at most a quarter of them are FLOAT32.
    #[inline]
    pub const fn packs_floats(n: usize, exact: usize) -> bool {
        n >= tag::PACKED_MIN && exact <= n / 4
    }
}

impl<S: Sink> Writer<S> {
    /// A writer that appends the header and then the body to `sink`, which must be empty.
    pub fn on(mut sink: S) -> Self {
        debug_assert!(sink.is_empty());
        sink.extend_from_slice(&PLAIN_HEADER);
        Writer { buf: sink }
    }

    /// Drops the body, keeping the header and the allocation.
    pub fn reset(&mut self) {
        self.buf.truncate(HEADER_LEN);
    }

    /// Offset of the next byte, relative to the body (what a `REF` names).
    #[inline]
    pub fn body_pos(&self) -> usize {
        self.buf.len() - HEADER_LEN
    }

    /// The payload so far.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_slice()
    }

    /// The finished payload.
    pub fn into_bytes(self) -> S {
        self.buf
    }

    #[inline]
    fn varint(&mut self, value: u64) {
        self.buf.put_varint(value);
    }

    #[inline]
    fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    /// Writes a tag with a small count inside it when `n <= short_max`, else `long` + varint.
    #[inline(always)]
    fn counted(&mut self, short: Tag, short_max: usize, long: Tag, n: usize) {
        if n <= short_max {
            self.byte(short.code() + n as u8);
        } else {
            self.buf.put_tag_varint(long.code(), n as u64);
        }
    }

    /// `None`.
    #[inline]
    pub fn none(&mut self) {
        self.byte(Tag::None.code());
    }

    /// `True` or `False`.
    #[inline]
    pub fn bool(&mut self, v: bool) {
        self.byte(if v {
            Tag::True.code()
        } else {
            Tag::False.code()
        });
    }

    /// An int in the i64 range.
    #[inline(always)]
    pub fn int(&mut self, v: i64) {
        if (0..=tag::SMALL_INT_MAX).contains(&v) {
            self.byte(v as u8);
        } else if (tag::SMALL_INT_MIN..0).contains(&v) {
            self.byte((v + 0x90) as u8);
        } else {
            self.buf.put_tag_varint(Tag::Int.code(), zigzag(v));
        }
    }

    /// An int outside the i64 range, as two's complement little-endian bytes. Redundant sign
    /// bytes are dropped here, so callers may pass a generous width.
    pub fn bigint(&mut self, twos_le: &[u8]) {
        let digits = minimal_twos_complement(twos_le);
        self.byte(Tag::BigInt.code());
        self.varint(digits.len() as u64);
        self.buf.extend_from_slice(digits);
    }

    /// A float, as 4 bytes when that is exact (and not NaN), else 8.
    #[inline(always)]
    pub fn float(&mut self, v: f64) {
        if Writer::is_float32_exact(v) {
            self.buf
                .put_tag_fixed(Tag::Float32.code(), (v as f32).to_le_bytes());
        } else {
            self.buf.put_tag_fixed(Tag::Float64.code(), v.to_le_bytes());
        }
    }

    /// A complex number.
    pub fn complex(&mut self, re: f64, im: f64) {
        self.byte(Tag::Complex.code());
        self.buf.extend_from_slice(&re.to_le_bytes());
        self.buf.extend_from_slice(&im.to_le_bytes());
    }

    /// A str given as strict UTF-8.
    #[inline(always)]
    pub fn str(&mut self, utf8: &[u8]) {
        if utf8.len() <= tag::SHORT_STR_MAX {
            self.buf
                .put_tag_bytes(Tag::ShortStr.code() + utf8.len() as u8, utf8);
        } else {
            self.buf.put_tag_varint(Tag::Str.code(), utf8.len() as u64);
            self.buf.extend_from_slice(utf8);
        }
    }

    /// A str holding surrogates, as UTF-8 that also encodes surrogate code points.
    pub fn str_surrogates(&mut self, bytes: &[u8]) {
        self.byte(Tag::StrSurrogates.code());
        self.varint(bytes.len() as u64);
        self.buf.extend_from_slice(bytes);
    }

    /// A bytes object.
    pub fn bytes(&mut self, b: &[u8]) {
        self.bytes_header(b.len());
        self.buf.extend_from_slice(b);
    }

    /// The tag and length of a `bytes` value of `n` bytes; the caller then appends exactly
    /// `n` bytes to the sink (a host copying large data its own way).
    #[inline]
    pub fn bytes_header(&mut self, n: usize) {
        self.byte(Tag::Bytes.code());
        self.varint(n as u64);
    }

    /// A bytearray.
    pub fn bytearray(&mut self, b: &[u8]) {
        self.byte(Tag::ByteArray.code());
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// The start of a list of `n` values.
    #[inline]
    pub fn list_header(&mut self, n: usize) {
        self.counted(Tag::ShortList, tag::SHORT_SEQ_MAX, Tag::List, n);
    }

    /// The start of a PACKED_INT_LIST of `n` ints, each then written by [`Writer::packed_int`].
    pub fn packed_int_list_header(&mut self, n: usize) {
        self.buf.put_tag_varint(Tag::PackedIntList.code(), n as u64);
    }

    /// One item of a PACKED_INT_LIST: its zigzag varint, without a tag.
    #[inline]
    pub fn packed_int(&mut self, v: i64) {
        self.varint(zigzag(v));
    }

    /// The start of a PACKED_FLOAT_LIST of `n` floats, each then written by
    /// [`Writer::packed_float`].
    pub fn packed_float_list_header(&mut self, n: usize) {
        self.buf
            .put_tag_varint(Tag::PackedFloatList.code(), n as u64);
    }

    /// One item of a PACKED_FLOAT_LIST: its 8 bytes, bit for bit, without a tag.
    #[inline]
    pub fn packed_float(&mut self, v: f64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// The sink, for a caller that writes a run of items with stores of its own (the Python
    /// extension's packed lists). What it appends must continue the payload validly.
    #[inline]
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.buf
    }

    /// The start of a TUPLE_LIST of `rows` tuples of `arity` (at least 1) items each; the
    /// rows' items then follow as ordinary values, row after row, without a tag per row.
    pub fn tuple_list_header(&mut self, rows: usize, arity: usize) {
        self.buf.put_tag_varint(Tag::TupleList.code(), rows as u64);
        self.buf.put_varint(arity as u64);
    }

    /// The start of a RECORDS of `rows` dicts of `width` (at least 1) keys each; the keys
    /// then follow as ordinary values, then the rows' values, row after row, without a tag or
    /// keys per row.
    pub fn records_header(&mut self, rows: usize, width: usize) {
        self.buf.put_tag_varint(Tag::Records.code(), rows as u64);
        self.buf.put_varint(width as u64);
    }

    /// The start of a tuple of `n` values.
    #[inline]
    pub fn tuple_header(&mut self, n: usize) {
        self.counted(Tag::ShortTuple, tag::SHORT_SEQ_MAX, Tag::Tuple, n);
    }

    /// The start of a dict of `n` pairs.
    #[inline]
    pub fn dict_header(&mut self, n: usize) {
        self.counted(Tag::ShortDict, tag::SHORT_DICT_MAX, Tag::Dict, n);
    }

    /// The start of a set (or frozenset) of `n` elements.
    pub fn set_header(&mut self, n: usize, frozen: bool) {
        self.byte(if frozen { Tag::FrozenSet } else { Tag::Set }.code());
        self.varint(n as u64);
    }

    /// A reference to the value whose tag is at body offset `target`; marks that tag tracked.
    #[inline(always)]
    pub fn reference(&mut self, target: usize) {
        if let Some(t) = self.buf.get_mut(HEADER_LEN + target) {
            *t |= TRACKED;
        }
        self.reference_again(target);
    }

    /// A reference to the value whose tag is at body offset `target`, which an earlier
    /// [`Writer::reference`] already marked tracked.
    #[inline(always)]
    pub fn reference_again(&mut self, target: usize) {
        self.buf.put_tag_varint(Tag::Ref.code(), target as u64);
    }

    /// The `SUPERSEDE` prefix: the next value is dropped in favour of the `REF` after it.
    pub fn supersede(&mut self) {
        self.byte(Tag::Supersede.code());
    }

    /// An EXT atom: tag, code, the blob's length, then the blob.
    #[inline]
    pub fn ext_blob(&mut self, code: ExtCode, blob: &[u8]) {
        self.ext_header(code);
        self.varint(blob.len() as u64);
        self.buf.extend_from_slice(blob);
    }

    /// An EXT blob value: tag, code, the blob's length, then the blob, written straight into
    /// the sink (large data is copied once).
    #[inline]
    pub fn ext(&mut self, blob: &ExtBlob<'_>) {
        self.ext_header(blob.code());
        let n = blob.encoded_len();
        self.varint(n as u64);
        self.buf.reserve(n);
        let start = self.buf.len();
        blob.write(&mut self.buf);
        debug_assert_eq!(self.buf.len() - start, n, "{blob:?}");
    }

    /// The start of an EXT value: tag and code. Blob codes continue with
    /// [`Writer::blob_len`] and raw bytes, composite codes with their values.
    #[inline]
    pub fn ext_header(&mut self, code: ExtCode) {
        self.byte(Tag::Ext.code());
        self.byte(code.code());
    }

    /// A blob's length varint (after [`Writer::ext_header`]); the caller then appends exactly
    /// that many bytes with [`Writer::raw`].
    #[inline]
    pub fn blob_len(&mut self, n: usize) {
        self.varint(n as u64);
    }

    /// Bytes copied as they are (blob contents).
    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Room for `n` more bytes, for callers about to write a large blob piecewise.
    pub fn reserve(&mut self, n: usize) {
        self.buf.reserve(n);
    }

    /// An OBJECT of an already defined shape (numbered from 0); its values follow.
    #[inline]
    pub fn object_of_shape(&mut self, shape: usize) {
        self.byte(Tag::Object.code());
        self.varint(shape as u64 + 1);
    }

    /// An OBJECT that defines its shape inline; its values follow. The shape's number is the
    /// count of shapes defined before it in this payload.
    pub fn object_defining(&mut self, shape: &ShapeDef) {
        self.byte(Tag::Object.code());
        self.shape_definition(shape);
    }

    /// The start of an OBJECT_ROWS of `rows` instances; the shape (a
    /// [`Writer::shape_reference`] or a [`Writer::shape_definition`]) and then the
    /// [`Writer::float_columns`] follow, then the rows' fields.
    pub fn object_rows_header(&mut self, rows: usize) {
        self.buf.put_tag_varint(Tag::ObjectRows.code(), rows as u64);
    }

    /// The shape of an OBJECT_ROWS, defined before (numbered from 0).
    pub fn shape_reference(&mut self, shape: usize) {
        self.varint(shape as u64 + 1);
    }

    /// The shape of an OBJECT_ROWS, defined here: it gets the next shape number.
    pub fn shape_definition(&mut self, shape: &ShapeDef) {
        self.shape_definition_names(
            shape.module.as_bytes(),
            shape.qualname.as_bytes(),
            shape.kind as u8,
            shape.fields.iter().map(|f| f.as_bytes()),
            shape.fields.len(),
        );
    }

    /// The float columns of an OBJECT_ROWS: the field indexes, strictly increasing.
    pub fn float_columns(&mut self, columns: &[usize]) {
        self.varint(columns.len() as u64);
        for &column in columns {
            self.varint(column as u64);
        }
    }

    /// A float column's value in an OBJECT_ROWS row: its binary64, without a tag.
    #[inline]
    pub fn column_float(&mut self, v: f64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// [`Writer::object_defining`] from borrowed UTF-8 names.
    pub fn object_defining_names<'n>(
        &mut self,
        module: &[u8],
        qualname: &[u8],
        kind: u8,
        fields: impl IntoIterator<Item = &'n [u8]>,
        field_count: usize,
    ) {
        self.byte(Tag::Object.code());
        self.shape_definition_names(module, qualname, kind, fields, field_count);
    }

    /// [`Writer::shape_definition`] from borrowed UTF-8 names.
    pub fn shape_definition_names<'n>(
        &mut self,
        module: &[u8],
        qualname: &[u8],
        kind: u8,
        fields: impl IntoIterator<Item = &'n [u8]>,
        field_count: usize,
    ) {
        self.byte(0);
        self.name(module);
        self.name(qualname);
        self.byte(kind);
        if crate::object::ObjectKind::from_code(kind).is_some_and(|k| k.has_fields()) {
            self.varint(field_count as u64);
            for f in fields {
                self.name(f);
            }
        }
    }

    fn name(&mut self, utf8: &[u8]) {
        self.varint(utf8.len() as u64);
        self.buf.extend_from_slice(utf8);
    }
}

/// Strips redundant sign-extension bytes from two's complement little-endian digits.
fn minimal_twos_complement(mut digits: &[u8]) -> &[u8] {
    while let [rest @ .., next, last] = digits {
        let redundant = (*last == 0x00 && next & 0x80 == 0) || (*last == 0xFF && next & 0x80 != 0);
        if !redundant {
            break;
        }
        digits = &digits[..rest.len() + 1];
    }
    digits
}

/// What to do when meeting an immutable container (tuple, frozenset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImmutableStart {
    /// Already written: write a `REF` to this body offset instead.
    Ref(usize),
    /// Write it; pass this token to [`RefTracker::end_immutable`].
    Write(ImmutableToken),
    /// A cycle through this object was just discovered: stop this pass and encode again
    /// (after [`RefTracker::reset`] with `keep_cycles`).
    Restart,
}

impl ImmutableToken {
    /// Whether this write was wrapped in `SUPERSEDE` (which counts as one nesting level).
    pub fn is_superseded(&self) -> bool {
        self.superseded
    }
}

/// Bookkeeping for one write of an immutable container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImmutableToken {
    level: u32,
    superseded: bool,
    cyclic: bool,
    start: usize,
}

/// What [`RefTracker::seen_or_record_in_first_tier`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// The object was written before, at this body offset.
    Before(usize),
    /// First meeting: recorded.
    Now,
    /// Not looked up: ask [`RefTracker::seen_or_record`].
    NoRoom,
}

/// The identity memo of one encode. Identities are caller-chosen `usize` keys (a pointer).
///
/// A cycle through a tuple only shows when the encoder meets the tuple again while writing
/// it. The pass then stops ([`ImmutableStart::Restart`]) and the next pass knows the tuple is
/// cyclic: it wraps the outer writes in `SUPERSEDE`, and inside them it tracks every object,
/// including those a caller would skip as unshared (see [`RefTracker::track_everything`]),
/// because the elements of a re-entered tuple are met twice. A pass that finds the nesting
/// deeper than it assumed asks for one more ([`RefTracker::needs_rerun`]).
#[derive(Debug, Default)]
pub struct RefTracker {
    memo: IdentityMap,
    /// For a cyclic immutable: its writes at nesting levels below this value are superseded.
    superseded_below: FxHashMap<usize, u32>,
    /// How many writes of cyclic immutables are open.
    inside_cyclic: u32,
    rerun: bool,
}

impl RefTracker {
    /// A tracker with nothing seen.
    pub fn new() -> Self {
        RefTracker::default()
    }

    /// Forgets the objects written (for a new pass or a new payload) but keeps what it learned
    /// about cyclic immutables when `keep_cycles` is set.
    pub fn reset(&mut self, keep_cycles: bool) {
        self.memo.clear();
        self.rerun = false;
        self.inside_cyclic = 0;
        if !keep_cycles {
            self.superseded_below.clear();
        }
    }

    /// Slots the identity memo has allocated; kept across [`RefTracker::reset`].
    pub fn memo_capacity(&self) -> usize {
        self.memo.capacity()
    }

    /// How many identities the memo's hash table holds (0 while the first tier holds them
    /// all): a caller may prefetch lookups once the table outgrows the caches.
    #[inline(always)]
    pub fn table_entries(&self) -> usize {
        self.memo.table_entries()
    }

    /// The address of the memo slot where a lookup of `id` will start, while the memo is in
    /// its hash table; for a prefetch, as it is only computed, never read.
    #[inline(always)]
    pub fn slot_address(&self, id: usize) -> Option<usize> {
        self.memo.table_slot_address(id)
    }

    /// Whether this pass met a cycle through an immutable it did not expect: the output is
    /// not valid and the caller must encode again (after `reset(true)`).
    pub fn needs_rerun(&self) -> bool {
        self.rerun
    }

    /// Whether the caller must track every object, even those it knows to be unshared
    /// (inside the write of a cyclic immutable, whose elements are met more than once).
    #[inline]
    pub fn track_everything(&self) -> bool {
        self.inside_cyclic > 0
    }

    /// Whether [`RefTracker::seen_or_record`] can record one more object without growing
    /// its table: a caller that checks first keeps its fast path free of the allocation.
    #[inline(always)]
    pub fn has_room(&self) -> bool {
        self.memo.has_room()
    }

    /// Whether this pass has recorded few objects so far (at most 64), which the memo
    /// keeps in a small array rather than its table: a caller may then look up through
    /// [`RefTracker::seen_or_record_in_first_tier`], which leaves the table's code out.
    #[inline(always)]
    pub fn in_first_tier(&self) -> bool {
        self.memo.in_first_tier()
    }

    /// How many identities the first tier recorded: all of this pass's while
    /// [`RefTracker::in_first_tier`], and still its first 64 after the memo moved to its
    /// table, until [`RefTracker::reset`]. A caller that holds every recorded object (so
    /// that no other object takes its address) need only list those recorded after.
    #[inline]
    pub fn first_tier_len(&self) -> usize {
        self.memo.first_tier_len()
    }

    /// The identities the first tier recorded, in the order they came, from the `from`th on
    /// (see [`RefTracker::first_tier_len`]).
    #[inline]
    pub fn first_tier_ids(&self, from: usize) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.memo.first_tier_keys(from)
    }

    /// [`RefTracker::seen_or_record`] while [`RefTracker::in_first_tier`] and the first tier
    /// has room; otherwise [`Recorded::NoRoom`], changing nothing, and the caller calls
    /// `seen_or_record`. Trying this first keeps the table's code off a small message's path.
    #[inline(always)]
    pub fn seen_or_record_in_first_tier(&mut self, id: usize, pos: usize) -> Recorded {
        match self
            .memo
            .get_or_insert_in_first_tier(id, Entry::Written(pos))
        {
            Ok(Some(Entry::Written(offset))) => Recorded::Before(offset),
            Ok(Some(Entry::Building { .. }) | None) => Recorded::Now,
            Err(NoRoom) => Recorded::NoRoom,
        }
    }

    /// For a scalar or a mutable container about to be written at `pos`: the offset of its
    /// earlier occurrence, or `None` after recording this one.
    #[inline(always)]
    pub fn seen_or_record(&mut self, id: usize, pos: usize) -> Option<usize> {
        match self.memo.get_or_insert(id, Entry::Written(pos)) {
            Some(Entry::Written(offset)) => Some(offset),
            Some(Entry::Building { .. }) | None => None,
        }
    }

    /// Called when meeting an immutable container; may write the `SUPERSEDE` prefix.
    #[inline]
    pub fn begin_immutable<S: Sink>(
        &mut self,
        id: usize,
        writer: &mut Writer<S>,
    ) -> ImmutableStart {
        let level = match self.memo.get(id) {
            Some(Entry::Written(offset)) => return ImmutableStart::Ref(offset),
            Some(Entry::Building { level }) => level + 1,
            None => 0,
        };
        let below = self.superseded_below.get(&id).copied();
        if level > 0 && below.is_none() {
            // Met again while being written: the outer write (level 0) is superseded.
            self.superseded_below.insert(id, 1);
            return ImmutableStart::Restart;
        }
        let cyclic = below.is_some();
        let superseded = below.is_some_and(|below| level < below);
        self.inside_cyclic += u32::from(cyclic);
        if superseded {
            writer.supersede();
        }
        let start = writer.body_pos();
        self.memo.insert(id, Entry::Building { level });
        ImmutableStart::Write(ImmutableToken {
            level,
            superseded,
            cyclic,
            start,
        })
    }

    /// For an OBJECT made from its first value (spec 5.17.3): called once that value is
    /// written, where the decoder records the instance. From here on a meeting of the object
    /// is a `REF` to this write, unless a nested write became the real object first (then
    /// this one is a copy: superseded, or found so and redone by the next pass).
    /// [`RefTracker::end_immutable`] still closes the write after its other values.
    #[inline]
    pub fn first_value_complete(&mut self, id: usize, token: &ImmutableToken) {
        match self.memo.get(id) {
            Some(Entry::Building { level }) if level == token.level => {
                self.memo.insert(id, Entry::Written(token.start));
            }
            Some(Entry::Written(_)) if token.superseded => {}
            Some(Entry::Written(_)) => {
                let below = self.superseded_below.entry(id).or_insert(0);
                *below = (*below).max(token.level + 1);
                self.rerun = true;
            }
            _ => self.rerun = true,
        }
    }

    /// Called after the container's elements are written.
    #[inline]
    pub fn end_immutable<S: Sink>(
        &mut self,
        id: usize,
        token: ImmutableToken,
        writer: &mut Writer<S>,
    ) {
        self.inside_cyclic -= u32::from(token.cyclic);
        match self.memo.get(id) {
            // This write is the real object, recorded by `first_value_complete`.
            Some(Entry::Written(real)) if real == token.start => {}
            Some(Entry::Building { level }) if level == token.level => {
                self.memo.insert(id, Entry::Written(token.start));
            }
            Some(Entry::Written(real)) => {
                // A nested write of this same object finished first and is the real one.
                if token.superseded {
                    writer.reference(real);
                } else {
                    let below = self.superseded_below.entry(id).or_insert(0);
                    *below = (*below).max(token.level + 1);
                    self.rerun = true;
                }
            }
            _ => self.rerun = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn str_head_is_what_the_writer_puts_before_a_str() {
        for n in [0, 1, 23, 24, 127, 128, 300, 16_383, 16_384, 1 << 21] {
            let text = vec![b'a'; n];
            let mut writer = Writer::on(Vec::new());
            writer.str(&text);
            let written = &writer.into_bytes()[HEADER_LEN..];
            let (head, len) = str_head(n);
            assert_eq!(written.len(), len + n, "n = {n}");
            assert_eq!(&written[..len], &head.to_le_bytes()[..len], "n = {n}");
        }
    }

    #[test]
    fn bigint_digits_are_trimmed_to_minimal() {
        assert_eq!(minimal_twos_complement(&[0x80, 0x00, 0x00]), &[0x80, 0x00]);
        assert_eq!(minimal_twos_complement(&[0x80, 0xFF, 0xFF]), &[0x80]);
        assert_eq!(minimal_twos_complement(&[0x7F, 0xFF]), &[0x7F, 0xFF]);
        assert_eq!(minimal_twos_complement(&[0x00]), &[0x00]);
    }

    #[test]
    fn floats_pick_the_narrow_form_only_when_exact() {
        let mut w = Writer::default();
        w.float(1.5);
        w.float(0.1);
        w.float(f64::NAN);
        let body = &w.as_bytes()[HEADER_LEN..];
        assert_eq!(body[0], Tag::Float32.code());
        assert_eq!(body[5], Tag::Float64.code());
        assert_eq!(body[14], Tag::Float64.code());
    }
}
