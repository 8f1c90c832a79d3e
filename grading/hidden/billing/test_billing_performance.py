"""Hidden checks for billing: growth with the number of records, cost against a reading loop.

Ratios measured in the same check, CPU time of this thread, best of several runs: never an
absolute time.
"""

from __future__ import annotations

import kata_measure
import pytest
from billing_helpers import (
    invoice_each,
    read_fields,
    reject_each,
    rejected_workload,
    run_of,
    teams_workload,
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


@pytest.mark.category("performance")
@pytest.mark.timeout(90)
def test_a_run_of_rejections_costs_a_small_factor_of_writing_them() -> None:
    """Billing 24,000 records that are all rejected costs a small factor of listing them."""
    records = rejected_workload(24_000)
    ratio = kata_measure.ratio(lambda: run_of(records), lambda: reject_each(records), 20,
                               label="ratio, 24,000 rejections")
    assert ratio < 20, (
        f"bill on 24,000 records, each with a gpu_count of 0, took "
        f"{kata_measure.times(ratio, 20)} the CPU time of a loop that builds a rejection per "
        "record and sorts them; want under 20x (is each rejection added by copying the ones "
        "before it?)")


@pytest.mark.category("performance")
@pytest.mark.timeout(90)
def test_a_run_of_many_teams_costs_a_small_factor_of_writing_their_invoices() -> None:
    """Billing 5,000 teams of one record each costs a small factor of writing their invoices."""
    records = teams_workload(5_000)
    ratio = kata_measure.ratio(lambda: run_of(records), lambda: invoice_each(records), 20,
                               label="ratio, 5,000 teams")
    assert ratio < 20, (
        f"bill on 5,000 records, each of a team of its own, took "
        f"{kata_measure.times(ratio, 20)} the CPU time of a loop that builds one invoice of "
        "Decimals per record; want under 20x (does each team scan every line?)")
