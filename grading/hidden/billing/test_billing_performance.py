"""Hidden checks for billing: growth with the number of records, cost against a reading loop.

Ratios measured in the same check, CPU time of this thread, best of several runs: never an
absolute time.
"""

from __future__ import annotations

from collections.abc import Callable

import kata_measure
import pytest
from billing_helpers import (
    R,
    conflicts_workload,
    descending_rejections,
    invoice_each,
    line_each,
    read_fields,
    reasons,
    rec,
    reject_each,
    rejected_workload,
    run_of,
    teams_workload,
    types_workload,
    workload,
)


@pytest.mark.category("performance")
@pytest.mark.points(3)
@pytest.mark.timeout(60)
def test_time_grows_linearly_with_the_number_of_records() -> None:
    """Billing 8x the records takes about 8x the time, not 64x."""
    small, big = workload(1_000), workload(8_000)
    ratio = kata_measure.growth(lambda: run_of(small), lambda: run_of(big), 30)
    assert ratio < 30, (
        f"bill on 8,000 records took {kata_measure.times(ratio, 30)} the CPU time of 1,000; "
        "linear is about 8x")


@pytest.mark.category("performance")
@pytest.mark.points(2)
@pytest.mark.timeout(60)
def test_billing_is_a_small_factor_of_reading_the_records() -> None:
    """Billing 5,000 records takes a small factor of the time to read their fields."""
    records = workload(5_000)
    ratio = kata_measure.ratio(lambda: run_of(records), lambda: read_fields(records), 200)
    assert ratio < 200, (
        f"bill took {kata_measure.times(ratio, 200)} the CPU time of a loop that reads each "
        "record's fields; want under 200x")


def _within_a_small_factor(call: Callable[[], object], floor: Callable[[], object], label: str,
                           what: str, loop: str, hint: str, limit: float = 20,
                           repeat: int = 3) -> None:
    """`call` costs under `limit` times `floor`, the plain work of writing the same output."""
    ratio = kata_measure.ratio(call, floor, limit, label=label, repeat=repeat)
    assert ratio < limit, (
        f"bill on {what} took {kata_measure.times(ratio, limit)} the CPU time of a loop that "
        f"{loop}; want under {limit:g}x ({hint})")


@pytest.mark.category("performance")
@pytest.mark.timeout(90)
def test_a_run_of_rejections_costs_a_small_factor_of_writing_them() -> None:
    """Billing 24,000 records that are all rejected costs a small factor of listing them."""
    records = rejected_workload(24_000)
    _within_a_small_factor(
        lambda: run_of(records), lambda: reject_each(records), "ratio, 24,000 rejections",
        "24,000 records, each with a gpu_count of 0",
        "builds a rejection per record and sorts them",
        "is each rejection added by copying the ones before it?")


@pytest.mark.category("performance")
@pytest.mark.timeout(240)
def test_a_run_of_rejections_in_descending_id_order_costs_a_small_factor_of_writing_them() -> None:
    """Billing 500,000 rejections, ids descending, costs a small factor of listing them."""
    records = descending_rejections(500_000)
    _within_a_small_factor(
        lambda: run_of(records), lambda: reject_each(records),
        "ratio, 500,000 rejections, ids descending", "500,000 records with a gpu_count of 0, "
        "their ids in descending order", "builds a rejection per record and sorts them",
        "is each rejection inserted into a sorted list, moving the ones after it?", 12, 1)


@pytest.mark.category("performance")
@pytest.mark.timeout(90)
def test_a_run_of_conflicting_ids_costs_a_small_factor_of_writing_their_rejections() -> None:
    """Billing 24,000 ids each sent with two contents costs a small factor of listing them."""
    records = conflicts_workload(24_000)
    _within_a_small_factor(
        lambda: run_of(records), lambda: reject_each(records), "ratio, 24,000 conflicting ids",
        "24,000 ids, each sent twice with a different gpu_count",
        "builds a rejection per record and sorts them",
        "is each conflicting id looked for in a list of the ones before it?")


@pytest.mark.category("performance")
@pytest.mark.timeout(90)
def test_a_run_of_many_teams_costs_a_small_factor_of_writing_their_invoices() -> None:
    """Billing 5,000 teams of one record each costs a small factor of writing their invoices."""
    records = teams_workload(5_000)
    _within_a_small_factor(
        lambda: run_of(records), lambda: invoice_each(records), "ratio, 5,000 teams",
        "5,000 records, each of a team of its own", "builds one invoice of Decimals per record",
        "does each team scan every line?")


@pytest.mark.category("performance")
@pytest.mark.timeout(90)
def test_a_team_with_many_gpu_types_costs_a_small_factor_of_writing_its_lines() -> None:
    """Billing one team of 10,000 GPU types, a record each, costs a small factor of its lines."""
    records, prices = types_workload(10_000)
    _within_a_small_factor(
        lambda: run_of(records, prices), lambda: line_each(records), "ratio, 10,000 GPU types",
        "10,000 records of one team, each of a gpu_type of its own",
        "builds a line of Decimals per record and sorts them",
        "does each record search the team's lines?")


class _Enough(BaseException):  # not an Exception: a submission's `except` lets it by
    pass


class _Counted:
    """A gpu_count that counts how often it is compared or hashed, and stops a run at `stop`."""

    calls = 0
    stop = 0

    def __init__(self, value: int) -> None:
        self.value = value

    def _tick(self) -> None:
        _Counted.calls += 1
        if _Counted.calls > _Counted.stop:
            raise _Enough

    def __eq__(self, other: object) -> bool:
        self._tick()
        return isinstance(other, _Counted) and self.value == other.value

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __lt__(self, other: object) -> bool:
        self._tick()
        return isinstance(other, _Counted) and self.value < other.value

    def __hash__(self) -> int:
        self._tick()
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Counted({self.value})"


@pytest.mark.category("performance")
def test_one_id_sent_with_many_contents_costs_a_linear_number_of_comparisons() -> None:
    """One record_id sent 4,000 times with different content is judged in linear work."""
    n, per_copy = 4_000, 20
    limit = per_copy * n
    records = [rec("same", gpu_count=_Counted(i + 1)) for i in range(n)]
    _Counted.calls, _Counted.stop = 0, int(kata_measure.MARGIN * limit)
    try:
        run = run_of(records)
    except _Enough:  # stopped past twice the limit: calls is then over 2 * limit
        run = None
    calls = kata_measure.count(limit, _Counted.calls, label="count, comparisons of 4,000 copies")
    assert run is None or reasons(run) == [("same", R.CONFLICTING_DUPLICATE)], (
        f"4,000 copies of one id with different gpu_counts: rejected {run.rejected}; want one "
        "conflicting_duplicate")
    assert calls < limit, (
        f"bill on 4,000 records of one record_id, each with a different gpu_count, compared or "
        f"hashed those gpu_counts {'over ' if run is None else ''}{calls - (run is None)} times; "
        f"want under {limit}, a few per record (is each copy compared with every different copy "
        "before it?)")
