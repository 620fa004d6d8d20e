"""Shared test setup: GPU tests skip cleanly without a CUDA device, and every test gets its own kernel cache."""

from __future__ import annotations

import pytest


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (none visible: torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests never write into the user's cache; a session-wide folder keeps compiles shared between tests.
    monkeypatch.setenv("HUMMING_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "humming-cache"))
