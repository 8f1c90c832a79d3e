"""Visible tests for interval_union: the statement's worked examples and two properties.

Run them with `uv run pytest exercises/interval_union`; the grader adds hidden checks.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from interval_union import Interval, all_busy, busy_time, coverage, merge

Busy = dict[str, list[Interval]]
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)  # no slow 'explain'


def _unit_cells(busy: Busy, at_least: int) -> list[Interval]:
    """Brute force on integer inputs: the unit cells [c, c + 1) covered by enough GPUs, joined."""
    out: list[Interval] = []
    for c in range(0, 13):
        count = sum(any(s <= c < e for s, e in ivs) for ivs in busy.values())
        if count < at_least:
            continue
        if out and out[-1][1] == c:
            out[-1] = (out[-1][0], c + 1)
        else:
            out.append((c, c + 1))
    return out


def _ordered(pair: tuple[int, int]) -> Interval:
    return (min(pair), max(pair))


_INTERVALS = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)).map(_ordered), max_size=8)
_BUSY = st.dictionaries(st.sampled_from(["gpu-a", "gpu-b", "gpu-c", "gpu-d"]), _INTERVALS)


def test_example_1_merge_joins_touching_and_drops_empty_intervals() -> None:
    """Example 1: merge joins overlapping and touching intervals and drops empty ones."""
    intervals: list[Interval] = [(3, 5), (0, 1), (1, 2), (4, 4), (4, 7)]
    got = merge(intervals)
    assert got == [(0, 2), (3, 7)], f"merge({intervals}) returned {got}, expected [(0, 2), (3, 7)]"
    got_time = busy_time(intervals)
    assert got_time == 6, f"busy_time({intervals}) returned {got_time}, expected 6"


def test_example_2_a_gpu_counts_once() -> None:
    """Example 2: a GPU's own overlapping intervals never make it count twice."""
    busy: Busy = {"gpu-a": [(0, 6), (2, 4)], "gpu-b": [(5, 9)]}
    got = all_busy(busy)
    assert got == [(5, 6)], f"all_busy({busy}) returned {got}, expected [(5, 6)]"
    got = coverage(busy, 1)
    assert got == [(0, 9)], f"coverage({busy}, 1) returned {got}, expected [(0, 9)]"


def test_example_3_touching_gpus_are_never_busy_together() -> None:
    """Example 3: intervals are half-open, so GPUs that only touch are never busy together."""
    busy: Busy = {"gpu-a": [(0, 3)], "gpu-b": [(3, 5)], "gpu-c": [(1, 4)]}
    for at_least, want in [(1, [(0, 5)]), (2, [(1, 4)]), (3, [])]:
        got = coverage(busy, at_least)
        assert got == want, f"coverage({busy}, {at_least}) returned {got}, expected {want}"
    assert all_busy(busy) == [], f"all_busy({busy}) returned {all_busy(busy)}, expected []"


@pytest.mark.category("bad_input")
def test_a_reversed_interval_raises_value_error() -> None:
    """An interval with start > end raises ValueError naming it."""
    with pytest.raises(ValueError, match=r"(?s)(?=.*7)(?=.*2)"):  # names both bounds
        merge([(0, 1), (7, 2)])


@pytest.mark.points(2)
@settings(max_examples=60, phases=_PHASES)
@given(_INTERVALS)
@example([(3, 5), (0, 1), (1, 2), (4, 4), (4, 7)])
def test_merge_matches_a_unit_cell_count(intervals: list[Interval]) -> None:
    """merge agrees with a brute-force count over unit cells."""
    got, want = merge(intervals), _unit_cells({"g": intervals}, 1)
    assert got == want, f"merge({intervals}) returned {got}, expected {want}"


@pytest.mark.points(2)
@settings(max_examples=60, phases=_PHASES)
@given(_BUSY)
@example({"gpu-a": [(0, 6), (2, 4)], "gpu-b": [(5, 9)]})
@example({"gpu-a": [(0, 3)], "gpu-b": [(3, 5)], "gpu-c": [(1, 4)]})
def test_coverage_matches_a_unit_cell_count(busy: Busy) -> None:
    """coverage agrees with a brute-force count over unit cells, for every at_least."""
    for at_least in range(1, len(busy) + 2):
        got, want = coverage(busy, at_least), _unit_cells(busy, at_least)
        assert got == want, f"coverage({busy}, {at_least}) returned {got}, expected {want}"
