//! What one call allows (`types=` and `custom=`), by `"module:qualname"`, and a cache that
//! spares a call the rebuilding of a list it has seen before.
//!
//! Why the cache: `amber._classes.registry` checks each entry and makes its key in Python,
//! about a microsecond for a one-class list, which is more than decoding a job message
//! takes. Services pass the same list on every call (`loads(b, types=TASK_TYPES)`), so the
//! names made for the last few lists are kept, and a call whose list holds the very same
//! objects in the same order reuses them: a few pointer comparisons instead of a Python call.
//!
//! What it holds: names and weak references only. Classes made at run time must be able to
//! die (tests/test_caches.py), so no cache entry keeps one alive; each call takes its own
//! strong references, from the caller's list, for as long as it runs. An entry matches only
//! when every item of the list is a live referent of its weak references (CPython clears
//! those before an object is freed, so a new object at a dead one's address never matches),
//! so a hit gives what `registry` would give for those objects, except for a class whose
//! `__module__` or `__qualname__` was assigned after the list was first seen: it keeps the
//! name it had then, as the encoder's plan cache does.
//!
//! What is cached: `types` and `custom` given as a list or tuple (or None), whose items are
//! weakly referenceable (classes, functions, `CustomType`) or `("module:qualname", obj)`
//! aliases of such objects. Any other argument, a mapping included, goes to `registry` on
//! every call, as before.

use std::sync::{Arc, Mutex, OnceLock};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_ffi as ffi;
use rustc_hash::FxHashMap;

use crate::callbacks::Callback;
use crate::custom_type;
use crate::weak_class::{refers_to, upgrade, weak};

/// How many lists are remembered; services use one or a few.
const CACHE_ENTRIES: usize = 8;

/// The names one `types`/`custom` pair allows, with where each object comes from in the
/// caller's arguments.
#[derive(Default)]
pub struct Names {
    /// `"module:qualname"` -> index into the call's objects: the allowed classes and
    /// functions.
    classes: FxHashMap<Box<str>, u32>,
    /// `"module:qualname"` -> index into the call's objects: the custom decode functions.
    decoders: FxHashMap<Box<str>, u32>,
    /// For each of the call's objects, the item of `types` or `custom` it is taken from.
    sources: Box<[Source]>,
}

impl Names {
    /// Whether `key` names an allowed class or function.
    pub fn allows(&self, key: &str) -> bool {
        self.classes.contains_key(key)
    }
}

/// Where one allowed object is in the caller's arguments.
#[derive(Clone, Copy)]
enum Source {
    /// Item `i` of `types`, a class or function.
    Type(u32),
    /// The object of item `i` of `types`, a `(name, obj)` alias.
    Alias(u32),
    /// The `decode` function of item `i` of `custom`, a `CustomType`.
    Decoder(u32),
}

/// The classes, functions and custom decoders of one call, each held for the call.
pub struct Allowed {
    names: Arc<Names>,
    objects: Held,
}

/// How many of a call's objects [`Held`] keeps without allocating.
const HELD_INLINE: usize = 4;

/// The objects of one call, in the order its [`Names`] index them. A call allows one class
/// or a few: those are kept inline, so that a call whose list is remembered allocates
/// nothing (the allocation and its release cost a tenth of `loads(b, types=T)`'s overhead).
pub enum Held {
    Inline([Option<Py<PyAny>>; HELD_INLINE]),
    Heap(Box<[Py<PyAny>]>),
    /// Weak references to the objects: what a remembered keyword call keeps (see
    /// [`Allowed::hold_weakly`]).
    Weak(Box<[Py<PyAny>]>),
}

impl Held {
    /// `objects`, whose count is `count`.
    fn collect(count: usize, objects: impl IntoIterator<Item = Py<PyAny>>) -> Held {
        if count > HELD_INLINE {
            return Held::Heap(objects.into_iter().collect());
        }
        let mut inline = [const { None }; HELD_INLINE];
        for (slot, object) in inline.iter_mut().zip(objects) {
            *slot = Some(object);
        }
        Held::Inline(inline)
    }

    /// Object `index`, as a new reference; None past the end, or when a weakly held object
    /// has died.
    fn get<'py>(&self, py: Python<'py>, index: usize) -> Option<Bound<'py, PyAny>> {
        match self {
            Held::Inline(inline) => Some(inline.get(index)?.as_ref()?.bind(py).clone()),
            Held::Heap(heap) => Some(heap.get(index)?.bind(py).clone()),
            Held::Weak(weak) => upgrade(py, weak.get(index)?),
        }
    }

    fn strong(&self) -> impl Iterator<Item = &Py<PyAny>> {
        let (inline, heap): (&[Option<Py<PyAny>>], &[Py<PyAny>]) = match self {
            Held::Inline(inline) => (inline, &[]),
            Held::Heap(heap) => (&[], heap),
            Held::Weak(_) => (&[], &[]),
        };
        inline.iter().flatten().chain(heap)
    }
}

impl Allowed {
    /// Allows nothing. The empty names are made once and shared: the common call allows no
    /// classes, and costs no allocation for it.
    pub fn none() -> Allowed {
        static NO_NAMES: OnceLock<Arc<Names>> = OnceLock::new();
        Allowed {
            names: Arc::clone(NO_NAMES.get_or_init(Arc::default)),
            objects: Held::Inline([const { None }; HELD_INLINE]),
        }
    }

    /// The allowed class or function named `key`, as a new reference.
    pub fn class<'py>(&self, py: Python<'py>, key: &str) -> Option<Bound<'py, PyAny>> {
        let index = *self.names.classes.get(key)?;
        self.objects.get(py, index as usize)
    }

    /// The custom decode function for the class named `key`, as a new reference.
    pub fn decoder<'py>(&self, py: Python<'py>, key: &str) -> Option<Bound<'py, PyAny>> {
        let index = *self.names.decoders.get(key)?;
        self.objects.get(py, index as usize)
    }

    /// The names alone, for an encoder's check (it builds nothing).
    pub fn names(&self) -> &Arc<Names> {
        &self.names
    }

    /// Holds the objects weakly from now on, and gives them back held strongly, for the call
    /// that allowed them: what the keyword cache keeps, which must not keep a class alive.
    /// A remembered call finds each object through its weak reference, alive since the
    /// call's own list holds it (the cache compared the lists); one taken out of the list
    /// and released during the decode is found no more, and its class is then not allowed.
    /// None, changing nothing, when an object takes no weak reference.
    pub fn hold_weakly(&mut self, py: Python<'_>) -> Option<Held> {
        let weak = self
            .objects
            .strong()
            .map(|object| weak(py, object.as_ptr()))
            .collect::<Option<Box<[_]>>>()?;
        Some(std::mem::replace(&mut self.objects, Held::Weak(weak)))
    }

    /// These names with `objects` (from [`hold_weakly`](Self::hold_weakly)).
    pub fn with(&self, objects: Held) -> Allowed {
        Allowed {
            names: Arc::clone(&self.names),
            objects,
        }
    }
}

/// What `types` and `custom` allow: from the cache when they hold the same objects as a
/// list seen before, else from `amber._classes.registry` (which raises for a bad entry).
pub fn allowed(
    py: Python<'_>,
    types: Option<&Bound<'_, PyAny>>,
    custom: Option<&Bound<'_, PyAny>>,
) -> PyResult<Allowed> {
    let types = types.filter(|t| !t.is_none());
    let custom = custom.filter(|c| !c.is_none());
    if types.is_none() && custom.is_none() {
        return Ok(Allowed::none());
    }
    let key = CallKey::of(types, custom);
    if let Some(key) = &key {
        if let Some(names) = cached(key) {
            if let Some(objects) = key.objects(py, &names) {
                return Ok(Allowed { names, objects });
            }
        }
    }
    // Taken before `registry` runs: it may run code (a metaclass's `__qualname__`) that
    // changes the lists, and an entry is kept only if they still hold these objects after.
    let snapshot = key.as_ref().and_then(|key| key.snapshot(py));
    let none = py.None();
    let registry = Callback::Registry.call(
        py,
        (
            types.map_or_else(|| none.bind(py).clone(), Bound::clone),
            custom.map_or_else(|| none.bind(py).clone(), Bound::clone),
        ),
    )?;
    let (classes, decoders): (Bound<'_, PyDict>, Bound<'_, PyDict>) = registry.extract()?;
    let mut names = Names::default();
    let mut objects = Vec::with_capacity(classes.len() + decoders.len());
    for (table, into) in [
        (&classes, &mut names.classes),
        (&decoders, &mut names.decoders),
    ] {
        for (name, object) in table.iter() {
            let name: String = name.extract()?;
            into.insert(name.into_boxed_str(), objects.len() as u32);
            objects.push(object.unbind());
        }
    }
    let decoders_from = names.classes.len();
    let sources = key
        .as_ref()
        .and_then(|key| key.sources(py, &objects, decoders_from));
    let cacheable = sources.is_some();
    names.sources = sources.unwrap_or_default();
    let names = Arc::new(names);
    if let (Some(key), Some((types, custom)), true) = (key, snapshot, cacheable) {
        let entry = Entry {
            types,
            custom,
            names: Arc::clone(&names),
        };
        if key.matches(&entry) {
            remember(entry);
        }
    }
    Ok(Allowed {
        names,
        objects: Held::collect(objects.len(), objects),
    })
}

/// The names `types` allows, for an encoder's check: [`allowed`] without taking the objects.
pub fn names(py: Python<'_>, types: &Bound<'_, PyAny>) -> PyResult<Arc<Names>> {
    if let Some(key) = CallKey::of(Some(types), None) {
        if let Some(names) = cached(&key) {
            return Ok(names);
        }
    }
    Ok(Arc::clone(allowed(py, Some(types), None)?.names()))
}

/// The caller's custom encode functions, by exact class: what `custom=` gives an encoder.
///
/// A table of its own rather than a dict: the encoder asks it about every class instance it
/// meets, and a call that passes `custom=` builds one, so a few entries are kept inline
/// (building and releasing a dict cost more than the lookups of a small payload). Entries are sorted by class address and found by address (classes are
/// compared by identity, as "exact class" says); when `custom` names a class twice, the
/// later entry wins, as it would in a dict.
pub struct CustomEncoders(Entries);

/// How many entries [`CustomEncoders`] keeps without allocating.
const ENCODERS_INLINE: usize = 4;

/// `(class, encode)` pairs, sorted by the class's address, one per class.
enum Entries {
    Few(usize, [Option<(Py<PyAny>, Py<PyAny>)>; ENCODERS_INLINE]),
    Many(Box<[(Py<PyAny>, Py<PyAny>)]>),
}

impl CustomEncoders {
    /// The table of `pairs`, `count` of them, in the caller's order; None when there are
    /// none, and the first error of `pairs` if one fails.
    fn build(
        count: usize,
        pairs: impl Iterator<Item = PyResult<(Py<PyAny>, Py<PyAny>)>>,
    ) -> PyResult<Option<CustomEncoders>> {
        let address = |pair: &(Py<PyAny>, Py<PyAny>)| pair.0.as_ptr() as usize;
        if count > ENCODERS_INLINE {
            let mut entries = pairs.collect::<PyResult<Vec<_>>>()?;
            // Stable: of the entries for one class, the caller's last stays last.
            entries.sort_by_key(address);
            let mut kept: Vec<(Py<PyAny>, Py<PyAny>)> = Vec::with_capacity(entries.len());
            for pair in entries {
                match kept.last_mut() {
                    Some(last) if address(last) == address(&pair) => *last = pair,
                    _ => kept.push(pair),
                }
            }
            return Ok(Some(CustomEncoders(Entries::Many(kept.into()))));
        }
        let mut few: [Option<(Py<PyAny>, Py<PyAny>)>; ENCODERS_INLINE] = [const { None }; 4];
        let mut len = 0;
        for pair in pairs.take(ENCODERS_INLINE) {
            let pair = pair?;
            // Insertion by address; an entry for a class already there replaces it.
            let at = few[..len]
                .iter()
                .position(|e| e.as_ref().is_some_and(|e| address(e) >= address(&pair)))
                .unwrap_or(len);
            if few[at]
                .as_ref()
                .is_some_and(|e| address(e) == address(&pair))
            {
                few[at] = Some(pair);
                continue;
            }
            few[at..=len].rotate_right(1);
            few[at] = Some(pair);
            len += 1;
        }
        Ok((len > 0).then_some(CustomEncoders(Entries::Few(len, few))))
    }

    /// The encode function for instances of exactly `class`, borrowed.
    #[inline]
    pub fn get(&self, class: *mut ffi::PyTypeObject) -> Option<*mut ffi::PyObject> {
        let key = class.cast::<ffi::PyObject>();
        match &self.0 {
            Entries::Few(len, few) => few[..*len]
                .iter()
                .flatten()
                .find(|(c, _)| c.as_ptr() == key)
                .map(|(_, encode)| encode.as_ptr()),
            Entries::Many(many) => {
                let at = many
                    .binary_search_by_key(&(key as usize), |(c, _)| c.as_ptr() as usize)
                    .ok()?;
                Some(many[at].1.as_ptr())
            }
        }
    }
}

/// The encode functions of `custom` by exact class, or None when it has none: what
/// `amber._classes.encoders` returns. A list or tuple of `CustomType` objects (which cannot
/// change once made, and were checked when made) is read here, from their slots, without
/// calling Python: that call cost as much as encoding a job message. Anything else goes to
/// `encoders`, which checks each entry.
pub fn encoders(py: Python<'_>, custom: &Bound<'_, PyAny>) -> PyResult<Option<CustomEncoders>> {
    let custom_type = custom_type::class();
    if custom_type.is_null() {
        return Err(PyErr::fetch(py));
    }
    if let Some(seq) = Seq::of(Some(custom)) {
        let all_custom = (0..seq.len).all(|i| {
            seq.get(i)
                .is_some_and(|item| custom_type::is_custom_type(item, custom_type))
        });
        if all_custom {
            // Reading a field may run code (a getattr fallback) that changes the list:
            // `seq.get` stops at its current end.
            let pairs = (0..seq.len).map_while(|i| seq.get(i)).map(|item| {
                if let Some([cls, encode, _]) = custom_type::fields(item, custom_type) {
                    // SAFETY: live objects the item's slots hold; each Py takes its own
                    // reference.
                    return Ok(unsafe {
                        (
                            Bound::from_borrowed_ptr(py, cls).unbind(),
                            Bound::from_borrowed_ptr(py, encode).unbind(),
                        )
                    });
                }
                Ok((
                    custom_field(py, item, custom_type::Field::Cls)?,
                    custom_field(py, item, custom_type::Field::Encode)?,
                ))
            });
            return CustomEncoders::build(seq.len, pairs);
        }
    }
    let table = Callback::Encoders.call(py, (custom,))?;
    if table.is_none() {
        return Ok(None);
    }
    let table = table.cast_into::<PyDict>()?;
    let pairs = table
        .iter()
        .map(|(class, encode)| Ok((class.unbind(), encode.unbind())));
    CustomEncoders::build(table.len(), pairs)
}

/// The fields (`cls`, `encode`, `decode`, by address) of each item of `custom`, when it is a
/// list or tuple of exact `CustomType` objects whose fields are all set: what [`encoders`]
/// makes a table of without running code, and what a keyword cache hit checks the items
/// against ([`custom_fields_are`]). None otherwise.
pub fn custom_fields(custom: &Bound<'_, PyAny>) -> Option<Box<[[usize; 3]]>> {
    let (seq, class) = custom_items(custom)?;
    (0..seq.len).map(|i| fields_at(seq, class, i)).collect()
}

/// Whether `custom` holds, item by item, the fields `recorded` ([`custom_fields`]).
#[inline(always)]
pub fn custom_fields_are(custom: &Bound<'_, PyAny>, recorded: &[[usize; 3]]) -> bool {
    let Some((seq, class)) = custom_items(custom) else {
        return false;
    };
    seq.len == recorded.len()
        && (recorded.iter().enumerate()).all(|(i, &[cls, encode, decode])| {
            let now = seq.get(i).and_then(|item| custom_type::fields(item, class));
            now.is_some_and(|[c, e, d]| {
                c as usize == cls && e as usize == encode && d as usize == decode
            })
        })
}

/// `custom` as a list or tuple, with the class `CustomType`; None if either is missing.
fn custom_items(custom: &Bound<'_, PyAny>) -> Option<(Seq, *mut ffi::PyObject)> {
    let seq = Seq::of(Some(custom))?;
    let class = custom_type::class();
    if class.is_null() {
        // SAFETY: the GIL is held; the failed import is left to `encoders` to report.
        unsafe { ffi::PyErr_Clear() };
        return None;
    }
    Some((seq, class))
}

/// The fields of item `i` of `seq`, by address (see [`custom_fields`]).
#[inline]
fn fields_at(seq: Seq, class: *mut ffi::PyObject, i: usize) -> Option<[usize; 3]> {
    Some(custom_type::fields(seq.get(i)?, class)?.map(|f| f as usize))
}

/// `field` of `item`, a live `CustomType`, as a new reference: from its slot, or else by
/// `getattr` (which may run code, and raises for a field that is not set).
fn custom_field(
    py: Python<'_>,
    item: *mut ffi::PyObject,
    field: custom_type::Field,
) -> PyResult<Py<PyAny>> {
    if let Some(value) = custom_type::field(item, field) {
        // SAFETY: a live object held by the item's slot; the Py takes its own reference.
        return Ok(unsafe { Bound::from_borrowed_ptr(py, value) }.unbind());
    }
    let name = match field {
        custom_type::Field::Cls => pyo3::intern!(py, "cls"),
        custom_type::Field::Encode => pyo3::intern!(py, "encode"),
        custom_type::Field::Decode => pyo3::intern!(py, "decode"),
    };
    // SAFETY: item is a live object the caller borrows for the call.
    Ok(unsafe { Bound::from_borrowed_ptr(py, item) }
        .getattr(name)?
        .unbind())
}

/// A list or tuple argument, read by index without copying.
#[derive(Clone, Copy)]
pub(crate) struct Seq {
    object: *mut ffi::PyObject,
    is_list: bool,
    pub(crate) len: usize,
}

impl Seq {
    /// `arg` as a sequence the cache can key on: None (given as an empty sequence) or an
    /// exact list or tuple.
    fn of(arg: Option<&Bound<'_, PyAny>>) -> Option<Seq> {
        let Some(arg) = arg else {
            return Some(Seq {
                object: std::ptr::null_mut(),
                is_list: false,
                len: 0,
            });
        };
        Seq::at(arg.as_ptr())
    }

    /// `object`, a live object, if it is an exact list or tuple.
    pub(crate) fn at(object: *mut ffi::PyObject) -> Option<Seq> {
        // SAFETY: exact type checks and sizes of a live object.
        unsafe {
            if ffi::PyList_CheckExact(object) != 0 {
                Some(Seq {
                    object,
                    is_list: true,
                    len: ffi::PyList_GET_SIZE(object) as usize,
                })
            } else if ffi::PyTuple_CheckExact(object) != 0 {
                Some(Seq {
                    object,
                    is_list: false,
                    len: ffi::PyTuple_GET_SIZE(object) as usize,
                })
            } else {
                None
            }
        }
    }

    /// Item `i`, borrowed; None past the end. The size is read again each time: getting a
    /// `CustomType`'s `decode` may run code (a subclass's property) that changes the list.
    pub(crate) fn get(&self, i: usize) -> Option<*mut ffi::PyObject> {
        // SAFETY: reads of a live list or tuple, within the size read just before (a list's
        // items are not freed while it holds them, and nothing runs in between).
        unsafe {
            if self.is_list {
                (i < ffi::PyList_GET_SIZE(self.object) as usize)
                    .then(|| ffi::PyList_GET_ITEM(self.object, i as ffi::Py_ssize_t))
            } else {
                (i < self.len).then(|| ffi::PyTuple_GET_ITEM(self.object, i as ffi::Py_ssize_t))
            }
        }
    }
}

/// A `("module:qualname", obj)` alias: its name and object, borrowed.
fn alias_parts(item: *mut ffi::PyObject) -> Option<(*mut ffi::PyObject, *mut ffi::PyObject)> {
    // SAFETY: exact type checks and reads of a live tuple's items.
    unsafe {
        if ffi::PyTuple_CheckExact(item) == 0 || ffi::PyTuple_GET_SIZE(item) != 2 {
            return None;
        }
        let name = ffi::PyTuple_GET_ITEM(item, 0);
        (ffi::PyUnicode_CheckExact(name) != 0).then(|| (name, ffi::PyTuple_GET_ITEM(item, 1)))
    }
}

/// The arguments of one call, as the cache compares them.
struct CallKey {
    types: Seq,
    custom: Seq,
}

impl CallKey {
    fn of(types: Option<&Bound<'_, PyAny>>, custom: Option<&Bound<'_, PyAny>>) -> Option<CallKey> {
        Some(CallKey {
            types: Seq::of(types)?,
            custom: Seq::of(custom)?,
        })
    }

    /// Whether `entry` was made for these very objects.
    fn matches(&self, entry: &Entry) -> bool {
        if entry.types.len() != self.types.len || entry.custom.len() != self.custom.len {
            return false;
        }
        let types_match = entry.types.iter().enumerate().all(|(i, seen)| {
            let Some(item) = self.types.get(i) else {
                return false;
            };
            match seen {
                Seen::Object(weak) => refers_to(weak, item),
                Seen::Alias(name, weak) => alias_parts(item).is_some_and(|(n, object)| {
                    // SAFETY: both are live exact str objects; comparing them runs no code.
                    let same_name = n == name.as_ptr()
                        || unsafe { ffi::PyUnicode_Compare(n, name.as_ptr()) } == 0;
                    same_name && refers_to(weak, object)
                }),
            }
        });
        types_match
            && entry
                .custom
                .iter()
                .enumerate()
                .all(|(i, weak)| self.custom.get(i).is_some_and(|item| refers_to(weak, item)))
    }

    /// The objects `names` lists, taken from these arguments; None if one cannot be read
    /// (a `CustomType` without its `decode`, which its class does not allow).
    fn objects(&self, py: Python<'_>, names: &Names) -> Option<Held> {
        let object = |source: &Source| -> Option<Py<PyAny>> {
            let object = match *source {
                Source::Type(i) => self.types.get(i as usize)?,
                Source::Alias(i) => alias_parts(self.types.get(i as usize)?)?.1,
                Source::Decoder(i) => {
                    let entry = self.custom.get(i as usize)?;
                    return custom_field(py, entry, custom_type::Field::Decode).ok();
                }
            };
            // SAFETY: object is a live item (or alias object) of the caller's arguments.
            Some(unsafe { Bound::from_borrowed_ptr(py, object) }.unbind())
        };
        let count = names.sources.len();
        if count > HELD_INLINE {
            return names
                .sources
                .iter()
                .map(object)
                .collect::<Option<_>>()
                .map(Held::Heap);
        }
        let mut inline = [const { None }; HELD_INLINE];
        for (slot, source) in inline.iter_mut().zip(names.sources.iter()) {
            *slot = Some(object(source)?);
        }
        Some(Held::Inline(inline))
    }

    /// Where each of `objects` (the registry's classes, then from `decoders_from` on its
    /// decoders) is in these arguments, found by identity; None if one is not found there.
    fn sources(
        &self,
        py: Python<'_>,
        objects: &[Py<PyAny>],
        decoders_from: usize,
    ) -> Option<Box<[Source]>> {
        objects
            .iter()
            .enumerate()
            .map(|(at, object)| {
                let object = object.as_ptr();
                if at < decoders_from {
                    (0..self.types.len).rev().find_map(|i| {
                        let item = self.types.get(i)?;
                        if item == object {
                            Some(Source::Type(i as u32))
                        } else if alias_parts(item).is_some_and(|(_, o)| o == object) {
                            Some(Source::Alias(i as u32))
                        } else {
                            None
                        }
                    })
                } else {
                    (0..self.custom.len).rev().find_map(|i| {
                        let entry = self.custom.get(i)?;
                        let decode = custom_field(py, entry, custom_type::Field::Decode).ok()?;
                        (decode.as_ptr() == object).then_some(Source::Decoder(i as u32))
                    })
                }
            })
            .collect()
    }

    /// What a cache entry for these arguments compares, or None if one of their objects
    /// cannot be weakly referenced.
    fn snapshot(&self, py: Python<'_>) -> Option<Snapshot> {
        let types = (0..self.types.len)
            .map(|i| {
                let item = self.types.get(i)?;
                match alias_parts(item) {
                    Some((name, object)) => Some(Seen::Alias(
                        // SAFETY: name is a live str of the caller's alias.
                        unsafe { Bound::from_borrowed_ptr(py, name) }.unbind(),
                        weak(py, object)?,
                    )),
                    None => Some(Seen::Object(weak(py, item)?)),
                }
            })
            .collect::<Option<Box<[Seen]>>>()?;
        let custom = (0..self.custom.len)
            .map(|i| weak(py, self.custom.get(i)?))
            .collect::<Option<Box<[Py<PyAny>]>>>()?;
        Some((types, custom))
    }
}

/// The items of a `types` and a `custom`, as an entry remembers them.
type Snapshot = (Box<[Seen]>, Box<[Py<PyAny>]>);

/// One item of a remembered `types`.
enum Seen {
    Object(Py<PyAny>),
    Alias(Py<PyAny>, Py<PyAny>),
}

/// One remembered `types`/`custom` pair and its names.
struct Entry {
    types: Box<[Seen]>,
    custom: Box<[Py<PyAny>]>,
    names: Arc<Names>,
}

fn cache() -> &'static Mutex<Vec<Entry>> {
    static CACHE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
    &CACHE
}

/// The names remembered for `key`'s objects; the entry moves to the front.
fn cached(key: &CallKey) -> Option<Arc<Names>> {
    let mut entries = cache().lock().ok()?;
    let at = entries.iter().position(|entry| key.matches(entry))?;
    entries[..=at].rotate_right(1);
    Some(Arc::clone(&entries[0].names))
}

/// Remembers `entry` first, forgetting the least recently used beyond [`CACHE_ENTRIES`].
fn remember(entry: Entry) {
    // Dropped after the lock is released: dropping a reference may run Python code (a weak
    // reference's callback, a str's deallocation does not, but nothing here needs to know).
    let mut forgotten = Vec::new();
    if let Ok(mut entries) = cache().lock() {
        entries.insert(0, entry);
        let keep = CACHE_ENTRIES.min(entries.len());
        forgotten.extend(entries.drain(keep..));
    }
    drop(forgotten);
}
