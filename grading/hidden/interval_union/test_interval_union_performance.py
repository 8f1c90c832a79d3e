"""Hidden checks for interval_union: time grows like sorting (ratios, never a time limit)."""

from __future__ import annotations

import pytest
from interval_union import busy_time, coverage, merge
from interval_union_helpers import (
    GROWTH,
    LIMIT,
    MANY_SMALL,
    ORDERED_GROWTH,
    ORDERED_LIMIT,
    ORDERED_SMALL,
    SMALL,
    apart_in_order,
    everything,
    gang,
    growth,
    in_order,
    many_gpus,
    times,
)

pytestmark = [pytest.mark.category("performance"),
              pytest.mark.timeout(90)]  # a quadratic answer takes several seconds to fail


@pytest.mark.points(3)
def test_coverage_time_grows_like_n_log_n() -> None:
    """coverage scales like sorting: 16x the intervals takes far less than 256x the time."""
    ratio = growth(lambda busy: coverage(busy, 3))
    assert ratio < LIMIT, (
        f"coverage on {SMALL * GROWTH} intervals took {times(ratio)} the time of {SMALL}: "
        f"expected about {GROWTH}x (sort, then sweep once); that is quadratic growth"
    )


def test_coverage_time_grows_like_n_log_n_with_many_gpus() -> None:
    """coverage scales like sorting however the intervals are spread: 16x the intervals on 16x
    the GPUs takes far less than 256x the time."""
    ratio = growth(lambda busy: coverage(busy, 2), many_gpus, MANY_SMALL)
    assert ratio < LIMIT, (
        f"coverage on {MANY_SMALL * GROWTH} intervals over {MANY_SMALL * GROWTH // 2} GPUs took "
        f"{times(ratio)} the time of {MANY_SMALL} over {MANY_SMALL // 2}: expected about "
        f"{GROWTH}x; that is quadratic growth (work per GPU that grows with all the events "
        "so far, such as merging each GPU's events into one sorted list)"
    )


def test_coverage_time_grows_like_n_log_n_with_thousands_of_gpus_busy_at_once() -> None:
    """coverage scales like sorting when every GPU is busy at once: 16x the GPUs, each with
    one long interval, takes far less than 256x the time."""
    ratio = growth(lambda busy: coverage(busy, 2), gang)
    assert ratio < LIMIT, (
        f"coverage on {SMALL * GROWTH} GPUs all busy together took {times(ratio)} the time of "
        f"{SMALL}: expected about {GROWTH}x; that is quadratic growth (work at each start or "
        "end that grows with the number of GPUs busy now, such as counting distinct GPUs in "
        "a list of the active ones)"
    )


@pytest.mark.points(2)
def test_merge_time_grows_like_n_log_n() -> None:
    """merge scales like sorting: 16x the intervals takes far less than 256x the time."""
    ratio = growth(lambda busy: merge(everything(busy)))
    assert ratio < LIMIT, (
        f"merge of {SMALL * GROWTH} intervals took {times(ratio)} the time of {SMALL}: "
        f"expected about {GROWTH}x (sort, then scan once); that is quadratic growth"
    )


def test_merge_time_grows_like_n_log_n_on_ordered_input() -> None:
    """merge of a trace already in order: 32x the intervals takes about 32x the time, not
    1,000x."""
    ratio = growth(lambda busy: merge(busy["gpu-0"]), in_order, ORDERED_SMALL, ORDERED_GROWTH,
                   ORDERED_LIMIT)
    assert ratio < ORDERED_LIMIT, (
        f"merge of {ORDERED_SMALL * ORDERED_GROWTH} intervals in order took "
        f"{times(ratio, ORDERED_LIMIT)} the time of {ORDERED_SMALL}: expected about "
        f"{ORDERED_GROWTH}x; that is quadratic growth (a step that costs O(n) per interval, "
        "such as list.pop(0) or inserting at the front)"
    )


def test_busy_time_grows_like_n_log_n_on_ordered_input() -> None:
    """busy_time of a trace already in order, every interval apart: 32x the intervals takes
    about 32x the time, not 1,000x."""
    ratio = growth(lambda busy: busy_time(busy["gpu-0"]), apart_in_order, ORDERED_SMALL,
                   ORDERED_GROWTH, ORDERED_LIMIT)
    assert ratio < ORDERED_LIMIT, (
        f"busy_time of {ORDERED_SMALL * ORDERED_GROWTH} intervals in order, none touching, took "
        f"{times(ratio, ORDERED_LIMIT)} the time of {ORDERED_SMALL}: expected about "
        f"{ORDERED_GROWTH}x; that is quadratic growth (a step that costs O(n) per span, such as "
        "list.pop(0) over the merged spans)"
    )
