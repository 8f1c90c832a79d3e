"""Hidden checks for billing: a brute-force model, and properties at every scale and order."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from billing import UsageRecord, bill
from billing_helpers import (
    P0,
    PH,
    PRICE_MAPS,
    SOME_PRICES,
    SOME_RUN,
    US,
    a_billed_record,
    lines_of,
    model,
    reasons,
    rec,
    run_of,
    runs,
    total_of,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st

# Rounding points: at 3.6/h and 0.36/h, 5 s and 50 s are exactly half a cent.
HALF_CENT_PRICES = {"h100": Decimal("3.6"), "a100": Decimal("0.36")}
_SPAN = PH - P0
HALF_CENT_RUN = [
    rec("h", P0, P0 + timedelta(seconds=5)), rec("a", P0, P0 + timedelta(seconds=50),
                                                  gpu_type="a100"),
    rec("n", P0, P0 + timedelta(seconds=5) - US, team="nlp"),
    rec("m", P0 + timedelta(seconds=10), P0 + timedelta(seconds=15), team="nlp",
        gpu_type="a100", gpu_count=9),
]
# Boundaries: zero-length records at either end, records that touch or straddle an end by 1 us.
EDGE_RUN = [
    rec("z0", P0, P0), rec("z1", PH, PH), rec("z2", PH - US, PH - US, team="nlp"),
    rec("t0", P0 - timedelta(hours=1), P0), rec("t1", PH, PH + timedelta(hours=1)),
    rec("s0", P0 - US, P0 + US, gpu_type="a100"), rec("s1", PH - US, PH + US, gpu_type="a100"),
    rec("w", P0 - timedelta(hours=1), PH + timedelta(hours=1), team="nlp", gpu_count=3),
    # Outside the period and faulty otherwise: the other fault comes first.
    rec("u", PH, PH + timedelta(hours=1), gpu_type="tpu"), rec("c", P0 - US, P0, gpu_count=0),
]


@pytest.mark.points(4)
@settings(max_examples=80)
@example(records=SOME_RUN, prices=SOME_PRICES, rnd=random.Random(0))
@example(records=HALF_CENT_RUN, prices=HALF_CENT_PRICES, rnd=random.Random(1))
@example(records=EDGE_RUN, prices=SOME_PRICES, rnd=random.Random(2))
@given(records=runs(), prices=PRICE_MAPS, rnd=st.randoms(use_true_random=False))
def test_bill_agrees_with_a_brute_force_model(records: list[UsageRecord],
                                              prices: dict[str, Decimal],
                                              rnd: random.Random) -> None:
    """bill agrees with a brute-force model on random runs of good and bad records, any order."""
    shuffled = list(records)
    rnd.shuffle(shuffled)
    run = bill(shuffled, prices, P0, PH)
    want_lines, want_reasons, want_billed = model(records, prices)
    assert lines_of(run) == want_lines, f"invoices {lines_of(run)}, want {want_lines}"
    assert reasons(run) == want_reasons, f"rejected {reasons(run)}, want {want_reasons}"
    assert run.billed_ids == want_billed, f"billed_ids {set(run.billed_ids)}, want {want_billed}"


@pytest.mark.points(2)
@settings(max_examples=40)
@example(records=SOME_RUN, prices=SOME_PRICES)
@example(records=HALF_CENT_RUN, prices=HALF_CENT_PRICES)
@given(records=runs(), prices=PRICE_MAPS)
def test_amounts_are_whole_cents_and_totals_add_up(records: list[UsageRecord],
                                                    prices: dict[str, Decimal]) -> None:
    """Amounts are Decimals >= 0 in whole cents; lines sorted; totals sum their lines."""
    run = bill(records, prices, P0, PH)
    for team, invoice in run.invoices.items():
        names = [li.gpu_type for li in invoice.lines]
        assert invoice.team == team, f"invoices[{team!r}].team is {invoice.team!r}"
        assert names and names == sorted(set(names)), f"{team} lines {names}: sorted, unique"
        for li in invoice.lines:
            assert isinstance(li.amount, Decimal), f"{team}: amount {li.amount!r} not a Decimal"
            assert li.gpu_seconds > 0, f"{team} line with no GPU-seconds: {li}"
            assert li.amount >= 0, f"{team}: negative amount {li.amount}"
            assert li.amount * 100 % 1 == 0, f"{team}: amount {li.amount} is not whole cents"
        assert isinstance(invoice.total, Decimal), f"{team}: total {invoice.total!r}"
        assert invoice.total == sum(li.amount for li in invoice.lines), f"{team}: {invoice}"
    ids = [r.record_id for r in run.rejected]
    assert ids == sorted(ids), f"rejected not sorted by record_id: {ids}"


@settings(max_examples=40)
@example(records=[rec("s", 0, 60), *SOME_RUN], prices=SOME_PRICES, which=2, cut=1_800_500_000)
@given(records=runs(), prices=PRICE_MAPS, which=st.integers(0, 99), cut=st.integers(0, 10**11))
def test_splitting_a_billed_record_changes_no_invoice(records: list[UsageRecord],
                                                      prices: dict[str, Decimal], which: int,
                                                      cut: int) -> None:
    """Splitting a billed record at any instant into two new records changes no invoice."""
    run = bill(records, prices, P0, PH)
    picked = a_billed_record(run, records, which)
    if picked is None:
        return
    victim, start, end = picked
    rid = victim.record_id
    at = start + (cut % ((end - start) // US + 1)) * US
    halves = [rec(f"{rid}-{i}", s, e, team=victim.team, gpu_type=victim.gpu_type,
                   gpu_count=victim.gpu_count) for i, (s, e) in enumerate([(start, at), (at, end)])]
    split = bill([r for r in records if r.record_id != rid] + halves, prices, P0, PH)
    assert lines_of(split) == lines_of(run), f"splitting {victim} at {at} changed the invoices"


def test_records_may_be_a_one_shot_iterator() -> None:
    """records may be any iterable, a one-shot generator included."""
    records = [rec("a"), rec("b", 60, 90, gpu_count=2), rec("a")]
    run = run_of(r for r in records)
    assert run.billed_ids == {"a", "b"}, f"billed_ids {set(run.billed_ids)}"
    assert total_of(run) == Decimal("7.20"), f"total {total_of(run)}, want 7.20"
    for one in ([rec("g")], [rec("g", gpu_count=0)]):
        run = run_of(r for r in one)
        got = (set(run.billed_ids), reasons(run))
        assert len(got[0]) + len(got[1]) == 1, (
            f"a generator of one record {one[0]}: billed {got[0]}, rejected {got[1]}; the "
            "record was lost")
    run = run_of(iter([rec("i", 0, 30), rec("j", 30, 60)]))
    assert total_of(run) == Decimal("3.60"), f"iter([two half hours]) billed {total_of(run)}"


def test_bill_keeps_no_state_between_runs() -> None:
    """bill keeps no state between calls: billing the same records twice gives the same run."""
    records = [rec("a"), rec("b", gpu_count=0)]
    first, second = run_of(records), run_of(records)
    assert (lines_of(second), reasons(second)) == (lines_of(first), reasons(first)), "runs differ"
    assert second.billed_ids == {"a"}, f"second run billed {set(second.billed_ids)}"


# --- Metamorphic properties: shift, scale, cut and merge -----------------------------------------

_FIRST = datetime(1, 1, 3, tzinfo=UTC) - P0  # the shifts keep every timestamp in datetime's range
_LAST = datetime(9999, 12, 29, tzinfo=UTC) - PH - timedelta(hours=12)


def _shifted(t: Any, by: timedelta) -> Any:
    """`t` moved by `by`, in its own zone when that is a fixed offset (CET's rules are 2026's)."""
    if not isinstance(t, datetime):
        return t
    if t.utcoffset() is None:
        return t + by
    zone = t.tzinfo if isinstance(t.tzinfo, timezone) else UTC
    return (t.astimezone(UTC) + by).astimezone(zone)


@settings(max_examples=15)
@example(records=[*SOME_RUN, *EDGE_RUN], prices=SOME_PRICES,
         micros=(datetime(9000, 6, 1, tzinfo=UTC) - P0) // US + 123_457)
@example(records=EDGE_RUN, prices=SOME_PRICES, micros=_FIRST // US + 1)
@example(records=HALF_CENT_RUN, prices=HALF_CENT_PRICES, micros=1)
@given(records=runs(), prices=PRICE_MAPS, micros=st.integers(_FIRST // US, _LAST // US))
def test_shifting_the_records_and_the_period_together_changes_nothing(
        records: list[UsageRecord], prices: dict[str, Decimal], micros: int) -> None:
    """Moving every timestamp and the period by the same span, to any year, changes nothing."""
    by = micros * US
    moved = [rec(r.record_id, _shifted(r.start, by), _shifted(r.end, by), team=r.team,
                 gpu_type=r.gpu_type, gpu_count=r.gpu_count) for r in records]
    run, shifted = bill(records, prices, P0, PH), bill(moved, prices, P0 + by, PH + by)
    assert lines_of(shifted) == lines_of(run), (
        f"moved by {by} (to {P0 + by}): invoices {lines_of(shifted)}, unmoved {lines_of(run)}")
    assert reasons(shifted) == reasons(run), f"moved by {by}: rejected {reasons(shifted)}, " \
                                             f"unmoved {reasons(run)}"
    assert shifted.billed_ids == run.billed_ids, f"moved by {by}: billed_ids differ"


@settings(max_examples=15)
@example(records=[*SOME_RUN, *HALF_CENT_RUN], prices=SOME_PRICES, k=30)
@example(records=HALF_CENT_RUN, prices=HALF_CENT_PRICES, k=40)
@given(records=runs(), prices=PRICE_MAPS, k=st.integers(1, 40))
def test_more_gpus_at_a_lower_price_bill_the_same_amounts(
        records: list[UsageRecord], prices: dict[str, Decimal], k: int) -> None:
    """10^k times the GPUs at 10^-k times the price: the same amounts, 10^k the GPU-seconds."""
    more = [rec(r.record_id, r.start, r.end, team=r.team, gpu_type=r.gpu_type,
                gpu_count=r.gpu_count * 10**k if type(r.gpu_count) is int else r.gpu_count)
            for r in records]
    cheaper = {gpu_type: price.scaleb(-k) for gpu_type, price in prices.items()}
    run, scaled = bill(records, prices, P0, PH), bill(more, cheaper, P0, PH)
    want = {team: [(t, s * 10**k, amount) for t, s, amount in lines]
            for team, lines in lines_of(run).items()}
    assert lines_of(scaled) == want, (
        f"gpu counts x 10^{k}, prices x 10^-{k}: invoices {lines_of(scaled)}, want {want}")
    assert reasons(scaled) == reasons(run), f"x 10^{k}: rejected {reasons(scaled)}"


@settings(max_examples=15)
@example(records=[rec("w", P0 - timedelta(hours=1), PH + timedelta(hours=1), gpu_count=3),
                  *HALF_CENT_RUN],
         prices=HALF_CENT_PRICES, cuts=[0, 3_600_000_000, 3_600_000_000,
                                        3_600_000_000 + _SPAN // US, 3_600_000_001], seed=0)
@example(records=HALF_CENT_RUN, prices=HALF_CENT_PRICES, cuts=[1, 4_999_999], seed=1)
@given(records=runs(), prices=PRICE_MAPS, cuts=st.lists(st.integers(0, 10**11), max_size=5),
       seed=st.integers(0, 2**16))
def test_cutting_a_record_into_pieces_changes_no_invoice(
        records: list[UsageRecord], prices: dict[str, Decimal], cuts: list[int],
        seed: int) -> None:
    """A billed record cut into pieces with new ids, in any order, bills as the whole did."""
    run = bill(records, prices, P0, PH)
    picked = a_billed_record(run, records, seed)
    if picked is None:
        return
    whole, start, end = picked
    rid = whole.record_id
    length = (end - start) // US
    at = sorted({start, end} | {start + (c % (length + 1)) * US for c in cuts})
    pieces = [rec(f"{rid}/{i}", s, e, team=whole.team, gpu_type=whole.gpu_type,
                  gpu_count=whole.gpu_count) for i, (s, e) in enumerate(itertools.pairwise(at))]
    rest = [r for r in records if r.record_id != rid] + pieces
    random.Random(seed).shuffle(rest)
    cut = bill(rest, prices, P0, PH)
    assert lines_of(cut) == lines_of(run), (
        f"{whole} cut at {[str(t) for t in at[1:-1]]}: invoices {lines_of(cut)}, "
        f"want {lines_of(run)}")
