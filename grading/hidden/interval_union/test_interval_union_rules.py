"""Hidden checks for interval_union: agreement with brute force, and the traps of the sweep."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from interval_union import Interval, all_busy, busy_time, coverage, merge
from interval_union_helpers import (
    BUSY,
    FLOAT_BUSY,
    PHASES,
    Busy,
    check_coverage,
    everything,
    oracle,
    well_formed,
)

# ---------------------------------------------------------------- correctness: oracles


@pytest.mark.points(5)
@settings(max_examples=60, phases=PHASES)
@given(FLOAT_BUSY)
@example({"a": [(0, 6), (2, 4)], "b": [(5, 9)]})
@example({"a": [(0, 3)], "b": [(3, 5)], "c": [(1, 4)]})
def test_results_match_a_brute_force_count(busy: Busy) -> None:
    """merge, busy_time and coverage agree with a brute-force count, segment by segment."""
    flat = everything(busy)
    want = oracle({"g": flat}, 1)
    assert merge(flat) == want, f"merge({flat}) returned {merge(flat)}"
    got_time, want_time = busy_time(flat), sum(e - s for s, e in want)
    assert math.isclose(got_time, want_time, abs_tol=1e-9), (
        f"busy_time({flat}) returned {got_time}, expected {want_time}"
    )
    for k in range(1, len(busy) + 1):
        got, want = coverage(busy, k), oracle(busy, k)
        assert got == want, f"coverage({busy}, {k}) returned {got}, expected {want}"


@settings(max_examples=30, phases=PHASES)
@given(BUSY)
def test_coverage_at_one_is_the_merge_of_all_intervals(busy: Busy) -> None:
    """coverage(busy, 1) equals merge of every interval of every GPU."""
    want = merge(everything(busy))
    assert coverage(busy, 1) == want, f"coverage({busy}, 1) returned {coverage(busy, 1)}"


@settings(max_examples=30, phases=PHASES)
@given(BUSY)
def test_coverage_shrinks_as_at_least_grows(busy: Busy) -> None:
    """Every span of coverage(busy, k + 1) lies inside a span of coverage(busy, k)."""
    for k in range(1, len(busy) + 1):
        wider, narrower = coverage(busy, k), coverage(busy, k + 1)
        for s, e in narrower:
            assert any(ws <= s and e <= we for ws, we in wider), (
                f"coverage({busy}, {k + 1}) has {(s, e)}, outside coverage(..., {k}) = {wider}"
            )


@settings(max_examples=30, phases=PHASES)
@given(BUSY)
def test_all_busy_is_coverage_at_the_gpu_count(busy: Busy) -> None:
    """all_busy(busy) equals coverage(busy, len(busy)), and [] for no GPUs."""
    got, want = all_busy(busy), (coverage(busy, len(busy)) if busy else [])
    assert got == want, f"all_busy({busy}) returned {got}, expected {want}"


def _orders(items: list[Interval]) -> list[list[Interval]]:
    """The same intervals in other orders: reversed, and by decreasing end."""
    return [items[::-1], sorted(items, key=lambda iv: (-iv[1], iv[0]))]


@pytest.mark.points(2)
@settings(max_examples=30, phases=PHASES)
@given(BUSY)
def test_results_do_not_depend_on_input_order(busy: Busy) -> None:
    """Reordering the intervals, and the GPUs, changes no result."""
    flat = everything(busy)
    for mixed in _orders(flat):
        assert merge(mixed) == merge(flat), f"merge({mixed}) != merge({flat})"
        assert busy_time(mixed) == busy_time(flat), f"busy_time({mixed}) changed"
    for n in range(2):
        other = {gpu: _orders(ivs)[n] for gpu, ivs in reversed(busy.items())}
        for k in range(1, len(busy) + 1):
            got, want = coverage(other, k), coverage(busy, k)
            assert got == want, f"coverage({other}, {k}) returned {got}; coverage({busy}) {want}"


@settings(max_examples=30, phases=PHASES)
@given(FLOAT_BUSY)
def test_outputs_are_sorted_disjoint_non_touching_tuples(busy: Busy) -> None:
    """Results are lists of (start, end) tuples: sorted, disjoint, apart, never empty."""
    flat = everything(busy)
    well_formed(merge(flat), f"merge({flat})")
    well_formed(all_busy(busy), f"all_busy({busy})")
    for k in range(1, len(busy) + 1):
        well_formed(coverage(busy, k), f"coverage({busy}, {k})")


# ---------------------------------------------------------------- correctness: the traps


@pytest.mark.points(3)
def test_a_gpu_counts_once_however_its_intervals_overlap() -> None:
    """A GPU counts once, however many of its own intervals overlap (no double count)."""
    check_coverage([
        ({"a": [(0, 4), (1, 3)]}, 2, []),
        ({"a": [(0, 4), (0, 4)], "b": []}, 2, []),
        ({"a": [(0, 6), (2, 4)], "b": [(5, 9)]}, 2, [(5, 6)]),
        ({"a": [(0, 5), (1, 5), (2, 5)], "b": [(4, 8)], "c": [(7, 9)]}, 3, []),
    ])
    got = all_busy({"a": [(0, 6), (2, 4)], "b": [(5, 9)]})
    assert got == [(5, 6)], f"all_busy(a: (0,6),(2,4); b: (5,9)) returned {got}, expected [(5, 6)]"


@pytest.mark.points(3)
def test_gpus_touching_at_a_point_are_never_busy_together() -> None:
    """Two GPUs busy on [0, 1) and [1, 2) are never busy at the same time."""
    check_coverage([
        ({"a": [(0, 1)], "b": [(1, 2)]}, 2, []),
        ({"a": [(0, 3)], "b": [(3, 5)], "c": [(1, 4)]}, 3, []),
        ({"a": [(0.5, 1.25)], "b": [(1.25, 2.0)], "c": [(0, 3)]}, 3, []),
    ])
    got = all_busy({"a": [(0, 1)], "b": [(1, 2)]})
    assert got == [], f"all_busy(a: (0, 1); b: (1, 2)) returned {got}, expected []"


@pytest.mark.points(2)
def test_touching_intervals_merge() -> None:
    """merge joins touching intervals: [0, 1) and [1, 2) become [0, 2)."""
    cases: list[tuple[list[Interval], list[Interval]]] = [
        ([(0, 1), (1, 2)], [(0, 2)]),
        ([(2, 3), (0, 1), (1, 2)], [(0, 3)]),
        ([(0.5, 1.25), (1.25, 2.0), (5, 6)], [(0.5, 2.0), (5, 6)]),
    ]
    for intervals, want in cases:
        got = merge(intervals)
        assert got == want, f"merge({intervals}) returned {got}, expected {want}"


@pytest.mark.points(2)
def test_coverage_spans_that_touch_are_joined() -> None:
    """coverage joins spans that touch: never (x, t) followed by (t, y)."""
    check_coverage([
        ({"a": [(0, 1)], "b": [(1, 2)]}, 1, [(0, 2)]),
        ({"a": [(0, 3)], "b": [(3, 5)], "c": [(1, 4)]}, 2, [(1, 4)]),
        ({"a": [(0, 2), (2, 4)], "b": [(0, 4)]}, 2, [(0, 4)]),
    ])


@pytest.mark.points(2)
def test_a_contained_interval_does_not_shrink_the_union() -> None:
    """An interval inside another one leaves the union as it was."""
    got = merge([(0, 10), (2, 3), (4, 6)])
    assert got == [(0, 10)], f"merge([(0, 10), (2, 3), (4, 6)]) returned {got}, expected [(0, 10)]"
    got_time = busy_time([(0, 10), (2, 3)])
    assert got_time == 10, f"busy_time([(0, 10), (2, 3)]) returned {got_time}, expected 10"
