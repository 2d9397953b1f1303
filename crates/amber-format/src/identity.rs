//! The encoder's identity memo: a hash table from object identities (addresses) to
//! [`Entry`]s, made for one job.
//!
//! A general hash map pays for things this one does not need: keys are distinct machine
//! words that hash well with one multiplication, nothing is ever removed, and the table is
//! emptied after every encode. Emptying is O(1) here: each slot carries the generation it was
//! written in, and a slot of an older generation counts as empty. So an encoder that keeps
//! its table between calls (to skip the allocation) does not pay for clearing a table that a
//! large payload once grew.

/// What the memo knows about an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Fully written at this body offset: later meetings become a `REF` to it.
    Written(usize),
    /// An immutable container being written; `level` counts nested re-entries of it.
    Building { level: u32 },
}

impl Entry {
    fn pack(self) -> u64 {
        match self {
            Entry::Written(offset) => (offset as u64) << 1,
            Entry::Building { level } => (u64::from(level) << 1) | 1,
        }
    }

    fn unpack(bits: u64) -> Entry {
        if bits & 1 == 0 {
            Entry::Written((bits >> 1) as usize)
        } else {
            Entry::Building {
                level: (bits >> 1) as u32,
            }
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    key: usize,
    value: u64,
    generation: u32,
}

/// Identity → [`Entry`], with O(1) [`IdentityMap::clear`].
#[derive(Debug)]
pub(crate) struct IdentityMap {
    slots: Vec<Slot>,
    /// log2 of `slots.len()` (0 while nothing is allocated).
    bits: u32,
    len: usize,
    /// Slots written in another generation are empty. Starts at 1: fresh slots hold 0.
    generation: u32,
}

impl Default for IdentityMap {
    fn default() -> Self {
        IdentityMap {
            slots: Vec::new(),
            bits: 0,
            len: 0,
            generation: 1,
        }
    }
}

const MIN_BITS: u32 = 6;

impl IdentityMap {
    /// Entries in the current generation.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    /// Slots allocated (what keeping this table between encodes costs in memory).
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Empties the map in O(1), keeping the allocation.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Every 2^32 clears: wipe the stamps so no old slot can look current.
            self.slots.fill(Slot::default());
            self.generation = 1;
        }
    }

    #[inline]
    fn home(&self, key: usize) -> usize {
        // Fibonacci hashing: the top bits of the product mix every bit of the address.
        ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.bits)) as usize
    }

    /// The slot holding `key`, or the empty slot where it would go.
    #[inline]
    fn find(&self, key: usize) -> (usize, bool) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let slot = &self.slots[i];
            if slot.generation != self.generation {
                return (i, false);
            }
            if slot.key == key {
                return (i, true);
            }
            i = (i + 1) & mask;
        }
    }

    /// The entry for `key`.
    #[inline]
    pub(crate) fn get(&self, key: usize) -> Option<Entry> {
        if self.len == 0 {
            return None;
        }
        match self.find(key) {
            (i, true) => Some(Entry::unpack(self.slots[i].value)),
            _ => None,
        }
    }

    /// The entry for `key` if there is one; otherwise inserts `make()` and returns `None`.
    #[inline]
    pub(crate) fn get_or_insert(&mut self, key: usize, make: Entry) -> Option<Entry> {
        self.reserve_one();
        let (i, found) = self.find(key);
        if found {
            return Some(Entry::unpack(self.slots[i].value));
        }
        self.slots[i] = Slot {
            key,
            value: make.pack(),
            generation: self.generation,
        };
        self.len += 1;
        None
    }

    /// Sets the entry for `key`.
    #[inline]
    pub(crate) fn insert(&mut self, key: usize, entry: Entry) {
        self.reserve_one();
        let (i, found) = self.find(key);
        self.len += usize::from(!found);
        self.slots[i] = Slot {
            key,
            value: entry.pack(),
            generation: self.generation,
        };
    }

    /// Keeps the load at most 1/2: linear probing's misses (every first meeting of an
    /// object) stay near two probes, and an empty slot always exists.
    #[inline]
    fn reserve_one(&mut self) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
    }

    #[cold]
    fn grow(&mut self) {
        let bits = (self.bits + 1).max(MIN_BITS);
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); 1 << bits]);
        let old_generation = self.generation;
        self.bits = bits;
        self.generation = 1;
        self.len = 0;
        for slot in old.into_iter().filter(|s| s.generation == old_generation) {
            let (i, _) = self.find(slot.key);
            self.slots[i] = Slot {
                generation: 1,
                ..slot
            };
            self.len += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_survive_growth_and_vanish_on_clear() {
        let mut map = IdentityMap::default();
        for k in 0..10_000usize {
            assert_eq!(map.get_or_insert(k * 16, Entry::Written(k)), None);
        }
        assert_eq!(map.len(), 10_000);
        for k in 0..10_000usize {
            assert_eq!(map.get(k * 16), Some(Entry::Written(k)));
        }
        map.insert(32, Entry::Building { level: 7 });
        assert_eq!(map.get(32), Some(Entry::Building { level: 7 }));
        assert_eq!(map.len(), 10_000);
        let capacity = map.capacity();
        map.clear();
        assert_eq!(map.len(), 0);
        assert_eq!(map.capacity(), capacity);
        assert_eq!(map.get(32), None);
        assert_eq!(map.get_or_insert(48, Entry::Written(1)), None);
        assert_eq!(map.get(48), Some(Entry::Written(1)));
        assert_eq!(map.get(64), None);
    }

    #[test]
    fn generation_wrap_forgets_old_slots() {
        let mut map = IdentityMap::default();
        map.insert(16, Entry::Written(3));
        map.generation = u32::MAX;
        map.insert(32, Entry::Written(4));
        map.clear();
        assert_eq!(map.generation, 1);
        assert_eq!(map.get(16), None);
        assert_eq!(map.get(32), None);
    }
}
