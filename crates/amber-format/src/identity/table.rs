//! The identity memo's table, for the objects past the first few (see [`super::few`]): a
//! hash table from identities (addresses) to packed [`Entry`]s.
//!
//! A general hash map pays for things this one does not need: keys are distinct machine
//! words that hash well with one multiplication, nothing is ever removed, and the table is
//! emptied after every encode. Emptying is O(1) here: each slot carries the generation it was
//! written in, and a slot of an older generation counts as empty. So an encoder that keeps
//! its table between calls (to skip the allocation) does not pay for clearing a table that a
//! large payload once grew.
//!
//! A slot is two words: the key, and the entry with the generation in its top 16 bits. At
//! 16 bytes, four slots share a cache line (the table of a list of 25,000 distinct strs is
//! 1 MiB, not 1.5 with a separate generation word), and telling an empty slot from a full
//! one is one comparison of the word the entry is in.

use super::{Entry, ENTRY_BITS, ENTRY_MASK};

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    key: usize,
    /// The generation (top 16 bits) and the packed [`Entry`] (the rest).
    value: u64,
}

impl Slot {
    /// Whether the slot was written in the generation whose value words start at `base`.
    /// Generations only count up (after a wrap every slot is wiped), so a slot is of the
    /// current one exactly when its value is at least the current base: one comparison.
    #[inline(always)]
    fn is_current(self, base: u64) -> bool {
        self.value >= base
    }
}

/// Identity → [`Entry`], with O(1) [`Table::clear`].
#[derive(Debug)]
pub(super) struct Table {
    /// `2^bits` slots, or none before the first insert.
    slots: Vec<Slot>,
    /// log2 of `slots.len()` (0 while nothing is allocated).
    bits: u32,
    len: usize,
    /// The `len` at which the next insert grows the table: half the slots (0 before the first
    /// insert, so that it allocates).
    limit: usize,
    /// The current generation, shifted into place (`generation << ENTRY_BITS`). Slots
    /// written in another generation are empty. Starts at 1: fresh slots hold 0.
    generation: u64,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            slots: Vec::new(),
            bits: 0,
            len: 0,
            limit: 0,
            generation: FIRST_GENERATION,
        }
    }
}

const MIN_BITS: u32 = 6;
const FIRST_GENERATION: u64 = 1 << ENTRY_BITS;
/// Generations count up to this one (65,535) and start again at the first after wiping the
/// slots.
const LAST_GENERATION: u64 = !ENTRY_MASK;

impl Table {
    /// Slots allocated (what keeping this table between encodes costs in memory).
    pub(super) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Empties the map in O(1), keeping the allocation.
    pub(super) fn clear(&mut self) {
        self.len = 0;
        if self.generation == LAST_GENERATION {
            // Every 65,535 clears: wipe the stamps so no old slot can look current.
            self.slots.fill(Slot::default());
            self.generation = FIRST_GENERATION;
        } else {
            self.generation += FIRST_GENERATION;
        }
    }

    /// Entries in the current generation.
    #[inline(always)]
    pub(super) fn entries(&self) -> usize {
        self.len
    }

    /// The address of the slot where a search for `key` starts (a key held is in that slot
    /// or in one probed after it), for a caller that prefetches it; `None` before the first
    /// insert. The address is only computed, never read.
    #[inline(always)]
    pub(super) fn first_slot_address(&self, key: usize) -> Option<usize> {
        if self.bits == 0 {
            return None;
        }
        Some(self.slots.as_ptr().wrapping_add(self.home(key)) as usize)
    }

    /// Whether one more key fits without growing the table.
    #[inline(always)]
    pub(super) fn has_room(&self) -> bool {
        self.len < self.limit
    }

    /// The slot where a search for `key` starts (`crate::fibonacci`). Only with slots
    /// allocated (`bits > 0`).
    #[inline(always)]
    fn home(&self, key: usize) -> usize {
        crate::fibonacci::slot(key as u64, self.bits)
    }

    /// The slot holding `key`, or the empty slot where it would go. Only called with slots
    /// allocated (`bits > 0`), at most half of them full.
    #[inline(always)]
    fn find(&self, key: usize) -> (usize, bool) {
        debug_assert!(self.bits > 0 && self.len < self.slots.len());
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let slot = self.slots[i];
            if !slot.is_current(self.generation) {
                return (i, false);
            }
            if slot.key == key {
                return (i, true);
            }
            i = (i + 1) & mask;
        }
    }

    #[inline(always)]
    fn set(&mut self, i: usize, key: usize, entry: Entry) {
        let value = self.generation | entry.pack();
        self.slots[i] = Slot { key, value };
    }

    /// The entry for `key`.
    #[inline]
    pub(super) fn get(&self, key: usize) -> Option<Entry> {
        if self.len == 0 {
            return None;
        }
        match self.find(key) {
            (i, true) => Some(Entry::unpack(self.slots[i].value)),
            _ => None,
        }
    }

    /// The entry for `key` if there is one; otherwise inserts `make` and returns `None`.
    #[inline(always)]
    pub(super) fn get_or_insert(&mut self, key: usize, make: Entry) -> Option<Entry> {
        if !self.has_room() {
            self.grow();
        }
        let (i, found) = self.find(key);
        if found {
            return Some(Entry::unpack(self.slots[i].value));
        }
        self.set(i, key, make);
        self.len += 1;
        None
    }

    /// Sets the entry for `key`.
    #[inline]
    pub(super) fn insert(&mut self, key: usize, entry: Entry) {
        if !self.has_room() {
            self.grow();
        }
        let (i, found) = self.find(key);
        self.len += usize::from(!found);
        self.set(i, key, entry);
    }

    /// Doubles the table. The load stays at most 1/2: linear probing's misses (every first
    /// meeting of an object) stay near two probes, and an empty slot always exists.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let bits = (self.bits + 1).max(MIN_BITS);
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); 1 << bits]);
        let old_generation = self.generation;
        self.bits = bits;
        self.limit = 1 << (bits - 1);
        self.generation = FIRST_GENERATION;
        self.len = 0;
        for slot in old
            .into_iter()
            .filter(|s| s.value & !ENTRY_MASK == old_generation)
        {
            let (i, _) = self.find(slot.key);
            self.set(i, slot.key, Entry::unpack(slot.value));
            self.len += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_starts_at_the_slot_whose_address_is_given() {
        let mut map = Table::default();
        assert_eq!(map.first_slot_address(48), None);
        for k in 1..=3_000usize {
            map.insert(k * 48, Entry::Written(k));
        }
        let base = map.slots.as_ptr() as usize;
        let size = std::mem::size_of::<Slot>();
        for k in 1..=3_000usize {
            let address = map.first_slot_address(k * 48).expect("slots are allocated");
            assert_eq!(address, base + map.home(k * 48) * size);
            // The key sits in that slot or in one probed after it.
            let (at, found) = map.find(k * 48);
            assert!(found);
            let probes = (at + map.slots.len() - map.home(k * 48)) % map.slots.len();
            assert!(probes < map.slots.len() / 2, "key {k}: {probes} probes");
        }
    }

    #[test]
    fn entries_survive_growth_and_vanish_on_clear() {
        let mut map = Table::default();
        for k in 0..10_000usize {
            assert_eq!(map.get_or_insert(k * 16, Entry::Written(k)), None);
        }
        assert_eq!(map.entries(), 10_000);
        for k in 0..10_000usize {
            assert_eq!(map.get(k * 16), Some(Entry::Written(k)));
        }
        map.insert(32, Entry::Building { level: 7 });
        assert_eq!(map.get(32), Some(Entry::Building { level: 7 }));
        assert_eq!(map.entries(), 10_000);
        let capacity = map.capacity();
        map.clear();
        assert_eq!(map.entries(), 0);
        assert_eq!(map.capacity(), capacity);
        assert_eq!(map.get(32), None);
        assert_eq!(map.get_or_insert(48, Entry::Written(1)), None);
        assert_eq!(map.get(48), Some(Entry::Written(1)));
        assert_eq!(map.get(64), None);
    }

    #[test]
    fn offsets_use_all_of_their_47_bits() {
        let mut map = Table::default();
        let largest = (1usize << 47) - 1;
        assert_eq!(map.get_or_insert(16, Entry::Written(largest)), None);
        map.insert(
            32,
            Entry::Building {
                level: u32::MAX >> 1,
            },
        );
        assert_eq!(map.get(16), Some(Entry::Written(largest)));
        assert_eq!(
            map.get(32),
            Some(Entry::Building {
                level: u32::MAX >> 1
            })
        );
        map.clear();
        assert_eq!(map.get(16), None);
    }

    #[test]
    #[should_panic(expected = "offset past 2^47")]
    fn an_offset_past_47_bits_is_refused_not_wrapped_into_the_generation() {
        Table::default().get_or_insert(16, Entry::Written(1 << 47));
    }

    #[test]
    fn no_entry_outlives_its_generation_across_a_wrap() {
        let mut map = Table::default();
        // 70,000 clears pass the last generation (65,535) once; every key is met in one
        // generation only, and must be gone in the next.
        for round in 0..70_000usize {
            let key = 16 * (round % 100 + 1);
            assert_eq!(map.get(key), None, "round {round}");
            assert_eq!(map.get_or_insert(key, Entry::Written(round)), None);
            assert_eq!(
                map.get_or_insert(key, Entry::Written(0)),
                Some(Entry::Written(round))
            );
            map.clear();
        }
    }

    #[test]
    fn generation_wrap_forgets_old_slots() {
        let mut map = Table::default();
        map.insert(16, Entry::Written(3));
        map.generation = LAST_GENERATION;
        map.insert(32, Entry::Written(4));
        map.clear();
        assert_eq!(map.generation, FIRST_GENERATION);
        assert_eq!(map.get(16), None);
        assert_eq!(map.get(32), None);
    }
}
