"""Hidden checks for billing: exact money, rounding once and half up, at every magnitude."""

from __future__ import annotations

import decimal
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from billing import LineItem
from billing_helpers import (
    P0,
    P1,
    US,
    cents_half_up,
    only_line,
    priced,
    rec,
    run_of,
    total_of,
)

# --- Exact money -------------------------------------------------------------------------------


@pytest.mark.points(2)
@pytest.mark.parametrize(("seconds", "amount"), [(90, "0.09"), (3601, "3.60"), (1, "0.00")])
def test_partial_hours_are_billed_by_the_second(seconds: int, amount: str) -> None:
    """Partial hours are billed by the second, exactly, with no minimum charge."""
    run = run_of([rec(start=P0, end=P0 + timedelta(seconds=seconds))])
    want = LineItem("h100", Decimal(seconds), Decimal(amount))
    got = only_line(run)
    assert got == want, f"{seconds} s of one h100 at 3.60/h billed as {got}, want {want}"


@pytest.mark.points(2)
def test_gpu_seconds_are_exact_to_the_microsecond() -> None:
    """GPU-seconds are exact to the microsecond: 3 GPUs for 1.000001 s is 3.000003."""
    run = run_of([rec(start=P0, end=P0 + timedelta(seconds=1, microseconds=1), gpu_count=3)])
    got = only_line(run)
    assert got is not None, f"one line expected, got {run.invoices}"
    assert isinstance(got.gpu_seconds, Decimal), f"gpu_seconds is {type(got.gpu_seconds)}"
    assert got.gpu_seconds == Decimal("3.000003"), f"gpu_seconds {got.gpu_seconds}, want 3.000003"


@pytest.mark.points(3)
def test_half_a_cent_rounds_up() -> None:
    """Half a cent rounds up (ROUND_HALF_UP), not to even."""
    for price, minutes, want in [("0.25", [30], "0.13"), ("1.25", [30], "0.63"),
                                 ("0.01", [30], "0.01")]:
        got = priced(price, minutes)
        assert got == Decimal(want), f"{minutes} min at {price}/h billed {got}, want {want}"
    for micros, want in [(5_000_000, "0.01"), (4_999_999, "0.00"), (15_000_000, "0.02")]:
        span = timedelta(microseconds=micros)  # at 3.60/h, 5 s is exactly half a cent
        got = total_of(run_of([rec(start=P0, end=P0 + span)]))
        assert got == Decimal(want), f"{span} of one h100 at 3.60/h billed {got}, want {want}"


@pytest.mark.points(3)
def test_a_line_is_rounded_once_not_each_record() -> None:
    """A line is rounded once, from its exact total, not record by record."""
    for price, minutes, want in [("0.24", [1] * 10, "0.04"), ("0.30", [1] * 10, "0.05"),
                                 ("1.00", [1] * 3, "0.05"), ("0.01", [10] * 3, "0.01"),
                                 ("0.03", [3] * 10, "0.02")]:  # the last two: half a cent
        got = priced(price, minutes)
        assert got == Decimal(want), f"{len(minutes)} records of {minutes[0]} min at {price}/h " \
                                     f"billed {got}, want {want}"


@pytest.mark.points(3)
def test_amounts_that_land_on_half_a_cent_are_exact() -> None:
    """Sums that land on half a cent are exact: no float anywhere on the money path."""
    for price, minutes, want in [("0.35", [6], "0.04"), ("0.03", [10] * 3, "0.02"),
                                 ("0.35", [2] * 3, "0.04"), ("0.69", [10], "0.12")]:
        got = priced(price, minutes)
        assert got == Decimal(want), f"{minutes} min at {price}/h billed {got}, want {want}"


def _settings(context: decimal.Context) -> dict[str, object]:
    """What a decimal context decides (its flags record what happened, so they are left out)."""
    return {"prec": context.prec, "rounding": context.rounding, "Emin": context.Emin,
            "Emax": context.Emax, "capitals": context.capitals, "clamp": context.clamp,
            "traps": sorted(t.__name__ for t, on in context.traps.items() if on)}


def test_bill_leaves_the_callers_decimal_context_as_it_found_it() -> None:
    """bill leaves the caller's decimal context (precision, rounding, traps) as it found it."""
    records = [rec("a", P0, P0 + timedelta(minutes=45), gpu_count=2),
               rec("b", P0, P0 + timedelta(seconds=5)), rec("c", gpu_count=0)]
    python_default = decimal.Context(  # Python's defaults, whatever earlier calls left behind
        prec=28, rounding=decimal.ROUND_HALF_EVEN, Emin=-999_999, Emax=999_999, capitals=1,
        clamp=0, flags=[], traps=[decimal.InvalidOperation, decimal.DivisionByZero,
                                  decimal.Overflow])
    with decimal.localcontext(python_default) as caller:  # whatever bill does stays in here
        before = _settings(caller)
        run_of(records)
        after = _settings(decimal.getcontext())
    changed = {k: (v, after[k]) for k, v in before.items() if after[k] != v}
    assert not changed, (
        f"after bill, the caller's decimal context changed: {changed} (before, after); set "
        "what bill needs in a decimal.localcontext(), or compute in integers, never in the "
        "caller's context")


# --- Magnitudes beyond float precision and Decimal's default 28-digit context -------------------

_CENTURIES = (datetime(1700, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
_LONG = datetime(2099, 12, 31, 23, 59, 59, 1, tzinfo=UTC) - _CENTURIES[0]

# case: (gpu_count, duration, price per GPU-hour, period)
_Case = tuple[int, timedelta, str, tuple[datetime, datetime]]
_HUGE_SECONDS: dict[str, _Case] = {
    "10^30 + 1 GPUs for 1 us": (10**30 + 1, US, "3.6", (P0, P1)),
    "a billion GPUs for a day": (10**9, timedelta(days=1), "2.49", (P0, P1)),
    "one GPU for four centuries less 1 us": (1, _LONG, "2.49", _CENTURIES),
    "10^40 + 1 GPUs for a second": (10**40 + 1, timedelta(seconds=1), "1.8E-41", (P0, P1)),
}
_HUGE_AMOUNTS: dict[str, _Case] = {
    "10^30 + 4,999,999 GPUs for 1 us": (10**30 + 4_999_999, US, "3.6", (P0, P1)),
    "a price of 30 digits and 9 decimals": (1, timedelta(hours=1, microseconds=1),
                                            "123456789012345678901234567890.123456789", (P0, P1)),
    "10^40 + 1 GPUs at 1.8E-41 per hour": (10**40 + 1, timedelta(seconds=1), "1.8E-41",
                                           (P0, P1)),
    "10^30 + 1 GPUs for four centuries at a 40-digit price E+50": (  # 128 digits: past 100
        10**30 + 1, _LONG, "1234567890123456789012345678901234567891E+50", _CENTURIES),
}


def _line(case: str, count: int, span: timedelta, price: str,
          period: tuple[datetime, datetime]) -> tuple[Fraction, LineItem | None]:
    """The exact GPU-seconds of `count` GPUs for `span`, and the line bill makes of them."""
    start = period[0]
    run = run_of([rec("big", start, start + span, gpu_count=count, gpu_type="x")],
                 {"x": Decimal(price)}, *period)
    assert not run.rejected, f"{case}: the record was rejected: {run.rejected}"
    return count * Fraction(span // US, 10**6), only_line(run)


def test_gpu_seconds_are_exact_at_any_magnitude() -> None:
    """GPU-seconds are exact at any magnitude: 10^30 GPUs, a billion GPU-days, four centuries."""
    for case, (count, span, price, period) in _HUGE_SECONDS.items():
        seconds, got = _line(case, count, span, price, period)
        assert got is not None and Fraction(got.gpu_seconds) == seconds, (
            f"{case}: line {got}; want gpu_seconds {Decimal(seconds.numerator) / 10**6:f} "
            "exactly")


def test_a_line_longer_than_a_billion_days_is_exact() -> None:
    """A line adds up past 999,999,999 days of GPU-time (twice over) exactly, one GPU at a time."""
    start = datetime(1, 1, 1, tzinfo=UTC)
    end = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    records = [rec(f"era-{i}", start, end - i * US, gpu_type="x") for i in range(600)]
    run = run_of(records, {"x": Decimal("1")}, start, end)
    want = sum(Fraction((end - i * US - start) // US, 10**6) for i in range(600))
    got = only_line(run)
    assert got is not None and Fraction(got.gpu_seconds) == want, (
        f"600 records of one GPU for ~10,000 years each (about 2.2 billion days in all): line "
        f"{got}; want gpu_seconds {Decimal(want.numerator) / 10**6:f} exactly")


def test_amounts_are_exact_at_any_magnitude() -> None:
    """Amounts are rounded once from the exact value at any magnitude, past 28 digits."""
    for case, (count, span, price, period) in _HUGE_AMOUNTS.items():
        seconds, got = _line(case, count, span, price, period)
        want = cents_half_up(seconds, Decimal(price))
        assert got is not None and got.amount == want, (
            f"{case} at {price}/h: line {got}; want the amount {want:f}")


def test_totals_are_exact_at_any_magnitude() -> None:
    """An invoice's total is the exact sum of its lines at any magnitude, past 28 digits."""
    prices = {"x": Decimal("2.49"), "y": Decimal("0.01")}
    for counts in ({"x": 10**30 + 1}, {"x": 10**30 + 1, "y": 1}, {"x": 7, "y": 10**40 + 3}):
        records = [rec(f"r-{t}", P0, P0 + timedelta(hours=1), gpu_type=t, gpu_count=n)
                   for t, n in counts.items()]
        invoice = run_of(records, prices).invoices.get("vision")
        cents = sum(int(Fraction(cents_half_up(Fraction(n * 3600), prices[t])) * 100)
                    for t, n in counts.items())
        got = None if invoice is None else invoice.total
        assert got is not None and Fraction(got) == Fraction(cents, 100), (
            f"one hour each of {counts} GPUs at {prices}: total {got}; want "
            f"{cents // 100}.{cents % 100:02d}, the exact sum of the lines")


# --- The invoice total adds the rounded lines ----------------------------------------------------

_TOTALS: list[tuple[list[int], str]] = [
    ([50, 50], "0.02"),  # two lines of 0.005: 0.01 + 0.01, while the exact sum rounds to 0.01
    ([40, 40, 40], "0.00"),  # three lines of 0.004: 0.00 each, while 0.012 rounds to 0.01
    ([50, 40], "0.01"),  # 0.01 + 0.00, while 0.009 rounds to 0.01 as well
]


@pytest.mark.points(2)
def test_the_total_adds_the_rounded_lines() -> None:
    """An invoice's total is the sum of its rounded lines, not its exact sum rounded once."""
    prices: dict[str, Any] = {t: Decimal("0.36") for t in "xyz"}  # 0.36/h: 0.0001 per second
    for seconds, want in _TOTALS:
        records = [rec(f"r{i}", P0, P0 + timedelta(seconds=s), gpu_type="xyz"[i])
                   for i, s in enumerate(seconds)]
        run = run_of(records, prices)
        invoice = run.invoices.get("vision")
        got = None if invoice is None else ([li.amount for li in invoice.lines], invoice.total)
        assert got is not None and got[1] == Decimal(want) == sum(got[0]), (
            f"lines of {seconds} GPU-seconds at 0.36/h: amounts and total {got}; want the "
            f"total {want}, the sum of the rounded lines")
