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


def best_seconds_interleaved(
    calls: list[tuple[Callable[[Any], object], object]], budget: Budget
) -> list[float]:
    """Minimum per-call time of each (func, arg), timed in turns: one batch of each per round.

    On a shared machine the speed drifts over seconds. Timing each call in a block of its
    own lets a slow spell land on one codec and not the next, which skews their ratio;
    taking turns exposes every call to the same spells. Each call gets the budget it would
    get alone (batches of about budget/max_repeats, at least min_repeats of them, up to
    max_repeats while its own time allows).
    """
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        best = [_time_batch(func, arg, 1) for func, arg in calls]
        spent = list(best)
        repeats = [1] * len(calls)
        batch_target = budget.seconds / budget.max_repeats
        sizes = [max(1, int(batch_target / max(first, 1e-9))) for first in best]
        for _ in range(budget.max_repeats - 1):
            for i, (func, arg) in enumerate(calls):
                if repeats[i] >= budget.min_repeats and spent[i] >= budget.seconds:
                    continue
                elapsed = _time_batch(func, arg, sizes[i])
                best[i] = min(best[i], elapsed / sizes[i])
                spent[i] += elapsed
                repeats[i] += 1
                sizes[i] = max(sizes[i], int(batch_target / max(best[i], 1e-9)))
    finally:
        if was_enabled:
            gc.enable()
    return best
