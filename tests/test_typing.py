"""The package and the conformance suite type-check cleanly under mypy ([tool.mypy] in pyproject.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_finds_no_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    api = pytest.importorskip("mypy.api")
    monkeypatch.chdir(ROOT)  # the [tool.mypy] files and overrides are read from the working directory
    stdout, stderr, status = api.run([])
    assert status == 0, f"mypy reported errors:\n{stdout}{stderr}"
