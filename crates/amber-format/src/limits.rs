//! Decoder limits and the allocation estimate that enforces them.

/// Default nesting limit, for decoding and encoding alike.
pub const DEFAULT_MAX_DEPTH: u32 = 1000;
/// No caller may raise the nesting limit above this: each level costs native stack.
pub const HARD_MAX_DEPTH: u32 = 10_000;
/// Default allocation budget: this many estimated bytes per input byte ...
pub const DEFAULT_ALLOC_PER_INPUT_BYTE: u64 = 256;
/// ... plus this much, so that tiny payloads can still build a few objects.
pub const DEFAULT_ALLOC_BASE: u64 = 1 << 20;

/// What one decode may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Deepest nesting of containers (the root container is depth 1).
    pub max_depth: u32,
    /// Most estimated bytes the decode may allocate; `None` means the default for the input.
    pub max_alloc: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: DEFAULT_MAX_DEPTH,
            max_alloc: None,
        }
    }
}

impl Limits {
    /// The allocation budget for an input of `input_len` bytes.
    pub fn alloc_budget(&self, input_len: usize) -> u64 {
        self.max_alloc.unwrap_or_else(|| {
            (input_len as u64)
                .saturating_mul(DEFAULT_ALLOC_PER_INPUT_BYTE)
                .saturating_add(DEFAULT_ALLOC_BASE)
        })
    }
}

/// The allocation budget of one decode: the limit, and what was spent before the value
/// decoder started (a decompressed body, charged before it is made).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocBudget {
    /// Most estimated bytes the whole decode may allocate.
    pub limit: u64,
    /// Bytes already charged.
    pub spent: u64,
}

impl AllocBudget {
    /// A budget of `limit` with nothing spent yet.
    pub fn unspent(limit: u64) -> Self {
        AllocBudget { limit, spent: 0 }
    }
}

/// Estimated bytes each object costs, from CPython 3.11 object sizes on 64-bit builds
/// (header, GC header where the type has one, items). Estimates err on the high side.
pub mod cost {
    /// int, float, complex; and a tracked value's place in the reference table (16 bytes)
    /// and in the index of REF targets (4 to 16 bytes).
    pub const SCALAR: u64 = 32;
    /// A str of `n` UTF-8 bytes: at worst 4 bytes per code unit (UCS-4) plus the header.
    pub const fn str(n: u64) -> u64 {
        80 + 4 * n
    }
    /// A bytes object of `n` bytes.
    pub const fn bytes(n: u64) -> u64 {
        40 + n
    }
    /// A bytearray of `n` bytes.
    pub const fn bytearray(n: u64) -> u64 {
        64 + n
    }
    /// An int from `n` bytes of two's complement (30-bit digits in 32-bit words).
    pub const fn bigint(n: u64) -> u64 {
        40 + 2 * n
    }
    /// A list of `n` items.
    pub const fn list(n: u64) -> u64 {
        72 + 8 * n
    }
    /// A list of `n` floats from a PACKED_FLOAT_LIST: the list and its `n` floats, charged
    /// together before any item is read. (The ints of a PACKED_INT_LIST are charged one by
    /// one as they are read, as INT items are, since the small ones cost nothing.)
    pub const fn packed_float_list(n: u64) -> u64 {
        list(n).saturating_add(SCALAR.saturating_mul(n))
    }
    /// A tuple of `n` items.
    pub const fn tuple(n: u64) -> u64 {
        56 + 8 * n
    }
    /// A list of `rows` tuples of `arity` items each, from a TUPLE_LIST: the list and all its
    /// tuples, charged together at the tag before any row is read (their items are charged
    /// as they are read, as in the LIST of those tuples). Without rows the arity is not
    /// bounded by the input, and no tuple is made.
    pub const fn tuple_list(rows: u64, arity: u64) -> u64 {
        if rows == 0 {
            return list(0);
        }
        list(rows).saturating_add(rows.saturating_mul(tuple(arity)))
    }
    /// A RECORDS of `rows` dicts of `width` pairs: what the LIST of those dicts costs, charged
    /// at its tag.
    pub const fn records(rows: u64, width: u64) -> u64 {
        list(rows).saturating_add(rows.saturating_mul(dict(width)))
    }
    /// An OBJECT_ROWS of `rows` instances of `width` values, `columns` of them floats without
    /// tags: what the LIST of those OBJECTs costs with their column floats, charged at its tag.
    pub const fn object_rows(rows: u64, width: u64, columns: u64) -> u64 {
        let row = object(width).saturating_add(SCALAR.saturating_mul(columns));
        list(rows).saturating_add(rows.saturating_mul(row))
    }
    /// A dict of `n` pairs (hash table sized for growth).
    pub const fn dict(n: u64) -> u64 {
        240 + 48 * n
    }
    /// A set or frozenset of `n` elements (table kept at most 60% full).
    pub const fn set(n: u64) -> u64 {
        232 + 48 * n
    }
    /// An EXT atom built from a blob of `n` bytes (a path may widen to UCS-4 like a str).
    pub const fn ext_blob(n: u64) -> u64 {
        96 + 4 * n
    }
    /// A composite EXT value or class instance with `n` values (an instance and its dict).
    pub const fn object(n: u64) -> u64 {
        160 + 56 * n
    }
    /// A shape definition whose names total `n` bytes, kept for the whole decode.
    pub const fn shape(n: u64) -> u64 {
        128 + 8 * n
    }
}
