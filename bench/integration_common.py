"""What every integration benchmark reports, and the payloads they share.

Each ``integration_<system>.py`` module has ``measure(redis_url: str, quick: bool) ->
list[Measurement]``; ``integrations.py`` runs them in one process, against one Redis server,
and writes the table and the chart. Ratios are computed there, between codecs measured in the
same run.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import uuid
from typing import Any, Literal

import payloads

__all__ = ["Measurement", "job_hash", "percentile", "rich_payload"]


@dataclasses.dataclass(frozen=True)
class Measurement:
    """One number: ``system`` (celery, django, dask), ``payload``, ``codec``, ``metric``."""

    system: str
    payload: str
    codec: str
    metric: str
    value: float
    unit: str
    # Whether a lower value is better (latency, bytes) or a higher one (tasks per second).
    better: Literal["lower", "higher"] = "lower"


def job_hash() -> dict[str, Any]:
    """The seed's job-queue message (seed 004), as the codec benchmark uses it."""
    value = payloads.job_hash()
    assert isinstance(value, dict)
    return value


def rich_payload() -> dict[str, Any]:
    """A cache value or task argument of the kind amber is for: types JSON loses, sharing."""
    owner = {"id": 7, "name": "Ada", "roles": {"admin", "ops"}}
    created = datetime.datetime(2026, 11, 24, 9, 30, 15, 123456, tzinfo=datetime.timezone.utc)
    lines = [
        {
            "sku": f"SKU-{i:05d}",
            "qty": i % 7 + 1,
            "price": decimal.Decimal(f"{i % 50}.{i % 100:02d}"),
            "dims": (10 + i % 3, 20, 5.5),
            "owner": owner,
        }
        for i in range(40)
    ]
    return {
        "order_id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "created": created,
        "due": datetime.date(2026, 12, 1),
        "owner": owner,
        "lines": lines,
        "tags": frozenset({"priority", "gift"}),
        "total": sum((line["price"] * line["qty"] for line in lines), decimal.Decimal(0)),
    }


def percentile(sorted_values: list[float], fraction: float) -> float:
    """The value below which ``fraction`` of the sorted samples fall (nearest rank)."""
    if not sorted_values:
        raise ValueError("no samples")
    rank = max(0, min(len(sorted_values) - 1, round(fraction * len(sorted_values)) - 1))
    return sorted_values[rank]
