"""Hidden checks for billing: growth with the number of records, cost against a reading loop.

Ratios measured in the same check, CPU time of this thread, best of several runs: never an
absolute time.
"""

from __future__ import annotations

import pytest
from billing_helpers import best, read_fields, run_of, workload


@pytest.mark.category("performance")
@pytest.mark.points(3)
@pytest.mark.timeout(60)
def test_time_grows_linearly_with_the_number_of_records() -> None:
    """Billing 8x the records takes about 8x the time, not 64x."""
    small, big = workload(1_000), workload(8_000)
    t_small, t_big = best(lambda: run_of(small), 15), best(lambda: run_of(big), 5)
    assert t_big / t_small < 30, (
        f"bill took {t_small * 1e3:.1f} ms of CPU for 1,000 records and {t_big * 1e3:.1f} ms for "
        f"8,000: {t_big / t_small:.0f}x; linear is about 8x")


@pytest.mark.category("performance")
@pytest.mark.points(2)
@pytest.mark.timeout(60)
def test_billing_is_a_small_factor_of_reading_the_records() -> None:
    """Billing 5,000 records takes a small factor of the time to read their fields."""
    records = workload(5_000)
    took, base = best(lambda: run_of(records), 5), best(lambda: read_fields(records), 15)
    assert took / base < 100, (
        f"bill took {took * 1e3:.1f} ms of CPU, {took / base:.0f}x the {base * 1e3:.2f} ms of a "
        "loop that reads each record's fields; want under 100x")
