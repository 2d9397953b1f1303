"""Shared fixtures for the amber test suite."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


@pytest.fixture(scope="session")
def graph_diff():
    """amber._compare.graph_diff: None when two graphs are identical (types, bits, identity)."""
    from amber._compare import graph_diff as gd

    return gd


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    return TESTS_DIR.parent / "spec" / "vectors"


@pytest.fixture(scope="session")
def redis_server():
    """A real redis-server on a free port of 127.0.0.1, shared by the session's tests."""
    from _services import RedisServer

    with RedisServer() as server:
        yield server
