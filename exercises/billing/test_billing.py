"""Visible tests for billing: the statement's worked examples and three properties.

Run them with `uv run pytest exercises/billing`; grade with `uv run grader.py billing`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from billing import BillingRun, Invoice, LineItem, Rejection, RejectReason, UsageRecord, bill
from hypothesis import example, given, settings
from hypothesis import strategies as st

PERIOD_START = datetime(2026, 3, 1, tzinfo=UTC)
PERIOD_END = datetime(2026, 4, 1, tzinfo=UTC)
PRICES = {"h100": Decimal("2.49"), "a100": Decimal("1.10"), "l4": Decimal("0.24")}


def _at(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, second, tzinfo=UTC)


def _bill(records: Sequence[UsageRecord], prices: dict[str, Decimal] = PRICES) -> BillingRun:
    return bill(records, prices, PERIOD_START, PERIOD_END)


def _summary(run: BillingRun) -> tuple[dict[str, Invoice], list[tuple[str, str]], set[str]]:
    """What a run decided, without the free-text details."""
    rejected = [(r.record_id, str(r.reason)) for r in run.rejected]
    return dict(run.invoices), rejected, set(run.billed_ids)


# --- Worked examples (the statement's, number for number) -------------------------------------

EXAMPLE_1 = [
    UsageRecord("r1", "vision", "h100", 2, _at(2, 9), _at(2, 9, 45)),
    UsageRecord("r2", "vision", "a100", 1, _at(2, 10), _at(2, 11, 30)),
    UsageRecord("r3", "nlp", "h100", 4, _at(1, 0, 30) - timedelta(hours=1), _at(1, 0, 30)),
    UsageRecord("r4", "nlp", "h100", 1, datetime(2026, 3, 2, 9), datetime(2026, 3, 2, 10)),
    UsageRecord("r1", "vision", "h100", 2, _at(2, 9), _at(2, 9, 45)),  # the exporter retried
]
EXAMPLE_2 = [
    UsageRecord(f"m{i}", "speech", "l4", 1, _at(3, 12, i), _at(3, 12, i + 1)) for i in range(10)
]
EXAMPLE_3 = [
    UsageRecord("r7", "vision", "h100", 1, _at(4, 8), _at(4, 9)),
    UsageRecord("r7", "vision", "h100", 2, _at(4, 8), _at(4, 9)),
]


@pytest.mark.points(2)
def test_worked_example_1_a_small_run() -> None:
    """Worked example 1: partial hours, clipping, a retry and a naive record."""
    run = _bill(EXAMPLE_1)
    want = {
        "vision": Invoice(
            "vision",
            (LineItem("a100", Decimal(5400), Decimal("1.65")),
             LineItem("h100", Decimal(5400), Decimal("3.74"))),
            Decimal("5.39"),
        ),
        "nlp": Invoice("nlp", (LineItem("h100", Decimal(7200), Decimal("4.98")),), Decimal("4.98")),
    }
    assert dict(run.invoices) == want, f"bill(example 1).invoices = {run.invoices}, want {want}"
    got_rejected = [(r.record_id, r.reason) for r in run.rejected]
    assert got_rejected == [("r4", RejectReason.NAIVE_TIMESTAMP)], (
        f"bill(example 1).rejected = {run.rejected}, want one naive_timestamp rejection of r4"
    )
    assert run.billed_ids == {"r1", "r2", "r3"}, f"billed_ids = {set(run.billed_ids)}"


@pytest.mark.points(2)
def test_worked_example_2_a_line_is_rounded_once() -> None:
    """Worked example 2: ten one-minute records at 0.24/h cost 0.04, not 10 x 0.00."""
    run = _bill(EXAMPLE_2)
    want = Invoice("speech", (LineItem("l4", Decimal(600), Decimal("0.04")),), Decimal("0.04"))
    assert run.invoices.get("speech") == want, (
        f"ten 1-minute l4 records billed as {run.invoices.get('speech')}, want {want}"
    )


@pytest.mark.points(2)
def test_worked_example_3_conflicting_duplicates_are_all_rejected() -> None:
    """Worked example 3: two records with one id and different GPU counts are both rejected."""
    for order in (EXAMPLE_3, EXAMPLE_3[::-1]):
        run = _bill(order)
        got = [(r.record_id, r.reason) for r in run.rejected]
        assert got == [("r7", RejectReason.CONFLICTING_DUPLICATE)], (
            f"bill({[r.gpu_count for r in order]} GPUs under id r7).rejected = {run.rejected}, "
            "want one conflicting_duplicate rejection, whatever the order"
        )
        assert not run.invoices, f"nothing may be billed for r7, got {run.invoices}"
        assert not run.billed_ids, f"billed_ids = {set(run.billed_ids)}, want empty"


def test_half_a_cent_rounds_up() -> None:
    """Half a cent rounds up: 30 minutes at 0.25/h is 0.13."""
    run = _bill([UsageRecord("h", "nlp", "x", 1, _at(5, 0), _at(5, 0, 30))], {"x": Decimal("0.25")})
    got = run.invoices["nlp"].total if "nlp" in run.invoices else None
    assert got == Decimal("0.13"), f"0.125 rounded to {got}, want 0.13 (ROUND_HALF_UP)"


# --- Properties ---------------------------------------------------------------------------------

_ZONES = [UTC, timezone(timedelta(hours=9)), timezone(timedelta(hours=-5, minutes=-30))]
_MINUTE = timedelta(minutes=1)


@st.composite
def _records(draw: st.DrawFn, valid: bool = False) -> list[UsageRecord]:
    """Records around the period's start: ids collide, some records are bad unless `valid`."""
    out: list[UsageRecord] = []
    for i in range(draw(st.integers(0, 12))):
        rid = f"r{i}" if valid else draw(st.sampled_from("abcdefg"))
        start = PERIOD_START + draw(st.integers(-300, 300)) * _MINUTE
        end = start + draw(st.integers(0 if valid else -60, 600)) * _MINUTE
        zone = draw(st.sampled_from(_ZONES))
        naive = not valid and draw(st.booleans()) and draw(st.booleans())
        count = draw(st.integers(1, 8) if valid else st.sampled_from([0, 1, 2, 3, True]))
        gpu_type = draw(st.sampled_from(["h100", "l4"] if valid else ["h100", "l4", "tpu"]))
        start, end = start.astimezone(zone), end.astimezone(zone)
        if naive:
            start = start.replace(tzinfo=None)
        team = draw(st.sampled_from(["nlp", "vision"]))
        out.append(UsageRecord(rid, team, gpu_type, count, start, end))
    if out and not valid:
        out += draw(st.lists(st.sampled_from(out), max_size=3))  # exporter retries
    return out


@settings(max_examples=50)
@example(records=EXAMPLE_1 + EXAMPLE_3, rnd=random.Random(1))
@given(records=_records(), rnd=st.randoms(use_true_random=False))
def test_result_does_not_depend_on_input_order(
    records: list[UsageRecord], rnd: random.Random
) -> None:
    """The run is the same for any order of the input records."""
    shuffled = list(records)
    rnd.shuffle(shuffled)
    assert _summary(_bill(shuffled)) == _summary(_bill(records)), (
        f"bill() of {[r.record_id for r in records]} and of the same records reordered as "
        f"{[r.record_id for r in shuffled]} differ"
    )


@settings(max_examples=50)
@example(records=EXAMPLE_2, which=3, permille=500)
@given(records=_records(valid=True), which=st.integers(0, 20), permille=st.integers(0, 1000))
def test_splitting_a_record_changes_no_invoice(
    records: list[UsageRecord], which: int, permille: int
) -> None:
    """Splitting a valid record at any instant into two records changes no invoice."""
    whole = dict(_bill(records).invoices)
    if not records:
        assert whole == {}, f"bill([]) produced invoices {whole}"
        return
    victim = records[which % len(records)]
    cut = victim.start + (victim.end - victim.start) * permille // 1000
    halves = [
        UsageRecord("split-1", victim.team, victim.gpu_type, victim.gpu_count, victim.start, cut),
        UsageRecord("split-2", victim.team, victim.gpu_type, victim.gpu_count, cut, victim.end),
    ]
    split = dict(_bill([r for r in records if r is not victim] + halves).invoices)
    assert split == whole, f"splitting {victim} at {cut} changed invoices {whole} to {split}"


@settings(max_examples=50)
@example(records=EXAMPLE_1 + EXAMPLE_3)
@given(records=_records())
def test_every_record_id_is_billed_or_rejected_exactly_once(records: list[UsageRecord]) -> None:
    """Nothing is lost: every distinct record_id is billed or rejected, exactly once."""
    run = _bill(records)
    rejected_ids = [r.record_id for r in run.rejected]
    assert len(rejected_ids) == len(set(rejected_ids)), f"an id rejected twice: {rejected_ids}"
    assert not set(rejected_ids) & run.billed_ids, "an id both billed and rejected"
    want = {r.record_id for r in records}
    got = set(rejected_ids) | run.billed_ids
    assert got == want, f"ids lost: {want - got}, ids invented: {got - want}"
    assert all(isinstance(r, Rejection) for r in run.rejected), "rejected holds non-Rejections"
