"""The kernel cache's review-5 defects, each held by a test: file modes another user can read, an unusable cache
that warns and keeps the kernel, entry= resolved per call, warm with no cache refused, header keys that follow
what the compiler reads (symlinks, pre-includes, headers that appear later), a clear that removes only what
humming wrote, and the repro tool's fidelity."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from humming import knobs
from humming.capabilities.model import Target
from humming.core import cache

TARGET = Target("nvidia", "sm_80")


@pytest.fixture
def fresh(tmp_path):
    """A cache root of the test's own, and a process that remembers nothing."""
    cache.clear_memo()
    with knobs.scope(HUMMING_CACHE_DIR=str(tmp_path / "cache")):
        yield tmp_path / "cache"
    cache.clear_memo()


@pytest.fixture
def umask():
    """Set the process umask for the test; restore it after."""
    saved = os.umask(0o022)
    os.umask(saved)
    yield lambda value: os.umask(value)
    os.umask(saved)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask, want", [(0o022, 0o644), (0o002, 0o664)])
def test_cache_files_take_the_umask_modes_so_another_user_can_read_them(fresh, umask, mask, want):
    umask(mask)
    key = "cd" * 16
    with cache.lock(key):
        cache.publish(key, b"\x7fELF binary", {"function": "k"}, source="// unit\n")
    for ext in ("cubin", "json", "cu"):
        assert _mode(cache.paths(key)[ext]) == want, ext
    saved = cache.save_failure("ef" * 16, "// unit\n", {"log": "x"})
    assert _mode(saved) == want and _mode(saved.with_name("meta.json")) == want
