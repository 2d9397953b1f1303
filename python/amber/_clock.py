"""The clock behind envelope timestamps when a call passes no `clock=`: `dumps(...,
timestamp=True)` writes `now()` and `loads(..., max_age=...)` compares with it. The extension
looks `now` up on every call, so a test of code that cannot pass `clock=` (the CLI) can
replace it instead of waiting for time to pass.
"""

from __future__ import annotations

import time


def now() -> int:
    """Whole seconds since 1970-01-01T00:00:00Z."""
    return int(time.time())
