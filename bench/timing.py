"""Best-of-N timing of one call, with a time budget per measurement."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_REPEATS = 5
MIN_REPEATS = 2


@dataclass(frozen=True)
class Budget:
    """How long to spend timing one (payload, codec, direction)."""

    seconds: float
    max_repeats: int = MAX_REPEATS
    min_repeats: int = MIN_REPEATS


def _time_batch(func: Callable[[Any], object], arg: object, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        func(arg)
    return time.perf_counter() - start


def best_seconds_per_call(func: Callable[[Any], object], arg: object, budget: Budget) -> float:
    """Minimum per-call time over repeated batches.

    One batch lasts about budget/max_repeats, so a fast call runs max_repeats
    batches within the budget and a slow one stops after min_repeats calls. The
    garbage collector is paused while timing (as timeit does) so that a collection
    triggered by one codec's garbage is not billed to the next.
    """
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        first = _time_batch(func, arg, 1)
        best, spent, repeats = first, first, 1
        batch_target = budget.seconds / budget.max_repeats
        calls = max(1, int(batch_target / max(first, 1e-9)))
        while repeats < budget.max_repeats and (
            repeats < budget.min_repeats or spent < budget.seconds
        ):
            elapsed = _time_batch(func, arg, calls)
            best = min(best, elapsed / calls)
            spent += elapsed
            repeats += 1
            # The first, cold call overestimates fast calls; resize batches from the best.
            calls = max(calls, int(batch_target / max(best, 1e-9)))
    finally:
        if was_enabled:
            gc.enable()
    return best
