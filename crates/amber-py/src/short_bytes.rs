//! Short byte strings copied and checked with a few loads and stores of one width instead of
//! a call or a loop: most strs of records are 4 to 64 bytes, where a `memcpy` call, or a loop
//! over each byte, costs about as much as the work itself.
//!
//! Checked fallback: longer inputs go to `memcpy` and `<[u8]>::is_ascii`; every str test
//! (tests/test_roundtrip.py, test_cpython_layouts.py, test_wide_str.py) runs through here, at
//! each length around the widths below.

/// Whether `bytes` is all ASCII: up to 16 bytes by two loads that may overlap, OR-ed and
/// tested once, instead of the standard library's loop, whose setup dominates a short str.
#[inline(always)]
pub(crate) fn is_ascii(bytes: &[u8]) -> bool {
    let n = bytes.len();
    let word = |at: usize| -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[at..at + 8]);
        u64::from_ne_bytes(w)
    };
    let half = |at: usize| -> u32 {
        let mut w = [0u8; 4];
        w.copy_from_slice(&bytes[at..at + 4]);
        u32::from_ne_bytes(w)
    };
    if n >= 8 {
        if n > 16 {
            return bytes.is_ascii();
        }
        (word(0) | word(n - 8)) & 0x8080_8080_8080_8080 == 0
    } else if n >= 4 {
        (half(0) | half(n - 4)) & 0x8080_8080 == 0
    } else {
        bytes.iter().all(|&b| b < 0x80)
    }
}

/// Copies `from` (a short str's bytes, usually) to `to` with at most four loads and four
/// stores of one width, which may overlap, instead of a call to `memcpy`. Up to 64 bytes:
/// the URLs, timestamps and ids of JSON-shaped records are mostly 24 to 64 bytes long, and a
/// `memcpy` call costs about as much as the copy itself there.
///
/// # Safety
/// `to` must be valid for `from.len()` bytes of writes and not overlap `from`.
#[inline(always)]
pub(crate) unsafe fn copy_short(from: &[u8], to: *mut u8) {
    let n = from.len();
    let src = from.as_ptr();
    // SAFETY (each arm): both loads read inside `from` (first and last `width` bytes, with
    // width <= n), both stores write inside the first n bytes at `to`; unaligned access is
    // allowed by read_unaligned and write_unaligned.
    unsafe {
        if n >= 16 {
            if n > 32 {
                if n > 64 {
                    std::ptr::copy_nonoverlapping(src, to, n);
                    return;
                }
                // 33 to 64 bytes: the first 32 and the last 32.
                let a = std::ptr::read_unaligned(src.cast::<u128>());
                let b = std::ptr::read_unaligned(src.add(16).cast::<u128>());
                let c = std::ptr::read_unaligned(src.add(n - 32).cast::<u128>());
                let d = std::ptr::read_unaligned(src.add(n - 16).cast::<u128>());
                std::ptr::write_unaligned(to.cast::<u128>(), a);
                std::ptr::write_unaligned(to.add(16).cast::<u128>(), b);
                std::ptr::write_unaligned(to.add(n - 32).cast::<u128>(), c);
                std::ptr::write_unaligned(to.add(n - 16).cast::<u128>(), d);
                return;
            }
            let head = std::ptr::read_unaligned(src.cast::<u128>());
            let tail = std::ptr::read_unaligned(src.add(n - 16).cast::<u128>());
            std::ptr::write_unaligned(to.cast::<u128>(), head);
            std::ptr::write_unaligned(to.add(n - 16).cast::<u128>(), tail);
        } else if n >= 8 {
            let head = std::ptr::read_unaligned(src.cast::<u64>());
            let tail = std::ptr::read_unaligned(src.add(n - 8).cast::<u64>());
            std::ptr::write_unaligned(to.cast::<u64>(), head);
            std::ptr::write_unaligned(to.add(n - 8).cast::<u64>(), tail);
        } else if n >= 4 {
            let head = std::ptr::read_unaligned(src.cast::<u32>());
            let tail = std::ptr::read_unaligned(src.add(n - 4).cast::<u32>());
            std::ptr::write_unaligned(to.cast::<u32>(), head);
            std::ptr::write_unaligned(to.add(n - 4).cast::<u32>(), tail);
        } else if n > 0 {
            // 1 to 3 bytes: the first, the middle and the last (some of them the same).
            *to = *src;
            *to.add(n / 2) = *src.add(n / 2);
            *to.add(n - 1) = *src.add(n - 1);
        }
    }
}
