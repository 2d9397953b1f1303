//! A value kept from one call to the next in a process-wide slot that the GIL guards: the
//! encoder's scratch buffer and memo tables.
//!
//! Why not a thread-local: the module is loaded with `dlopen`, so each access to one of its
//! thread-locals calls `__tls_get_addr`, and a `dumps` took and gave back two scratch
//! allocations that way, four accesses that cost `dumps(None)` 71 of its 595 instructions
//! (callgrind) and 5.6 of its 42.8 ns. A static is one load.
//!
//! Why one slot is enough: the module does not declare itself free-threading safe, so
//! CPython keeps the GIL on while it is loaded, and only the thread holding the GIL runs an
//! encode's start or end. An encode that finds the slot empty (a nested `dumps` from a custom
//! encoder, or another thread's while this one released the GIL running class code) makes
//! its own value, as it did when its thread's slot was taken, and whichever encode gives its
//! value back last leaves it for the next.

use std::cell::UnsafeCell;

/// A value taken by one call and given back at its end (see the module documentation).
pub struct GilSlot<T> {
    value: UnsafeCell<Option<T>>,
}

// SAFETY: the value is only touched through `take` and `give_back`, whose callers hold the
// GIL, which serialises every access; `T: Send` because the value moves between the threads
// that hold it in turn.
unsafe impl<T: Send> Sync for GilSlot<T> {}

impl<T> GilSlot<T> {
    /// An empty slot.
    pub const fn new() -> Self {
        GilSlot {
            value: UnsafeCell::new(None),
        }
    }

    /// The value, leaving the slot empty; `None` if another call holds it.
    ///
    /// # Safety
    /// The calling thread holds the GIL.
    #[inline(always)]
    pub unsafe fn take(&self) -> Option<T> {
        // SAFETY: the GIL serialises every access (the caller's promise), and no reference
        // into the slot outlives this statement.
        unsafe { (*self.value.get()).take() }
    }

    /// Leaves `value` for the next call. A value already there (given back by a call that
    /// started while this one held the slot's) is dropped: either does as well.
    ///
    /// # Safety
    /// The calling thread holds the GIL, and dropping a `T` runs no Python code.
    #[inline(always)]
    pub unsafe fn give_back(&self, value: T) {
        // SAFETY: as in `take`; the value replaced is dropped after the slot's borrow ends.
        let replaced = unsafe { (*self.value.get()).replace(value) };
        drop(replaced);
    }
}
