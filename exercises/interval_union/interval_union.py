"""GPU busy time: the union, and the times when at least k GPUs are busy at once.

Every interval is half-open, ``[start, end)``: ``(0, 1)`` and ``(1, 2)`` touch but never overlap.
Each function reads its input once, so generators are fine, and never modifies it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Interval = tuple[float, float]

__all__ = ["Interval", "all_busy", "busy_time", "coverage", "merge"]


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
    raise NotImplementedError("merge is not written yet")


def busy_time(intervals: Iterable[Interval]) -> float:
    """The total length of the union of ``intervals``.

    Raises:
        ValueError, TypeError: as ``merge``.

    >>> busy_time([(0, 2), (1, 3), (5, 6)])
    4.0
    """
    raise NotImplementedError("busy_time is not written yet")


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
    raise NotImplementedError("coverage is not written yet")


def all_busy(busy: Mapping[str, Iterable[Interval]]) -> list[Interval]:
    """The times when every GPU in ``busy`` is busy: ``coverage(busy, len(busy))``.

    An empty mapping gives ``[]``; so does any GPU listed with no intervals.

    Raises:
        ValueError, TypeError: as ``coverage``.

    >>> all_busy({"a": [(0, 4)], "b": [(2, 6)]})
    [(2, 4)]
    """
    raise NotImplementedError("all_busy is not written yet")
