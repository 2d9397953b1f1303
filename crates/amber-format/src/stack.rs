//! Recursion on a stack that grows on demand, checked cheaply.
//!
//! Nesting depth is bounded by `max_depth`, but a thread's stack may be small, so a nesting
//! level that finds less than [`STACK_RED_ZONE`] bytes left continues on a new segment
//! (`stacker`). Asking `stacker` at every level costs a thread-local lookup and a call; instead
//! the walker keeps the address below which the red zone starts and compares it with the
//! address of a local, asking `stacker` only past it.

/// Stack left below which a nesting level moves to a new stack segment.
pub const STACK_RED_ZONE: usize = 128 * 1024;
/// Size of each new stack segment.
pub const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// An address near the top of the current stack.
#[inline(always)]
pub fn here() -> usize {
    let marker = 0u8;
    std::ptr::addr_of!(marker) as usize
}

/// The lowest address the current stack segment may use before the red zone: as long as
/// [`here`] is above it, there is room for a nesting level. When the stack's extent is
/// unknown, `usize::MAX`, so that every level asks `stacker`. (Stacks grow downward on every
/// platform Rust supports with `stacker`'s probing, which is what this relies on.)
#[inline(never)]
pub fn limit() -> usize {
    match stacker::remaining_stack() {
        Some(left) => here().saturating_sub(left).saturating_add(STACK_RED_ZONE),
        None => usize::MAX,
    }
}

/// Runs `f` with room to spare. `limit` is the caller's current [`limit`]; it is updated for
/// the new segment while `f` runs on one, and restored after.
#[cold]
#[inline(never)]
pub fn grow<T, C>(ctx: &mut C, limit: fn(&mut C) -> &mut usize, f: impl FnOnce(&mut C) -> T) -> T {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
        let saved = *limit(ctx);
        *limit(ctx) = self::limit();
        let result = f(ctx);
        *limit(ctx) = saved;
        result
    })
}
