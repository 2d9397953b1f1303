//! The identity memo of one encode: which objects were written where, so that an object met
//! again is written as a `REF` (spec section 6.4). Its rules, in one place:
//!
//! - **What is looked up.** Only an object that may be met again: one that something besides
//!   its container holds (reference count above 1, not counting the extra reference the
//!   encoder itself holds while writing an instance's attribute, [`Memo::set_held`]), or any
//!   object once a cyclic tuple has made the tracker record everything
//!   (`RefTracker::track_everything`). In canonical mode immutable values (str, int, float,
//!   bytes, tuples) are written by value every time, never looked up; mutable ones are
//!   always looked up, as a tuple written twice in full may hold them. All of this comes
//!   down to one comparison of the reference count with a floor ([`Memo::set_floors`]).
//! - **Liveness.** The memo keys objects by address. An object freed during the encode and a
//!   new one made at its address would be taken for it, so before anything that can run
//!   Python code or collect garbage (class code, a custom encoder, a numpy call) the encoder
//!   calls [`Memo::pin`], which takes a reference to every object recorded since the last pin;
//!   they are released when the encode ends or restarts.
//! - **Two tiers.** The identity memo (`RefTracker`) keeps a pass's first 64 objects in a
//!   small array and moves them to its hash table at the 65th. A first meeting in the small
//!   array goes through [`Memo::lookup_first_tier`], which skips the table's code.
//! - **Shortcuts.** Two small caches skip the memo's lookup, and both hold only objects
//!   the memo already holds, so they are exact: `recent` keeps a few objects found again lately
//!   (`[x] * n`, a shared str repeated in a long list), and two caches of str dict keys the
//!   memo holds (records repeat their keys): `key_refs` the key last written at each of a
//!   dict's first 8 positions, and `key_slots`, by address, the keys past those (a JSON API's
//!   records have dozens of keys) and those that took another's place in `key_refs` (nested
//!   dicts of several shapes). The key caches are consulted and filled only once the pass
//!   has found some object again ([`Memo::key_caches_on`]): a message that repeats nothing
//!   does not pay for them. All are emptied whenever the memo is, and only if the pass
//!   wrote them; `key_slots` by clearing a mask of the slots in use, so that a small payload
//!   does not pay for zeroing that table.
//! - **Restart.** A cycle through a tuple found late makes the encode start again with the
//!   tracker recording everything ([`Memo::restart`]).
//! - **Reuse.** The identity table, the list of recorded objects and the shortcut caches live
//!   in one box ([`Tables`]) that goes back to a scratch slot (`crate::gil_slot`) when the
//!   encode ends (the table and list are dropped instead if one payload grew them past
//!   [`SCRATCH_MEMO_LIMIT`]). Handing the box over moves one pointer. With the caches and the
//!   table in the memo itself, copying their 500 bytes into each new encoder, and out to the
//!   scratch slot and back, cost `dumps([1])` about 230 of its 960 instructions (callgrind);
//!   keeping the table outside the box and only the caches in it saved 90 of them, and the
//!   pointer more that each lookup follows costs nothing measurable on a JSON document of
//!   thousands of lookups.

use amber_format::{ImmutableStart, ImmutableToken, Recorded, RefTracker, Writer};
use pyo3_ffi as ffi;

use super::sink::BytesSink;
use crate::gil_slot::GilSlot;

/// Slots of [`Tables::recent`] (a power of two). Each object has one slot, picked by its
/// address, so two of the few objects a long list repeats can share one, as the allocator
/// happens to place them, and evict each other on every meeting: with 8 slots, one address
/// layout of `complex_list` sent 11,000 of its 100,000 items per encode to the table, 9% of
/// the encode's instructions, and 16 slots sent none (6% fewer instructions in all).
/// Emptying the extra 128 bytes costs a small message about 10 instructions.
const RECENT_REFS: usize = 16;

/// Dict positions whose keys [`Tables::key_refs`] remembers.
const KEY_REFS: usize = 8;
/// Slots of [`Tables::key_slots`]: one bit each in `Memo::key_slots_used`.
const KEY_SLOTS: usize = 64;

/// A memo grown past this many entries is dropped rather than kept, so one huge payload does
/// not pin its table's memory for the life of the process.
const SCRATCH_MEMO_LIMIT: usize = 1 << 16;

/// What one encode leaves for the next: the identity table and the list
/// of recorded objects (reusing them takes the allocator off the path of small payloads), and
/// the fixed tables of the shortcuts, which the encode that wrote them leaves empty
/// ([`Memo::empty_caches`]).
struct Tables {
    /// The identity table (used only with `refs=True`).
    tracker: RefTracker,
    /// Objects recorded in the tracker's table, in order. The tracker lists those its first
    /// tier recorded (`RefTracker::first_tier_ids`), which come before them: a small
    /// message's objects are listed once, not twice. Of the two lists one after the other,
    /// the first `Memo::pinned` hold a reference taken by [`Memo::pin`].
    recorded: Vec<*mut ffi::PyObject>,
    /// By position in a dict, the str key last written there that the memo holds, with its
    /// offset (address 0: none).
    key_refs: [(usize, usize); KEY_REFS],
    /// By [`key_slot`], a str key met past position KEY_REFS that the memo holds, with its
    /// offset; valid only where its bit in `Memo::key_slots_used` is set.
    key_slots: [(usize, usize); KEY_SLOTS],
    /// Objects the memo found again lately, with their offsets, by [`recent_slot`].
    recent: [(usize, usize); RECENT_REFS],
}

impl Tables {
    /// Appends `obj` to `recorded` without the growth check of `push`, which the lookups
    /// keep off their common path (they check for room first).
    ///
    /// # Safety
    /// `len` must be `recorded`'s length, and below its capacity. (Passed in: the caller
    /// read it for its room check, and a second read after the memo's stores is a load the
    /// compiler cannot drop.)
    #[inline(always)]
    unsafe fn record_in_room(&mut self, len: usize, obj: *mut ffi::PyObject) {
        debug_assert!(len == self.recorded.len() && len < self.recorded.capacity());
        // SAFETY: len < capacity (the caller's promise), so slot `len` is allocated; it is
        // written before the length covers it.
        unsafe {
            self.recorded.as_mut_ptr().add(len).write(obj);
            self.recorded.set_len(len + 1);
        }
    }

    /// Tables for the first encode, or for one that finds the scratch slot empty (another
    /// encode holds its tables).
    #[cold]
    #[inline(never)]
    fn boxed() -> Box<Tables> {
        Box::new(Tables {
            tracker: RefTracker::default(),
            recorded: Vec::new(),
            key_refs: [(0, 0); KEY_REFS],
            key_slots: [(0, 0); KEY_SLOTS],
            recent: [(0, 0); RECENT_REFS],
        })
    }
}

// SAFETY: the tables move between threads only through `SCRATCH`, given back by `recycle`
// after `unpin` emptied `recorded`: no object pointer goes along, and the rest is plain data.
unsafe impl Send for Tables {}

/// The tables of the last encode, while no encode is using them.
static SCRATCH: GilSlot<Box<Tables>> = GilSlot::new();

/// Where [`Tables::recent`] keeps `obj`: objects are at least 16-byte aligned, so the bits
/// above those pick the slot.
#[inline(always)]
fn recent_slot(obj: *mut ffi::PyObject) -> usize {
    (obj as usize >> 4) & (RECENT_REFS - 1)
}

/// Where [`Tables::key_slots`] keeps the key `key`. Str objects made one after another sit a
/// fixed distance apart, so the address is hashed (`amber_format::fibonacci`) rather than
/// masked.
#[inline(always)]
fn key_slot(key: *mut ffi::PyObject) -> usize {
    amber_format::fibonacci::slot(key as u64, KEY_SLOTS.trailing_zeros())
}

/// The identity memo of one encode (see the module documentation).
pub(super) struct Memo {
    /// The table, the recorded objects and the shortcuts (see [`Tables`]).
    tables: Box<Tables>,
    /// False with `refs=False`: nothing is looked up.
    on: bool,
    /// Canonical mode: immutable values are never looked up.
    canonical: bool,
    /// How many of the recorded objects [`Memo::pin`] holds a reference to.
    pinned: usize,
    /// The object the encoder holds one extra reference to while writing it, or NULL.
    held: *mut ffi::PyObject,
    /// The body offset of the object [`Memo::lookup`] saw last: where it was written
    /// before, or where it is about to be.
    last_offset: usize,
    /// Which slots of [`Tables::key_slots`] this pass has written.
    key_slots_used: u64,
    /// Whether this pass has found an object again: until it does, the key caches are
    /// neither consulted nor filled (see [`Memo::key_caches_on`]).
    found_any: bool,
    /// The reference counts above which an object goes through the memo: by
    /// [`Memo::ref_if_seen`] a mutable object (`[0]`) and an immutable value (`[1]`), and
    /// by [`Memo::immutable_may_repeat`] a tuple, frozenset or instance (`[2]`); see
    /// [`Memo::set_floors`].
    floors: [ffi::Py_ssize_t; 3],
}

/// What [`Memo::key`] knows of a dict key.
pub(super) enum KeyRef {
    /// The memo holds the key, written at this offset.
    Written(usize),
    /// Not known there: write the key and then [`Memo::remember_key`] it.
    Unknown,
}

impl Memo {
    /// The memo of a new encode, reusing the scratch allocations. A nested encode
    /// (a custom encoder calling `dumps`) finds the slot empty and allocates.
    pub(super) fn new(refs: bool, canonical: bool) -> Memo {
        // Left empty by the encode that filled them (see `Memo::empty_caches`).
        // SAFETY: an encode holds the GIL.
        let tables = unsafe { SCRATCH.take() }.unwrap_or_else(Tables::boxed);
        let mut memo = Memo {
            tables,
            on: refs,
            canonical,
            pinned: 0,
            held: std::ptr::null_mut(),
            last_offset: 0,
            key_slots_used: 0,
            found_any: false,
            floors: [0; 3],
        };
        memo.set_floors();
        memo
    }

    /// Sets [`Memo::floors`] from the options and the tracker's state, whenever either
    /// changes: an object whose reference count is at most its floor is not looked up.
    /// `ffi::Py_ssize_t::MAX`: never (refs off; an immutable value in canonical mode, which
    /// is written by value); 0: always (inside a cyclic tuple, where the tracker records
    /// everything; a mutable object in canonical mode, see [`Memo::ref_if_seen`]); otherwise
    /// 1: when something besides its container holds it. The third floor, for
    /// [`Memo::immutable_may_repeat`], does not depend on canonical mode: its callers decide
    /// that themselves (a tuple is written by value, an instance goes through the memo).
    ///
    /// Why one number: most objects an encode meets are held by their container alone, and
    /// testing the options, the tracker's state and the count one after another cost each
    /// about ten instructions (a list of 100 fresh strs: 996 more with refs than without).
    fn set_floors(&mut self) {
        let everything = self.tables.tracker.track_everything();
        let floor = |never: bool, always: bool| {
            if never {
                ffi::Py_ssize_t::MAX
            } else if always || everything {
                0
            } else {
                1
            }
        };
        self.floors = [
            floor(!self.on, self.canonical),
            floor(!self.on || self.canonical, false),
            floor(!self.on, false),
        ];
    }

    /// Whether `obj`'s reference count is above `floor` (one of [`Memo::floors`]), not
    /// counting the encoder's own extra reference to `held`. With the usual floor of 1: an
    /// object held once, by its container, cannot be met twice (except inside a cyclic
    /// tuple, when the floor is 0).
    #[inline(always)]
    fn above_floor(&self, obj: *mut ffi::PyObject, floor: ffi::Py_ssize_t) -> bool {
        // SAFETY: obj is live and the GIL is held.
        let count = unsafe { ffi::Py_REFCNT(obj) };
        // The second test runs only for a count just above the usual floor of 1.
        count > floor && !(count == 2 && floor == 1 && obj == self.held)
    }

    /// Whether a long list's loop should prefetch its items' lookups: refs are on and the
    /// table has outgrown the caches (see `prefetch.rs`).
    #[inline(always)]
    pub(super) fn worth_prefetching(&self) -> bool {
        self.on && self.tables.tracker.table_entries() >= super::prefetch::LARGE_TABLE
    }

    /// Starts the reads a lookup of `obj` will make: its header and the table's slot.
    #[inline(always)]
    pub(super) fn prefetch_lookup(&self, obj: *mut ffi::PyObject) {
        super::prefetch::prefetch(obj as usize);
        if let Some(slot) = self.tables.tracker.slot_address(obj as usize) {
            super::prefetch::prefetch(slot);
        }
    }

    /// Whether identity is tracked at all (`refs=True`).
    #[inline(always)]
    pub(super) fn is_on(&self) -> bool {
        self.on
    }

    /// The identity table, if identity is tracked.
    #[inline(always)]
    fn tracker(&self) -> Option<&RefTracker> {
        self.on.then_some(&self.tables.tracker)
    }

    /// [`Memo::tracker`], to change it.
    #[inline(always)]
    fn tracker_mut(&mut self) -> Option<&mut RefTracker> {
        self.on.then_some(&mut self.tables.tracker)
    }

    /// Whether a cycle through a tuple was found and the encode must start again.
    pub(super) fn needs_rerun(&self) -> bool {
        self.tracker().is_some_and(RefTracker::needs_rerun)
    }

    /// Forgets everything for a new pass that records every object.
    pub(super) fn restart(&mut self) {
        // Before the reset, which empties the tracker's list of first-tier objects.
        self.unpin();
        if let Some(tracker) = self.tracker_mut() {
            tracker.reset(true);
        }
        self.empty_caches();
        self.set_floors();
    }

    /// Empties `key_refs` and `recent`, if this pass wrote them: only a pass that found an
    /// object again does (`found_any`), so tables left by one that did not are empty
    /// already. Zeroing both on every encode cost a small message about 25 stores.
    fn empty_caches(&mut self) {
        if self.found_any {
            self.tables.key_refs = [(0, 0); KEY_REFS];
            self.tables.recent = [(0, 0); RECENT_REFS];
        }
        self.key_slots_used = 0;
        self.found_any = false;
    }

    /// Releases the pinned references and hands the allocations to the next encode.
    pub(super) fn recycle(mut self) {
        self.unpin();
        self.empty_caches();
        let mut tables = self.tables;
        if tables.recorded.capacity() > SCRATCH_MEMO_LIMIT
            || tables.tracker.memo_capacity() > SCRATCH_MEMO_LIMIT
        {
            tables.tracker = RefTracker::default();
            tables.recorded = Vec::new();
        } else {
            tables.tracker.reset(false);
        }
        // SAFETY: an encode holds the GIL; dropping tables runs no code (they hold no
        // references once unpinned).
        unsafe { SCRATCH.give_back(tables) };
    }

    /// Takes a reference to every recorded object not yet held. Called before anything that
    /// can run Python code or start a garbage collection: such code could free a recorded
    /// object, and a new object at its address would then be written as a `REF` to it.
    #[inline]
    pub(super) fn pin(&mut self) {
        let tables = &*self.tables;
        let listed = tables.tracker.first_tier_len();
        let since = self.pinned;
        if since < listed {
            for id in tables.tracker.first_tier_ids(since) {
                // SAFETY: every recorded object is live: it is reachable from the root and
                // no code has run since it was recorded (or it was pinned before that code
                // ran).
                unsafe { ffi::Py_INCREF(id as *mut ffi::PyObject) };
            }
        }
        for &obj in &tables.recorded[since.saturating_sub(listed)..] {
            // SAFETY: as above.
            unsafe { ffi::Py_INCREF(obj) };
        }
        self.pinned = listed + tables.recorded.len();
    }

    /// Releases what [`Memo::pin`] took, before the tracker is reset (its list of first-tier
    /// objects is the first part of what was pinned).
    fn unpin(&mut self) {
        let tables = &mut *self.tables;
        if self.pinned == 0 {
            // Most encodes run no Python code and pin nothing.
            tables.recorded.clear();
            return;
        }
        let first_tier = tables.tracker.first_tier_ids(0);
        let listed = first_tier.len();
        let pinned = self.pinned;
        for obj in (first_tier.take(pinned).map(|id| id as *mut ffi::PyObject)).chain(
            tables.recorded[..pinned.saturating_sub(listed)]
                .iter()
                .copied(),
        ) {
            // SAFETY: pin took this reference.
            unsafe { ffi::Py_DECREF(obj) };
        }
        tables.recorded.clear();
        self.pinned = 0;
    }

    /// Lists `obj`, just recorded by the tracker, if its table holds it; the first tier's
    /// objects are listed by the tracker itself.
    #[inline(always)]
    fn list_recorded(&mut self, obj: *mut ffi::PyObject) {
        if !self.tables.tracker.in_first_tier() {
            self.tables.recorded.push(obj);
        }
    }

    /// Sets the object the encoder holds one extra reference to while writing it (one it
    /// copied out of an instance's `__dict__` or slots), so that reference does not make it
    /// look shared; NULL when done.
    #[inline(always)]
    pub(super) fn set_held(&mut self, obj: *mut ffi::PyObject) {
        self.held = obj;
    }

    /// Whether a tuple, frozenset or instance goes through the memo: refs are on and it may
    /// be met again (something besides its container holds it, or the tracker records
    /// everything).
    #[inline(always)]
    pub(super) fn immutable_may_repeat(&self, obj: *mut ffi::PyObject) -> bool {
        self.above_floor(obj, self.floors[2])
    }

    /// If `obj` was written before, writes a `REF` to it and returns true; otherwise records
    /// where it is about to be written. `BY_VALUE`: an immutable value, which canonical mode
    /// writes in full every time.
    ///
    /// In canonical mode a tuple that the graph holds twice is written in full each time, and
    /// with it a mutable object that only the tuple holds: a reference count of 1 no longer
    /// means the walk meets it once, so only the memo can find it again (its floor is 0).
    #[inline(always)]
    pub(super) fn ref_if_seen<const BY_VALUE: bool>(
        &mut self,
        obj: *mut ffi::PyObject,
        writer: &mut Writer<BytesSink>,
    ) -> bool {
        if !self.above_floor(obj, self.floors[usize::from(BY_VALUE)]) {
            return false;
        }
        debug_assert!(self.on);
        let tracker = &self.tables.tracker;
        let (recent, offset) = self.tables.recent[recent_slot(obj)];
        if recent == obj as usize {
            // Only objects the memo found again are kept there: the memo holds obj at offset
            // and its first REF marked the tag tracked. Memo entries of these objects stand
            // until the memo is reset, which empties `recent` too.
            writer.reference_again(offset);
            return true;
        }
        if tracker.in_first_tier() {
            return self.lookup_first_tier(obj, writer);
        }
        self.lookup(obj, writer)
    }

    /// The table part of [`Memo::ref_if_seen`], for objects that may be met again (refs are
    /// on).
    ///
    /// Most objects looked up are met for the first time (a small message's keys and
    /// values). That path is kept free of calls: when the table or the list of recorded
    /// objects would have to grow, or the object was met before, it hands over to another
    /// function by a tail call. With those calls in line, the function saved and restored
    /// five registers on every lookup (now three, for the probe loop) and checked the table's
    /// room after the list's.
    #[inline(never)]
    fn lookup(&mut self, obj: *mut ffi::PyObject, writer: &mut Writer<BytesSink>) -> bool {
        let tables = &mut *self.tables;
        if !tables.tracker.has_room() || tables.recorded.len() == tables.recorded.capacity() {
            return self.lookup_growing(obj, writer);
        }
        let pos = writer.body_pos();
        match tables.tracker.seen_or_record(obj as usize, pos) {
            Some(offset) => self.found(obj, offset, writer),
            None => {
                let len = tables.recorded.len();
                // SAFETY: `len` is `recorded`'s length, checked at the top to be below its
                // capacity (the memo's stores do not change it). Read here, not kept from the
                // check: held across the probe loop, it cost keywords 2.6% more instructions.
                unsafe { tables.record_in_room(len, obj) };
                self.last_offset = pos;
                false
            }
        }
    }

    /// [`Memo::lookup`] while the memo holds few objects (see
    /// `RefTracker::in_first_tier`): a small message's every lookup. It calls nothing but
    /// by a tail call, as [`Memo::lookup`] does.
    #[inline(never)]
    fn lookup_first_tier(
        &mut self,
        obj: *mut ffi::PyObject,
        writer: &mut Writer<BytesSink>,
    ) -> bool {
        let pos = writer.body_pos();
        match self
            .tables
            .tracker
            .seen_or_record_in_first_tier(obj as usize, pos)
        {
            Recorded::Before(offset) => self.found(obj, offset, writer),
            // Listed by the tracker's first tier (see `Tables::recorded`).
            Recorded::Now => {
                self.last_offset = pos;
                false
            }
            Recorded::NoRoom => self.lookup_growing(obj, writer),
        }
    }

    /// [`Memo::lookup`] or [`Memo::lookup_first_tier`] when the tier in use or the list of
    /// recorded objects is full.
    #[cold]
    #[inline(never)]
    fn lookup_growing(&mut self, obj: *mut ffi::PyObject, writer: &mut Writer<BytesSink>) -> bool {
        let pos = writer.body_pos();
        match self.tables.tracker.seen_or_record(obj as usize, pos) {
            Some(offset) => self.found(obj, offset, writer),
            None => {
                self.list_recorded(obj);
                self.last_offset = pos;
                false
            }
        }
    }

    /// [`Memo::lookup`] for an object written before, at `offset`: writes the `REF`.
    #[inline(never)]
    fn found(
        &mut self,
        obj: *mut ffi::PyObject,
        offset: usize,
        writer: &mut Writer<BytesSink>,
    ) -> bool {
        self.last_offset = offset;
        self.found_any = true;
        self.tables.recent[recent_slot(obj)] = (obj as usize, offset);
        writer.reference(offset);
        // Always true; hidden from the optimizer, which would otherwise return the constant in
        // `lookup` after a call, instead of jumping here (a tail call, which keeps `lookup` a
        // leaf).
        std::hint::black_box(true)
    }

    /// Starts a tuple or frozenset that may repeat (see [`Memo::immutable_may_repeat`]).
    #[inline]
    pub(super) fn begin_immutable(
        &mut self,
        obj: *mut ffi::PyObject,
        writer: &mut Writer<BytesSink>,
    ) -> Option<ImmutableStart> {
        let tracker = self.tracker_mut()?;
        let everything = tracker.track_everything();
        let start = tracker.begin_immutable(obj as usize, writer);
        if let ImmutableStart::Write(_) = start {
            // A cyclic tuple's write: the tracker records everything inside it.
            if self.tables.tracker.track_everything() != everything {
                self.set_floors();
            }
            self.list_recorded(obj);
        }
        Some(start)
    }

    /// Tells the tracker that the first value of an object made from it is written (see
    /// `RefTracker::first_value_complete`).
    #[inline]
    pub(super) fn first_value_complete(&mut self, obj: *mut ffi::PyObject, token: &ImmutableToken) {
        if let Some(tracker) = self.tracker_mut() {
            tracker.first_value_complete(obj as usize, token);
        }
    }

    /// Tells the tracker a tuple or frozenset begun with a token is complete.
    #[inline]
    pub(super) fn end_immutable(
        &mut self,
        obj: *mut ffi::PyObject,
        token: ImmutableToken,
        writer: &mut Writer<BytesSink>,
    ) {
        if let Some(tracker) = self.tracker_mut() {
            let everything = tracker.track_everything();
            tracker.end_immutable(obj as usize, token, writer);
            if tracker.track_everything() != everything {
                self.set_floors();
            }
        }
    }

    /// Whether the key caches are in use: from the first object found again on. A small
    /// message often repeats nothing, and then each of its keys paid for consulting and
    /// filling caches that it never read back, about 20 instructions a key; until an object
    /// repeats, the caches stay empty. (They only ever hold objects the memo holds, so
    /// filling them late changes no output.)
    #[inline(always)]
    pub(super) fn key_caches_on(&self) -> bool {
        self.found_any
    }

    /// What the memo knows of `key`, a str key at position `index` of a dict. A key known
    /// there costs one comparison instead of a lookup.
    #[inline(always)]
    pub(super) fn key(&mut self, key: *mut ffi::PyObject, index: usize) -> KeyRef {
        // Only memo entries are remembered, and they stand until the memo is reset, which
        // forgets both caches too.
        if let Some(&(last, offset)) = self.tables.key_refs.get(index) {
            if last == key as usize {
                return KeyRef::Written(offset);
            }
            if last == 0 {
                // No key was written at this position yet, so none was moved from it to
                // `key_slots`: the first dict of a payload does not look there (a key it
                // holds past position KEY_REFS may be, and is found by the memo instead).
                self.last_offset = usize::MAX;
                return KeyRef::Unknown;
            }
        }
        let slot = key_slot(key);
        if let Some(&(known, offset)) = self.tables.key_slots.get(slot) {
            if known == key as usize && self.key_slots_used & (1 << slot) != 0 {
                return KeyRef::Written(offset);
            }
        }
        self.last_offset = usize::MAX;
        KeyRef::Unknown
    }

    /// After a [`KeyRef::Unknown`] key was written at position `index`: remembers it if the
    /// memo met it (it always does with refs, unless canonical mode writes strs by value or
    /// the key is held by this dict alone).
    #[inline(always)]
    pub(super) fn remember_key(&mut self, key: *mut ffi::PyObject, index: usize) {
        if self.last_offset == usize::MAX {
            return;
        }
        if let Some(place) = self.tables.key_refs.get_mut(index) {
            let first = place.0 == 0;
            *place = (key as usize, self.last_offset);
            if first {
                return;
            }
        }
        // Past position KEY_REFS, or in the place of another key: records of several dict
        // shapes (a product's price, stock and rating) put different keys at the same
        // positions, and each missed there on every record.
        let slot = key_slot(key);
        if let Some(place) = self.tables.key_slots.get_mut(slot) {
            *place = (key as usize, self.last_offset);
            self.key_slots_used |= 1 << slot;
        }
    }
}
