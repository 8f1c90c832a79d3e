"""Hidden checks for interval_union: every rule, the traps, bad input and growth rate."""

from __future__ import annotations

import copy
import gc
import math
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from interval_union import Interval, all_busy, busy_time, coverage, merge

Busy = dict[str, list[Interval]]
# Hypothesis's explain phase costs seconds per failing property here; shrinking is kept.
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)
INF, NAN = math.inf, math.nan

# ---------------------------------------------------------------- oracles and helpers


def _join(pieces: Iterable[Interval]) -> list[Interval]:
    """Join sorted, disjoint pieces that touch into maximal half-open intervals."""
    out: list[Interval] = []
    for lo, hi in pieces:
        if out and out[-1][1] == lo:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _count(busy: Mapping[str, list[Interval]], t: float) -> int:
    return sum(any(s <= t < e for s, e in ivs) for ivs in busy.values())


def _oracle(busy: Mapping[str, list[Interval]], at_least: int) -> list[Interval]:
    """Brute force: keep each elementary segment whose midpoint enough GPUs cover."""
    points = sorted({t for ivs in busy.values() for s, e in ivs if s < e for t in (s, e)})
    return _join(p for p in pairwise(points) if _count(busy, (p[0] + p[1]) / 2) >= at_least)


def _names(*parts: str) -> str:
    """A regex matching a message that contains every part, in any order and any case."""
    return "(?is)" + "".join(f"(?=.*{re.escape(p)})" for p in parts)


def _well_formed(result: object, call: str) -> None:
    assert isinstance(result, list), f"{call} returned {type(result).__name__}, expected a list"
    for item in result:
        assert isinstance(item, tuple), f"{call} returned the item {item!r}, expected a tuple"
        assert len(item) == 2, f"{call} returned the item {item!r}, expected (start, end)"
        assert item[0] < item[1], f"{call} returned the empty or reversed interval {item!r}"
    for a, b in pairwise(result):
        assert a[1] < b[0], f"{call} returned {a!r} then {b!r}: not sorted, disjoint and apart"


class _Once:
    """An iterable that refuses to be iterated a second time."""

    def __init__(self, items: Iterable[Interval]) -> None:
        self._items, self._used = list(items), False

    def __iter__(self) -> Iterator[Interval]:
        assert not self._used, "an input iterable was iterated twice: inputs are read once"
        self._used = True
        return iter(self._items)


def _ordered(pair: tuple[float, float]) -> Interval:
    return (min(pair), max(pair))


_T = st.integers(0, 12)
_BUSY = st.dictionaries(st.sampled_from(["g0", "g1", "g2", "g3", "g4"]),
                        st.lists(st.tuples(_T, _T).map(_ordered), max_size=8), max_size=5)
# Bounds in steps of 0.25, some negative: every midpoint of two bounds is exact.
_Q = st.integers(-40, 40).map(lambda i: i / 4)
_FLOAT_BUSY = st.dictionaries(st.sampled_from(["g0", "g1", "g2", "g3"]),
                              st.lists(st.tuples(_Q, _Q).map(_ordered), max_size=6), max_size=4)

# ---------------------------------------------------------------- correctness: oracles


@pytest.mark.points(5)
@settings(max_examples=60, phases=_PHASES)
@given(_FLOAT_BUSY)
@example({"a": [(0, 6), (2, 4)], "b": [(5, 9)]})
@example({"a": [(0, 3)], "b": [(3, 5)], "c": [(1, 4)]})
def test_results_match_a_brute_force_count(busy: Busy) -> None:
    """merge, busy_time and coverage agree with a brute-force count, segment by segment."""
    everything = [iv for ivs in busy.values() for iv in ivs]
    want = _oracle({"g": everything}, 1)
    assert merge(everything) == want, f"merge({everything}) returned {merge(everything)}"
    got_time, want_time = busy_time(everything), sum(e - s for s, e in want)
    assert math.isclose(got_time, want_time, abs_tol=1e-9), (
        f"busy_time({everything}) returned {got_time}, expected {want_time}"
    )
    for k in range(1, len(busy) + 1):
        got, want = coverage(busy, k), _oracle(busy, k)
        assert got == want, f"coverage({busy}, {k}) returned {got}, expected {want}"


@settings(max_examples=30, phases=_PHASES)
@given(_BUSY)
def test_coverage_at_one_is_the_merge_of_all_intervals(busy: Busy) -> None:
    """coverage(busy, 1) equals merge of every interval of every GPU."""
    want = merge([iv for ivs in busy.values() for iv in ivs])
    assert coverage(busy, 1) == want, f"coverage({busy}, 1) returned {coverage(busy, 1)}"


@settings(max_examples=30, phases=_PHASES)
@given(_BUSY)
def test_coverage_shrinks_as_at_least_grows(busy: Busy) -> None:
    """Every span of coverage(busy, k + 1) lies inside a span of coverage(busy, k)."""
    for k in range(1, len(busy) + 1):
        wider, narrower = coverage(busy, k), coverage(busy, k + 1)
        for s, e in narrower:
            assert any(ws <= s and e <= we for ws, we in wider), (
                f"coverage({busy}, {k + 1}) has {(s, e)}, outside coverage(..., {k}) = {wider}"
            )


@settings(max_examples=30, phases=_PHASES)
@given(_BUSY)
def test_all_busy_is_coverage_at_the_gpu_count(busy: Busy) -> None:
    """all_busy(busy) equals coverage(busy, len(busy)), and [] for no GPUs."""
    got, want = all_busy(busy), (coverage(busy, len(busy)) if busy else [])
    assert got == want, f"all_busy({busy}) returned {got}, expected {want}"


def _orders(items: list[Interval]) -> list[list[Interval]]:
    """The same intervals in other orders: reversed, and by decreasing end."""
    return [items[::-1], sorted(items, key=lambda iv: (-iv[1], iv[0]))]


@pytest.mark.points(2)
@settings(max_examples=30, phases=_PHASES)
@given(_BUSY)
def test_results_do_not_depend_on_input_order(busy: Busy) -> None:
    """Reordering the intervals, and the GPUs, changes no result."""
    everything = [iv for ivs in busy.values() for iv in ivs]
    for mixed in _orders(everything):
        assert merge(mixed) == merge(everything), f"merge({mixed}) != merge({everything})"
        assert busy_time(mixed) == busy_time(everything), f"busy_time({mixed}) changed"
    for n in range(2):
        other = {gpu: _orders(ivs)[n] for gpu, ivs in reversed(busy.items())}
        for k in range(1, len(busy) + 1):
            got, want = coverage(other, k), coverage(busy, k)
            assert got == want, f"coverage({other}, {k}) returned {got}; coverage({busy}) {want}"


@settings(max_examples=30, phases=_PHASES)
@given(_FLOAT_BUSY)
def test_outputs_are_sorted_disjoint_non_touching_tuples(busy: Busy) -> None:
    """Results are lists of (start, end) tuples: sorted, disjoint, apart, never empty."""
    everything = [iv for ivs in busy.values() for iv in ivs]
    _well_formed(merge(everything), f"merge({everything})")
    _well_formed(all_busy(busy), f"all_busy({busy})")
    for k in range(1, len(busy) + 1):
        _well_formed(coverage(busy, k), f"coverage({busy}, {k})")


# ---------------------------------------------------------------- correctness: the traps


def _check_coverage(cases: list[tuple[Busy, int, list[Interval]]]) -> None:
    for busy, k, want in cases:
        got = coverage(busy, k)
        assert got == want, f"coverage({busy}, {k}) returned {got}, expected {want}"


@pytest.mark.points(3)
def test_a_gpu_counts_once_however_its_intervals_overlap() -> None:
    """A GPU counts once, however many of its own intervals overlap (no double count)."""
    _check_coverage([
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
    _check_coverage([
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
    _check_coverage([
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


# ---------------------------------------------------------------- edge cases

edge = pytest.mark.category("edge_cases")


@edge
def test_empty_inputs_give_empty_results() -> None:
    """No intervals give [] and a busy time of 0; no GPUs give [], all_busy({}) included."""
    assert merge([]) == [], f"merge([]) returned {merge([])}"
    assert busy_time([]) == 0, f"busy_time([]) returned {busy_time([])}"
    _check_coverage([({}, 1, []), ({"a": []}, 1, [])])
    assert all_busy({}) == [], f"all_busy({{}}) returned {all_busy({})}, expected []"


@edge
@pytest.mark.points(2)
def test_empty_intervals_are_ignored() -> None:
    """Empty intervals (start == end) are ignored: they add no time and no span."""
    assert merge([(5, 5)]) == [], f"merge([(5, 5)]) returned {merge([(5, 5)])}, expected []"
    got = merge([(0, 1), (3, 3), (6, 7)])
    assert got == [(0, 1), (6, 7)], f"merge([(0, 1), (3, 3), (6, 7)]) returned {got}"
    assert busy_time([(2.5, 2.5)]) == 0, "busy_time([(2.5, 2.5)]) should be 0"
    _check_coverage([({"a": [(3, 3)], "b": [(3, 3), (0, 1)]}, 2, [])])


@edge
@pytest.mark.points(2)
def test_a_gpu_listed_with_no_intervals_still_counts() -> None:
    """A GPU listed with no (or only empty) intervals counts, so all_busy is []."""
    idle: list[list[Interval]] = [[], [(2, 2)]]
    for nothing in idle:
        busy: Busy = {"a": [(0, 5)], "b": nothing}
        assert all_busy(busy) == [], f"all_busy({busy}) returned {all_busy(busy)}, expected []"
        _check_coverage([(busy, 2, []), (busy, 1, [(0, 5)])])


@edge
def test_at_least_above_the_gpu_count_gives_nothing() -> None:
    """coverage with at_least greater than the number of GPUs is []."""
    busy: Busy = {"a": [(0, 5)], "b": [(0, 5)]}
    _check_coverage([(busy, 2, [(0, 5)]), (busy, 3, [])])


_CALLS: dict[str, Callable[[Callable[[list[Interval]], Iterable[Interval]]], object]] = {
    "merge": lambda wrap: merge(wrap([(4, 6), (0, 2), (1, 3)])),
    "busy_time": lambda wrap: busy_time(wrap([(4, 6), (0, 2), (1, 3)])),
    "coverage": lambda wrap: coverage({"a": wrap([(4, 6), (0, 2)]), "b": wrap([(1, 5)])}, 2),
    "all_busy": lambda wrap: all_busy({"a": wrap([(4, 6), (0, 2)]), "b": wrap([(1, 5)])}),
}


@edge
@pytest.mark.parametrize("name", sorted(_CALLS))
def test_generators_are_accepted(name: str) -> None:
    """Inputs may be generators, and give the same answer as lists."""
    got, want = _CALLS[name](lambda ivs: (iv for iv in ivs)), _CALLS[name](list)
    assert got == want, f"{name} on generators returned {got}; on lists it returned {want}"


@edge
@pytest.mark.points(2)
def test_inputs_are_read_once() -> None:
    """Every input iterable is iterated at most once."""
    for name, call in _CALLS.items():
        got, want = call(_Once), call(list)
        assert got == want, f"{name} on one-shot iterables returned {got}, expected {want}"


@edge
def test_inputs_are_not_modified() -> None:
    """The caller's lists and mapping are left as they were."""
    intervals: list[Interval] = [(4, 6), (0, 2), (1, 3), (2, 2)]
    busy: Busy = {"b": [(4, 6), (0, 2), (0, 2)], "a": [(1, 5)]}
    before, busy_before = list(intervals), copy.deepcopy(busy)
    merge(intervals)
    busy_time(intervals)
    coverage(busy, 2)
    all_busy(busy)
    assert intervals == before, f"the input list became {intervals}, was {before}"
    assert busy == busy_before, f"the input mapping became {busy}, was {busy_before}"


# ---------------------------------------------------------------- bad input

bad = pytest.mark.category("bad_input")
_ONE: dict[str, Callable[[list[Any]], object]] = {
    "merge": merge,
    "busy_time": busy_time,
    "coverage": lambda ivs: coverage({"gpu-ok": [], "gpu-bad-7": ivs}, 1),
    "all_busy": lambda ivs: all_busy({"gpu-ok": [], "gpu-bad-7": ivs}),
}


def _expect(errors: Any, name: str, item: object, *named: str, alone: bool = False) -> None:
    """`name` called with one bad item raises `errors`, its message naming `named`."""
    if named and name in ("coverage", "all_busy"):
        named = (*named, "gpu-bad-7")
    try:
        _ONE[name]([item] if alone else [(0, 1), item])
    except errors as err:
        # The failure message must show the call, which pytest.raises cannot.
        assert re.search(_names(*named), str(err)), (  # noqa: PT017
            f"{name} with the item {item!r} raised {err!r}: the message should name {named}"
        )
    else:
        pytest.fail(f"{name} with the item {item!r} raised nothing, expected {errors}")


@bad
@pytest.mark.points(2)
@pytest.mark.parametrize("name", sorted(_ONE))
def test_a_bad_interval_raises_value_error_naming_it(name: str) -> None:
    """start > end, a NaN or an infinite bound raises ValueError naming the interval (and GPU)."""
    _expect(ValueError, name, (17.5, 4.25), "17.5", "4.25")
    for bad_interval, word in [((NAN, 3.75), "nan"), ((3.75, NAN), "nan"),
                               ((-INF, 3.75), "inf"), ((3.75, INF), "inf")]:
        _expect(ValueError, name, bad_interval, word, "3.75")


@bad
@pytest.mark.points(2)
def test_an_empty_interval_with_bad_bounds_still_raises() -> None:
    """Validation comes before dropping empty intervals: (inf, inf) and (nan, nan) raise."""
    for name in _ONE:
        for bad_interval in [(INF, INF), (-INF, -INF), (NAN, NAN)]:
            _expect(ValueError, name, bad_interval)


@bad
def test_at_least_below_one_raises_value_error() -> None:
    """coverage with at_least < 1 raises ValueError."""
    for at_least in (0, -2):
        try:
            coverage({"a": [(0, 1)]}, at_least)
        except ValueError:
            continue
        pytest.fail(f"coverage({{'a': [(0, 1)]}}, {at_least}) raised no ValueError")


@bad
def test_an_item_that_is_not_a_pair_of_numbers_raises() -> None:
    """An item that is not a (start, end) pair of numbers raises TypeError (or ValueError)."""
    for name in _ONE:
        for item in [(1, 2, 3), 5, None, ("0", "1"), (None, 2)]:
            _expect((TypeError, ValueError), name, item, alone=True)


# ---------------------------------------------------------------- performance

perf = pytest.mark.category("performance")
slow = pytest.mark.timeout(90)  # a quadratic answer takes several seconds to fail
# 16x the intervals: n log n takes 20x-30x the time (45x at worst on a 2-core box under a
# load of 10), n^2 about 256x (never under ~180x seen): the limit leaves room on both sides.
_SMALL, _GROWTH, _LIMIT, _ROUNDS = 100, 16, 80.0, 4


def _spread(n: int) -> Busy:
    """n intervals on 8 GPUs, scattered over [0, 10 n) with lengths in [1, 5)."""
    rnd = random.Random(n)
    busy: Busy = {f"gpu-{g}": [] for g in range(8)}
    for i in range(n):
        start = rnd.uniform(0, 10 * n)
        busy[f"gpu-{i % 8}"].append((start, start + rnd.uniform(1, 5)))
    return busy


def _fine(clock: Callable[[], float]) -> bool:
    began = clock()
    sum(range(20_000))
    return clock() > began


# CPU time of this thread leaves other processes on a shared machine out; where that clock
# ticks coarsely (some kernels do under RLIMIT_CPU), wall time is the fallback.
_CLOCK = time.thread_time if all(_fine(time.thread_time) for _ in range(5)) else time.perf_counter


def _cpu_seconds(call: Callable[[], object]) -> float:
    gc.disable()  # a collection would land in whichever run crosses a threshold
    try:
        began = _CLOCK()
        call()
        return _CLOCK() - began
    finally:
        gc.enable()


def _growth(run: Callable[[Busy], object]) -> float:
    """Best CPU time at 16n over best at n, in alternating rounds until a large run is fast.

    Noise only adds time, so the best run is the honest figure, and only an answer whose
    every large run is slow fails.
    """
    small, large = _spread(_SMALL), _spread(_SMALL * _GROWTH)
    run(small)  # warm up
    base = best = math.inf
    for _ in range(_ROUNDS):
        base = min(base, *(_cpu_seconds(lambda: run(small)) for _ in range(5)))
        best = min(best, _cpu_seconds(lambda: run(large)))
        if best < _LIMIT * base:
            break
    return best / base


@perf
@slow
@pytest.mark.points(3)
def test_coverage_time_grows_like_n_log_n() -> None:
    """coverage scales like sorting: 16x the intervals takes far less than 256x the time."""
    ratio = _growth(lambda busy: coverage(busy, 3))
    assert ratio < _LIMIT, (
        f"coverage on {_SMALL * _GROWTH} intervals took {ratio:.0f}x the time of {_SMALL}: "
        f"expected about {_GROWTH}x (sort, then sweep once); that is quadratic growth"
    )


@perf
@slow
@pytest.mark.points(2)
def test_merge_time_grows_like_n_log_n() -> None:
    """merge scales like sorting: 16x the intervals takes far less than 256x the time."""
    ratio = _growth(lambda busy: merge([iv for ivs in busy.values() for iv in ivs]))
    assert ratio < _LIMIT, (
        f"merge of {_SMALL * _GROWTH} intervals took {ratio:.0f}x the time of {_SMALL}: "
        f"expected about {_GROWTH}x (sort, then scan once); that is quadratic growth"
    )
