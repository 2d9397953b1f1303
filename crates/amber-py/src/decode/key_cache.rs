//! Dict keys made by earlier decodes, reused by later ones.
//!
//! Services decode the same few keys over and over, payload after payload. Building each key
//! anew costs a str allocation, a copy and, when the dict inserts it, a SipHash of its bytes.
//! A small direct-mapped table of keys made before turns that into a hash of at most 23
//! bytes and a compare: a hit hands out the same str object, whose hash CPython has cached.
//! Strs are immutable and a str read as an untracked SHORT_STR has no identity on the wire
//! (section 6), so handing out one object for equal keys changes nothing a caller can rely on.

use std::cell::UnsafeCell;

use pyo3_ffi as ffi;

/// Slots in the table; a power of two.
const SLOTS: usize = 1024;

/// The table: a str per slot, or NULL. Each str is an exact, compact ASCII str the table
/// holds a reference to.
struct Table(UnsafeCell<[*mut ffi::PyObject; SLOTS]>);

// SAFETY: the table is only read and written by `lookup` and `remember`, which run with the
// GIL held (the module does not declare itself free-threading safe, so CPython keeps the GIL
// on while it is loaded); the GIL serialises every access.
unsafe impl Sync for Table {}

static TABLE: Table = Table(UnsafeCell::new([std::ptr::null_mut(); SLOTS]));

/// The slot for `key`'s bytes (at most 23 for a key the table holds; a longer text gets a
/// slot from its first and last 16 bytes, for [`holds`]). Each of [`words`]' words in use is
/// mixed in by a Fibonacci multiply, one round per 8 bytes begun, as when each 8-byte chunk
/// was mixed in zero-padded: keys that differ in a few low bytes, as `"1"` to `"100"` do,
/// land far apart.
#[inline(always)]
pub(super) fn slot(key: &[u8]) -> usize {
    slot_of(key.len(), words(key))
}

/// A key of at most 24 bytes, all ASCII, as [`lookup`] compares it: its slot, its length and
/// its [`words`], read once for both.
pub(super) struct ShortKey {
    pub(super) slot: usize,
    len: usize,
    words: [u64; 3],
}

/// `key` as a [`ShortKey`] if it is at most 24 bytes, all ASCII, else `None`. The words hold
/// every byte of such a key, so their union shows any byte with its top bit set: one pass
/// over the key serves the hash, the ASCII check and the comparison with the cached str,
/// which `<[u8]>::is_ascii` made a loop over the bytes of every key shorter than a word.
#[inline(always)]
pub(super) fn short_key(key: &[u8]) -> Option<ShortKey> {
    if key.len() > 24 {
        return None;
    }
    let words @ [a, b, c] = words(key);
    if (a | b | c) & 0x8080_8080_8080_8080 != 0 {
        return None;
    }
    Some(ShortKey {
        slot: slot_of(key.len(), words),
        len: key.len(),
        words,
    })
}

/// The slot of a text of `n` bytes whose [`words`] are `[a, b, c]`.
#[inline(always)]
fn slot_of(n: usize, [a, b, c]: [u64; 3]) -> usize {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = ((n as u64).rotate_left(23) ^ a).wrapping_mul(K);
    if n > 8 {
        h = (h.rotate_left(23) ^ b).wrapping_mul(K);
        if n > 16 {
            h = (h.rotate_left(23) ^ c).wrapping_mul(K);
        }
    }
    (h >> (64 - SLOTS.trailing_zeros())) as usize
}

/// Three words that hold every byte of a text of at most 24 bytes (the first 8, the next 8,
/// the rest, each as a little-endian word), read as loads that may overlap: for texts of one
/// length, equal words mean equal bytes. Copying a key into a padded buffer, and comparing it
/// with a cached one, were each a `memcpy`/`memcmp` call for every key.
#[inline(always)]
fn words(text: &[u8]) -> [u64; 3] {
    let n = text.len();
    let u64_at = |at: usize| u64::from_le_bytes(text[at..at + 8].try_into().unwrap_or([0; 8]));
    if n > 16 {
        [u64_at(0), u64_at(8), u64_at(n - 8)]
    } else if n > 8 {
        [u64_at(0), u64_at(n - 8), 0]
    } else if n == 8 {
        [u64_at(0), 0, 0]
    } else {
        [short_word(text), 0, 0]
    }
}

/// Whether two texts' [`words`] are equal, word by word. `key` is in memory, written a word
/// at a time by [`short_key`] just before: the array comparison read it 16 bytes at once,
/// which the CPU cannot forward from two 8-byte stores, so it waited for them. That wait
/// drew 12% of the profile samples of decoding the job-hash message; word by word took 2
/// to 3% off its time.
#[inline(always)]
fn same_words([a, b, c]: [u64; 3], key: &[u64; 3]) -> bool {
    ((a ^ key[0]) | (b ^ key[1]) | (c ^ key[2])) == 0
}

/// Up to 7 bytes as a little-endian word, zero-padded: two loads that may overlap each put
/// every byte they hold at the bits of its place, so or-ing them is exact.
#[inline(always)]
fn short_word(text: &[u8]) -> u64 {
    let n = text.len();
    if n >= 4 {
        let at = |i: usize| {
            u64::from(u32::from_le_bytes(
                text[i..i + 4].try_into().unwrap_or([0; 4]),
            ))
        };
        at(0) | at(n - 4) << (8 * (n - 4))
    } else if n >= 2 {
        let at = |i: usize| u64::from(u16::from_le_bytes([text[i], text[i + 1]]));
        at(0) | at(n - 2) << (8 * (n - 2))
    } else if n == 1 {
        u64::from(text[0])
    } else {
        0
    }
}

/// A new reference to the cached str in `key`'s slot if its text is `key`'s, else NULL.
///
/// # Safety
/// The GIL must be held.
#[inline(always)]
pub(super) unsafe fn lookup(key: &ShortKey) -> *mut ffi::PyObject {
    // SAFETY: the GIL is held (caller), so nothing else touches the table.
    let cached = unsafe { (*TABLE.0.get())[key.slot % SLOTS] };
    if cached.is_null() {
        return cached;
    }
    // SAFETY: cached is a live compact ASCII str the table holds; its data is its length in
    // bytes, one byte per character.
    unsafe {
        let len = ffi::PyUnicode_GET_LENGTH(cached) as usize;
        if len != key.len {
            return std::ptr::null_mut();
        }
        // key.len <= 24, so the cached text is one `words` reads whole.
        let text = std::slice::from_raw_parts(ffi::PyUnicode_DATA(cached).cast::<u8>(), len);
        if !same_words(words(text), &key.words) {
            return std::ptr::null_mut();
        }
        ffi::Py_INCREF(cached);
    }
    cached
}

/// Puts `key`, a new compact ASCII str, into `slot`, dropping what was there. Its hash is
/// computed now, as the dict would compute it on insertion anyway; if that fails (it cannot
/// for a str), the key is simply not cached.
///
/// # Safety
/// The GIL must be held and `key` must be a live exact str of ASCII characters.
#[inline]
pub(super) unsafe fn remember(slot: usize, key: *mut ffi::PyObject) {
    // SAFETY: key is a live str (caller).
    if unsafe { ffi::PyObject_Hash(key) } == -1 {
        // SAFETY: the GIL is held; a str hash does not fail, but never leave an error set.
        unsafe { ffi::PyErr_Clear() };
        return;
    }
    // SAFETY: the GIL is held, so nothing else touches the table; the table takes its own
    // reference to key and gives up the one it held to the old str, whose deallocation (a
    // str's) runs no Python code.
    unsafe {
        let entry = &mut (*TABLE.0.get())[slot % SLOTS];
        ffi::Py_INCREF(key);
        let old = std::mem::replace(entry, key);
        if !old.is_null() {
            ffi::Py_DECREF(old);
        }
    }
}

/// Whether `key` is the str the table holds for its text: a later decode meeting that text
/// as a key gets this very object (unless another key takes its slot meanwhile).
///
/// # Safety
/// The GIL must be held and `key` must be a live object.
pub(super) unsafe fn holds(key: *mut ffi::PyObject) -> bool {
    // SAFETY: the GIL is held (caller); the table's strs are live. The text of an exact str
    // is read through the public API, which for an ASCII str lends its own data.
    unsafe {
        if ffi::PyUnicode_CheckExact(key) == 0 {
            return false;
        }
        let mut len: ffi::Py_ssize_t = 0;
        let text = ffi::PyUnicode_AsUTF8AndSize(key, &mut len);
        if text.is_null() {
            ffi::PyErr_Clear();
            return false;
        }
        let text = std::slice::from_raw_parts(text.cast::<u8>(), len as usize);
        text.is_ascii() && (*TABLE.0.get())[slot(text) % SLOTS] == key
    }
}
