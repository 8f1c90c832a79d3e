"""Helpers for the hidden interval_union checks: oracles, strategies, transforms, timing."""

from __future__ import annotations

import gc
import math
import random
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import pairwise
from typing import Any

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

# 16x the intervals: n log n takes 20x-30x the time (45x at worst on a 2-core box under a
# load of 10), n^2 about 256x (never under ~180x seen): the limit leaves room on both sides.
SMALL, GROWTH, LIMIT, ROUNDS = 100, 16, 80.0, 4
# Input already in order sorts in linear time, so a quadratic step with a tiny constant
# (`list.pop(0)`, a memmove) shows from ~10^5 intervals: 6,000 -> 96,000 takes ~18x for an
# n log n merge and ~155x for one that pops from the front (12,000 gives the same ratios; a
# slow answer costs ROUNDS * LIMIT of its small run, so the smaller input costs it a quarter).
ORDERED_SMALL = 6_000


def spread(n: int) -> Busy:
    """n intervals on 8 GPUs, scattered over [0, 10 n) with lengths in [1, 5)."""
    rnd = random.Random(n)
    busy: Busy = {f"gpu-{g}": [] for g in range(8)}
    for i in range(n):
        start = rnd.uniform(0, 10 * n)
        busy[f"gpu-{i % 8}"].append((start, start + rnd.uniform(1, 5)))
    return busy


def in_order(n: int) -> Busy:
    """n int intervals on one GPU in order of start, as a trace reports them; some touch."""
    return {"gpu-0": [(3 * i, 3 * i + 2 + i % 3) for i in range(n)]}


def _fine(clock: Callable[[], float]) -> bool:
    began = clock()
    sum(range(20_000))
    return clock() > began


# CPU time of this thread leaves other processes on a shared machine out; where that clock
# ticks coarsely (some kernels do under RLIMIT_CPU), wall time is the fallback.
_CLOCK = time.thread_time if all(_fine(time.thread_time) for _ in range(5)) else time.perf_counter


class _OverBudget(BaseException):  # not an Exception: a submission's `except` lets it by
    pass


def _stop(_signum: int, _frame: object) -> None:
    raise _OverBudget


def _cpu_seconds(call: Callable[[], object], budget: float = math.inf) -> float:
    """This thread's CPU seconds for `call`; a call still running after `budget` CPU seconds is
    stopped there and counts as `inf`: it is slower than the budget, which is all a growth check
    needs to know (a quadratic answer's large run then costs the limit, not its whole time)."""
    timed = (0 < budget < math.inf and hasattr(signal, "setitimer")
             and threading.current_thread() is threading.main_thread())
    before = signal.signal(signal.SIGPROF, _stop) if timed else None
    gc.disable()  # a collection would land in whichever run crosses a threshold
    began = _CLOCK()
    try:
        try:
            if timed:  # the process's CPU time: at least this thread's
                signal.setitimer(signal.ITIMER_PROF, budget)
            call()
        finally:
            if timed:
                signal.setitimer(signal.ITIMER_PROF, 0)
        return _CLOCK() - began
    except _OverBudget:
        # Stopped: by this thread's own time, or (inconclusive, so not counted as a fast run
        # either) by the CPU time of other threads the call left running.
        return math.inf
    finally:
        gc.enable()
        if timed:
            signal.signal(signal.SIGPROF, before)


def growth(run: Callable[[Busy], object], make: Callable[[int], Busy] = spread,
           small: int = SMALL) -> float:
    """Best CPU time at 16n over best at n, in alternating rounds until a large run is fast.

    Noise only adds time, so the best run is the honest figure, and only an answer whose
    every large run is slow fails. A large run is stopped once it is slow (`LIMIT` times the
    best small run): the ratio is then `inf`, meaning "over the limit".
    """
    few, many = make(small), make(small * GROWTH)
    run(few)  # warm up
    base = best = math.inf
    for _ in range(ROUNDS):
        base = min(base, *(_cpu_seconds(lambda: run(few)) for _ in range(5)))
        best = min(best, _cpu_seconds(lambda: run(many), LIMIT * base))
        if best < LIMIT * base:
            break
    return best / base


def times(ratio: float) -> str:
    """A growth ratio as a failure message shows it."""
    return f"over {LIMIT:.0f}x" if math.isinf(ratio) else f"{ratio:.0f}x"
