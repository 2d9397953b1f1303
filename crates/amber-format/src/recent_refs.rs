//! The decoder's memory of the `REF` targets it resolved last: a few body offsets, each with
//! the position of its value in the decoder's table of tracked values.
//!
//! Why: a payload that shares a few objects many times over (`[x] * n`, a long list mixing a
//! handful of shared strs and floats) is mostly `REF`s to those few targets, and each one
//! went through the index of targets (`RefIndex::find`: a run's mask, a block's base and a
//! count of the mask's bits), about 25 of the 63 instructions a `REF` item of a list cost.
//! Here a target met again costs a multiplication, a load and a comparison.
//!
//! A payload whose `REF`s go to many different targets (a list of 100,000 strs drawn from
//! 25,000) finds nothing here, and paid about 11 instructions a `REF` for looking and
//! remembering (4.7% more for that list, 3% more time). So the memory counts its hits and
//! misses, and once a window of misses saw fewer than two hits for each, it is off for the
//! rest of the decode, which then costs a `REF` one test.
//!
//! The answer is the index's own: a slot is filled only with a target the index found, and
//! what the index finds for a target never changes within a decode (tracked values are only
//! ever appended, in offset order, and none is removed). A target the memory does not hold
//! goes to the index as before, so the index stays the one authority; in debug builds every
//! answer from here is checked against it.

/// Slots (a power of two). Each target has one, picked by a hash of the offset: a payload's
/// few shared values sit at offsets as the encoder placed them, which a mask of the low bits
/// would often send to the same slot.
const SLOTS: usize = 8;

/// Misses between two looks at the hits: at the end of each such window, the memory turns
/// off if fewer than twice as many lookups hit.
const WINDOW: u32 = 64;

/// Targets resolved lately, each with its position in the table of tracked values.
pub(crate) struct RecentRefs {
    /// By [`slot`]: a target and its position; `u64::MAX` marks an empty slot (no body offset
    /// reaches it).
    slots: [(u64, usize); SLOTS],
    /// Hits and misses in the current window. Counted apart, and judged only at a miss, so
    /// that a hit costs one increment.
    hits: u32,
    misses: u32,
    /// False once a window had too few hits: off for the rest of the decode.
    on: bool,
}

impl Default for RecentRefs {
    fn default() -> Self {
        RecentRefs {
            slots: [(u64::MAX, 0); SLOTS],
            hits: 0,
            misses: 0,
            on: true,
        }
    }
}

/// The slot of `target` (`crate::fibonacci`), so that nearby offsets spread over the slots.
#[inline(always)]
fn slot(target: u64) -> usize {
    crate::fibonacci::slot(target, SLOTS.trailing_zeros())
}

impl RecentRefs {
    /// Whether the memory is in use (see [`WINDOW`]).
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        self.on
    }

    /// The position remembered for `target`, if its slot holds it (a hit); on `None` (a
    /// miss) the caller searches and reports what it found with [`RecentRefs::missed`]. Only
    /// while [`RecentRefs::is_on`]. `target` is a body offset below the `REF` being read, so
    /// never the empty mark.
    #[inline(always)]
    pub(crate) fn get(&mut self, target: u64) -> Option<usize> {
        debug_assert!(self.on && target != u64::MAX);
        match self.slots.get(slot(target)) {
            Some(&(held, position)) if held == target => {
                self.hits = self.hits.wrapping_add(1);
                Some(position)
            }
            _ => None,
        }
    }

    /// After a miss: remembers that the search found `target` at `position`, in place of the
    /// target that had its slot, and at the end of a window judges the hits.
    #[inline(always)]
    pub(crate) fn missed(&mut self, target: u64, position: usize) {
        if let Some(place) = self.slots.get_mut(slot(target)) {
            *place = (target, position);
        }
        self.misses += 1;
        if self.misses == WINDOW {
            self.on = self.hits >= 2 * WINDOW;
            self.hits = 0;
            self.misses = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_found_until_another_takes_its_slot() {
        let mut recent = RecentRefs::default();
        assert_eq!(recent.get(0), None);
        recent.missed(40, 3);
        assert_eq!(recent.get(40), Some(3));
        assert_eq!(recent.get(41), None);
        // A target hashed to the same slot replaces it.
        let rival = (0..10_000u64)
            .find(|&t| t != 40 && slot(t) == slot(40))
            .expect("some offset shares the slot");
        recent.missed(rival, 9);
        assert_eq!(recent.get(40), None);
        assert_eq!(recent.get(rival), Some(9));
    }

    #[test]
    fn the_empty_mark_is_never_a_target() {
        let mut recent = RecentRefs::default();
        for target in [0, 1, 7, 1 << 20, u64::MAX - 1] {
            assert_eq!(recent.get(target), None);
        }
    }

    #[test]
    fn a_window_of_misses_turns_it_off_and_hits_keep_it_on() {
        // Every lookup a miss: off at the end of the first window.
        let mut recent = RecentRefs::default();
        for n in 0..WINDOW {
            assert!(recent.is_on(), "off after {n} misses");
            assert_eq!(recent.get(1_000 + u64::from(n)), None);
            recent.missed(1_000 + u64::from(n), 0);
        }
        assert!(!recent.is_on());

        // Two hits to a miss: on for good (the first miss, which remembers 5, included).
        let mut recent = RecentRefs::default();
        recent.missed(5, 1);
        assert_eq!((recent.get(5), recent.get(5)), (Some(1), Some(1)));
        for round in 0..10_000u64 {
            assert!(recent.is_on(), "off at round {round}");
            for _ in 0..2 {
                assert_eq!(recent.get(5), Some(1));
            }
            let mut other = 1_000 + round;
            while slot(other) == slot(5) {
                other += 10_000;
            }
            assert_eq!(recent.get(other), None);
            recent.missed(other, 2);
        }

        // One hit short of that in a window: off.
        let mut recent = RecentRefs::default();
        recent.missed(5, 1);
        for _ in 0..2 * WINDOW - 1 {
            assert_eq!(recent.get(5), Some(1));
        }
        for n in 1..WINDOW {
            assert!(recent.is_on());
            recent.missed(2_000 + u64::from(n), 0);
        }
        assert!(!recent.is_on());
    }

    #[test]
    fn nearby_offsets_spread_over_the_slots() {
        // The few shared values of a payload often sit within a few dozen bytes.
        let used: std::collections::BTreeSet<usize> = (0..16u64).map(slot).collect();
        assert!(
            used.len() >= SLOTS - 1,
            "16 consecutive offsets use {used:?}"
        );
    }
}
