"""Helpers for the hidden interval_union checks: oracles, strategies, transforms, timing."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import pairwise
from typing import Any

import kata_measure
import pytest
from hypothesis import Phase
from hypothesis import strategies as st
from interval_union import Interval, all_busy, busy_time, coverage, merge

Busy = dict[str, list[Interval]]
# Hypothesis's explain phase costs seconds per failing property here; shrinking is kept.
PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)
INF, NAN = math.inf, math.nan

# ---------------------------------------------------------------- oracles


def join(pieces: Iterable[Interval]) -> list[Interval]:
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


def oracle(busy: Mapping[str, list[Interval]], at_least: int) -> list[Interval]:
    """Brute force: keep each elementary segment whose midpoint enough GPUs cover."""
    points = sorted({t for ivs in busy.values() for s, e in ivs if s < e for t in (s, e)})
    return join(p for p in pairwise(points) if _count(busy, (p[0] + p[1]) / 2) >= at_least)


def names(*parts: str) -> str:
    """A regex matching a message that contains every part, in any order and any case."""
    return "(?is)" + "".join(f"(?=.*{re.escape(p)})" for p in parts)


def well_formed(result: object, call: str) -> None:
    assert isinstance(result, list), f"{call} returned {type(result).__name__}, expected a list"
    for item in result:
        assert isinstance(item, tuple), f"{call} returned the item {item!r}, expected a tuple"
        assert len(item) == 2, f"{call} returned the item {item!r}, expected (start, end)"
        assert item[0] < item[1], f"{call} returned the empty or reversed interval {item!r}"
    for a, b in pairwise(result):
        assert a[1] < b[0], f"{call} returned {a!r} then {b!r}: not sorted, disjoint and apart"


def check_coverage(cases: list[tuple[Busy, int, list[Interval]]]) -> None:
    for busy, k, want in cases:
        got = coverage(busy, k)
        assert got == want, f"coverage({busy}, {k}) returned {got}, expected {want}"


def same_bounds(got: list[Interval], want: list[Interval]) -> bool:
    """Equal by value, and every bound of the same kind (int or float) as expected.

    `2**53 + 1 == float(2**53 + 1)` is already False in Python; the kind check also catches an
    int bound that came back as a float while still equal in value.
    """
    return got == want and all(
        isinstance(g, int) == isinstance(w, int)
        for giv, wiv in zip(got, want, strict=True) for g, w in zip(giv, wiv, strict=True))


class Once:
    """An iterable that refuses to be iterated a second time."""

    def __init__(self, items: Iterable[Interval]) -> None:
        self._items, self._used = list(items), False

    def __iter__(self) -> Iterator[Interval]:
        assert not self._used, "an input iterable was iterated twice: inputs are read once"
        self._used = True
        return iter(self._items)


# ---------------------------------------------------------------- strategies


def ordered(pair: tuple[float, float]) -> Interval:
    return (min(pair), max(pair))


_T = st.integers(0, 12)
BUSY = st.dictionaries(st.sampled_from(["g0", "g1", "g2", "g3", "g4"]),
                       st.lists(st.tuples(_T, _T).map(ordered), max_size=8), max_size=5)
# Bounds in steps of 0.25, some negative: every midpoint of two bounds is exact.
_Q = st.integers(-40, 40).map(lambda i: i / 4)
FLOAT_BUSY = st.dictionaries(st.sampled_from(["g0", "g1", "g2", "g3"]),
                             st.lists(st.tuples(_Q, _Q).map(ordered), max_size=6), max_size=4)


def everything(busy: Busy) -> list[Interval]:
    return [iv for ivs in busy.values() for iv in ivs]


def moved(busy: Busy, move: Callable[[Any], Any]) -> Busy:
    """`busy` with every bound mapped through `move` (an increasing map of time)."""
    return {gpu: [(move(s), move(e)) for s, e in ivs] for gpu, ivs in busy.items()}


# ---------------------------------------------------------------- generators and one-shot inputs

Wrap = Callable[[list[Interval]], Iterable[Interval]]
CALLS: dict[str, Callable[[Wrap], object]] = {
    "merge": lambda wrap: merge(wrap([(4, 6), (0, 2), (1, 3)])),
    "busy_time": lambda wrap: busy_time(wrap([(4, 6), (0, 2), (1, 3)])),
    "coverage": lambda wrap: coverage({"a": wrap([(4, 6), (0, 2)]), "b": wrap([(1, 5)])}, 2),
    "all_busy": lambda wrap: all_busy({"a": wrap([(4, 6), (0, 2)]), "b": wrap([(1, 5)])}),
}

# ---------------------------------------------------------------- bad input

ONE: dict[str, Callable[[list[Any]], object]] = {
    "merge": merge,
    "busy_time": busy_time,
    "coverage": lambda ivs: coverage({"gpu-ok": [], "gpu-bad-7": ivs}, 1),
    "all_busy": lambda ivs: all_busy({"gpu-ok": [], "gpu-bad-7": ivs}),
}


def expect(errors: Any, name: str, item: object, *named: str, alone: bool = False) -> None:
    """`name` called with one bad item raises `errors`, its message naming `named`."""
    if named and name in ("coverage", "all_busy"):
        named = (*named, "gpu-bad-7")
    try:
        ONE[name]([item] if alone else [(0, 1), item])
    except errors as err:
        # The failure message must show the call, which pytest.raises cannot.
        assert re.search(names(*named), str(err)), (  # noqa: PT017
            f"{name} with the item {item!r} raised {err!r}: the message should name {named}"
        )
    else:
        pytest.fail(f"{name} with the item {item!r} raised nothing, expected {errors}")


def raises(errors: Any, call: Callable[[], object], shown: str) -> None:
    """`call()` raises one of `errors`; `shown` is the call as the candidate would write it."""
    try:
        got = call()
    except errors:
        return
    pytest.fail(f"{shown} returned {got!r}, expected {errors}")


# ---------------------------------------------------------------- performance

# 16x the intervals: n log n takes about 20x-30x the time, n^2 about 256x.
SMALL, GROWTH, LIMIT = 200, 16, 64.0
# Input already in order sorts in linear time, so a quadratic step with a tiny constant
# (`list.pop(0)`, a memmove) hides until the input is large: how large depends on the CPU's
# memory bandwidth. From 15,625 to 500,000 intervals (32x) an n log n merge takes about 35x; a
# merge that pops from the front takes several hundred times, measured or, where its bandwidth
# is highest, estimated from smaller sizes (docs/margins.md).
ORDERED_SMALL, ORDERED_GROWTH, ORDERED_LIMIT = 15_625, 32, 100.0


def spread(n: int) -> Busy:
    """n intervals on 8 GPUs, scattered over [0, 10 n) with lengths in [1, 5)."""
    rnd = random.Random(n)
    busy: Busy = {f"gpu-{g}": [] for g in range(8)}
    for i in range(n):
        start = rnd.uniform(0, 10 * n)
        busy[f"gpu-{i % 8}"].append((start, start + rnd.uniform(1, 5)))
    return busy


def many_gpus(n: int) -> Busy:
    """n intervals, two on each of n / 2 GPUs, scattered over [0, 10 n): the GPU count grows
    with the input."""
    rnd = random.Random(n)
    busy: Busy = {}
    for g in range(n // 2):
        start = rnd.uniform(0, 10 * n)
        busy[f"gpu-{g}"] = [(start, start + rnd.uniform(1, 5)),
                            (start + 6, start + 6 + rnd.uniform(1, 5))]
    return busy


MANY_SMALL = 200  # GPUs: 100 at the small size, 1,600 at the large one


def gang(n: int) -> Busy:
    """n GPUs, one long interval each, all overlapping in the middle (a gang-scheduled job):
    every GPU is busy at once, 3,200 of them at the large size."""
    rnd = random.Random(n)
    order = list(range(n))
    rnd.shuffle(order)
    return {f"gpu-{g}": [(float(g), g + n + rnd.random())] for g in order}


def in_order(n: int) -> Busy:
    """n int intervals on one GPU in order of start, as a trace reports them; some touch."""
    return {"gpu-0": [(3 * i, 3 * i + 2 + i % 3) for i in range(n)]}


def apart_in_order(n: int) -> Busy:
    """n int intervals on one GPU in order of start, none touching: n spans in the union."""
    return {"gpu-0": [(3 * i, 3 * i + 2) for i in range(n)]}


def growth(run: Callable[[Busy], object], make: Callable[[int], Busy] = spread,
           small: int = SMALL, factor: int = GROWTH, limit: float = LIMIT) -> float:
    """Best CPU time of `run` at `factor` times `small` intervals over best at `small` (see
    kata_measure.growth: a slow large run is stopped, and the ratio is then `inf`)."""
    few, many = make(small), make(small * factor)
    return kata_measure.growth(lambda: run(few), lambda: run(many), limit)


def times(ratio: float, limit: float = LIMIT) -> str:
    """A growth ratio as a failure message shows it."""
    return kata_measure.times(ratio, limit)
