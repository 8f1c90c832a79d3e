"""Hidden checks for kv_cache: a capacity plan is arithmetic, not a loop over sequences."""

from __future__ import annotations

import kata_measure
import pytest
from kv_cache import KVShape, max_concurrency

# 1 layer, 1 head, 1 element, fp8: 32 bytes a sequence of 16 tokens, so memory is the answer's
# size. 4,096x the memory is 4,096x the sequences: arithmetic takes the same time (1x-3x seen),
# a loop that adds one sequence at a time takes thousands of times longer.
_SHAPE = KVShape("gqa", 1, 1, 1, 2)
_SMALL, _GROWTH, _LIMIT, _CALLS = 32 * 64, 4096, 20.0, 20


def _calls(gpu_memory: int) -> None:
    for _ in range(_CALLS):
        max_concurrency(_SHAPE, gpu_memory=gpu_memory, weights=0, tp=1, context=16,
                        dtype="fp8", reserve=0.0)


@pytest.mark.category("performance")
@pytest.mark.points(3)
@pytest.mark.timeout(60)
def test_capacity_time_does_not_grow_with_the_answer() -> None:
    """max_concurrency takes the same time for 64 sequences as for 262,144 (no loop over them)."""
    ratio = kata_measure.growth(lambda: _calls(_SMALL), lambda: _calls(_SMALL * _GROWTH), _LIMIT)
    assert ratio < _LIMIT, (
        f"max_concurrency for {_SMALL * _GROWTH // 32:,} sequences took "
        f"{kata_measure.times(ratio, _LIMIT)} the time for {_SMALL // 32}: expected about 1x "
        "(divide, do not count one by one)"
    )
