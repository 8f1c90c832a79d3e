"""Hidden checks for billing: the period's edges, time zones and daylight saving, duplicates."""

from __future__ import annotations

import dataclasses
import itertools
import math
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from enum import IntEnum
from fractions import Fraction
from typing import Any

import pytest
from billing import BillingRun, LineItem, UsageRecord
from billing_helpers import (
    CET,
    END,
    FLOATING,
    MIN,
    NAIVE,
    NEW_YORK,
    P0,
    P1,
    TOKYO,
    US,
    R,
    lines_of,
    only_line,
    reasons,
    rec,
    run_of,
    total_of,
)


def assert_details(run: BillingRun) -> None:
    """Every rejection explains itself: `detail` is a non-empty string."""
    for r in run.rejected:
        assert isinstance(r.detail, str) and r.detail.strip(), (
            f"rejection of {r.record_id!r} ({r.reason}): detail {r.detail!r} should explain")


# --- The period and time zones -----------------------------------------------------------------


@pytest.mark.points(2)
@pytest.mark.parametrize(("start", "end", "minutes"), [(-30, 30, 30), (END - 30, END + 90, 30),
                                                        (-60, END + 60, END)],
                         ids=["straddles_start", "straddles_end", "covers_the_period"])
def test_only_the_part_inside_the_period_is_billed(start: int, end: int, minutes: int) -> None:
    """Only the part of a record inside [period_start, period_end) is billed."""
    got = only_line(run_of([rec("c", start, end)]))
    want = LineItem("h100", Decimal(minutes * 60), Decimal(minutes * 6) / 100)
    assert got == want, f"record from minute {start} to {end} of the period: {got}, want {want}"


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize(("start", "end"), [(-60, 0), (END, END + 60), (-1, -1), (END, END)],
                         ids=["ends_at_start", "starts_at_end", "instant_before", "instant_at_end"])
def test_a_record_wholly_outside_the_period_is_rejected(start: int, end: int) -> None:
    """A record wholly outside the period is rejected as outside_period."""
    run = run_of([rec("out", start, end), rec("in", 60, 120)])
    assert reasons(run) == [("out", R.OUTSIDE_PERIOD)], f"got rejections {run.rejected}"
    assert run.billed_ids == {"in"} and total_of(run) == Decimal("3.60"), f"got {run}"
    assert_details(run)


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize("at", [0, 600], ids=["at_period_start", "inside"])
def test_a_zero_length_record_is_billed_and_costs_nothing(at: int) -> None:
    """A zero-length record in the period is billed, costs nothing, and makes no invoice."""
    run = run_of([rec("z", at, at, team="ghost"), rec("v", 60, 120)])
    assert not run.rejected, f"a zero-length record was rejected: {run.rejected}"
    assert run.billed_ids == {"z", "v"}, f"billed_ids = {set(run.billed_ids)}"
    assert set(run.invoices) == {"vision"}, f"invoices for {set(run.invoices)}, want vision only"


@pytest.mark.category("edge_cases")
def test_a_line_with_gpu_seconds_is_kept_at_zero_cost() -> None:
    """A line with GPU-seconds is kept when its amount is zero."""
    run = run_of([rec("a", start=P0, end=P0 + timedelta(seconds=1)), rec("b", gpu_type="free")],
                {"h100": Decimal("3.60"), "free": Decimal(0)})
    want = [("free", Fraction(3600), Decimal(0)), ("h100", Fraction(1), Decimal(0))]
    assert lines_of(run) == {"vision": want}, f"got {run.invoices}"
    assert total_of(run) == 0, f"total {total_of(run)}"


@pytest.mark.category("edge_cases")
@pytest.mark.points(2)
@pytest.mark.parametrize(("start", "end", "seconds"), [
    (datetime(2026, 3, 29, 1, 30, tzinfo=CET), datetime(2026, 3, 29, 3, 30, tzinfo=CET), 3600),
    (datetime(2026, 10, 25, 2, 30, tzinfo=CET),
     datetime(2026, 10, 25, 2, 15, fold=1, tzinfo=CET), 2700),
], ids=["spring_forward", "fall_back"])
def test_a_record_across_a_dst_change_lasts_its_elapsed_time(start: datetime, end: datetime,
                                                             seconds: int) -> None:
    """A record across a daylight-saving change lasts its true elapsed time."""
    run = run_of([rec("d", start, end)], start=datetime(2026, 1, 1, tzinfo=CET),
                end=datetime(2027, 1, 1, tzinfo=UTC))
    got = only_line(run)
    assert got is not None and got.gpu_seconds == seconds, (
        f"{start.isoformat()} to {end.isoformat()} (fold={end.fold}) billed as {got}, "
        f"rejected {run.rejected}; want {seconds} GPU-seconds")


@pytest.mark.category("edge_cases")
@pytest.mark.points(2)
def test_timestamps_in_different_zones_compare_as_instants() -> None:
    """Timestamps and period bounds in different zones compare as instants."""
    start, end = P0.astimezone(TOKYO), P1.astimezone(NEW_YORK)
    records = [
        rec("a", (P0 + 270 * MIN).astimezone(NEW_YORK), (P0 + 330 * MIN).astimezone(TOKYO)),
        rec("b", (P0 - 30 * MIN).astimezone(TOKYO), P0 + 30 * MIN),
    ]
    got = only_line(run_of(records, start=start, end=end))
    want = LineItem("h100", Decimal(5400), Decimal("5.40"))
    assert got == want, f"1 h inside and 30 min straddling the start: {got}, want {want}"


@pytest.mark.category("edge_cases")
def test_the_period_bounds_compare_as_instants_across_a_dst_fold() -> None:
    """Period bounds in one local zone compare as instants, the DST fold included."""
    early = datetime(2026, 10, 25, 2, 40, tzinfo=CET)  # 00:40Z: summer time, the first 02:40
    late = datetime(2026, 10, 25, 2, 10, fold=1, tzinfo=CET)  # 01:10Z: winter time, 30 min on
    around = rec("a", datetime(2026, 10, 24, tzinfo=UTC), datetime(2026, 10, 26, tzinfo=UTC))
    try:
        got = only_line(run_of([around], start=early, end=late))
    except ValueError as exc:
        pytest.fail(f"period 02:40 CEST to 02:10 CET (fold=1), 30 minutes apart, raised "
                    f"ValueError({exc}); a bound's wall clock is not its instant")
    want = LineItem("h100", Decimal(1800), Decimal("1.80"))
    assert got == want, f"a record around that 30-minute period billed {got}, want {want}"
    with pytest.raises(ValueError):  # 02:40 CEST is 30 minutes before 02:10 CET
        run_of([around], start=late, end=early)


@pytest.mark.category("edge_cases")
def test_the_period_edges_compare_as_instants_across_a_dst_fold() -> None:
    """A record is inside or outside the period by instants, across a DST fold in one zone."""
    first_0230 = datetime(2026, 10, 25, 2, 30, tzinfo=CET)  # 00:30Z, summer time
    second_0230 = first_0230.replace(fold=1)  # 01:30Z, winter time: an hour later
    cases = [  # (period, record, GPU-seconds inside)
        ((datetime(2026, 10, 1, tzinfo=UTC), second_0230),
         (first_0230, datetime(2026, 10, 25, 2, 45, tzinfo=CET)), 900),
        ((first_0230, datetime(2026, 11, 1, tzinfo=UTC)),
         (datetime(2026, 10, 25, 2, 15, fold=1, tzinfo=CET),
          datetime(2026, 10, 25, 2, 20, fold=1, tzinfo=CET)), 300),
    ]
    for (start, end), (s, e), seconds in cases:
        run = run_of([rec("f", s, e)], start=start, end=end)
        got = only_line(run)
        assert got is not None and got.gpu_seconds == seconds, (
            f"period {start.isoformat()} (fold={start.fold}) to {end.isoformat()} "
            f"(fold={end.fold}), record {s.isoformat()} (fold={s.fold}) to {e.isoformat()} "
            f"(fold={e.fold}): billed {got}, rejected {run.rejected}; the record is inside the "
            f"period as instants, {seconds} GPU-seconds")


# --- Duplicates ---------------------------------------------------------------------------------


@pytest.mark.parametrize("copy", ["same_object", "equal_copy", "same_instants_other_zone"])
def test_an_identical_retry_is_billed_once(copy: str) -> None:
    """A record repeated with identical content is billed once."""
    first = rec("r", 0, 60)
    twin = {"same_object": first, "equal_copy": rec("r", 0, 60),
            "same_instants_other_zone": rec("r", P0.astimezone(TOKYO),
                                             (P0 + 60 * MIN).astimezone(NEW_YORK))}[copy]
    run = run_of([first, twin, first])
    assert not run.rejected, f"an identical retry was rejected: {run.rejected}"
    assert run.billed_ids == {"r"} and total_of(run) == Decimal("3.60"), (
        f"three copies of one hour billed {total_of(run)}, want 3.60 (once)")


_VARIANTS: dict[str, dict[str, Any]] = {
    "gpu_count": {"gpu_count": 2}, "end": {"end": 61}, "team": {"team": "nlp"},
    "gpu_type": {"gpu_type": "a100"}}


@pytest.mark.points(2)
@pytest.mark.parametrize("field", list(_VARIANTS))
def test_conflicting_duplicates_are_all_rejected_in_any_order(field: str) -> None:
    """Records sharing an id with different content are all rejected, whatever the order."""
    fields = _VARIANTS[field]
    copies = [rec("d"), rec("d"), rec("d", **fields)]
    for order in itertools.permutations(copies):
        run = run_of([*order, rec("ok", 60, 120, team="ops")])
        assert reasons(run) == [("d", R.CONFLICTING_DUPLICATE)], (
            f"copies of 'd' with {field} {[str(getattr(c, field)) for c in order]}: "
            f"rejected {run.rejected}")
        assert run.billed_ids == {"ok"} and set(run.invoices) == {"ops"}, (
            f"conflicting 'd' was billed: {run.invoices}")
        assert_details(run)


@pytest.mark.category("edge_cases")
def test_copies_a_microsecond_apart_in_any_century_conflict() -> None:
    """Copies whose start or end differ by one microsecond conflict, in any century."""
    for year in (1, 1900, 2500, 9999):
        start = datetime(year, 3, 2, 9, 0, 0, 1, tzinfo=UTC)
        end = start + 60 * MIN
        period = (datetime(year, 3, 1, tzinfo=UTC), datetime(year, 4, 1, tzinfo=UTC))
        for field, other in (("start", rec("u", start + US, end)),
                             ("end", rec("u", start, end - US))):
            run = run_of([rec("u", start, end), other], start=period[0], end=period[1])
            assert reasons(run) == [("u", R.CONFLICTING_DUPLICATE)], (
                f"two copies of 'u' in year {year} whose {field} differs by 1 microsecond: "
                f"rejected {run.rejected}, billed {set(run.billed_ids)}; timestamps are exact "
                "instants, to the microsecond (a float timestamp is not)")


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize(("field", "one", "other"), [
    ("gpu_count", 1, True), ("gpu_count", 1, 1.0), ("gpu_count", 2, 2.0), ("start", 1, 1.0)],
    ids=["int_and_bool", "int_and_float", "two_and_two_point_zero", "start_int_and_float"])
def test_equal_values_of_different_types_are_different_content(field: str, one: Any,
                                                               other: Any) -> None:
    """Equal values of different types (1, 1.0, True) are different content."""
    for order in ([one, other], [other, one]):
        run = run_of([dataclasses.replace(rec("t"), **{field: value}) for value in order])
        assert reasons(run) == [("t", R.CONFLICTING_DUPLICATE)], (
            f"{field} {order[0]!r} then {order[1]!r} under one id: rejected {run.rejected}")


@pytest.mark.category("edge_cases")
def test_the_same_wall_time_either_side_of_a_dst_fold_is_different_content() -> None:
    """Copies whose start differs only by the DST fold are different instants, so conflict."""
    wall = datetime(2026, 10, 25, 2, 30, tzinfo=CET)
    end = datetime(2026, 10, 25, 4, 0, tzinfo=CET)
    copies = [rec("f", wall, end), rec("f", wall.replace(fold=1), end)]
    run = run_of(copies, start=datetime(2026, 10, 1, tzinfo=UTC), end=datetime(2026, 11, 1,
                                                                              tzinfo=UTC))
    assert reasons(run) == [("f", R.CONFLICTING_DUPLICATE)], f"rejected {run.rejected}"


@pytest.mark.category("edge_cases")
def test_naive_copies_with_equal_wall_times_are_one_record() -> None:
    """Naive copies with equal wall times are one record, rejected once as naive_timestamp."""
    run = run_of([rec("n", NAIVE, NAIVE + MIN), rec("n", NAIVE, NAIVE + MIN),
                  rec("n", NAIVE.replace(tzinfo=None), (NAIVE + MIN).replace(tzinfo=None))])
    assert reasons(run) == [("n", R.NAIVE_TIMESTAMP)], f"rejected {run.rejected}"
    floating = [rec("f", NAIVE, NAIVE + MIN),
                rec("f", NAIVE.replace(tzinfo=FLOATING), (NAIVE + MIN).replace(tzinfo=FLOATING))]
    for order in (floating, floating[::-1]):
        run = run_of(order)
        assert reasons(run) == [("f", R.NAIVE_TIMESTAMP)], (
            f"copies of 'f' at the same naive wall times, one with tzinfo None and one with a "
            f"tzinfo that gives no offset: rejected {run.rejected}; naive copies with equal wall "
            "times are identical whatever tzinfo they carry")


@pytest.mark.category("edge_cases")
def test_naive_copies_with_different_wall_times_conflict() -> None:
    """Naive copies whose wall times differ are different content: conflicting_duplicate."""
    for other in (NAIVE + 2 * MIN, NAIVE - MIN):
        for order in ([NAIVE + MIN, other], [other, NAIVE + MIN]):
            run = run_of([rec("n", NAIVE, end) for end in order])
            assert reasons(run) == [("n", R.CONFLICTING_DUPLICATE)], (
                f"two copies of 'n' with naive start {NAIVE} and naive ends {order[0]} then "
                f"{order[1]}: rejected {run.rejected}; copies that differ conflict, and "
                "conflicting_duplicate comes before naive_timestamp")


def test_record_ids_are_matched_exactly() -> None:
    """Record ids are matched exactly: ids differing in case or spaces are different records."""
    ids = ["r1", "r1 ", " r1", "R1", "r1\n"]
    for counts in ([1] * len(ids), list(range(1, len(ids) + 1))):
        run = run_of([rec(rid, gpu_count=n) for rid, n in zip(ids, counts, strict=True)])
        want = Decimal("3.60") * sum(counts)
        assert not run.rejected and run.billed_ids == set(ids) and total_of(run) == want, (
            f"one-hour records with ids {ids} and gpu_counts {counts}: billed_ids "
            f"{set(run.billed_ids)}, rejected {run.rejected}, total {total_of(run)}; want every "
            f"id billed as issued, total {want}")


def test_teams_are_matched_exactly() -> None:
    """Teams are matched exactly: "nlp", "nlp " and "NLP" get an invoice each."""
    teams = ["nlp", "nlp ", "NLP", " nlp"]
    run = run_of([rec(f"r{i}", team=team) for i, team in enumerate(teams)])
    got = {team: total_of(run, team) for team in run.invoices}
    want = {team: Decimal("3.60") for team in teams}
    assert got == want, (
        f"an hour of h100 for each of the teams {teams}: invoice totals {got}; want an invoice "
        f"for every team as issued, {want}")


@pytest.mark.category("edge_cases")
def test_record_ids_in_different_unicode_forms_are_different_records() -> None:
    """Record ids are not normalised: "\u00e9" and "e\u0301" are two records."""
    ids = ["caf\u00e9", "cafe\u0301", "\ufb01le", "file"]  # composed, decomposed, a ligature
    run = run_of([rec(rid, gpu_count=n) for n, rid in enumerate(ids, 1)])
    want = Decimal("3.60") * 10
    assert not run.rejected and run.billed_ids == set(ids) and total_of(run) == want, (
        f"one-hour records with ids {[ascii(i) for i in ids]} and gpu_counts 1 to 4: billed_ids "
        f"{[ascii(i) for i in run.billed_ids]}, rejected {run.rejected}, total {total_of(run)}; "
        f"want every id billed as issued, total {want}")


# --- The shape of the result ---------------------------------------------------------------------


def test_rejected_and_lines_are_tuples() -> None:
    """rejected and each invoice's lines are tuples, as the API declares."""
    run = run_of([rec("a"), rec("b", gpu_type="a100"), rec("c", gpu_count=0)])
    kinds = {"rejected": type(run.rejected).__name__,
             "lines": type(run.invoices["vision"].lines).__name__}
    assert isinstance(run.rejected, tuple) and isinstance(run.invoices["vision"].lines, tuple), (
        f"types in the BillingRun: {kinds}; the API declares tuples")


def test_lines_and_rejections_are_sorted_as_python_sorts_str() -> None:
    """Lines sort by gpu_type, rejections by record_id, as Python sorts str (by code point)."""
    prices = {t: Decimal("1.00") for t in ("l4", "H100", "a10g", "B200")}
    records = [rec(f"ok-{t}", gpu_type=t) for t in prices]
    records += [rec(rid, gpu_count=0) for rid in ("beta", "Zed", "alpha", "Beta")]
    run = run_of(records, prices)
    got = ([li.gpu_type for li in run.invoices["vision"].lines],
           [r.record_id for r in run.rejected])
    want = (["B200", "H100", "a10g", "l4"], ["Beta", "Zed", "alpha", "beta"])
    assert got == want, (f"(line gpu_types, rejected record_ids) = {got}; want {want}: "
                         "sorted(...) order, upper case before lower case")


def test_billed_ids_is_a_frozenset() -> None:
    """billed_ids is a frozenset, as the API declares."""
    run = run_of([rec("a"), rec("b", gpu_count=0)])
    assert isinstance(run.billed_ids, frozenset) and run.billed_ids == {"a"}, (
        f"billed_ids is {type(run.billed_ids).__name__} {set(run.billed_ids)}; the API declares "
        "frozenset[str], {'a'} here")


# --- Open questions: the checks accept either reading -------------------------------------------


class _Team(str):
    """A str subclass, as a team name read by some ORMs."""


class _Stamp(datetime):
    """A datetime subclass, as pendulum's or arrow's."""


class _Gpus(IntEnum):
    TWO = 2


_OPEN: dict[str, tuple[list[UsageRecord], list[tuple[list[Any], set[str], str]]]] = {
    "str_subclass_team": ([rec("o", team=_Team("vision")), rec("o")], [
        ([], {"o", "ok"}, "7.20"), ([("o", R.CONFLICTING_DUPLICATE)], {"ok"}, "3.60")]),
    "datetime_subclass_start": ([rec("o"), rec("o", _Stamp(2026, 3, 1, tzinfo=UTC))], [
        ([], {"o", "ok"}, "7.20"), ([("o", R.CONFLICTING_DUPLICATE)], {"ok"}, "3.60")]),
    "int_enum_gpu_count": ([rec("o", gpu_count=_Gpus.TWO)], [
        ([], {"o", "ok"}, "10.80"), ([("o", R.BAD_GPU_COUNT)], {"ok"}, "3.60")]),
    "naive_copies_differing_in_fold": (
        [rec("o", NAIVE, NAIVE + MIN), rec("o", NAIVE.replace(fold=1), NAIVE + MIN)], [
            ([("o", R.NAIVE_TIMESTAMP)], {"ok"}, "3.60"),
            ([("o", R.CONFLICTING_DUPLICATE)], {"ok"}, "3.60")]),
    "list_gpu_counts_of_int_and_float": ([rec("o", gpu_count=[1]), rec("o", gpu_count=[1.0])], [
        ([("o", R.BAD_GPU_COUNT)], {"ok"}, "3.60"),
        ([("o", R.CONFLICTING_DUPLICATE)], {"ok"}, "3.60")]),
    "nan_gpu_count_copies": ([rec("o", gpu_count=math.nan), rec("o", gpu_count=-math.nan)], [
        ([("o", R.BAD_GPU_COUNT)], {"ok"}, "3.60"),
        ([("o", R.CONFLICTING_DUPLICATE)], {"ok"}, "3.60")]),
}


@pytest.mark.category("edge_cases")
def test_subclasses_and_odd_copies_may_be_read_either_way() -> None:
    """Subclass values and odd copies: either reading the statement allows, never a third."""
    for case, (records, readings) in _OPEN.items():
        run = run_of([*records, rec("ok", 60, 120)])
        got = (reasons(run), set(run.billed_ids), total_of(run))
        allowed = [(why, ids, Decimal(total)) for why, ids, total in readings]
        assert got in allowed, (
            f"{case}: records {records} beside one good hour: (rejected, billed_ids, total) = "
            f"{got}; want one of {allowed}")
