//! The items of a packed int run read eight bytes at a time.
//!
//! Why: a PACKED_INT_LIST of ids, counts or offsets (`list(range(1000))`) is mostly items of
//! one or two varint bytes, and reading them one by one checked the input's end, branched on
//! each byte's continuation bit and on the item's length, for every item: about 33
//! instructions an item on the decoder's side (callgrind). When the next eight bytes are
//! eight one-byte items, or four two-byte ones, a word read and one mask comparison tell so
//! at once, and the items are taken out of the word, their zigzag mapping undone for all of
//! them together. `loads` of `list(range(1000))`, whole loop: 148,293 instructions before,
//! 135,646 after. Its time moves less, since most of it is CPython making and freeing the
//! ints: 0.94 to 0.96 of before timed in turns in one process, no change beyond the noise in
//! separate processes.
//!
//! Only canonical items are taken: a two-byte item whose second byte is 0 is not minimal and
//! is left to the item-by-item reader, which reports it, as it does anything else this does
//! not take (longer items, a mix of lengths, fewer than eight bytes left). The caller still
//! charges each item and records its offset, as for an item read alone. A failed try costs
//! about 29 instructions, so the caller does not try in a stretch of the run that follows one
//! of longer items (see `Decoder::packed_int_items`).

/// The continuation bits of eight bytes.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
/// The continuation bits of four two-byte varints: set in each first byte, clear in each
/// second.
const PAIR_HIGH_BITS: u64 = 0x0080_0080_0080_0080;
/// The low bit of each byte, and of each 16-bit lane.
const BYTE_ONES: u64 = 0x0101_0101_0101_0101;
const LANE_ONES: u64 = 0x0001_0001_0001_0001;

/// Items taken from a word by [`take`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Word {
    /// Eight one-byte items: their ints, from -64 to 63.
    Bytes([i64; 8]),
    /// Four two-byte items: their ints, each at least 64 in magnitude (a two-byte item's
    /// zigzag value is at least 128).
    Pairs([i64; 4]),
    /// Neither: read the next item alone.
    Other,
}

/// The ints of the items in the eight bytes at `pos`, if they are eight one-byte items (and
/// `left`, the items the run still has, is at least 8) or four two-byte canonical items
/// (`left` at least 4). The zigzag mapping is undone in each byte or 16-bit lane of the word
/// at once: the value shifted right by one, its low bit spread over the lane, the two
/// xored; the lane is then read as a signed int of its width.
#[inline(always)]
pub(crate) fn take(data: &[u8], pos: usize, left: usize) -> Word {
    if left < 4 {
        return Word::Other;
    }
    let Some(bytes) = data.get(pos..pos.saturating_add(8)) else {
        return Word::Other;
    };
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes);
    let w = u64::from_le_bytes(word);
    let high = w & HIGH_BITS;
    if high == 0 && left >= 8 {
        // Each byte is a zigzag value below 128; the shift's bit from the byte above is
        // masked off.
        let ints = ((w >> 1) & 0x7F7F_7F7F_7F7F_7F7F) ^ ((w & BYTE_ONES) * 0xFF);
        return Word::Bytes(std::array::from_fn(|i| {
            i64::from((ints >> (8 * i)) as u8 as i8)
        }));
    }
    if high == PAIR_HIGH_BITS {
        // The 7 payload bits of each first byte, then those of its second byte above them:
        // four zigzag values of 14 bits, one in each 16-bit lane.
        let payload = w & 0x7F7F_7F7F_7F7F_7F7F;
        let lanes =
            (payload & 0x00FF_00FF_00FF_00FF) | ((payload >> 8) & 0x00FF_00FF_00FF_00FF) << 7;
        // A second byte of 0 makes a value below 128 in two bytes: not minimal. (Subtracting
        // one from each lane sets a lane's top bit only if the lane, below 0x80, was 0, or
        // borrowed from one that was.)
        let seconds = (payload >> 8) & 0x007F_007F_007F_007F;
        if seconds.wrapping_sub(LANE_ONES) & !seconds & 0x8000_8000_8000_8000 != 0 {
            return Word::Other;
        }
        let ints = ((lanes >> 1) & 0x7FFF_7FFF_7FFF_7FFF) ^ ((lanes & LANE_ONES) * 0xFFFF);
        return Word::Pairs(std::array::from_fn(|i| {
            i64::from((ints >> (16 * i)) as u16 as i16)
        }));
    }
    Word::Other
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::varint;

    fn encoded(ints: &[i64]) -> Vec<u8> {
        let mut out = Vec::new();
        for &v in ints {
            varint::write_varint(&mut out, varint::zigzag(v));
        }
        out
    }

    #[test]
    fn whole_words_of_one_width() {
        let bytes = [0, 1, -1, 63, -64, -16, -17, 5];
        let pairs = [64, -65, 8_191, -8_192];
        for (data, want, items) in [
            (encoded(&bytes), Word::Bytes(bytes), 8),
            (encoded(&pairs), Word::Pairs(pairs), 4),
        ] {
            assert_eq!(data.len(), 8);
            assert_eq!(take(&data, 0, items), want);
            // Fewer items left in the run than the word holds: not taken.
            assert_eq!(take(&data, 0, items - 1), Word::Other);
        }
    }

    #[test]
    fn what_is_left_to_the_item_reader() {
        // Too few bytes.
        assert_eq!(take(&encoded(&[1, 2, 3, 4, 5, 6, 7]), 0, 8), Word::Other);
        // Mixed lengths.
        assert_eq!(take(&encoded(&[1, 200, 3, 4, 5, 6, 7]), 0, 8), Word::Other);
        // A three-byte item.
        assert_eq!(take(&encoded(&[8_192, 200, 300]), 0, 4), Word::Other);
        // A non-minimal two-byte item (0x81 0x00 is 1 in two bytes), in each place.
        for place in 0..4 {
            let mut data = encoded(&[200, 300, 400, 500]);
            data[2 * place] = 0x81;
            data[2 * place + 1] = 0x00;
            assert_eq!(take(&data, 0, 4), Word::Other, "place {place}");
        }
    }

    #[test]
    fn every_byte_agrees_with_the_item_reader() {
        for byte in 0..0x80u8 {
            for place in 0..8 {
                let mut data = encoded(&[1, 2, 3, 4, 5, 6, 7, 8]);
                data[place] = byte;
                let Word::Bytes(ints) = take(&data, 0, 8) else {
                    panic!("{byte:#x} at {place} not taken");
                };
                let want = varint::unzigzag(varint::read_varint(&data[place..]).unwrap().0);
                assert_eq!(ints[place], want, "{byte:#x} at {place}");
            }
        }
    }

    #[test]
    fn every_pair_pattern_agrees_with_the_item_reader() {
        // Each first byte with each of a spread of second bytes, in each of the four places.
        for first in 0x80..=0xFFu8 {
            for second in [0x00u8, 0x01, 0x02, 0x40, 0x7E, 0x7F] {
                for place in 0..4 {
                    let mut data = encoded(&[200, 300, 400, 500]);
                    data[2 * place] = first;
                    data[2 * place + 1] = second;
                    // The item reader's answer: four ints, or an error (not minimal).
                    let mut at = 0;
                    let alone: Result<Vec<i64>, _> = (0..4)
                        .map(|_| {
                            varint::read_varint(&data[at..]).map(|(z, len)| {
                                at += len;
                                varint::unzigzag(z)
                            })
                        })
                        .collect();
                    match (take(&data, 0, 4), alone) {
                        (Word::Pairs(pairs), Ok(alone)) => assert_eq!(pairs.to_vec(), alone),
                        (Word::Other, Err(_)) => assert_eq!(second, 0),
                        (taken, alone) => {
                            panic!("{first:#x} {second:#x} at {place}: {taken:?} against {alone:?}")
                        }
                    }
                }
            }
        }
    }
}
