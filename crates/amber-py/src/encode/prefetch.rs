//! Prefetching the memo's lookups of a long list's items, a few items ahead.
//!
//! Why: a list of 100,000 strs drawn from 25,000 spends most of its encode waiting for memory.
//! Each item's lookup reads the item's header (its reference count) and a slot of the memo's
//! table, which holds 25,000 entries (1 MiB) by then, both at addresses no hardware prefetcher
//! can guess; the encode takes about three times as long as with `refs=False`. The list's
//! item array tells where both reads will land a few items before they happen, so while one
//! item is written the reads of the one [`AHEAD`] of it are already under way: 20% less time
//! on that list (best of 9, separate processes).
//!
//! Only once the table holds [`LARGE_TABLE`] entries: below that its slots are mostly in the
//! cache already, and a list whose items are a few objects met again and again (`[x] * n`,
//! which `Memo`'s `recent` answers) took 8% longer with the prefetches than without.
//!
//! The fallback is no prefetch at all: on a target without a prefetch instruction this does
//! nothing, and the encode is the same byte for byte either way (a prefetch reads nothing the
//! program can see).

/// How many items ahead of the one being written a list's loop prefetches: far enough for a
/// read from memory to land before that item is reached (8 took keywords 1,780 µs to 1,480,
/// 4 to 1,500, 16 to 1,580).
pub(super) const AHEAD: usize = 8;

/// Entries of the memo's table from which its lookups are prefetched (64 KiB of slots).
pub(super) const LARGE_TABLE: usize = 4096;

/// How many items a list's loop writes between two looks at whether to prefetch (the table
/// grows as the list is written).
pub(super) const RECHECK: usize = 64;

/// Asks the processor to bring the cache line at `address` in, for a read soon.
#[inline(always)]
pub(super) fn prefetch(address: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it reads nothing the program can see and never
    // faults, whatever the address, so any address is sound.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            address as *const i8,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
