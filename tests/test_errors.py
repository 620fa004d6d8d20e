"""Every HummingError crosses a process boundary (compile workers) as itself: its type, its text once, its fields."""

from __future__ import annotations

import pickle

import pytest

from humming.errors import (CompileError, HummingError, InternalError, InvalidInputError, LaunchError, PluginError,
                            UnsupportedError)

CASES = [
    InvalidInputError("K=8200 is not a multiple of 128"),
    UnsupportedError("no bf16 on sm_75", missing=["bf16 mma.sync"], alternatives=["f16 activations"]),
    CompileError("did not compile", log="error: x", source_path="/tmp/k.cu", repro="python -m humming.tools.compile k"),
    LaunchError("no module"),
    PluginError("nvidia", "a hook raised"),
    InternalError("an invariant broke"),
]


@pytest.mark.parametrize("exc", CASES, ids=lambda e: type(e).__name__)
def test_a_humming_error_round_trips_through_pickle(exc: HummingError) -> None:
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert str(back) == str(exc)  # InternalError's "please report it" once, PluginError's text as raised
    assert vars(back) == vars(exc)
