//! Fibonacci hashing, the one hash of the small tables keyed by an address or an offset: the
//! identity memo's first tier and table and the decoder's memory of `REF` targets here, and
//! the encoder's cache of dict keys in the Python glue.
//!
//! Their keys are addresses and body offsets: distinct machine words whose differences sit
//! in the low bits (objects a fixed size apart, values a few bytes apart). Multiplying by
//! 2^64 divided by the golden ratio carries every bit of the key into the top bits of the
//! product, and those pick the slot: one multiplication and one shift.

/// The top `bits` bits of `key` times 2^64/φ: a slot in a table of `2^bits` slots. `bits`
/// is from 1 to 63.
#[inline(always)]
pub fn slot(key: u64, bits: u32) -> usize {
    debug_assert!((1..64).contains(&bits));
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_stay_in_the_table_and_consecutive_keys_spread() {
        for bits in [1, 3, 7, 16, 63] {
            for key in [0u64, 1, 8, 48, 1 << 40, u64::MAX] {
                assert!(slot(key, bits) < 1 << bits, "key {key}, {bits} bits");
            }
        }
        // 64 consecutive keys (body offsets a byte apart) take 64 different slots of 128.
        let used: std::collections::BTreeSet<usize> = (0..64u64).map(|k| slot(k, 7)).collect();
        assert_eq!(used.len(), 64);
    }
}
