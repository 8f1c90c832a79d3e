"""Hidden checks for billing: growth with the number of records, cost against a reading loop.

Ratios measured in the same check, CPU time of this thread, best of several runs: never an
absolute time.
"""

from __future__ import annotations

import kata_measure
import pytest
from billing_helpers import read_fields, run_of, workload


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
    ratio = kata_measure.ratio(lambda: run_of(records), lambda: read_fields(records), 100)
    assert ratio < 100, (
        f"bill took {kata_measure.times(ratio, 100)} the CPU time of a loop that reads each "
        "record's fields; want under 100x")
