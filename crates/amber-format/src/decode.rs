//! The reading side: one decoder that checks every byte, enforces the limits and resolves
//! references, generic over a [`Builder`] that makes the host's objects (Python objects in
//! the extension, [`crate::model::Graph`] nodes in tests and fuzzing).
//!
//! Nothing here panics on any input: reads are bounds-checked, lengths are checked against
//! the bytes left before anything is allocated, and arithmetic on lengths saturates.

use crate::envelope::{open, BodyOrigin, OpenOptions};
use crate::error::{BuildError, DecodeError, ErrorKind};
use crate::ext::{BuildAfterCode, CreateFirstCode, ExtBlob, ExtCode, ExtLayout};
use crate::limits::{cost, AllocBudget, Limits, HARD_MAX_DEPTH};
use crate::object::{self, Creation, NameProblem, ObjectKind, ShapeDef};
use crate::recent_refs::RecentRefs;
use crate::tag::{self, Tag, SMALL_INT_MAX, SMALL_INT_MIN, TRACKABLE, TRACKED};
use crate::varint::{read_varint, unzigzag, VarintError};
use crate::varint_word;
use rustc_hash::FxHashSet;

pub use crate::stack::{STACK_RED_ZONE, STACK_SEGMENT};

/// Where a pair goes in the dict being decoded, for [`Builder::dict_insert`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairPlace {
    /// The pair's number, from 0.
    pub index: usize,
    /// How many pairs the dict has.
    pub len: usize,
    /// Whether the dict is TRACKED, so that a REF inside its own values may reach it (and
    /// hand it to host code) before it is complete.
    pub referable: bool,
}

/// Makes host objects for the decoder. `Obj` clones are new references to the same object.
///
/// Containers are created empty with their final length and then filled in order; a list,
/// dict or set may be handed out (through a `REF`) while it is still being filled, a tuple or
/// frozenset never is.
pub trait Builder {
    /// A reference to a host object.
    type Obj: Clone;

    /// `None`.
    fn none(&mut self) -> Result<Self::Obj, BuildError>;
    /// `True` or `False`.
    fn bool(&mut self, v: bool) -> Result<Self::Obj, BuildError>;
    /// An int in the i64 range.
    fn int(&mut self, v: i64) -> Result<Self::Obj, BuildError>;
    /// An int from minimal two's complement little-endian digits, outside the i64 range.
    fn bigint(&mut self, twos_le: &[u8]) -> Result<Self::Obj, BuildError>;
    /// A float.
    fn float(&mut self, v: f64) -> Result<Self::Obj, BuildError>;
    /// A complex number.
    fn complex(&mut self, re: f64, im: f64) -> Result<Self::Obj, BuildError>;
    /// A str from bytes that must be strict UTF-8 ([`BuildError::InvalidUtf8`] otherwise).
    fn str(&mut self, utf8: &[u8]) -> Result<Self::Obj, BuildError>;
    /// A str that is a dict key, from bytes that must be strict UTF-8. Keys repeat across
    /// payloads far more than other strs do, so a builder may hand out a str it made before
    /// for the same bytes (strs have no identity of their own unless tracked, section 6).
    #[inline(always)]
    fn key_str(&mut self, utf8: &[u8]) -> Result<Self::Obj, BuildError> {
        self.str(utf8)
    }
    /// A str from UTF-8 that may also encode surrogates.
    fn str_surrogates(&mut self, bytes: &[u8]) -> Result<Self::Obj, BuildError>;
    /// A bytes object.
    fn bytes(&mut self, b: &[u8]) -> Result<Self::Obj, BuildError>;
    /// A bytearray.
    fn bytearray(&mut self, b: &[u8]) -> Result<Self::Obj, BuildError>;
    /// A list that will receive `len` items through [`Builder::list_set`].
    fn list(&mut self, len: usize) -> Result<Self::Obj, BuildError>;
    /// Puts item `index` (given in order 0, 1, ...) into a list.
    fn list_set(&mut self, list: &Self::Obj, index: usize, item: Self::Obj);
    /// The list of a PACKED_INT_LIST or PACKED_FLOAT_LIST of `len` items, which arrive through
    /// [`Builder::packed_int`] or [`Builder::packed_float`]. An ordinary list by default.
    #[inline(always)]
    fn packed_list(&mut self, len: usize) -> Result<Self::Obj, BuildError> {
        self.list(len)
    }
    /// Puts the int `v` at `index` (given in order) of a list from [`Builder::packed_list`].
    /// The item has no tag and no identity of its own; by default it is made as an INT's.
    #[inline(always)]
    fn packed_int(&mut self, list: &Self::Obj, index: usize, v: i64) -> Result<(), BuildError> {
        let item = self.int(v)?;
        self.list_set(list, index, item);
        Ok(())
    }
    /// Puts the ints `values` at `start..start + values.len()` of a list from
    /// [`Builder::packed_list`], whose items before `start` are in place: a stretch of a
    /// PACKED_INT_LIST, as [`Builder::packed_int`] would one by one (the default). On failure,
    /// the index in `values` of the item that could not be made.
    #[inline(always)]
    fn packed_ints(
        &mut self,
        list: &Self::Obj,
        start: usize,
        values: &[i64],
    ) -> Result<(), (usize, BuildError)> {
        packed_ints_one_by_one(self, list, start, values)
    }
    /// Puts the float `v` at `index` of a list from [`Builder::packed_list`], as
    /// [`Builder::packed_int`] does for ints.
    #[inline(always)]
    fn packed_float(&mut self, list: &Self::Obj, index: usize, v: f64) -> Result<(), BuildError> {
        let item = self.float(v)?;
        self.list_set(list, index, item);
        Ok(())
    }
    /// Fills a list from [`Builder::packed_list`] with the `raw.len() / 8` little-endian
    /// binary64 values of `raw`, in order, as [`Builder::packed_float`] would one by one
    /// (the default). On failure, the index of the item that could not be made.
    #[inline(always)]
    fn packed_floats(&mut self, list: &Self::Obj, raw: &[u8]) -> Result<(), (usize, BuildError)> {
        packed_floats_one_by_one(self, list, raw)
    }
    /// The list of a TUPLE_LIST of `rows` rows, which arrive through [`Builder::list_set`],
    /// each made by [`Builder::row`]. An ordinary list by default.
    #[inline(always)]
    fn tuple_list(&mut self, rows: usize) -> Result<Self::Obj, BuildError> {
        self.list(rows)
    }
    /// One row of a TUPLE_LIST: a tuple that will receive `arity` items through
    /// [`Builder::tuple_set`]. The row has no tag and no identity on the wire; by default it
    /// is made as a TUPLE's.
    #[inline(always)]
    fn row(&mut self, arity: usize) -> Result<Self::Obj, BuildError> {
        self.tuple(arity)
    }
    /// The list of a RECORDS of `rows` rows, which arrive through [`Builder::list_set`], each
    /// made by [`Builder::record`]. An ordinary list by default.
    #[inline(always)]
    fn records(&mut self, rows: usize) -> Result<Self::Obj, BuildError> {
        self.list(rows)
    }
    /// The list of an OBJECT_ROWS of `rows` rows, which arrive through [`Builder::list_set`],
    /// each made by [`Builder::object_begin`]. An ordinary list by default.
    #[inline(always)]
    fn object_rows(&mut self, rows: usize) -> Result<Self::Obj, BuildError> {
        self.list(rows)
    }
    /// The keys of a RECORDS, `width` of them, which arrive through [`Builder::check_key`] and
    /// [`Builder::schema_insert`]. The schema is not a value of the payload: the decoder passes
    /// it back to [`Builder::record`] and then drops it. A dict by default.
    #[inline(always)]
    fn schema(&mut self, width: usize) -> Result<Self::Obj, BuildError> {
        self.dict(width)
    }
    /// Adds key `index` of `width`, which passed [`Builder::check_key`], to a schema. Fails for
    /// a duplicate key. By default the key goes in with the value None, as a pair of a dict
    /// that host code may reach (so that a builder does not take the schema for a record).
    #[inline(always)]
    fn schema_insert(
        &mut self,
        schema: &Self::Obj,
        key: Self::Obj,
        index: usize,
        width: usize,
    ) -> Result<(), BuildError> {
        let none = self.none()?;
        let place = PairPlace {
            index,
            len: width,
            referable: true,
        };
        self.dict_insert(schema, key, none, place)
    }
    /// One row of a RECORDS: a dict that will receive the values of the `width` keys of
    /// `schema` through [`Builder::record_set`]. The row has no tag and no identity on the
    /// wire; by default it is made as a DICT's.
    #[inline(always)]
    fn record(&mut self, _schema: &Self::Obj, width: usize) -> Result<Self::Obj, BuildError> {
        self.dict(width)
    }
    /// Gives key `index` of a row (keys come in order) its value. `key` is the schema's key
    /// object, checked once for the whole RECORDS. By default the pair is inserted as a DICT's.
    #[inline(always)]
    fn record_set(
        &mut self,
        row: &Self::Obj,
        index: usize,
        width: usize,
        key: &Self::Obj,
        value: Self::Obj,
    ) -> Result<(), BuildError> {
        let place = PairPlace {
            index,
            len: width,
            referable: false,
        };
        self.dict_insert(row, key.clone(), value, place)
    }
    /// A tuple that will receive `len` items through [`Builder::tuple_set`].
    fn tuple(&mut self, len: usize) -> Result<Self::Obj, BuildError>;
    /// Puts item `index` (given in order) into a tuple.
    fn tuple_set(&mut self, tuple: &Self::Obj, index: usize, item: Self::Obj);
    /// A dict that will receive `len` pairs.
    fn dict(&mut self, len: usize) -> Result<Self::Obj, BuildError>;
    /// Checks a dict key or set element as soon as it is decoded, before anything else is
    /// read: fails for an unhashable key or one that trips hash-flooding limits.
    fn check_key(&mut self, container: &Self::Obj, key: &Self::Obj) -> Result<(), BuildError>;
    /// Adds a pair, at `place` (pairs come in order), whose key passed
    /// [`Builder::check_key`]. Fails for a duplicate key.
    fn dict_insert(
        &mut self,
        dict: &Self::Obj,
        key: Self::Obj,
        value: Self::Obj,
        place: PairPlace,
    ) -> Result<(), BuildError>;
    /// A set (or frozenset when `frozen`) that will receive `len` elements.
    fn set(&mut self, len: usize, frozen: bool) -> Result<Self::Obj, BuildError>;
    /// Adds an element that passed [`Builder::check_key`]; fails for a duplicate.
    fn set_add(&mut self, set: &Self::Obj, item: Self::Obj) -> Result<(), BuildError>;

    /// An EXT value with a [`ExtLayout::Blob`] layout: `blob` is its value, which the
    /// decoder parsed from `raw` (the blob's bytes) and whose layout it checked. What is left
    /// to the builder are the host's own checks (spec 5.16.1) and, for an OUT_OF_BAND value,
    /// looking its buffer up; an OUT_OF_BAND index is never one an earlier value used.
    fn ext_blob(&mut self, blob: ExtBlob<'_>, raw: &[u8]) -> Result<Self::Obj, BuildError>;
    /// An empty EXT value of a [`ExtLayout::CreateFirst`] code; [`Builder::ext_finish`]
    /// gives it its values.
    fn ext_begin(&mut self, code: CreateFirstCode) -> Result<Self::Obj, BuildError>;
    /// Completes a value made by [`Builder::ext_begin`] with its decoded values.
    fn ext_finish(
        &mut self,
        code: CreateFirstCode,
        obj: &Self::Obj,
        values: Vec<Self::Obj>,
    ) -> Result<(), BuildError>;
    /// An EXT value of a [`ExtLayout::BuildAfter`] code, from its decoded values.
    fn ext_build(
        &mut self,
        code: BuildAfterCode,
        values: Vec<Self::Obj>,
    ) -> Result<Self::Obj, BuildError>;

    /// Learns shape number `index` (numbered from 0 in payload order) before any instance of
    /// it is built: the place to refuse a class the caller did not allow.
    fn define_shape(&mut self, index: usize, shape: ShapeDef) -> Result<(), BuildError>;
    /// An empty instance of a shape whose kind [`ObjectKind::creates_first`].
    fn object_begin(&mut self, shape: usize) -> Result<Self::Obj, BuildError>;
    /// Gives value `index` (in order) to an instance made by [`Builder::object_begin`].
    fn object_set(
        &mut self,
        obj: &Self::Obj,
        shape: usize,
        index: usize,
        value: Self::Obj,
    ) -> Result<(), BuildError>;
    /// An instance of a shape whose kind is made [`Creation::FromFirstValue`], from that
    /// complete first value; the others come through [`Builder::object_set`] (from index 1).
    fn object_from_first(
        &mut self,
        shape: usize,
        first: Self::Obj,
    ) -> Result<Self::Obj, BuildError>;
    /// Completes an instance made by [`Builder::object_begin`] or
    /// [`Builder::object_from_first`] once all its values are set.
    fn object_finish(&mut self, obj: &Self::Obj, shape: usize) -> Result<(), BuildError>;
    /// An instance of a shape built from its values (named tuple, enum member, custom type).
    fn object_build(
        &mut self,
        shape: usize,
        values: Vec<Self::Obj>,
    ) -> Result<Self::Obj, BuildError>;

    // Tracing hooks. The decoder reports where each value sits, so that a builder can record
    // the payload's structure as the checks pass it (see [`crate::trace`]). They do nothing by
    // default, and the decoder calls them only when `TRACES` is set: a constant, so that for
    // other builders the calls vanish at compile time and the decoder's code stays as it was.

    /// Whether the decoder calls the tracing hooks below.
    const TRACES: bool = false;

    /// A value starts: its tag byte `tag` is at absolute offset `at`, inside `depth` open
    /// nesting levels (0 for the root). Called for every value, a REF included (also the REF
    /// that ends a SUPERSEDE), before any other call about it.
    #[inline(always)]
    fn trace_start(&mut self, _at: usize, _tag: u8, _depth: u32) {}
    /// The innermost started value is complete: `end` is the absolute offset just past it and
    /// `obj` what it decoded to. Not called for a value whose decoding failed.
    #[inline(always)]
    fn trace_end(&mut self, _end: usize, _obj: &Self::Obj) {}
    /// The innermost started value has a TRACKED tag: entry `index` of the identity table.
    #[inline(always)]
    fn trace_tracked(&mut self, _index: usize) {}
    /// The innermost started value is a REF to the tag at absolute offset `target`, which is
    /// entry `index` of the identity table.
    #[inline(always)]
    fn trace_reference(&mut self, _target: usize, _index: usize) {}
    /// The innermost started value is a packed list of `len` items, whose tag and count end at
    /// absolute offset `head_end`; its items follow without tags (no values of their own).
    #[inline(always)]
    fn trace_packed(&mut self, _head_end: usize, _len: usize) {}
    /// The innermost started value is a TUPLE_LIST of `rows` rows of `arity` items, whose
    /// tag, count and arity end at absolute offset `head_end`. The rows have no tags: the
    /// items that follow are its values, two levels deeper.
    #[inline(always)]
    fn trace_tuple_list(&mut self, _head_end: usize, _rows: usize, _arity: usize) {}
    /// The innermost started value is a RECORDS of `rows` rows of `width` keys, whose tag,
    /// count and width end at absolute offset `head_end`. The keys follow, then the rows'
    /// values; the rows have no tags, and keys and values are two levels deeper.
    #[inline(always)]
    fn trace_records(&mut self, _head_end: usize, _rows: usize, _width: usize) {}
    /// An OBJECT_ROWS of `rows` instances of shape number `shape` (defined in its head when
    /// `defines`), whose float columns are the fields `columns`; its head ends at `head_end`.
    fn trace_object_rows(
        &mut self,
        _head_end: usize,
        _rows: usize,
        _shape: usize,
        _defines: bool,
        _columns: &[usize],
    ) {
    }
    /// The innermost started value is a float column's value in an OBJECT_ROWS row (started
    /// with FLOAT64's tag, whose payload it is): it has no tag of its own.
    #[inline(always)]
    fn trace_column_float(&mut self, _shape: usize, _field: usize) {}
    /// The innermost started value is an EXT value with this code.
    #[inline(always)]
    fn trace_ext(&mut self, _code: ExtCode) {}
    /// The innermost started value is an EXT blob of `len` bytes, whose layout is checked
    /// next (so a trace of an invalid blob still shows its extent).
    #[inline(always)]
    fn trace_blob(&mut self, _code: ExtCode, _len: usize) {}
    /// The innermost started value is an OBJECT of shape number `shape`; `defines` when the
    /// shape's definition is part of it (the definition was passed to
    /// [`Builder::define_shape`] just before).
    #[inline(always)]
    fn trace_object(&mut self, _shape: usize, _defines: bool) {}
}

/// Decodes one payload with `builder`, enforcing `limits`: a plain payload, or a compressed
/// one (its decompressed body is charged to the same allocation budget). A signed payload
/// needs [`crate::envelope::open`] with its keys, then [`decode_body`].
pub fn decode<B: Builder>(
    data: &[u8],
    limits: &Limits,
    builder: &mut B,
) -> Result<B::Obj, DecodeError> {
    let options = OpenOptions::unsigned(limits.alloc_budget(data.len()));
    let opened = open(data, &options)?;
    decode_body(
        opened.body(),
        opened.origin(),
        limits.max_depth,
        opened.budget(),
        builder,
    )
}

/// Decodes a body (the root value and nothing after it, no header) with `builder`. Offsets in
/// errors are placed by `origin`; `budget` is what the whole decode may still allocate.
pub fn decode_body<B: Builder>(
    body: &[u8],
    origin: BodyOrigin,
    max_depth: u32,
    budget: AllocBudget,
    builder: &mut B,
) -> Result<B::Obj, DecodeError> {
    // Every call before the first vector: a vector made before a call that may unwind is
    // kept aside to be dropped if it does, then copied in with 16-byte loads just after the
    // 8-byte stores that made it, a failed store forward that drew about 5% of the profile
    // samples of the Python extension's `loads(None)`.
    let stack_limit = crate::stack::limit();
    let mut decoder = Decoder {
        data: body,
        pos: 0,
        body: 0,
        depth: 0,
        max_depth: max_depth.min(HARD_MAX_DEPTH),
        allocated: budget.spent,
        max_alloc: budget.limit,
        tracked: Vec::new(),
        shapes: Vec::new(),
        builder,
        stack_limit,
        ref_index: RefIndex::default(),
        buffers_used: FxHashSet::default(),
    };
    let root = decoder.value().map_err(|e| origin.locate(e))?;
    if decoder.pos != body.len() {
        return Err(origin.locate(DecodeError::new(
            ErrorKind::TrailingBytes,
            decoder.pos,
            format!(
                "{} bytes follow the end of the root value",
                body.len() - decoder.pos
            ),
        )));
    }
    Ok(root)
}

/// A tracked value: where its tag is (body offset) and, once it may be referenced, the object.
struct TrackedSlot<O> {
    offset: usize,
    obj: Option<O>,
}

/// log2 of the body bytes one entry of [`RefIndex::runs`] covers (at most 4: the bits of
/// an entry's mask).
const REF_RUN_BITS: u32 = 4;
/// Bits of a [`RefIndex::runs`] entry below its position: the run's mask.
const REF_MASK_BITS: u32 = 1 << REF_RUN_BITS;
/// log2 of the runs one entry of [`RefIndex::blocks`] covers. A block is 1 KiB of body, so
/// it holds at most 1,024 values and a run's position past its block's fits above the mask.
const REF_BLOCK_BITS: u32 = 6;

/// Where the decoder finds a `REF`'s target in its table of tracked values, which is in
/// offset order. For each run of 16 body bytes, one word: a mask of the bytes of the run where
/// a tracked value starts, and the position of the run's first value, counted from that of
/// its block of 64 runs. A lookup is a bit test and a count of the mask's bits below the
/// target's, with no branch on how many values share the run, and nothing is hashed or
/// rebuilt.
///
/// - A hash index of the positions, doubled whenever it was half full, cost a list of
///   100,000 strs drawn from 25,000 (every str tracked) 6 rebuilds per decode, about 8% of
///   its instructions.
/// - Without the masks, a lookup stepped through the run's values to the target: a long list
///   mixing REFs to four values at the start of the body took a mispredicted branch on most
///   of them and decoded 35% slower.
/// - With whole positions beside the masks (8 bytes a run), the index was twice as large and
///   the list of strs decoded about 45% slower than with the 4-byte words here (2.6 ms
///   against 1.8 ms): its working set already overflows the cache.
///
/// It costs about 4 bytes per 16 bytes of body up to the last tracked value, bounded by the
/// input.
#[derive(Default)]
struct RefIndex {
    /// By body offset >> [`REF_RUN_BITS`]: the run's mask, and above it the position of its
    /// first value less its block's.
    runs: Vec<u32>,
    /// By run >> [`REF_BLOCK_BITS`]: the position of the first tracked value at or past the
    /// block's start.
    blocks: Vec<usize>,
    /// Set by the first `REF`: until then nothing is indexed, so payloads without one pay
    /// for no index.
    started: bool,
    /// The targets found last, which skip the search (see `recent_refs.rs`). Its slots are
    /// made with every decoder, `REF`s or not: about 30 instructions a decode (job_hash's
    /// decode 9,076 to 9,107); a memory boxed at the first `REF` instead came out at 9,165.
    recent: RecentRefs,
}

impl RefIndex {
    /// An index of every value in `tracked`.
    #[cold]
    fn of<O>(tracked: &[TrackedSlot<O>]) -> RefIndex {
        let mut index = RefIndex {
            runs: Vec::new(),
            blocks: Vec::new(),
            started: true,
            recent: RecentRefs::default(),
        };
        for (position, slot) in tracked.iter().enumerate() {
            index.add(slot.offset, position);
        }
        index
    }

    /// Records that the value at body offset `offset`, past every value added before, is
    /// `tracked[position]`.
    #[inline]
    fn add(&mut self, offset: usize, position: usize) {
        let run = offset >> REF_RUN_BITS;
        let block = run >> REF_BLOCK_BITS;
        if block >= self.blocks.len() {
            self.blocks.resize(block + 1, position);
        }
        if run >= self.runs.len() {
            self.runs.resize(run + 1, 0);
        }
        let (Some(entry), Some(&base)) = (self.runs.get_mut(run), self.blocks.get(block)) else {
            return;
        };
        if *entry == 0 {
            // The run's first value: at most 1,023 past its block's first.
            *entry = ((position - base) as u32) << REF_MASK_BITS;
        }
        *entry |= 1 << (offset & (REF_MASK_BITS as usize - 1));
    }

    /// [`RefIndex::find`], answered from the targets found last when it can (see
    /// `recent_refs.rs`).
    #[inline(always)]
    fn find_recent<O>(&mut self, target: u64, tracked: &[TrackedSlot<O>]) -> Option<usize> {
        if self.recent.is_on() {
            if let Some(position) = self.recent.get(target) {
                debug_assert_eq!(Some(position), self.find(target, tracked));
                return Some(position);
            }
        }
        let position = self.find(target, tracked)?;
        if self.recent.is_on() {
            self.recent.missed(target, position);
        }
        Some(position)
    }

    /// The position in `tracked` of the value at body offset `target`, if one is tracked
    /// there.
    #[inline]
    fn find<O>(&self, target: u64, tracked: &[TrackedSlot<O>]) -> Option<usize> {
        let run = usize::try_from(target >> REF_RUN_BITS).unwrap_or(usize::MAX);
        let (Some(&entry), Some(&base)) =
            (self.runs.get(run), self.blocks.get(run >> REF_BLOCK_BITS))
        else {
            return tracked
                .binary_search_by_key(&target, |t| t.offset as u64)
                .ok();
        };
        let bit = 1u32 << (target & u64::from(REF_MASK_BITS - 1));
        if entry & bit == 0 {
            return None;
        }
        let below = entry & (bit - 1);
        let before = ONES[(below & 0xFF) as usize] + ONES[(below >> 8 & 0xFF) as usize];
        Some(base + (entry >> REF_MASK_BITS) as usize + usize::from(before))
    }
}

/// The number of bits set in each byte. Wheels are built for the baseline x86-64, which has
/// no `popcnt` instruction, and `count_ones` there is a chain of a dozen dependent
/// operations on the path of every `REF`: it cost a list of 100,000 REF-heavy strs 6.6%
/// more instructions, and about 5% more time, than two loads from this table.
static ONES: [u8; 256] = {
    let mut ones = [0u8; 256];
    let mut byte = 0;
    while byte < 256 {
        ones[byte] = (byte as u8).count_ones() as u8;
        byte += 1;
    }
    ones
};

struct Decoder<'a, B: Builder> {
    data: &'a [u8],
    /// Absolute position of the next byte.
    pos: usize,
    /// Absolute position of body offset 0.
    body: usize,
    depth: u32,
    max_depth: u32,
    allocated: u64,
    max_alloc: u64,
    /// Tracked values in offset order (tags are read in offset order).
    tracked: Vec<TrackedSlot<B::Obj>>,
    /// Kind and value count of each shape defined so far, by shape number.
    shapes: Vec<(ObjectKind, usize)>,
    builder: &'a mut B,
    /// See [`crate::stack`].
    stack_limit: usize,
    /// Where each tracked value sits in `tracked`, by body offset. Empty until the first
    /// `REF`, so payloads without any pay nothing; from then on every tracked value is added
    /// as it is met, and the index is made again, twice as long, each time `tracked` doubles.
    ref_index: RefIndex,
    /// The OUT_OF_BAND buffer indices used so far, in discarded SUPERSEDE copies too: each
    /// buffer backs at most one value (spec 5.16.6), which bounds what a host copies.
    buffers_used: FxHashSet<u64>,
}

/// A stretch of a packed int run (see [`Decoder::packed_int_items`]): the ints of its items
/// and their offsets, read before the builder makes them.
struct IntStretch<const N: usize> {
    values: [i64; N],
    offsets: [usize; N],
}

impl<const N: usize> IntStretch<N> {
    /// Puts the `K` ints of a word that [`varint_word::take`] took, `W` bytes each, at
    /// index `k`, with their offsets from `pos`, and charges those outside the inline range:
    /// the number of items taken, or 0 (and nothing changed) when that charge would pass
    /// `room`, or the stretch has no room.
    #[inline(always)]
    fn put_word<const K: usize, const W: usize>(
        &mut self,
        items: &[i64; K],
        k: usize,
        pos: &mut usize,
        spent: &mut u64,
        room: u64,
    ) -> usize {
        let (Some(values), Some(offsets)) = (
            self.values.get_mut(k..k + K),
            self.offsets.get_mut(k..k + K),
        ) else {
            return 0;
        };
        // Two-byte items are all outside (see `varint_word::Word::Pairs`); one-byte items
        // from -64 to 63 are outside below the inline range's lower end.
        let outside = if W == 2 {
            K as u64
        } else {
            items.iter().map(|&v| u64::from(v < SMALL_INT_MIN)).sum()
        };
        debug_assert_eq!(
            outside,
            items
                .iter()
                .filter(|v| !(SMALL_INT_MIN..=SMALL_INT_MAX).contains(*v))
                .count() as u64
        );
        let charge = *spent + outside * cost::SCALAR;
        if charge > room {
            return 0;
        }
        values.copy_from_slice(items);
        let at = *pos;
        offsets.copy_from_slice(&std::array::from_fn::<usize, K, _>(|j| at + j * W));
        *spent = charge;
        *pos += 8;
        K
    }
}

/// The error of [`Decoder::take`] and [`Decoder::take_array`]: `what`, at `start`, needs `n`
/// bytes and only `left` are left.
#[cold]
#[inline(never)]
fn truncated_error(what: &str, n: usize, start: usize, left: usize) -> DecodeError {
    DecodeError::new(
        ErrorKind::Truncated,
        start,
        format!("{what} needs {n} bytes but {left} are left"),
    )
}

/// The error of [`Decoder::enter`]: the nesting level opened at `at` is past `max_depth`.
#[cold]
#[inline(never)]
fn depth_error(at: usize, max_depth: u32) -> DecodeError {
    DecodeError::new(
        ErrorKind::DepthLimit,
        at,
        format!("nesting deeper than max_depth={max_depth}"),
    )
}

/// The error of [`Decoder::check_count`]: `n` elements declared at `at` with only `left` bytes
/// left.
#[cold]
#[inline(never)]
fn count_error(n: u64, at: usize, what: &str, left: u64) -> DecodeError {
    DecodeError::new(
        ErrorKind::LengthTooLarge,
        at,
        format!("{what} declares {n} elements but only {left} bytes are left"),
    )
}

fn host_error(e: BuildError, at: usize, what: &str) -> DecodeError {
    build_error(e, at, what, ErrorKind::DuplicateKey)
}

fn build_error(e: BuildError, at: usize, what: &str, duplicate: ErrorKind) -> DecodeError {
    match e {
        BuildError::Unhashable => {
            DecodeError::new(ErrorKind::Unhashable, at, format!("{what} is not hashable"))
        }
        BuildError::Duplicate => DecodeError::new(
            duplicate,
            at,
            format!("{what} equals an earlier one in the same container"),
        ),
        BuildError::HashLimit => DecodeError::new(
            ErrorKind::HashLimit,
            at,
            format!("{what} exceeds the hash-flooding limits (too many equal hashes or too much hashing work)"),
        ),
        BuildError::InvalidUtf8 => DecodeError::new(
            ErrorKind::InvalidUtf8,
            at,
            "string bytes are not valid UTF-8",
        ),
        BuildError::Host => DecodeError::new(ErrorKind::Host, at, format!("building a {what} failed")),
        BuildError::Rejected(kind, detail) => DecodeError::new(kind, at, detail),
    }
}

impl<'a, B: Builder> Decoder<'a, B> {
    #[inline]
    fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    #[inline]
    fn byte(&mut self) -> Result<u8, DecodeError> {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(DecodeError::new(
                ErrorKind::Truncated,
                self.pos,
                "input ends where a value should start",
            )),
        }
    }

    // The checks of `take`, `take_array` and `enter` run for nearly every value; their errors
    // are built out of line, so that the checks inline into the loops that call them.
    #[inline(always)]
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        let data: &'a [u8] = self.data;
        match start.checked_add(n).and_then(|end| data.get(start..end)) {
            Some(slice) => {
                self.pos = start + n;
                Ok(slice)
            }
            None => Err(truncated_error(what, n, start, self.remaining())),
        }
    }

    #[inline(always)]
    fn take_array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], DecodeError> {
        let start = self.pos;
        match self
            .data
            .get(start..)
            .and_then(|rest| rest.first_chunk::<N>())
        {
            Some(chunk) => {
                self.pos = start + N;
                Ok(*chunk)
            }
            None => Err(truncated_error(what, N, start, self.remaining())),
        }
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, DecodeError> {
        // Varints of up to three bytes (counts, lengths, offsets below 2 MiB) without the
        // general loop.
        let start = self.pos;
        if let Some(&[b0, b1, b2]) = self.data.get(start..start + 3) {
            if b0 < 0x80 {
                self.pos = start + 1;
                return Ok(u64::from(b0));
            }
            let low = u64::from(b0 & 0x7F);
            if b1 < 0x80 {
                if b1 != 0 {
                    self.pos = start + 2;
                    return Ok(low | (u64::from(b1) << 7));
                }
            } else if b2 < 0x80 && b2 != 0 {
                self.pos = start + 3;
                return Ok(low | (u64::from(b1 & 0x7F) << 7) | (u64::from(b2) << 14));
            }
        }
        self.varint_slow()
    }

    #[inline(never)]
    fn varint_slow(&mut self) -> Result<u64, DecodeError> {
        let start = self.pos;
        let rest = self.data.get(start..).unwrap_or(&[]);
        match read_varint(rest) {
            Ok((v, used)) => {
                self.pos = start + used;
                Ok(v)
            }
            Err(VarintError::Truncated) => Err(DecodeError::new(
                ErrorKind::Truncated,
                start,
                "input ends inside a varint",
            )),
            Err(VarintError::Overlong) => Err(DecodeError::new(
                ErrorKind::OverlongVarint,
                start,
                "varint has a redundant final zero byte",
            )),
            Err(VarintError::Overflow) => Err(DecodeError::new(
                ErrorKind::VarintOverflow,
                start,
                "varint is longer than 10 bytes or above 2^64-1",
            )),
        }
    }

    /// A byte-string length: it must fit in what is left (else `truncated` at the tag `at`).
    #[inline]
    fn byte_len(&mut self, at: usize, what: &str) -> Result<usize, DecodeError> {
        let n = self.varint()?;
        let left = self.remaining();
        if n > left as u64 {
            return Err(DecodeError::new(
                ErrorKind::Truncated,
                at,
                format!("{what} declares {n} bytes but {left} are left"),
            ));
        }
        Ok(n as usize)
    }

    /// A container count: each element needs at least `min_bytes` bytes of what is left.
    #[inline]
    fn count(&mut self, at: usize, min_bytes: u64, what: &str) -> Result<usize, DecodeError> {
        let n = self.varint()?;
        self.check_count(n, at, min_bytes, what)
    }

    /// Checks that `n` elements of at least `min_bytes` bytes each (at least 1) fit in what
    /// is left. Compared as a product, not as `n > left / min_bytes` (the same test: a
    /// product past u64 is past `left` too): the division was a `div` instruction for every
    /// container, short tuples included, and with the message built in line the check was
    /// a call with a stack frame of its own.
    #[inline(always)]
    fn check_count(
        &self,
        n: u64,
        at: usize,
        min_bytes: u64,
        what: &str,
    ) -> Result<usize, DecodeError> {
        let left = self.remaining() as u64;
        match n.checked_mul(min_bytes) {
            Some(need) if need <= left => Ok(n as usize),
            _ => Err(count_error(n, at, what, left)),
        }
    }

    #[inline]
    fn charge(&mut self, bytes: u64, at: usize) -> Result<(), DecodeError> {
        self.allocated = self.allocated.saturating_add(bytes);
        if self.allocated > self.max_alloc {
            return Err(self.alloc_error(at));
        }
        Ok(())
    }

    #[cold]
    fn alloc_error(&self, at: usize) -> DecodeError {
        DecodeError::new(
            ErrorKind::AllocLimit,
            at,
            format!(
                "decoding would allocate more than max_alloc={} bytes",
                self.max_alloc
            ),
        )
    }

    #[inline(always)]
    fn enter(&mut self, at: usize) -> Result<(), DecodeError> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(depth_error(at, self.max_depth));
        }
        Ok(())
    }

    #[inline]
    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Runs one nesting level on a stack with room to spare: recursion depth is bounded by
    /// `max_depth`, but a thread's stack may be small, so it grows on demand instead.
    #[inline]
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        if crate::stack::here() > self.stack_limit {
            f(self)
        } else {
            crate::stack::grow(self, |d| &mut d.stack_limit, f)
        }
    }

    fn value(&mut self) -> Result<B::Obj, DecodeError> {
        let at = self.pos;
        let tag = self.byte()?;
        if B::TRACES {
            self.builder.trace_start(at, tag, self.depth);
            let obj = self.after_tag(tag, at)?;
            self.builder.trace_end(self.pos, &obj);
            return Ok(obj);
        }
        self.after_tag(tag, at)
    }

    /// A value inside a container's loop: the scalars that rows and documents are mostly made
    /// of (an inline int, None, a boolean, a SHORT_STR, INT, FLOAT64) and REFs are read here,
    /// in the loop itself; anything else goes through [`Decoder::value`]. The reads, checks,
    /// charges and errors are [`Decoder::after_tag`]'s and [`Decoder::trackable`]'s for the
    /// same tags (the payloads are read by the same functions): only the call and the
    /// dispatch are saved, 11% of decoding a list of dicts of three small fields (callgrind).
    /// `tests/test_loop_reads.py` compares both paths, prefix by prefix and budget by budget.
    #[inline(always)]
    fn value_in_loop(&mut self) -> Result<B::Obj, DecodeError> {
        let at = self.pos;
        if !B::TRACES {
            if let Some(&tag) = self.data.get(at) {
                match tag {
                    0x00..=0x3F => {
                        self.pos += 1;
                        return self
                            .builder
                            .int(i64::from(tag))
                            .map_err(|e| host_error(e, at, "value"));
                    }
                    0x80..=0x8F => {
                        self.pos += 1;
                        return self
                            .builder
                            .int(i64::from(tag) - 0x90)
                            .map_err(|e| host_error(e, at, "value"));
                    }
                    // None and the booleans: a JSON document's nulls and flags. Through
                    // `value` each cost a call and a dispatch: decoding `[None] * 100_000`
                    // ran 95 instructions an item that way, 47 here (callgrind).
                    0x90 => {
                        self.pos += 1;
                        return self.builder.none().map_err(|e| host_error(e, at, "value"));
                    }
                    0x91 | 0x92 => {
                        self.pos += 1;
                        return self
                            .builder
                            .bool(tag == 0x92)
                            .map_err(|e| host_error(e, at, "value"));
                    }
                    0x93 => {
                        self.pos += 1;
                        return self.reference(at);
                    }
                    0x40..=0x57 => {
                        let n = usize::from(tag - Tag::ShortStr.code());
                        if n < self.remaining() {
                            self.pos += 1;
                            return self.str_payload(at, n, false);
                        }
                    }
                    // A tracked SHORT_STR: the first of the REFs of a str a payload repeats.
                    0xC0..=0xD7 => {
                        let n = usize::from(tag - (Tag::ShortStr.code() | TRACKED));
                        if n < self.remaining() {
                            self.pos += 1;
                            let index = self.track(at)?;
                            let obj = self.str_payload(at, n, false)?;
                            self.record_built(index, &obj);
                            return Ok(obj);
                        }
                    }
                    // Untracked short containers (a document's rows, a list's pairs) go
                    // straight to their readers through `short_container`, as in
                    // `trackable`: `value`'s dispatch cost about 70 instructions a container
                    // (callgrind).
                    0x58..=0x5B => {
                        self.pos += 1;
                        let n = tag - Tag::ShortList.code();
                        return self.short_container(at, n, 1, "list", |d, n| d.list(at, n, None));
                    }
                    0x5C..=0x5F => {
                        self.pos += 1;
                        let n = tag - Tag::ShortTuple.code();
                        return self.short_container(at, n, 1, "tuple", |d, n| d.tuple(at, n));
                    }
                    0x60..=0x67 => {
                        self.pos += 1;
                        let n = tag - Tag::ShortDict.code();
                        return self.short_container(at, n, 2, "dict", |d, n| d.dict(at, n, None));
                    }
                    0x6C => {
                        self.pos += 1;
                        return self.int_payload(at);
                    }
                    0x6E => {
                        self.pos += 1;
                        return self.float64(at);
                    }
                    _ => {}
                }
            }
        }
        self.value()
    }

    /// A dict key: an untracked SHORT_STR goes to [`Builder::key_str`], anything else is
    /// decoded as any value. (A tracked key is the first of several `REF`s to it and is
    /// built once anyway; traced decodes take the general path so that every value is
    /// reported the same way.)
    #[inline(always)]
    fn key(&mut self) -> Result<B::Obj, DecodeError> {
        let at = self.pos;
        if !B::TRACES {
            if let Some(&tag) = self.data.get(at) {
                if (0x40..=0x57).contains(&tag) {
                    let n = usize::from(tag - Tag::ShortStr.code());
                    if n < self.remaining() {
                        self.pos += 1;
                        self.charge(cost::str(n as u64), at)?;
                        let raw = self.take(n, "str")?;
                        return self
                            .builder
                            .key_str(raw)
                            .map_err(|e| host_error(e, at + 1, "str"));
                    }
                }
            }
        }
        self.value()
    }

    /// The value whose tag byte `tag` (at `at`) was just read.
    #[inline(always)]
    fn after_tag(&mut self, tag: u8, at: usize) -> Result<B::Obj, DecodeError> {
        let built = match tag {
            0x00..=0x3F => self.builder.int(i64::from(tag)),
            0x80..=0x8F => self.builder.int(i64::from(tag) - 0x90),
            0x90 => self.builder.none(),
            0x91 => self.builder.bool(false),
            0x92 => self.builder.bool(true),
            0x93 => return self.reference(at),
            0x94 => return self.nested(|d| d.supersede(at)),
            _ if tag & TRACKABLE != 0 => return self.trackable(tag, at),
            _ => {
                return Err(DecodeError::new(
                    ErrorKind::UnknownTag,
                    at,
                    format!("tag 0x{tag:02X} is reserved"),
                ))
            }
        };
        built.map_err(|e| host_error(e, at, "value"))
    }

    /// A FLOAT64's payload, its tag (at `at`) read.
    #[inline(always)]
    fn float64(&mut self, at: usize) -> Result<B::Obj, DecodeError> {
        let v = f64::from_le_bytes(self.take_array::<8>("float64")?);
        self.charge(cost::SCALAR, at)?;
        self.builder
            .float(v)
            .map_err(|e| host_error(e, at, "float"))
    }

    fn trackable(&mut self, tag: u8, at: usize) -> Result<B::Obj, DecodeError> {
        // An untracked FLOAT64 is read first, before the tracked-slot bookkeeping and the
        // dispatch on the kind below: coordinates, vectors and measurements are lists and
        // tuples of floats (a GeoJSON document is mostly pairs of them), and those steps cost
        // about as much as building the float. The reads, checks and charge are the same.
        if tag == Tag::Float64.code() {
            return self.float64(at);
        }
        let slot = if tag & TRACKED != 0 {
            Some(self.track(at)?)
        } else {
            None
        };
        let code = tag & !TRACKED;
        let obj = match code {
            0x40..=0x57 => {
                let n = usize::from(code - Tag::ShortStr.code());
                if n > self.remaining() {
                    return Err(DecodeError::new(
                        ErrorKind::Truncated,
                        at,
                        format!("str needs {n} bytes but {} are left", self.remaining()),
                    ));
                }
                self.str(at, n, false)?
            }
            // Containers open their nesting level at the tag, before the count is read or
            // checked (spec 8.4); `list` and the others below leave it.
            0x58..=0x5B => {
                let n = code - Tag::ShortList.code();
                self.short_container(at, n, 1, "list", |d, n| d.list(at, n, slot))?
            }
            0x5C..=0x5F => {
                let n = code - Tag::ShortTuple.code();
                self.short_container(at, n, 1, "tuple", |d, n| d.tuple(at, n))?
            }
            0x60..=0x67 => {
                let n = code - Tag::ShortDict.code();
                self.short_container(at, n, 2, "dict", |d, n| d.dict(at, n, slot))?
            }
            0x68 => {
                let n = self.byte_len(at, "str")?;
                self.str(at, n, false)?
            }
            0x69 => {
                let n = self.byte_len(at, "str")?;
                self.str(at, n, true)?
            }
            0x6A | 0x6B => {
                let n = self.byte_len(at, "bytes")?;
                let mutable = code == Tag::ByteArray.code();
                self.charge(
                    if mutable {
                        cost::bytearray(n as u64)
                    } else {
                        cost::bytes(n as u64)
                    },
                    at,
                )?;
                let raw = self.take(n, "bytes")?;
                let built = if mutable {
                    self.builder.bytearray(raw)
                } else {
                    self.builder.bytes(raw)
                };
                built.map_err(|e| host_error(e, at, "bytes"))?
            }
            0x6C => self.int_payload(at)?,
            0x6D => self.bigint(at)?,
            0x6E => self.float64(at)?,
            0x6F => {
                let v = f64::from(f32::from_le_bytes(self.take_array::<4>("float32")?));
                self.charge(cost::SCALAR, at)?;
                self.builder
                    .float(v)
                    .map_err(|e| host_error(e, at, "float"))?
            }
            0x70 => {
                let raw = self.take_array::<16>("complex")?;
                let (re, im) = raw.split_at(8);
                let re = f64::from_le_bytes(re.try_into().unwrap_or_default());
                let im = f64::from_le_bytes(im.try_into().unwrap_or_default());
                self.charge(cost::SCALAR, at)?;
                self.builder
                    .complex(re, im)
                    .map_err(|e| host_error(e, at, "complex"))?
            }
            0x71 => {
                self.enter(at)?;
                let n = self.count(at, 1, "list")?;
                self.nested(|d| d.list(at, n, slot))?
            }
            0x72 => {
                self.enter(at)?;
                let n = self.count(at, 1, "tuple")?;
                self.nested(|d| d.tuple(at, n))?
            }
            0x73 => {
                self.enter(at)?;
                let n = self.count(at, 2, "dict")?;
                self.nested(|d| d.dict(at, n, slot))?
            }
            0x74 | 0x75 => {
                self.enter(at)?;
                let n = self.count(at, 1, "set")?;
                self.nested(|d| d.set(at, n, code == Tag::FrozenSet.code(), slot))?
            }
            0x76 => self.ext(at, slot)?,
            0x77 => self.nested(|d| d.object(at, slot))?,
            // Out of line: a packed list is one call for many items, while the arms here are
            // on the path of every value. It records itself when tracked.
            0x78 | 0x79 => return self.packed_list(code, at, slot),
            // Out of line for the same reason; it records itself too.
            0x7C => return self.nested(|d| d.tuple_list(at, slot)),
            0x7B => return self.nested(|d| d.records(at, slot)),
            0x7D => return self.nested(|d| d.object_rows(at, slot)),
            _ => {
                return Err(DecodeError::new(
                    ErrorKind::UnknownTag,
                    at,
                    format!("tag 0x{tag:02X} is reserved"),
                ))
            }
        };
        if let Some(i) = slot {
            self.record_built(i, &obj);
        }
        Ok(obj)
    }

    /// Opens the tracked slot of the value whose tag, with the TRACKED bit, is at `at`: its
    /// charge, its place in the table and in the index of `REF` targets. The value is filled
    /// in by [`Decoder::record_built`], or earlier by [`Decoder::record_early`].
    #[inline(always)]
    fn track(&mut self, at: usize) -> Result<usize, DecodeError> {
        self.charge(cost::SCALAR, at)?;
        let offset = at - self.body;
        self.tracked.push(TrackedSlot { offset, obj: None });
        let index = self.tracked.len() - 1;
        if self.ref_index.started {
            self.ref_index.add(offset, index);
        }
        if B::TRACES {
            self.builder.trace_tracked(index);
        }
        Ok(index)
    }

    /// Fills tracked slot `index` with the value built for it, unless a container recorded
    /// itself there as soon as it existed.
    #[inline(always)]
    fn record_built(&mut self, index: usize, obj: &B::Obj) {
        if let Some(entry) = self.tracked.get_mut(index) {
            if entry.obj.is_none() {
                entry.obj = Some(obj.clone());
            }
        }
    }

    /// A short container of `n` items whose tag is at `at` (`per` bytes at least an item,
    /// `what` for messages), read by `read`. Containers open their nesting level at the tag,
    /// before the count is checked (spec 8.4); the readers leave it.
    #[inline(always)]
    fn short_container(
        &mut self,
        at: usize,
        n: u8,
        per: u64,
        what: &str,
        read: impl FnOnce(&mut Self, usize) -> Result<B::Obj, DecodeError>,
    ) -> Result<B::Obj, DecodeError> {
        self.enter(at)?;
        let n = self.check_count(u64::from(n), at, per, what)?;
        self.nested(|d| read(d, n))
    }

    /// Records a mutable container as soon as it exists, so its own children may refer to it.
    #[inline]
    fn record_early(&mut self, slot: Option<usize>, obj: &B::Obj) {
        if let Some(entry) = slot.and_then(|i| self.tracked.get_mut(i)) {
            entry.obj = Some(obj.clone());
        }
    }

    /// The payload of a str whose tag is at `at`: `n` bytes of strict UTF-8, or of UTF-8 that
    /// may encode surrogates. Always inlined: a container's loop reads its short strs through
    /// it ([`Decoder::value_in_loop`], `surrogates` false), which took 13% off decoding a list
    /// of short strs (callgrind); elsewhere it is reached through [`Decoder::str`].
    #[inline(always)]
    fn str_payload(
        &mut self,
        at: usize,
        n: usize,
        surrogates: bool,
    ) -> Result<B::Obj, DecodeError> {
        self.charge(cost::str(n as u64), at)?;
        let payload_at = self.pos;
        let raw = self.take(n, "str")?;
        let built = if surrogates {
            self.builder.str_surrogates(raw)
        } else {
            self.builder.str(raw)
        };
        built.map_err(|e| host_error(e, payload_at, "str"))
    }

    /// [`Decoder::str_payload`], out of line for the general path.
    fn str(&mut self, at: usize, n: usize, surrogates: bool) -> Result<B::Obj, DecodeError> {
        self.str_payload(at, n, surrogates)
    }

    /// An INT's payload, its tag at `at`: a zigzag varint, charged as a scalar.
    #[inline(always)]
    fn int_payload(&mut self, at: usize) -> Result<B::Obj, DecodeError> {
        let z = self.varint()?;
        self.charge(cost::SCALAR, at)?;
        self.builder
            .int(unzigzag(z))
            .map_err(|e| host_error(e, at, "int"))
    }

    fn bigint(&mut self, at: usize) -> Result<B::Obj, DecodeError> {
        let n = self.byte_len(at, "bigint")?;
        self.charge(cost::bigint(n as u64), at)?;
        let digits = self.take(n, "bigint")?;
        let canonical = match digits {
            [.., next, last] => {
                let redundant =
                    (*last == 0x00 && next & 0x80 == 0) || (*last == 0xFF && next & 0x80 != 0);
                n > 8 && !redundant
            }
            _ => false,
        };
        if !canonical {
            return Err(DecodeError::new(
                ErrorKind::NoncanonicalInt,
                at,
                "bigint is not minimal two's complement or fits in 64 bits",
            ));
        }
        self.builder
            .bigint(digits)
            .map_err(|e| host_error(e, at, "int"))
    }

    /// A LIST of `n` items (count read and checked) whose nesting level is entered.
    fn list(&mut self, at: usize, n: usize, slot: Option<usize>) -> Result<B::Obj, DecodeError> {
        self.charge(cost::list(n as u64), at)?;
        let list = self
            .builder
            .list(n)
            .map_err(|e| host_error(e, at, "list"))?;
        self.record_early(slot, &list);
        for i in 0..n {
            let item = self.value_in_loop()?;
            self.builder.list_set(&list, i, item);
        }
        self.leave();
        Ok(list)
    }

    /// A PACKED_INT_LIST (`code` 0x78) or PACKED_FLOAT_LIST (0x79) after its tag.
    #[inline(never)]
    fn packed_list(
        &mut self,
        code: u8,
        at: usize,
        slot: Option<usize>,
    ) -> Result<B::Obj, DecodeError> {
        self.enter(at)?;
        if code == Tag::PackedIntList.code() {
            let n = self.count(at, 1, "packed int list")?;
            self.packed_ints(at, n, slot)
        } else {
            let n = self.count(at, 8, "packed float list")?;
            self.packed_floats(at, n, slot)
        }
    }

    /// The list of a packed run of `n` items (level entered, count read and checked), charged
    /// `charge` and made and recorded like a LIST's; `fill` then reads the items into it.
    #[inline(always)]
    fn packed(
        &mut self,
        at: usize,
        n: usize,
        charge: u64,
        slot: Option<usize>,
        fill: impl FnOnce(&mut Self, &B::Obj) -> Result<(), DecodeError>,
    ) -> Result<B::Obj, DecodeError> {
        self.charge(charge, at)?;
        if B::TRACES {
            self.builder.trace_packed(self.pos, n);
        }
        let list = self
            .builder
            .packed_list(n)
            .map_err(|e| host_error(e, at, "list"))?;
        self.record_early(slot, &list);
        fill(self, &list)?;
        self.leave();
        Ok(list)
    }

    /// A PACKED_INT_LIST after its count: `n` zigzag varints, each checked and charged as an
    /// INT or SMALL_INT item of a LIST would be (the budget is charged once at the end, having
    /// been checked before each item was made).
    fn packed_ints(
        &mut self,
        at: usize,
        n: usize,
        slot: Option<usize>,
    ) -> Result<B::Obj, DecodeError> {
        self.packed(at, n, cost::list(n as u64), slot, |d, list| {
            // A short list is made item by item: handing a few over together costs more than
            // it saves, zeroing the stretch included.
            if n < PACKED_INT_STRETCH {
                d.packed_int_items::<0>(list, n)
            } else {
                d.packed_int_items::<PACKED_INT_STRETCH>(list, n)
            }
        })
    }

    /// The `n` items of a PACKED_INT_LIST into `list`: one by one through
    /// `Builder::packed_int` for `N` 0, else `N` at a time, each stretch read and checked and
    /// then handed to the builder together (`Builder::packed_ints`), which can make them
    /// without a call per item. Each item is checked and charged as an INT or SMALL_INT item
    /// of a LIST would be (the budget is charged once at the end, having been checked before
    /// each item was made).
    #[inline(always)]
    fn packed_int_items<const N: usize>(
        &mut self,
        list: &B::Obj,
        n: usize,
    ) -> Result<(), DecodeError> {
        let room = self.max_alloc.saturating_sub(self.allocated);
        let mut spent = 0u64;
        // The cursor lives in a register for the loop: `self.pos` is written back only around
        // the general varint path, which also reports every malformed item.
        let data = self.data;
        let mut pos = self.pos;
        if N == 0 {
            for i in 0..n {
                let item_at = pos;
                let v = self.packed_int_item(data, &mut pos, &mut spent, room)?;
                self.builder
                    .packed_int(list, i, v)
                    .map_err(|e| host_error(e, item_at, "int"))?;
            }
        } else {
            let mut stretch = IntStretch::<N> {
                values: [0; N],
                offsets: [0; N],
            };
            let mut start = 0;
            // Whether a stretch tries to read words: the first does, the others when the
            // stretch before them averaged at most two and a half bytes an item. In a run of
            // longer items (ids in the millions, timestamps) nearly every try fails, and
            // trying at every item cost such a run 9 to 14% more instructions.
            let mut words = true;
            while start < n {
                let count = N.min(n - start);
                let stretch_at = pos;
                let alone = if words { 0 } else { count };
                for (value, offset) in stretch.values[..alone]
                    .iter_mut()
                    .zip(&mut stretch.offsets[..alone])
                {
                    *offset = pos;
                    *value = self.packed_int_item(data, &mut pos, &mut spent, room)?;
                }
                let mut k = alone;
                while k < count {
                    // Eight one-byte or four two-byte items at once (see `varint_word`),
                    // charged together; a charge past the budget leaves them to
                    // `packed_int_item`, which reports the very item.
                    let taken = match &varint_word::take(data, pos, count - k) {
                        varint_word::Word::Bytes(ints) => {
                            stretch.put_word::<8, 1>(ints, k, &mut pos, &mut spent, room)
                        }
                        varint_word::Word::Pairs(ints) => {
                            stretch.put_word::<4, 2>(ints, k, &mut pos, &mut spent, room)
                        }
                        varint_word::Word::Other => 0,
                    };
                    if taken > 0 {
                        k += taken;
                        continue;
                    }
                    stretch.offsets[k] = pos;
                    stretch.values[k] = self.packed_int_item(data, &mut pos, &mut spent, room)?;
                    k += 1;
                }
                self.builder
                    .packed_ints(list, start, &stretch.values[..count])
                    .map_err(|(i, e)| {
                        host_error(e, stretch.offsets.get(i).copied().unwrap_or(pos), "int")
                    })?;
                start += count;
                words = 2 * (pos - stretch_at) <= 5 * count;
            }
        }
        self.pos = pos;
        self.allocated = self.allocated.saturating_add(spent);
        Ok(())
    }

    /// One item of a packed int run at `*pos`, read and charged as [`Self::packed_int_items`]
    /// says. A method rather than a closure so that it is inlined at each of its call sites:
    /// a closure called from two places was left out of line, 48 instructions an item.
    #[inline(always)]
    fn packed_int_item(
        &mut self,
        data: &'a [u8],
        pos: &mut usize,
        spent: &mut u64,
        room: u64,
    ) -> Result<i64, DecodeError> {
        let item_at = *pos;
        let z = match data.get(item_at..item_at + 2) {
            Some(&[b0, _]) if b0 < 0x80 => {
                *pos += 1;
                u64::from(b0)
            }
            Some(&[b0, b1]) if b1 < 0x80 && b1 != 0 => {
                *pos += 2;
                u64::from(b0 & 0x7F) | (u64::from(b1) << 7)
            }
            _ => {
                self.pos = item_at;
                let z = self.varint()?;
                *pos = self.pos;
                z
            }
        };
        let v = unzigzag(z);
        if !(SMALL_INT_MIN..=SMALL_INT_MAX).contains(&v) {
            *spent += cost::SCALAR;
            if *spent > room {
                self.allocated = self.allocated.saturating_add(*spent);
                return Err(self.alloc_error(item_at));
            }
        }
        Ok(v)
    }

    /// A PACKED_FLOAT_LIST after its count: `n` binary64 values, which the count check has
    /// already found in the input.
    fn packed_floats(
        &mut self,
        at: usize,
        n: usize,
        slot: Option<usize>,
    ) -> Result<B::Obj, DecodeError> {
        self.packed(at, n, cost::packed_float_list(n as u64), slot, |d, list| {
            let start = d.pos;
            let raw = d.take(n.saturating_mul(8), "packed floats")?;
            d.builder
                .packed_floats(list, raw)
                .map_err(|(i, e)| host_error(e, start + 8 * i, "float"))
        })
    }

    /// A TUPLE_LIST after its tag (spec 5.11.1): two nesting levels, the list's and its
    /// rows', both at the tag; the count and the arity; then the list and all its tuples
    /// are charged, before the rows' items are read into tuples made without a tag.
    #[inline(never)]
    fn tuple_list(&mut self, at: usize, slot: Option<usize>) -> Result<B::Obj, DecodeError> {
        self.enter(at)?;
        self.enter(at)?;
        let rows = self.varint()?;
        let arity = self.varint()?;
        if arity == 0 {
            return Err(DecodeError::new(
                ErrorKind::LengthTooLarge,
                at,
                format!("tuple list declares {rows} rows of 0 items; the arity must be at least 1"),
            ));
        }
        // Each row's items take at least `arity` bytes, so `arity` is bounded by the input
        // whenever there is a row.
        let left = self.remaining() as u64;
        if rows > left / arity {
            return Err(DecodeError::new(
                ErrorKind::LengthTooLarge,
                at,
                format!(
                    "tuple list declares {rows} rows of {arity} items but only {left} bytes are left"
                ),
            ));
        }
        let rows = rows as usize;
        self.charge(cost::tuple_list(rows as u64, arity), at)?;
        let arity = usize::try_from(arity).unwrap_or(usize::MAX);
        if B::TRACES {
            self.builder.trace_tuple_list(self.pos, rows, arity);
        }
        let list = self
            .builder
            .tuple_list(rows)
            .map_err(|e| host_error(e, at, "list"))?;
        self.record_early(slot, &list);
        for i in 0..rows {
            let row = self
                .builder
                .row(arity)
                .map_err(|e| host_error(e, self.pos, "tuple"))?;
            for j in 0..arity {
                let item = self.value_in_loop()?;
                self.builder.tuple_set(&row, j, item);
            }
            self.builder.list_set(&list, i, row);
        }
        self.leave();
        self.leave();
        Ok(list)
    }

    /// A RECORDS after its tag (spec 5.12.1): two nesting levels, the list's and its rows',
    /// both at the tag; the count and the width; then the list and all its dicts are charged,
    /// before the keys are read and checked once, and the rows' values are read into dicts made
    /// without a tag or keys of their own.
    #[inline(never)]
    fn records(&mut self, at: usize, slot: Option<usize>) -> Result<B::Obj, DecodeError> {
        self.enter(at)?;
        self.enter(at)?;
        let rows = self.varint()?;
        let width = self.varint()?;
        if width == 0 {
            return Err(DecodeError::new(
                ErrorKind::LengthTooLarge,
                at,
                format!("records declares {rows} rows of 0 keys; a RECORDS needs at least 1 key"),
            ));
        }
        // The keys and every row take at least `width` bytes, so `width` is bounded by the
        // input, and so are the rows.
        let left = self.remaining() as u64;
        if rows >= left / width {
            return Err(DecodeError::new(
                ErrorKind::LengthTooLarge,
                at,
                format!(
                    "records declares {rows} rows of {width} keys, which with the keys need \
                     more than the {left} bytes left"
                ),
            ));
        }
        let rows = rows as usize;
        let width = width as usize;
        self.charge(cost::records(rows as u64, width as u64), at)?;
        if B::TRACES {
            self.builder.trace_records(self.pos, rows, width);
        }
        let list = self
            .builder
            .records(rows)
            .map_err(|e| host_error(e, at, "list"))?;
        self.record_early(slot, &list);
        let schema = self
            .builder
            .schema(width)
            .map_err(|e| host_error(e, at, "dict"))?;
        let mut keys = Vec::with_capacity(width);
        for index in 0..width {
            let key_at = self.pos;
            let key = self.key()?;
            self.builder
                .check_key(&schema, &key)
                .map_err(|e| host_error(e, key_at, "dict key"))?;
            self.builder
                .schema_insert(&schema, key.clone(), index, width)
                .map_err(|e| host_error(e, key_at, "dict key"))?;
            keys.push(key);
        }
        for i in 0..rows {
            let row = self
                .builder
                .record(&schema, width)
                .map_err(|e| host_error(e, self.pos, "dict"))?;
            for (index, key) in keys.iter().enumerate() {
                let value_at = self.pos;
                let value = self.value_in_loop()?;
                self.builder
                    .record_set(&row, index, width, key, value)
                    .map_err(|e| host_error(e, value_at, "dict key"))?;
            }
            self.builder.list_set(&list, i, row);
        }
        self.leave();
        self.leave();
        Ok(list)
    }

    /// An OBJECT_ROWS (spec 5.17.9), its tag at `at`: the checks in the spec's order, then
    /// each row as the create-first OBJECT of its shape, a float column read as FLOAT64's
    /// payload.
    fn object_rows(&mut self, at: usize, slot: Option<usize>) -> Result<B::Obj, DecodeError> {
        self.enter(at)?;
        self.enter(at)?;
        let rows = self.varint()?;
        let number = self.varint()?;
        let shape = match number.checked_sub(1) {
            None => self.shape_definition(at)?,
            Some(shape) if shape < self.shapes.len() as u64 => shape as usize,
            Some(shape) => {
                return Err(DecodeError::new(
                    ErrorKind::BadShape,
                    at,
                    format!(
                        "OBJECT_ROWS uses shape {shape}, but only {} shapes are defined so far",
                        self.shapes.len()
                    ),
                ))
            }
        };
        let (kind, width) = self
            .shapes
            .get(shape)
            .copied()
            .unwrap_or((ObjectKind::State, 1));
        if kind != ObjectKind::Attrs {
            return Err(DecodeError::new(
                ErrorKind::BadShape,
                at,
                format!(
                    "OBJECT_ROWS of a shape of kind {}; rows need an ATTRS shape",
                    kind.spec_name()
                ),
            ));
        }
        if width == 0 {
            return Err(DecodeError::new(
                ErrorKind::LengthTooLarge,
                at,
                format!(
                    "OBJECT_ROWS declares {rows} rows of a shape without fields; rows need at \
                     least 1 field"
                ),
            ));
        }
        let columns = self.float_columns(width)?;
        // A tagged field takes a byte at least, a float column eight.
        let row_len = (width - columns.len() + tag::COLUMN_FLOAT_LEN * columns.len()) as u64;
        let left = self.remaining() as u64;
        if rows > left / row_len {
            return Err(DecodeError::new(
                ErrorKind::LengthTooLarge,
                at,
                format!(
                    "OBJECT_ROWS declares {rows} rows of at least {row_len} bytes, more than the \
                     {left} bytes left"
                ),
            ));
        }
        let rows = rows as usize;
        let charge = cost::object_rows(rows as u64, width as u64, columns.len() as u64);
        self.charge(charge, at)?;
        if B::TRACES {
            self.builder
                .trace_object_rows(self.pos, rows, shape, number == 0, &columns);
        }
        let list = self
            .builder
            .object_rows(rows)
            .map_err(|e| host_error(e, at, "list"))?;
        self.record_early(slot, &list);
        for i in 0..rows {
            let row = self
                .builder
                .object_begin(shape)
                .map_err(|e| host_error(e, at, "object"))?;
            let mut next_column = columns.iter().copied().peekable();
            for field in 0..width {
                let value = if next_column.next_if_eq(&field).is_some() {
                    let float_at = self.pos;
                    if B::TRACES {
                        self.builder
                            .trace_start(float_at, Tag::Float64.code(), self.depth);
                        self.builder.trace_column_float(shape, field);
                    }
                    let v = f64::from_le_bytes(self.take_array::<8>("float column")?);
                    let obj = self
                        .builder
                        .float(v)
                        .map_err(|e| host_error(e, float_at, "float"))?;
                    if B::TRACES {
                        self.builder.trace_end(self.pos, &obj);
                    }
                    obj
                } else {
                    self.value_in_loop()?
                };
                self.builder
                    .object_set(&row, shape, field, value)
                    .map_err(|e| host_error(e, at, "object"))?;
            }
            self.builder
                .object_finish(&row, shape)
                .map_err(|e| host_error(e, at, "object"))?;
            self.builder.list_set(&list, i, row);
        }
        self.leave();
        self.leave();
        Ok(list)
    }

    /// The float columns of an OBJECT_ROWS whose shape has `width` fields: a count of at
    /// most `width`, then that many strictly increasing field indexes below `width`.
    fn float_columns(&mut self, width: usize) -> Result<Vec<usize>, DecodeError> {
        let count_at = self.pos;
        let count = self.varint()?;
        if count > width as u64 {
            return Err(DecodeError::new(
                ErrorKind::BadShape,
                count_at,
                format!("OBJECT_ROWS declares {count} float columns of a shape of {width} fields"),
            ));
        }
        let mut columns: Vec<usize> = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let index_at = self.pos;
            let index = self.varint()?;
            let after = columns.last().map_or(true, |&last| index > last as u64);
            if index >= width as u64 || !after {
                return Err(DecodeError::new(
                    ErrorKind::BadShape,
                    index_at,
                    format!(
                        "float column {index} is not a field after the columns before it (the \
                         shape has {width} fields)"
                    ),
                ));
            }
            columns.push(index as usize);
        }
        Ok(columns)
    }

    /// A TUPLE of `n` items, as [`Decoder::list`].
    fn tuple(&mut self, at: usize, n: usize) -> Result<B::Obj, DecodeError> {
        self.charge(cost::tuple(n as u64), at)?;
        let tuple = self
            .builder
            .tuple(n)
            .map_err(|e| host_error(e, at, "tuple"))?;
        for i in 0..n {
            let item = self.value_in_loop()?;
            self.builder.tuple_set(&tuple, i, item);
        }
        self.leave();
        Ok(tuple)
    }

    /// A DICT of `n` pairs, as [`Decoder::list`].
    fn dict(&mut self, at: usize, n: usize, slot: Option<usize>) -> Result<B::Obj, DecodeError> {
        self.charge(cost::dict(n as u64), at)?;
        let dict = self
            .builder
            .dict(n)
            .map_err(|e| host_error(e, at, "dict"))?;
        self.record_early(slot, &dict);
        for index in 0..n {
            let key_at = self.pos;
            let key = self.key()?;
            self.builder
                .check_key(&dict, &key)
                .map_err(|e| host_error(e, key_at, "dict key"))?;
            let value = self.value_in_loop()?;
            let place = PairPlace {
                index,
                len: n,
                referable: slot.is_some(),
            };
            self.builder
                .dict_insert(&dict, key, value, place)
                .map_err(|e| host_error(e, key_at, "dict key"))?;
        }
        self.leave();
        Ok(dict)
    }

    /// A SET or FROZENSET of `n` elements, as [`Decoder::list`].
    fn set(
        &mut self,
        at: usize,
        n: usize,
        frozen: bool,
        slot: Option<usize>,
    ) -> Result<B::Obj, DecodeError> {
        self.charge(cost::set(n as u64), at)?;
        let set = self
            .builder
            .set(n, frozen)
            .map_err(|e| host_error(e, at, "set"))?;
        if !frozen {
            self.record_early(slot, &set);
        }
        for _ in 0..n {
            let item_at = self.pos;
            let item = self.value()?;
            self.builder
                .check_key(&set, &item)
                .map_err(|e| host_error(e, item_at, "set element"))?;
            self.builder
                .set_add(&set, item)
                .map_err(|e| build_error(e, item_at, "set element", ErrorKind::DuplicateElement))?;
        }
        self.leave();
        Ok(set)
    }

    #[inline(always)]
    fn reference(&mut self, at: usize) -> Result<B::Obj, DecodeError> {
        let target = self.varint()?;
        if !self.ref_index.started {
            self.ref_index = RefIndex::of(&self.tracked);
        }
        if target < (at - self.body) as u64 {
            if let Some(index) = self.ref_index.find_recent(target, &self.tracked) {
                if let Some(TrackedSlot { obj: Some(obj), .. }) = self.tracked.get(index) {
                    if B::TRACES {
                        // The target is below `at`, so the sum stays in the input.
                        self.builder
                            .trace_reference(self.body.saturating_add(target as usize), index);
                    }
                    return Ok(obj.clone());
                }
            }
        }
        Err(self.reference_error(at, target))
    }

    /// Why the REF at `at` to body offset `target` resolves to nothing. Out of line, so that
    /// the formatting stays out of [`Decoder::reference`]'s frame, which every REF pays for.
    #[cold]
    #[inline(never)]
    fn reference_error(&self, at: usize, target: u64) -> DecodeError {
        let here = (at - self.body) as u64;
        let bad = |detail: String| DecodeError::new(ErrorKind::BadReference, at, detail);
        if target >= here {
            return bad(format!(
                "reference to body offset {target} does not point back (it is at {here})"
            ));
        }
        let found = self.ref_index.find(target, &self.tracked);
        match found.and_then(|index| self.tracked.get(index)) {
            Some(TrackedSlot { obj: None, .. }) => DecodeError::new(
                ErrorKind::IncompleteReference,
                at,
                format!("reference to body offset {target}: an immutable value still being built"),
            ),
            _ => bad(format!(
                "reference to body offset {target}, which is not the start of a tracked value"
            )),
        }
    }

    fn supersede(&mut self, at: usize) -> Result<B::Obj, DecodeError> {
        self.enter(at)?;
        let discarded = self.value()?;
        drop(discarded);
        let ref_at = self.pos;
        match self.data.get(ref_at) {
            Some(&b) if b == Tag::Ref.code() => {
                self.pos += 1;
            }
            Some(_) => {
                return Err(DecodeError::new(
                    ErrorKind::SupersedeWithoutRef,
                    ref_at,
                    "SUPERSEDE must be followed by a value and then a REF",
                ))
            }
            None => {
                return Err(DecodeError::new(
                    ErrorKind::Truncated,
                    ref_at,
                    "input ends where the REF of a SUPERSEDE should be",
                ))
            }
        }
        if B::TRACES {
            self.builder
                .trace_start(ref_at, Tag::Ref.code(), self.depth);
        }
        let result = self.reference(ref_at);
        if let (true, Ok(obj)) = (B::TRACES, &result) {
            self.builder.trace_end(self.pos, obj);
        }
        self.leave();
        result
    }

    fn ext(&mut self, at: usize, slot: Option<usize>) -> Result<B::Obj, DecodeError> {
        let number = self.varint()?;
        let Some(code) = ExtCode::from_code(number) else {
            return Err(DecodeError::new(
                ErrorKind::UnknownExt,
                at,
                format!("EXT code {number} is not defined"),
            ));
        };
        if B::TRACES {
            self.builder.trace_ext(code);
        }
        let what = code.spec_name();
        match code.layout() {
            ExtLayout::Blob => {
                let n = self.byte_len(at, what)?;
                self.charge(cost::ext_blob(n as u64), at)?;
                let raw = self.take(n, what)?;
                if B::TRACES {
                    self.builder.trace_blob(code, n);
                }
                let blob = ExtBlob::parse(code, raw)
                    .map_err(|e| DecodeError::new(ErrorKind::InvalidExt, at, e.into_message()))?;
                if let ExtBlob::OutOfBand(oob) = &blob {
                    if !self.buffers_used.insert(oob.index) {
                        return Err(DecodeError::new(
                            ErrorKind::InvalidExt,
                            at,
                            format!(
                                "OUT_OF_BAND buffer {} is already used by an earlier value of this payload",
                                oob.index
                            ),
                        ));
                    }
                }
                self.builder
                    .ext_blob(blob, raw)
                    .map_err(|e| host_error(e, at, what))
            }
            ExtLayout::CreateFirst(composite) => self.nested(|d| {
                let n = composite.composite().values();
                d.enter(at)?;
                d.check_count(n as u64, at, 1, what)?;
                d.charge(cost::object(n as u64), at)?;
                let obj = d
                    .builder
                    .ext_begin(composite)
                    .map_err(|e| host_error(e, at, what))?;
                d.record_early(slot, &obj);
                let values = d.values(n)?;
                d.builder
                    .ext_finish(composite, &obj, values)
                    .map_err(|e| host_error(e, at, what))?;
                d.leave();
                Ok(obj)
            }),
            ExtLayout::BuildAfter(composite) => self.nested(|d| {
                let n = composite.composite().values();
                d.enter(at)?;
                d.check_count(n as u64, at, 1, what)?;
                d.charge(cost::object(n as u64), at)?;
                let values = d.values(n)?;
                let obj = d
                    .builder
                    .ext_build(composite, values)
                    .map_err(|e| host_error(e, at, what))?;
                d.leave();
                Ok(obj)
            }),
        }
    }

    /// `n` values in a row, for the build-after constructs.
    fn values(&mut self, n: usize) -> Result<Vec<B::Obj>, DecodeError> {
        let mut values = Vec::with_capacity(n);
        for _ in 0..n {
            values.push(self.value()?);
        }
        Ok(values)
    }

    fn object(&mut self, at: usize, slot: Option<usize>) -> Result<B::Obj, DecodeError> {
        let number = self.varint()?;
        let shape = match number.checked_sub(1) {
            None => self.shape_definition(at)?,
            Some(shape) if shape < self.shapes.len() as u64 => shape as usize,
            Some(shape) => {
                return Err(DecodeError::new(
                    ErrorKind::BadShape,
                    at,
                    format!(
                        "OBJECT uses shape {shape}, but only {} shapes are defined so far",
                        self.shapes.len()
                    ),
                ))
            }
        };
        if B::TRACES {
            self.builder.trace_object(shape, number == 0);
        }
        let (kind, n) = self
            .shapes
            .get(shape)
            .copied()
            .unwrap_or((ObjectKind::State, 1));
        self.enter(at)?;
        self.check_count(n as u64, at, 1, "object")?;
        self.charge(cost::object(n as u64), at)?;
        let obj = match kind.creation() {
            Creation::First => {
                let obj = self
                    .builder
                    .object_begin(shape)
                    .map_err(|e| host_error(e, at, "object"))?;
                self.record_early(slot, &obj);
                self.object_values(at, &obj, shape, 0..n)?;
                obj
            }
            Creation::FromFirstValue => {
                // The slot stays empty while the first value is decoded, so a REF to the
                // instance from inside it is `incomplete_reference`, as for a tuple.
                let first = self.value()?;
                let obj = self
                    .builder
                    .object_from_first(shape, first)
                    .map_err(|e| host_error(e, at, "object"))?;
                self.record_early(slot, &obj);
                self.object_values(at, &obj, shape, 1..n)?;
                obj
            }
            Creation::After => {
                let values = self.values(n)?;
                self.builder
                    .object_build(shape, values)
                    .map_err(|e| host_error(e, at, "object"))?
            }
        };
        self.leave();
        Ok(obj)
    }

    /// Decodes values `range` of an instance that exists already and completes it. Inlined:
    /// it is the loop of every class instance, as it was before it had two callers.
    #[inline(always)]
    fn object_values(
        &mut self,
        at: usize,
        obj: &B::Obj,
        shape: usize,
        range: std::ops::Range<usize>,
    ) -> Result<(), DecodeError> {
        for i in range {
            let value = self.value()?;
            self.builder
                .object_set(obj, shape, i, value)
                .map_err(|e| host_error(e, at, "object"))?;
        }
        self.builder
            .object_finish(obj, shape)
            .map_err(|e| host_error(e, at, "object"))
    }

    /// Reads a shape definition (after an OBJECT's `0`), hands it to the builder and returns
    /// its number.
    fn shape_definition(&mut self, at: usize) -> Result<usize, DecodeError> {
        let index = self.shapes.len();
        let start = self.pos;
        let module = self.name(object::dotted_name, "module")?;
        let qualname = self.name(object::dotted_name, "qualname")?;
        let kind_at = self.pos;
        let code = self.byte()?;
        let Some(kind) = ObjectKind::from_code(code) else {
            return Err(DecodeError::new(
                ErrorKind::BadShape,
                kind_at,
                format!("object kind {code} is not defined"),
            ));
        };
        let mut fields = Vec::new();
        if kind.has_fields() {
            let count_at = self.pos;
            let n = self.varint()?;
            if n > object::MAX_FIELDS as u64 {
                return Err(DecodeError::new(
                    ErrorKind::BadShape,
                    count_at,
                    format!(
                        "shape declares {n} fields; at most {} are allowed",
                        object::MAX_FIELDS
                    ),
                ));
            }
            let n = self.check_count(n, count_at, 2, "shape")?;
            fields.reserve(n);
            for _ in 0..n {
                let name_at = self.pos;
                let name = self.name(object::field_name, "field name")?;
                if fields.contains(&name) {
                    return Err(DecodeError::new(
                        ErrorKind::BadShape,
                        name_at,
                        format!("field {name:?} appears twice in one shape"),
                    ));
                }
                fields.push(name);
            }
        }
        self.charge(cost::shape((self.pos - start) as u64), at)?;
        let value_count = kind.value_count(fields.len());
        let def = ShapeDef {
            module,
            qualname,
            kind,
            fields,
        };
        self.builder
            .define_shape(index, def)
            .map_err(|e| host_error(e, at, "object"))?;
        self.shapes.push((kind, value_count));
        Ok(index)
    }

    /// A length-prefixed name, checked by `check`.
    fn name(
        &mut self,
        check: fn(&[u8]) -> Result<&str, NameProblem>,
        what: &str,
    ) -> Result<String, DecodeError> {
        let at = self.pos;
        let n = self.varint()?;
        if n > object::MAX_NAME_LEN as u64 {
            return Err(DecodeError::new(
                ErrorKind::BadName,
                at,
                format!("{what} {}", NameProblem::TooLong.describe()),
            ));
        }
        let left = self.remaining();
        if n > left as u64 {
            return Err(DecodeError::new(
                ErrorKind::Truncated,
                at,
                format!("{what} declares {n} bytes but {left} are left"),
            ));
        }
        let raw = self.take(n as usize, what)?;
        match check(raw) {
            Ok(name) => Ok(name.to_owned()),
            Err(problem) => Err(DecodeError::new(
                ErrorKind::BadName,
                at,
                format!(
                    "{what} {:?} {}",
                    String::from_utf8_lossy(raw),
                    problem.describe()
                ),
            )),
        }
    }
}

/// Items of a PACKED_INT_LIST read and checked before the builder makes them together: a
/// stretch of 64 keeps its values and offsets (1 KiB) on the stack. A shorter list is made
/// item by item.
const PACKED_INT_STRETCH: usize = 64;

/// [`Builder::packed_ints`] as its default does it: each of `values` through
/// [`Builder::packed_int`], at `start` on, in order. For a builder whose own version falls
/// back to it.
#[inline(always)]
pub fn packed_ints_one_by_one<B: Builder + ?Sized>(
    builder: &mut B,
    list: &B::Obj,
    start: usize,
    values: &[i64],
) -> Result<(), (usize, BuildError)> {
    for (i, &v) in values.iter().enumerate() {
        builder.packed_int(list, start + i, v).map_err(|e| (i, e))?;
    }
    Ok(())
}

/// [`Builder::packed_floats`] as its default does it: each value of `raw` through
/// [`Builder::packed_float`], in order. For a builder whose own version falls back to it.
#[inline(always)]
pub fn packed_floats_one_by_one<B: Builder + ?Sized>(
    builder: &mut B,
    list: &B::Obj,
    raw: &[u8],
) -> Result<(), (usize, BuildError)> {
    for (i, item) in raw.chunks_exact(8).enumerate() {
        let bits: [u8; 8] = item.try_into().unwrap_or_default();
        builder
            .packed_float(list, i, f64::from_le_bytes(bits))
            .map_err(|e| (i, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{RefIndex, TrackedSlot};

    fn table(offsets: impl Iterator<Item = usize>) -> Vec<TrackedSlot<()>> {
        offsets
            .map(|offset| TrackedSlot { offset, obj: None })
            .collect()
    }

    /// Every tracked value is found at its offset, whether the index was made from the table
    /// or filled one value at a time, values closer together than a run and farther apart
    /// than many; no other offset is found.
    #[test]
    fn ref_index_finds_exactly_the_tracked_offsets() {
        let offsets: Vec<usize> = (0..16)
            .chain((0..3_000).map(|n| 17 + n * 3))
            .chain((0..200).map(|n| 9_100 + n * 157))
            .collect();
        let tracked = table(offsets.iter().copied());
        let whole = RefIndex::of(&tracked);
        let mut grown = RefIndex::of(&tracked[..10]);
        for (position, slot) in tracked.iter().enumerate().skip(10) {
            grown.add(slot.offset, position);
        }
        assert_eq!(whole.runs, grown.runs);
        let last = *offsets.last().unwrap_or(&0);
        for target in 0..last as u64 + 40 {
            let expected = offsets.iter().position(|&o| o as u64 == target);
            assert_eq!(whole.find(target, &tracked), expected, "target {target}");
        }
    }

    /// Past the last run indexed (no tracked value there, or none added yet), a lookup
    /// searches the table itself.
    #[test]
    fn ref_index_past_its_entries_asks_the_table() {
        let tracked = table([5, 40, 41].into_iter());
        let empty = RefIndex::default();
        assert_eq!(empty.find(40, &tracked), Some(1));
        assert_eq!(empty.find(41, &tracked), Some(2));
        assert_eq!(empty.find(39, &tracked), None);
        let index = RefIndex::of(&tracked);
        assert_eq!(index.runs.len(), (41 >> super::REF_RUN_BITS) + 1);
        assert_eq!(index.find(u64::MAX, &tracked), None);
    }
}
