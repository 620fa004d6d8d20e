"""Fixtures the core tests share."""

from __future__ import annotations

import pytest

from humming import knobs
from humming.core import cache


@pytest.fixture
def fresh(tmp_path):
    """A cache root of the test's own, and a process that remembers nothing."""
    cache.clear_memo()
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path / "cache")):
        yield tmp_path / "cache"
    cache.clear_memo()
