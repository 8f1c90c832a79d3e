"""Hidden checks for interval_union: the same answers at every scale, shift and split of time.

Every transform here is exact: floats are scaled by powers of two and shifted by multiples of
a power of two that keep every bound within 53 bits; ints are exact at any size.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from interval_union import Interval, busy_time, coverage, merge
from interval_union_helpers import (
    BUSY,
    FLOAT_BUSY,
    PHASES,
    Busy,
    everything,
    moved,
    oracle,
    same_bounds,
)


def _length(intervals: list[Interval]) -> float:
    return math.fsum(e - s for s, e in intervals)


@pytest.mark.points(2)
@settings(max_examples=40, phases=PHASES)
@given(FLOAT_BUSY, st.integers(-40, 40), st.integers(0, 40), st.integers(-1000, 1000))
@example({"a": [(0, 0.25), (0.5, 0.75)], "b": [(0.75, 1.5)]}, -40, 0, 0)  # gaps of 2**-42
@example({"a": [(0, 0.25), (1, 1.75), (3, 3.25), (5, 5.75)], "b": [(6.5, 7.25)]}, 0, 40, 999)
@example({"a": [(-10, -9.75), (-9.5, 10)], "b": [(-9.75, -9.5)]}, 40, 40, -1000)
@example({"a": [(0, 0.25)], "b": [(0.25, 0.5)]}, -40, 40, 1000)
def test_results_are_the_same_at_every_scale_and_shift(
        busy: Busy, scale: int, shift: int, steps: int) -> None:
    """Scaling time by 2**k (k from -40 to 40) and shifting it changes no answer.

    busy_time scales with it, to within a relative 1e-9.
    """
    def move(t: float) -> float:
        return math.ldexp(t, scale) + math.ldexp(steps, scale + shift)

    there = moved(busy, move)
    flat, want = everything(there), oracle({"g": everything(busy)}, 1)
    got = merge(flat)
    assert got == [(move(s), move(e)) for s, e in want], (
        f"merge({flat}) returned {got}: time scaled by 2**{scale} and shifted by "
        f"{math.ldexp(steps, scale + shift)!r} should give {[(move(s), move(e)) for s, e in want]}"
    )
    got_time, want_time = busy_time(flat), math.ldexp(_length(want), scale)
    assert math.isclose(got_time, want_time, rel_tol=1e-9, abs_tol=0.0), (
        f"busy_time({flat}) returned {got_time!r}, expected {want_time!r} (relative 1e-9)"
    )
    for k in range(1, len(busy) + 1):
        got, expected = coverage(there, k), [(move(s), move(e)) for s, e in oracle(busy, k)]
        assert got == expected, f"coverage({there}, {k}) returned {got}, expected {expected}"


_HUGE = [2**53 + 1, 10**18 + 7, -(2**63), 10**400, -(10**400) + 1]


@pytest.mark.points(2)
@settings(max_examples=30, phases=PHASES)
@given(BUSY, st.sampled_from([1, 3, 10**9]), st.sampled_from(_HUGE))
@example({"a": [(0, 2), (1, 3)], "b": [(2, 5)]}, 1, 2**53 + 1)
@example({"a": [(0, 2), (1, 3)], "b": [(2, 5)]}, 1, 10**400)
@example({"a": [(0, 4), (5, 6)], "b": [(1, 5)]}, 10**9, 10**18 + 7)
def test_int_bounds_stay_exact_at_any_magnitude(busy: Busy, factor: int, offset: int) -> None:
    """Int bounds of any size (2**53 + 1, 10**18, 10**400) come back exact, as ints."""
    def move(t: Any) -> Any:  # ints in, ints out (the strategy draws ints)
        return t * factor + offset

    there = moved(busy, move)
    flat, want = everything(there), oracle({"g": everything(busy)}, 1)
    moved_want = [(move(s), move(e)) for s, e in want]
    got = merge(flat)
    assert same_bounds(got, moved_want), f"merge({flat}) returned {got}, expected {moved_want}"
    got_time, want_time = busy_time(flat), factor * sum(e - s for s, e in want)
    assert math.isclose(got_time, want_time, rel_tol=1e-9), (
        f"busy_time({flat}) returned {got_time!r}, expected {want_time!r}"
    )
    for k in range(1, len(busy) + 1):
        got, expected = coverage(there, k), [(move(s), move(e)) for s, e in oracle(busy, k)]
        assert same_bounds(got, expected), (
            f"coverage({there}, {k}) returned {got}, expected {expected}"
        )


_B = 2**53  # from here on, not every int is a float: float(2**53 + 1) == 2**53


def test_int_and_float_bounds_together_are_compared_exactly() -> None:
    """Int and float bounds in one input are compared exactly, as Python compares them: a gap
    of 1 past 2**53 between a float end and an int start stays a gap, touching still joins."""
    cases: list[tuple[list[Interval], list[Interval]]] = [
        ([(0, float(_B)), (_B + 1, _B + 2)], [(0, float(_B)), (_B + 1, _B + 2)]),
        ([(_B + 1, _B + 2), (0, float(_B))], [(0, float(_B)), (_B + 1, _B + 2)]),
        ([(0, float(2**60)), (2**60 + 1, 2**61)], [(0, float(2**60)), (2**60 + 1, 2**61)]),
        ([(0, float(_B)), (_B, _B + 2)], [(0, _B + 2)]),
        ([(_B + 1, _B + 3), (float(_B), _B + 1)], [(float(_B), _B + 3)]),
    ]
    for intervals, want in cases:
        got = merge(intervals)
        assert got == want, f"merge({intervals}) returned {got}, expected {want}"
        for busy in ({"a": intervals}, {f"g{i}": [iv] for i, iv in enumerate(intervals)}):
            got = coverage(busy, 1)
            assert got == want, f"coverage({busy}, 1) returned {got}, expected {want}"


def test_busy_time_of_int_and_float_bounds_together_is_exact() -> None:
    """busy_time of an interval with an int bound and a float bound is its exact length, not
    what Python's `end - start` rounds it to: [float(2**53), 2**53 + 1) lasts 1."""
    cases: list[tuple[list[Interval], float]] = [
        ([(float(_B), _B + 1)], 1),
        ([(_B + 1, float(_B + 4))], 3),
        ([(float(_B), _B + 1), (_B + 3, float(_B + 4))], 2),
        ([(-(_B + 1), float(-_B))], 1),
        ([(0, 0.5), (float(_B), _B + 1)], 1.5),
    ]
    for intervals, want in cases:
        got = busy_time(intervals)
        assert math.isclose(got, want, rel_tol=1e-9), (
            f"busy_time({intervals}) returned {got}, expected {want}: subtracting an int from a "
            "float in Python rounds the int to a float first, which loses the length here"
        )


def _split(busy: Busy) -> Busy:
    """Each interval of length >= 2 cut into two touching pieces, and every piece twice."""
    out: Busy = {}
    for gpu, ivs in busy.items():
        pieces: list[Interval] = []
        for s, e in ivs:
            pieces += [(s, s + 1), (s + 1, e)] if e - s >= 2 else [(s, e)]
        out[gpu] = pieces + pieces[::-1]
    return out


@settings(max_examples=30, phases=PHASES)
@given(BUSY)
@example({"a": [(0, 4)], "b": [(2, 6)]})
def test_splitting_or_repeating_an_interval_changes_nothing(busy: Busy) -> None:
    """Cutting an interval into touching pieces, or repeating it on its GPU, changes nothing."""
    cut = _split(busy)
    flat, want = everything(cut), oracle({"g": everything(busy)}, 1)
    assert merge(flat) == want, f"merge({flat}) returned {merge(flat)}, expected {want}"
    assert busy_time(flat) == _length(want), (
        f"busy_time({flat}) returned {busy_time(flat)}, expected {_length(want)}"
    )
    for k in range(1, len(busy) + 1):
        got, expected = coverage(cut, k), oracle(busy, k)
        assert got == expected, f"coverage({cut}, {k}) returned {got}, expected {expected}"
