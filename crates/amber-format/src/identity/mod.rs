//! The encoder's identity memo: from object identities (addresses) to [`Entry`]s, made for
//! one job and emptied after it.
//!
//! It has two tiers. The first [`few::FEW`] identities of a job go to a small array with a
//! byte index ([`few`]), which is cheap to fill and to empty: a small message never reaches
//! the second. The first identity past them moves every one to a hash table ([`table`]) that
//! grows with the job and keeps its allocation between jobs.

mod few;
mod table;

use few::Few;
use table::Table;

/// What the memo knows about an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Fully written at this body offset: later meetings become a `REF` to it.
    Written(usize),
    /// An immutable container being written; `level` counts nested re-entries of it.
    Building { level: u32 },
}

/// Bits of a packed entry. The table keeps a generation in the 16 bits above them.
const ENTRY_BITS: u32 = 48;
const ENTRY_MASK: u64 = (1 << ENTRY_BITS) - 1;

impl Entry {
    /// The entry in [`ENTRY_BITS`] bits. An offset needs 47 of them: a body of 2^47 bytes
    /// (128 TiB) is past any memory a payload is built in, and the assertion says so.
    #[inline(always)]
    fn pack(self) -> u64 {
        let bits = match self {
            Entry::Written(offset) => (offset as u64) << 1,
            Entry::Building { level } => (u64::from(level) << 1) | 1,
        };
        assert!(bits <= ENTRY_MASK, "identity memo: offset past 2^47");
        bits
    }

    #[inline(always)]
    fn unpack(value: u64) -> Entry {
        let bits = value & ENTRY_MASK;
        if bits & 1 == 0 {
            Entry::Written((bits >> 1) as usize)
        } else {
            Entry::Building {
                level: (bits >> 1) as u32,
            }
        }
    }
}

/// [`IdentityMap::get_or_insert_in_first_tier`] could not answer without the table.
pub(crate) struct NoRoom;

/// Identity → [`Entry`]: the first tier, then the table.
#[derive(Debug, Default)]
pub(crate) struct IdentityMap {
    few: Few,
    table: Table,
    /// The first tier filled up in this job: every entry is in the table now.
    in_table: bool,
}

impl IdentityMap {
    /// Slots the table has allocated (what keeping the map between jobs costs in memory,
    /// besides the first tier's fixed 1.1 KiB).
    pub(crate) fn capacity(&self) -> usize {
        self.table.capacity()
    }

    /// How many entries the table holds: 0 while they are all in the first tier.
    #[inline(always)]
    pub(crate) fn table_entries(&self) -> usize {
        if self.in_table {
            self.table.entries()
        } else {
            0
        }
    }

    /// Where in memory a table lookup of `key` starts, while the entries are in the table
    /// (see `Table::first_slot_address`).
    #[inline(always)]
    pub(crate) fn table_slot_address(&self, key: usize) -> Option<usize> {
        if self.in_table {
            self.table.first_slot_address(key)
        } else {
            None
        }
    }

    /// Whether every entry so far is in the first tier.
    #[inline(always)]
    pub(crate) fn in_first_tier(&self) -> bool {
        !self.in_table
    }

    /// How many keys the first tier took: every key of the job while it is in the first
    /// tier, and its first [`few::FEW`] once they moved to the table (the first tier keeps
    /// them until [`IdentityMap::clear`]).
    #[inline]
    pub(crate) fn first_tier_len(&self) -> usize {
        self.few.entries().len()
    }

    /// The keys the first tier took, in the order they came, from the `from`th on (none
    /// past [`IdentityMap::first_tier_len`]). Sliced, not skipped: skipping a mapped
    /// iterator steps through every key it skips.
    #[inline]
    pub(crate) fn first_tier_keys(&self, from: usize) -> impl ExactSizeIterator<Item = usize> + '_ {
        let entries = self.few.entries();
        entries[from.min(entries.len())..]
            .iter()
            .map(|&(key, _)| key)
    }

    /// Whether one more key fits without allocating: in the first tier's room, or in the
    /// table's.
    #[inline(always)]
    pub(crate) fn has_room(&self) -> bool {
        if self.in_table {
            self.table.has_room()
        } else {
            !self.few.is_full()
        }
    }

    /// Empties the map, keeping the table's allocation.
    pub(crate) fn clear(&mut self) {
        self.few.clear();
        if self.in_table {
            self.table.clear();
            self.in_table = false;
        }
    }

    /// The entry for `key`.
    #[inline]
    pub(crate) fn get(&self, key: usize) -> Option<Entry> {
        if self.in_table {
            self.table.get(key)
        } else {
            self.few.get(key).map(Entry::unpack)
        }
    }

    /// The entry for `key` if there is one; otherwise inserts `make` and returns `None`.
    #[inline(always)]
    pub(crate) fn get_or_insert(&mut self, key: usize, make: Entry) -> Option<Entry> {
        if !self.in_table {
            match self.few.get_or_insert(key, make.pack()) {
                Ok(held) => return held.map(Entry::unpack),
                Err(few::Full) => self.move_to_table(),
            }
        }
        self.table.get_or_insert(key, make)
    }

    /// [`IdentityMap::get_or_insert`] in the first tier only: `Err(NoRoom)`, changing
    /// nothing, once the entries are in the table or the first tier is full. A caller that
    /// tries this first keeps the table's code (and its registers) off the path of a small
    /// job.
    #[inline(always)]
    pub(crate) fn get_or_insert_in_first_tier(
        &mut self,
        key: usize,
        make: Entry,
    ) -> Result<Option<Entry>, NoRoom> {
        if self.in_table {
            return Err(NoRoom);
        }
        match self.few.get_or_insert(key, make.pack()) {
            Ok(held) => Ok(held.map(Entry::unpack)),
            Err(few::Full) => Err(NoRoom),
        }
    }

    /// Sets the entry for `key`.
    #[inline]
    pub(crate) fn insert(&mut self, key: usize, entry: Entry) {
        if !self.in_table {
            match self.few.insert(key, entry.pack()) {
                Ok(()) => return,
                Err(few::Full) => self.move_to_table(),
            }
        }
        self.table.insert(key, entry);
    }

    /// Moves the first tier's entries to the table, for the rest of the job.
    #[cold]
    #[inline(never)]
    fn move_to_table(&mut self) {
        for &(key, value) in self.few.entries() {
            self.table.insert(key, Entry::unpack(value));
        }
        self.in_table = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_stay_found_as_they_move_from_the_first_tier_to_the_table() {
        let mut map = IdentityMap::default();
        for k in 0..1_000usize {
            assert_eq!(
                map.get_or_insert(k * 16 + 16, Entry::Written(k)),
                None,
                "key {k}"
            );
            assert_eq!(map.in_first_tier(), k < few::FEW, "key {k}");
            // Every key so far, in whichever tier: found with its own entry, and once only.
            for j in [0, k / 2, k] {
                assert_eq!(
                    map.get(j * 16 + 16),
                    Some(Entry::Written(j)),
                    "key {j} after {k}"
                );
                assert_eq!(
                    map.get_or_insert(j * 16 + 16, Entry::Written(0)),
                    Some(Entry::Written(j))
                );
            }
        }
    }

    #[test]
    fn the_table_reports_its_entries_and_where_a_lookup_starts() {
        let mut map = IdentityMap::default();
        for k in 1..=few::FEW {
            map.get_or_insert(k * 48, Entry::Written(k));
            // In the first tier: no table to count or to prefetch from.
            assert_eq!(map.table_entries(), 0);
            assert_eq!(map.table_slot_address(k * 48), None);
        }
        for k in few::FEW + 1..=500 {
            map.get_or_insert(k * 48, Entry::Written(k));
            assert_eq!(map.table_entries(), k);
        }
        assert!(map.table_slot_address(48).is_some());
        map.clear();
        assert_eq!(map.table_entries(), 0);
        assert_eq!(map.table_slot_address(48), None);
    }

    #[test]
    fn the_first_tier_lists_its_keys_in_order_until_cleared() {
        let mut map = IdentityMap::default();
        let keys: Vec<usize> = (1..=200usize).map(|k| k * 48).collect();
        for (n, &key) in keys.iter().enumerate() {
            assert_eq!(map.get_or_insert(key, Entry::Written(n)), None);
            // A key met again, or updated in place, is not listed twice.
            map.insert(key, Entry::Written(n));
            let listed: Vec<usize> = map.first_tier_keys(0).collect();
            let held = (n + 1).min(few::FEW);
            assert_eq!(listed, keys[..held], "after key {n}");
            assert_eq!(map.first_tier_len(), held);
            let tail: Vec<usize> = map.first_tier_keys(held / 2).collect();
            assert_eq!(tail, keys[held / 2..held], "after key {n}");
            assert_eq!(map.first_tier_keys(held + 5).len(), 0);
        }
        assert!(!map.in_first_tier());
        map.clear();
        assert_eq!(map.first_tier_len(), 0);
    }

    #[test]
    fn building_entries_change_in_place_in_either_tier() {
        for keys in [10usize, few::FEW + 10] {
            let mut map = IdentityMap::default();
            for k in 1..=keys {
                map.insert(k * 16, Entry::Building { level: 0 });
            }
            map.insert(32, Entry::Building { level: 3 });
            map.insert(48, Entry::Written(7));
            assert_eq!(map.get(16), Some(Entry::Building { level: 0 }));
            assert_eq!(map.get(32), Some(Entry::Building { level: 3 }));
            assert_eq!(map.get(48), Some(Entry::Written(7)));
            assert_eq!(map.get(keys * 16 + 16), None);
        }
    }

    /// Keys whose hashes all pick the first tier's index slot 0: each one probes past all
    /// those before it.
    fn colliding_keys(count: usize) -> Vec<usize> {
        (1..)
            .map(|k: usize| k * 16)
            .filter(|&k| crate::fibonacci::slot(k as u64, 7) == 0)
            .take(count)
            .collect()
    }

    #[test]
    fn clearing_forgets_both_tiers_and_starts_in_the_first_again() {
        let mut map = IdentityMap::default();
        for round in 0..6usize {
            // Alternate a job that stays in the first tier with one that moves to the table,
            // with keys spread over the first tier's index and keys that all collide there.
            let count = if round % 2 == 0 { 20 } else { 3 * few::FEW };
            let keys: Vec<usize> = if round < 3 {
                (1..=count).map(|k| k * 16).collect()
            } else {
                colliding_keys(count)
            };
            for (n, &key) in keys.iter().enumerate() {
                assert_eq!(map.get(key), None, "round {round}, key {n}");
                assert_eq!(map.get_or_insert(key, Entry::Written(n + round)), None);
            }
            for (n, &key) in keys.iter().enumerate() {
                assert_eq!(
                    map.get(key),
                    Some(Entry::Written(n + round)),
                    "round {round}"
                );
            }
            map.clear();
            assert!(map.in_first_tier());
        }
    }

    #[test]
    fn offsets_use_all_of_their_47_bits_in_the_first_tier() {
        let mut map = IdentityMap::default();
        let largest = (1usize << 47) - 1;
        assert_eq!(map.get_or_insert(16, Entry::Written(largest)), None);
        assert_eq!(map.get(16), Some(Entry::Written(largest)));
    }
}
