//! The checked options of recent keyword calls, reused when a call passes the very same
//! option objects again.
//!
//! Why: `loads(b, max_depth=50)` matched its keywords and checked every option anew on each
//! call, about 350 instructions (the option structs built and dropped, the int read, the
//! defaults filled in): a twentieth of decoding a job message, a tenth of a smaller one.
//! `loads(b, types=TYPES)` cost twice that, the allow-list being looked up in the registry's
//! cache and its names shared anew. Services pass the same options on every call, as
//! literals at a call site or as a dict unpacked with `**`, so the names and the value
//! objects are the same ones call after call.
//!
//! What is compared: the keyword names and values, by identity. CPython hands over interned
//! names, as a call site's constant tuple or, for `**options`, a new tuple of the same
//! interned strs: an entry keeps the tuple of the call that made it, and a call passing
//! that very tuple has its names; any other tuple's names are compared one by one. A value
//! is compared by identity if it is an object of an immutable exact type (None, bool, int,
//! float, str, bytes): it cannot change, and the entry holds a reference to it, so no other
//! object takes its address while the entry stands. The allow-lists (`types`, `custom`,
//! named by the caller as "listed") are compared item by item when given as an exact list
//! or tuple: a list literal is a new object on each call, and a module's list may be
//! changed in place between calls. Their items are held weakly, as the registry's cache
//! holds them, because classes made at run time must be able to die. Each of those weak
//! references calls back when its item dies, and the entries that compare that item are
//! forgotten at once ([`KeywordCache::forget`]): an entry's options may then hold what an
//! item holds (a `CustomType`'s class and encode function) without keeping it alive longer
//! than the item itself. Options must not hold a listed item itself, or anything that holds
//! one, which would keep the item from dying; so `types=` classes are taken from the call's
//! own list on each hit. Other values (callbacks, clocks) are never remembered, and neither
//! are `key` (signing keys are not kept beyond the caller's own references) and `buffers`
//! (they belong to one call).
//!
//! The callback may run whenever an item is released, so no Python object is released, and
//! no weak reference made, while the cache's state is borrowed (`with_state`).
//!
//! When: on the second miss in a row with the same names and values (by a fingerprint of
//! their addresses, a list's by its items), so that calls whose values change every time
//! (`max_alloc=len(b) * 8`) never fill the cache, and cost only the fingerprint.

use std::cell::UnsafeCell;
use std::rc::Rc;

use pyo3::prelude::*;
use pyo3_ffi as ffi;

use crate::registry::Seq;
use crate::weak_class::{refers_to, weak_calling};

/// Calls remembered per function.
const ENTRIES: usize = 4;
/// The most keywords a remembered call has (every option given at once is at most 12).
const MAX_KEYWORDS: usize = 16;
/// The most items of a listed option's list or tuple that a remembered call compares.
const MAX_ITEMS: usize = 16;

/// The keyword calls of one function (`dumps` or `loads`) remembered with their options `C`.
pub struct KeywordCache<C> {
    state: UnsafeCell<State<C>>,
}

// SAFETY: the state is only touched through `KeywordCache::with_state`, by a thread attached
// to the interpreter, which holds the GIL (the module does not declare itself
// free-threading safe, so CPython keeps the GIL on while it is loaded); the GIL serialises
// every access. The `Rc`s inside are cloned and released only there and by such threads.
unsafe impl<C> Sync for KeywordCache<C> {}

struct State<C> {
    /// Most recently used first.
    entries: Vec<Entry<C>>,
    /// The fingerprint of the last call that missed.
    last_miss: u64,
    /// The fingerprint of the last call that could not be remembered (an item without weak
    /// reference support), so that its repeats do not try again.
    refused: u64,
}

struct Entry<C> {
    /// The tuple of names CPython passed to the call that made the entry. A call site
    /// passes its own constant tuple every time, so a hit from that site finds its names
    /// equal by this one address; other calls (`**options` makes a new tuple) compare
    /// `names`. Held, so that no other tuple takes its address while the entry stands.
    site: Py<PyAny>,
    names: Box<[Py<PyAny>]>,
    values: Box<[Value]>,
    /// The values' addresses when every value is [`Value::Same`], compared as one flat
    /// slice; None when one is a listed option's items.
    addresses: Option<Box<[usize]>>,
    config: Rc<C>,
}

/// One value of a remembered call.
enum Value {
    /// An immutable object, compared by identity and held.
    Same(Py<PyAny>),
    /// A listed option's list or tuple: weak references to its items, compared in order.
    Items(Box<[Py<PyAny>]>),
}

/// The keywords of one call as CPython passed them: names and values, borrowed.
#[derive(Clone, Copy)]
pub struct Keywords<'a> {
    tuple: *mut ffi::PyObject,
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
                tuple: kwnames,
                names: std::slice::from_raw_parts(items, count),
                values: std::slice::from_raw_parts(values, count),
            })
        }
    }

    /// Whether the call may be remembered: no keyword among `refused`, and every value of an
    /// immutable exact type, or for a keyword among `listed` an exact list or tuple of at
    /// most [`MAX_ITEMS`] items (names, as the interned objects CPython passes).
    pub fn cacheable(&self, refused: &[*mut ffi::PyObject], listed: &[*mut ffi::PyObject]) -> bool {
        self.names.iter().zip(self.values).all(|(name, &value)| {
            !refused.contains(name)
                && (immutable(value)
                    || (listed.contains(name)
                        && Seq::at(value).is_some_and(|items| items.len <= MAX_ITEMS)))
        })
    }

    /// Where the keyword `name` (an interned name of the caller's table) is among the
    /// call's keywords. A call that matches a remembered one has its names in the same
    /// order, so the place found when remembering holds for every hit.
    pub fn position(&self, name: *mut ffi::PyObject) -> Option<usize> {
        self.names.iter().position(|&n| n == name)
    }

    /// The value of the keyword at `at` (from [`position`](Self::position)).
    #[inline]
    pub fn value_at(&self, at: usize) -> Option<*mut ffi::PyObject> {
        self.values.get(at).copied()
    }

    fn fingerprint(&self) -> u64 {
        let mix =
            |h: u64, p: usize| (h.rotate_left(5) ^ p as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut h = self
            .names
            .iter()
            .fold(self.names.len() as u64, |h, &p| mix(h, p as usize));
        for &value in self.values {
            h = match Seq::at(value) {
                Some(items) => (0..items.len).fold(mix(h, items.len), |h, i| {
                    mix(h, items.get(i).map_or(0, |item| item as usize))
                }),
                None => mix(h, value as usize),
            };
        }
        h
    }

    #[inline]
    fn matches<C>(&self, entry: &Entry<C>) -> bool {
        let same_names = entry.site.as_ptr() == self.tuple
            || (entry.names.len() == self.names.len()
                && (entry.names.iter().zip(self.names)).all(|(a, &b)| a.as_ptr() == b));
        // Equal names, so as many values as the entry has.
        same_names
            && match &entry.addresses {
                Some(addresses) => {
                    (addresses.iter().zip(self.values)).all(|(&a, &v)| a == v as usize)
                }
                None => self.items_match(entry),
            }
    }

    /// The values compared one by one, a listed option's item by item.
    #[inline]
    fn items_match<C>(&self, entry: &Entry<C>) -> bool {
        entry
            .values
            .iter()
            .zip(self.values)
            .all(|(held, &value)| match held {
                Value::Same(object) => object.as_ptr() == value,
                Value::Items(weak) => Seq::at(value).is_some_and(|items| {
                    items.len == weak.len()
                        && (weak.iter().enumerate())
                            .all(|(i, weak)| items.get(i).is_some_and(|item| refers_to(weak, item)))
                }),
            })
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
            state: UnsafeCell::new(State {
                entries: Vec::new(),
                last_miss: 0,
                refused: 0,
            }),
        }
    }

    /// Runs `f` on the state. A mutex was a tenth of a remembered call's cost (two atomic
    /// operations, and as many for an `Arc`), and the GIL already serialises the callers.
    /// `f` must not release a Python object or make one, which could run code (a weak
    /// reference's callback, [`forget`](Self::forget)) that comes back here.
    fn with_state<R>(&self, _attached: Python<'_>, f: impl FnOnce(&mut State<C>) -> R) -> R {
        // SAFETY: the thread holds the GIL (`_attached`), which serialises every access (see
        // the Sync impl), and `f` runs no Python code, so no other borrow of the state exists
        // while this one lives.
        f(unsafe { &mut *self.state.get() })
    }

    /// The options remembered for `keywords`; the entry moves to the front.
    pub fn find(&self, py: Python<'_>, keywords: Keywords<'_>) -> Option<Rc<C>> {
        self.with_state(py, |state| {
            let at = state.entries.iter().position(|e| keywords.matches(e))?;
            state.entries[..=at].rotate_right(1);
            Some(Rc::clone(&state.entries[0].config))
        })
    }

    /// Whether a miss of a [`Keywords::cacheable`] call repeats the last miss, with the very
    /// same names and values: the call to [`remember`](Self::remember).
    pub fn repeated(&self, py: Python<'_>, keywords: Keywords<'_>) -> bool {
        let fingerprint = keywords.fingerprint();
        self.with_state(py, |state| {
            std::mem::replace(&mut state.last_miss, fingerprint) == fingerprint
                && state.refused != fingerprint
        })
    }

    /// Remembers `config` for `keywords`, and gives it back shared (`Ok`); or gives it back
    /// as it is when an item of a listed option takes no weak reference (`Err`). `config`
    /// must not hold a listed option's item, nor anything that holds one. `on_death` is
    /// the function each item's weak reference calls when the item dies, which passes the
    /// weak reference to [`forget`](Self::forget).
    pub fn remember(
        &self,
        py: Python<'_>,
        keywords: Keywords<'_>,
        config: C,
        on_death: &Bound<'_, PyAny>,
    ) -> Result<Rc<C>, C> {
        // Made before the state is touched: making a weak reference may collect garbage,
        // and a dying item calls back into the state.
        let values = keywords
            .values
            .iter()
            .map(|&value| match Seq::at(value) {
                Some(items) => (0..items.len)
                    .map(|i| weak_calling(py, items.get(i)?, on_death))
                    .collect::<Option<Box<[_]>>>()
                    .map(Value::Items),
                // SAFETY: a live borrowed value of the call; the Py takes its own reference.
                None => Some(Value::Same(
                    unsafe { Bound::from_borrowed_ptr(py, value) }.unbind(),
                )),
            })
            .collect::<Option<Box<[Value]>>>();
        let Some(values) = values else {
            let fingerprint = keywords.fingerprint();
            self.with_state(py, |state| state.refused = fingerprint);
            return Err(config);
        };
        let config = Rc::new(config);
        let addresses = (values.iter().zip(keywords.values))
            .map(|(value, &address)| matches!(value, Value::Same(_)).then_some(address as usize))
            .collect();
        let entry = Entry {
            // SAFETY: the live borrowed tuple of the call; the Py takes its own reference.
            site: unsafe { Bound::from_borrowed_ptr(py, keywords.tuple) }.unbind(),
            addresses,
            // SAFETY: live borrowed names of the call; each Py takes its own reference.
            names: keywords
                .names
                .iter()
                .map(|&name| unsafe { Bound::from_borrowed_ptr(py, name) }.unbind())
                .collect(),
            values,
            config: Rc::clone(&config),
        };
        // Released once the state is let go: releasing an entry releases Python objects.
        let forgotten: Vec<Entry<C>> = self.with_state(py, |state| {
            state.entries.insert(0, entry);
            let keep = ENTRIES.min(state.entries.len());
            state.entries.drain(keep..).collect()
        });
        drop(forgotten);
        Ok(config)
    }

    /// Forgets the entries that compare an item through `weak`, whose item is dying.
    pub fn forget(&self, py: Python<'_>, weak: *mut ffi::PyObject) {
        let holds = |entry: &Entry<C>| {
            entry.values.iter().any(|value| match value {
                Value::Items(items) => items.iter().any(|w| w.as_ptr() == weak),
                Value::Same(_) => false,
            })
        };
        // Released once the state is let go: releasing an entry may release a class, whose
        // death may call back here again.
        let forgotten: Vec<Entry<C>> = self.with_state(py, |state| {
            let mut forgotten = Vec::new();
            let mut i = 0;
            while i < state.entries.len() {
                if holds(&state.entries[i]) {
                    forgotten.push(state.entries.remove(i));
                } else {
                    i += 1;
                }
            }
            forgotten
        });
        drop(forgotten);
    }
}
