//! The identity memo's first tier: the first [`FEW`] identities of a job, in the order they
//! came, found through a 128-byte index.
//!
//! Most encodes are small messages (a cache value, a task's arguments) whose keys and
//! literal strs are held elsewhere too, so each is looked up once and never found: a
//! message of 25 such objects spent a fifth of its encode in the table (a call, a room
//! check, a generation stamp per slot). Here a first meeting costs a hash, a byte load and
//! four stores, and emptying costs zeroing the index. An encode that meets more objects
//! moves them to the table once ([`super::IdentityMap`]), which costs what recording them
//! there would have.

/// Identities the first tier holds.
pub(super) const FEW: usize = 64;
/// Slots of the index: twice [`FEW`], so probing finds an empty slot within a few steps and
/// always finds one.
const INDEX_SLOTS: usize = 2 * FEW;

/// Up to [`FEW`] identities with their packed entries.
#[derive(Debug)]
pub(super) struct Few {
    /// Identities and packed entries, in the order they were added; the first `len` are in
    /// use.
    entries: [(usize, u64); FEW],
    /// By hash of the identity, with linear probing: 0 for an empty slot, otherwise one more
    /// than the position of the identity in `entries`.
    index: [u8; INDEX_SLOTS],
    len: usize,
}

impl Default for Few {
    fn default() -> Self {
        Few {
            entries: [(0, 0); FEW],
            index: [0; INDEX_SLOTS],
            len: 0,
        }
    }
}

/// Where [`Few::probe`] ended.
enum Probe {
    /// The identity is `entries[position]`.
    Found(usize),
    /// Not held; this index slot is where it goes.
    Vacant(usize),
}

/// The first tier is full: the caller moves to the table.
pub(super) struct Full;

impl Few {
    /// The entries in use, in the order they were added.
    pub(super) fn entries(&self) -> &[(usize, u64)] {
        &self.entries[..self.len]
    }

    /// Whether a new identity would not fit.
    #[inline(always)]
    pub(super) fn is_full(&self) -> bool {
        self.len >= FEW
    }

    /// Forgets every entry.
    #[inline]
    pub(super) fn clear(&mut self) {
        if self.len > 0 {
            self.index = [0; INDEX_SLOTS];
            self.len = 0;
        }
    }

    #[inline(always)]
    fn probe(&self, key: usize) -> Probe {
        let mut slot = crate::fibonacci::slot(key as u64, INDEX_SLOTS.trailing_zeros());
        loop {
            let held = self.index[slot % INDEX_SLOTS];
            if held == 0 {
                return Probe::Vacant(slot % INDEX_SLOTS);
            }
            // held <= len <= FEW, so the mask changes nothing; it spares a bounds check.
            let position = (usize::from(held) - 1) % FEW;
            if self.entries[position].0 == key {
                return Probe::Found(position);
            }
            slot += 1;
        }
    }

    /// The packed entry of `key`.
    #[inline(always)]
    pub(super) fn get(&self, key: usize) -> Option<u64> {
        match self.probe(key) {
            Probe::Found(position) => Some(self.entries[position].1),
            Probe::Vacant(_) => None,
        }
    }

    /// The packed entry of `key` if it is held; otherwise adds `value` for it and returns
    /// `None`, or returns [`Full`] and adds nothing.
    #[inline(always)]
    pub(super) fn get_or_insert(&mut self, key: usize, value: u64) -> Result<Option<u64>, Full> {
        match self.probe(key) {
            Probe::Found(position) => Ok(Some(self.entries[position].1)),
            Probe::Vacant(slot) => self.add(slot, key, value).map(|()| None),
        }
    }

    /// Sets the packed entry of `key`, or returns [`Full`] (changing nothing) when `key` is
    /// new and there is no room.
    #[inline(always)]
    pub(super) fn insert(&mut self, key: usize, value: u64) -> Result<(), Full> {
        match self.probe(key) {
            Probe::Found(position) => {
                self.entries[position].1 = value;
                Ok(())
            }
            Probe::Vacant(slot) => self.add(slot, key, value),
        }
    }

    #[inline(always)]
    fn add(&mut self, slot: usize, key: usize, value: u64) -> Result<(), Full> {
        let position = self.len;
        if position >= FEW {
            return Err(Full);
        }
        self.entries[position] = (key, value);
        // position < FEW <= 255: the index stores it in a byte.
        self.index[slot] = position as u8 + 1;
        self.len = position + 1;
        Ok(())
    }
}
