"""The garbage collector is paused while a large payload's objects are built, and is left
as it was found (crates/amber-py/src/decode/gc_pause.rs)."""

from __future__ import annotations

import gc
from typing import Any

import amber
import pytest

# The pause starts at 4096 bytes of input.
_LARGE = 4096


class Seen:
    """Records whether the collector ran while its state was being set."""

    log: Any = None

    def __init__(self, n: int) -> None:
        self.n = n

    def __getstate__(self) -> int:
        return self.n

    def __setstate__(self, state: int) -> None:
        Seen.log.append(gc.isenabled())
        self.n = state


def _payload(count: int) -> bytes:
    return amber.dumps([Seen(i) for i in range(count)])


@pytest.fixture(autouse=True)
def _collector_on() -> Any:
    was = gc.isenabled()
    gc.enable()
    Seen.log = []
    yield
    if not was:
        gc.disable()


def test_large_decodes_build_with_the_collector_paused_and_restore_it() -> None:
    data = _payload(2000)
    assert len(data) >= _LARGE
    back = amber.loads(data, types=[Seen])
    assert [s.n for s in back] == list(range(2000))
    assert Seen.log and not any(Seen.log)
    assert gc.isenabled()


def test_small_decodes_leave_the_collector_alone() -> None:
    data = _payload(3)
    assert len(data) < _LARGE
    amber.loads(data, types=[Seen])
    assert Seen.log == [True, True, True]
    assert gc.isenabled()


def test_a_collector_the_caller_disabled_stays_disabled() -> None:
    gc.disable()
    amber.loads(_payload(2000), types=[Seen])
    assert not gc.isenabled()


def test_the_collector_runs_again_after_a_failed_decode() -> None:
    data = _payload(2000)
    with pytest.raises(amber.DecodeError):
        amber.loads(data[:-1], types=[Seen])
    assert gc.isenabled()
    with pytest.raises(amber.ClassNotAllowedError):
        amber.loads(data)
    assert gc.isenabled()

    def explode(state: Any) -> Any:
        raise RuntimeError("boom")

    custom = [amber.CustomType(Seen, lambda s: s.n, explode)]
    big = amber.dumps(["x" * _LARGE, Seen(1)], custom=custom)
    with pytest.raises(amber.DecodeError, match="boom"):
        amber.loads(big, custom=custom)
    assert gc.isenabled()


def test_a_decode_inside_a_decode_keeps_the_outer_pause() -> None:
    inner = _payload(2000)

    def decode(state: Any) -> Any:
        out = amber.loads(inner, types=[Seen])
        Seen.log.append(("after inner", gc.isenabled()))
        return out

    custom = [amber.CustomType(Seen, lambda s: s.n, decode)]
    outer = amber.dumps(["x" * _LARGE, Seen(0)], custom=custom)
    back = amber.loads(outer, custom=custom)
    assert len(back[1]) == 2000
    assert ("after inner", False) in Seen.log
    assert gc.isenabled()
