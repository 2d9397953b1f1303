//! The checked options of recent keyword calls, reused when a call passes the very same
//! option objects again.
//!
//! Why: `loads(b, max_depth=50)` matched its keywords and checked every option anew on each
//! call, about 350 instructions (the option structs built and dropped, the int read, the
//! defaults filled in): a twentieth of decoding a job message, a tenth of a smaller one.
//! Services pass the same options on every call, as literals at a call site or as a dict
//! unpacked with `**`, so the names and the value objects are the same ones call after call.
//!
//! What is compared: the keyword names and values, by identity. CPython hands over interned
//! names (a call site's constant tuple, or a new tuple of the same interned strs for
//! `**options`), so the names are compared one by one, not the tuple. A call is remembered
//! only if each value is an object of an immutable exact type (None, bool, int, float, str,
//! bytes): it cannot change, and the entry holds a reference to it, so no other object takes
//! its address while the entry stands. Options that name objects amber keeps using (`types`,
//! `custom`, callbacks, clocks) are of other types and never remembered, and neither are
//! `key` (signing keys are not kept beyond the caller's own references) and `buffers` (they
//! belong to one call).
//!
//! When: on the second miss in a row with the same names and values (by a fingerprint of
//! their addresses), so that calls whose values change every time (`max_alloc=len(b) * 8`)
//! never fill the cache, and cost only the fingerprint.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3_ffi as ffi;

/// Calls remembered per function.
const ENTRIES: usize = 4;
/// The most keywords a remembered call has (every option given at once is at most 12).
const MAX_KEYWORDS: usize = 16;

/// The keyword calls of one function (`dumps` or `loads`) remembered with their options `C`.
pub struct KeywordCache<C> {
    state: Mutex<State<C>>,
}

struct State<C> {
    /// Most recently used first.
    entries: Vec<Entry<C>>,
    /// The fingerprint of the last call that missed.
    last_miss: u64,
}

struct Entry<C> {
    names: Box<[Py<PyAny>]>,
    values: Box<[Py<PyAny>]>,
    config: Arc<C>,
}

/// The keywords of one call as CPython passed them: names and values, borrowed.
#[derive(Clone, Copy)]
pub struct Keywords<'a> {
    names: &'a [*mut ffi::PyObject],
    values: &'a [*mut ffi::PyObject],
}

impl<'a> Keywords<'a> {
    /// The keywords of a vector call, or None for more than [`MAX_KEYWORDS`] of them (not
    /// remembered).
    ///
    /// # Safety
    /// `kwnames` is the non-NULL tuple of names CPython passed, `values` the pointer to its
    /// values, and both outlive `'a`.
    pub unsafe fn of(
        kwnames: *mut ffi::PyObject,
        values: *const *mut ffi::PyObject,
    ) -> Option<Self> {
        // SAFETY: the caller's promise: a live tuple, whose items are stored inline, and as
        // many values after the positional arguments.
        unsafe {
            let count = ffi::PyTuple_GET_SIZE(kwnames) as usize;
            if count > MAX_KEYWORDS {
                return None;
            }
            let items = (*kwnames.cast::<ffi::PyTupleObject>()).ob_item.as_ptr();
            Some(Keywords {
                names: std::slice::from_raw_parts(items, count),
                values: std::slice::from_raw_parts(values, count),
            })
        }
    }

    /// Whether the call may be remembered: every value of an immutable exact type, and no
    /// keyword among `refused` (names, as the interned objects CPython passes).
    pub fn cacheable(&self, refused: &[*mut ffi::PyObject]) -> bool {
        self.values.iter().all(|&v| immutable(v)) && !self.names.iter().any(|n| refused.contains(n))
    }

    fn fingerprint(&self) -> u64 {
        self.names
            .iter()
            .chain(self.values)
            .fold(self.names.len() as u64, |h, &p| {
                (h.rotate_left(5) ^ p as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            })
    }

    fn matches<C>(&self, entry: &Entry<C>) -> bool {
        entry.names.len() == self.names.len()
            && entry
                .names
                .iter()
                .zip(self.names)
                .all(|(a, &b)| a.as_ptr() == b)
            && entry
                .values
                .iter()
                .zip(self.values)
                .all(|(a, &b)| a.as_ptr() == b)
    }
}

/// Whether a value may be compared by identity: an object of an immutable exact type.
fn immutable(value: *mut ffi::PyObject) -> bool {
    // SAFETY: exact type checks of a live object.
    unsafe {
        value == ffi::Py_None()
            || ffi::PyBool_Check(value) != 0
            || ffi::PyLong_CheckExact(value) != 0
            || ffi::PyFloat_CheckExact(value) != 0
            || ffi::PyUnicode_CheckExact(value) != 0
            || ffi::PyBytes_CheckExact(value) != 0
    }
}

impl<C> KeywordCache<C> {
    pub const fn new() -> Self {
        KeywordCache {
            state: Mutex::new(State {
                entries: Vec::new(),
                last_miss: 0,
            }),
        }
    }

    /// The options remembered for `keywords`; the entry moves to the front.
    pub fn find(&self, keywords: Keywords<'_>) -> Option<Arc<C>> {
        let mut state = self.state.lock().ok()?;
        let at = state.entries.iter().position(|e| keywords.matches(e))?;
        state.entries[..=at].rotate_right(1);
        Some(Arc::clone(&state.entries[0].config))
    }

    /// After a miss of a [`Keywords::cacheable`] call whose options checked out as
    /// `config`: remembers them if the last miss had these very names and values, and then
    /// gives them back shared (`Ok`); otherwise gives them back as they are.
    pub fn missed(&self, py: Python<'_>, keywords: Keywords<'_>, config: C) -> Result<Arc<C>, C> {
        let fingerprint = keywords.fingerprint();
        let repeated = match self.state.lock() {
            Ok(mut state) => std::mem::replace(&mut state.last_miss, fingerprint) == fingerprint,
            Err(_) => false,
        };
        if !repeated {
            return Err(config);
        }
        let config = Arc::new(config);
        // SAFETY: live borrowed names and values of the call; each Py takes its own reference.
        let hold = |objects: &[*mut ffi::PyObject]| -> Box<[Py<PyAny>]> {
            objects
                .iter()
                .map(|&o| unsafe { Bound::from_borrowed_ptr(py, o) }.unbind())
                .collect()
        };
        let entry = Entry {
            names: hold(keywords.names),
            values: hold(keywords.values),
            config: Arc::clone(&config),
        };
        // Dropped after the lock is released: releasing an option object runs no code, but
        // nothing here needs to rely on that.
        let mut forgotten = Vec::new();
        if let Ok(mut state) = self.state.lock() {
            state.entries.insert(0, entry);
            let keep = ENTRIES.min(state.entries.len());
            forgotten.extend(state.entries.drain(keep..));
        }
        drop(forgotten);
        Ok(config)
    }
}
