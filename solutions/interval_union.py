"""GPU busy time: the union, and the times when at least k GPUs are busy at once.

Every interval is half-open, ``[start, end)``: ``(0, 1)`` and ``(1, 2)`` touch but never overlap.
Each function reads its input once, so generators are fine, and never modifies it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction

Interval = tuple[float, float]
_INF = math.inf

__all__ = ["Interval", "all_busy", "busy_time", "coverage", "merge"]


def _checked(intervals: Iterable[Interval], gpu: str | None) -> list[Interval]:
    """The non-empty intervals of ``intervals``, read once; raise on the first bad one.

    Validation runs before empty intervals are dropped, so ``(inf, inf)`` raises too.
    """
    where = "" if gpu is None else f" on GPU {gpu!r}"
    kept: list[Interval] = []
    for item in intervals:
        try:
            start, end = item
        except (TypeError, ValueError):
            raise TypeError(f"interval must be a (start, end) pair, got {item!r}{where}") from None
        # The common case in one test: two finite floats in order (NaN fails every comparison).
        if type(start) is float and type(end) is float and -_INF < start <= end < _INF:
            if start < end:
                kept.append((start, end))
            continue
        for bound in (start, end):
            if isinstance(bound, bool) or not isinstance(bound, int | float):
                raise TypeError(f"interval bounds must be numbers, got {item!r}{where}")
        # An int is always finite, and may be too large for a float: only floats are tested.
        if any(isinstance(bound, float) and not math.isfinite(bound) for bound in (start, end)):
            raise ValueError(f"interval bounds must be finite, got {item!r}{where}")
        if start > end:
            raise ValueError(f"interval start must be <= end, got {item!r}{where}")
        if start < end:
            kept.append((start, end))
    return kept


def _merged(intervals: Iterable[Interval], gpu: str | None) -> list[Interval]:
    out: list[Interval] = []
    for start, end in sorted(_checked(intervals, gpu)):
        # Sorted by start, so only the last output interval can meet this one.
        # `<=`: touching half-open intervals leave no gap between them, so they join.
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """The union of ``intervals`` as sorted, disjoint, non-touching, non-empty intervals.

    Empty intervals (``start == end``) are ignored; touching intervals join.

    Raises:
        ValueError: an interval has ``start > end`` or a NaN or infinite bound
            (the message names the interval).
        TypeError: an item is not a pair of numbers.

    >>> merge([(3, 5), (0, 1), (1, 2), (4, 4)])
    [(0, 2), (3, 5)]
    """
    return _merged(intervals, None)


def busy_time(intervals: Iterable[Interval]) -> float:
    """The total length of the union of ``intervals``.

    Raises:
        ValueError, TypeError: as ``merge``.

    >>> busy_time([(0, 2), (1, 3), (5, 6)])
    4.0
    """
    return math.fsum(_length(start, end) for start, end in merge(intervals))


def _length(start: float, end: float) -> float:
    """``end - start``, exact before it is rounded once: an int and a float subtracted in
    Python round the int first, so ``(float(2**53), 2**53 + 1)`` would come out 0.0, not 1."""
    if isinstance(start, float) == isinstance(end, float):
        return end - start  # two floats (rounded once), or two ints (exact)
    return float(Fraction(end) - Fraction(start))


def coverage(busy: Mapping[str, Iterable[Interval]], at_least: int) -> list[Interval]:
    """The times when at least ``at_least`` distinct GPUs are busy, merged as in ``merge``.

    ``busy`` maps each GPU to its busy intervals; a GPU counts once however many of its own
    intervals overlap, and a GPU listed with no intervals still counts towards ``len(busy)``.
    ``at_least`` greater than ``len(busy)`` gives ``[]``.

    Raises:
        ValueError: ``at_least < 1``, or a bad interval (the message names it and its GPU).
        TypeError: ``at_least`` is not an int, or an item is not a pair of numbers.

    >>> coverage({"a": [(0, 4)], "b": [(2, 6)], "c": [(3, 5), (4, 8)]}, 2)
    [(2, 6)]
    """
    if isinstance(at_least, bool) or not isinstance(at_least, int):
        raise TypeError(f"at_least must be an int, got {at_least!r}")
    if at_least < 1:
        raise ValueError(f"at_least must be >= 1, got {at_least!r}")
    # One GPU's own intervals are merged first: afterwards they are disjoint and non-touching,
    # so each GPU adds at most one to the running count, and at most one event per instant.
    # The events of all GPUs are then folded into one net change per instant: sorting those
    # plain numbers is much cheaper than sorting (time, step) pairs, and a GPU ending at t while
    # another starts at t nets to no change, so touching spans join by themselves.
    delta: dict[float, int] = {}
    for gpu, intervals in busy.items():
        for start, end in _merged(intervals, gpu):
            delta[start] = delta.get(start, 0) + 1
            delta[end] = delta.get(end, 0) - 1
    # Invariants: `count` is the number of GPUs busy just after the instants seen so far; a
    # span is open (since `opened`) exactly while count >= at_least; `out` is sorted, disjoint
    # and non-touching.
    out: list[Interval] = []
    count = 0
    opened: float = 0.0
    for time in sorted(delta):
        before, count = count, count + delta[time]
        if before < at_least <= count:
            opened = time
        elif count < at_least <= before:
            out.append((opened, time))
    return out


def all_busy(busy: Mapping[str, Iterable[Interval]]) -> list[Interval]:
    """The times when every GPU in ``busy`` is busy: ``coverage(busy, len(busy))``.

    An empty mapping gives ``[]``; so does any GPU listed with no intervals.

    Raises:
        ValueError, TypeError: as ``coverage``.

    >>> all_busy({"a": [(0, 4)], "b": [(2, 6)]})
    [(2, 4)]
    """
    if not busy:
        return []
    return coverage(busy, len(busy))
