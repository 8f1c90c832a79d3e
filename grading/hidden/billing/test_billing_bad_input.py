"""Hidden checks for billing: the caller's errors raise; a bad record is rejected, never raised."""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import pytest
from billing import RejectReason, UsageRecord
from billing_helpers import (
    FLOATING,
    MIN,
    NAIVE,
    P0,
    P1,
    PRICES,
    TOKYO,
    R,
    lines_of,
    only_line,
    reasons,
    rec,
    run_of,
    total_of,
)

# --- Prices and the period: the caller's errors raise ------------------------------------------


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("price", [3.6, "3.60"], ids=["float", "str"])
def test_a_price_that_is_not_a_decimal_raises_type_error(price: object) -> None:
    """A price that is not a Decimal (a float, a string) raises TypeError."""
    with pytest.raises(TypeError):
        run_of([rec()], {"h100": price})


@pytest.mark.category("bad_input")
def test_an_int_price_raises_type_error() -> None:
    """An int price raises TypeError too: exact as it is, it is not a Decimal."""
    for price in (3, 0):
        with pytest.raises(TypeError):
            run_of([rec()], {"h100": price})


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("price", ["-0.01", "NaN", "Infinity"])
def test_a_negative_or_non_finite_price_raises_value_error(price: str) -> None:
    """A negative or non-finite price raises ValueError."""
    with pytest.raises(ValueError, match="h100"):
        run_of([rec()], {"h100": Decimal(price)})


@pytest.mark.category("bad_input")
def test_every_price_is_checked_even_one_no_record_uses() -> None:
    """Every price is checked up front, even one that no record uses."""
    with pytest.raises(TypeError):
        run_of([], {"h100": Decimal("3.60"), "k80": 0.45})
    with pytest.raises(ValueError, match="k80"):
        run_of([rec()], {"h100": Decimal("3.60"), "k80": Decimal("-0.45")})


@pytest.mark.category("bad_input")
def test_a_negative_zero_price_is_a_zero_price() -> None:
    """A price of Decimal("-0") is zero, not negative: its lines are billed at 0.00."""
    for price in ("-0", "-0.00"):
        run = run_of([rec("a"), rec("b", gpu_type="a100")], {**PRICES, "a100": Decimal(price)})
        got = lines_of(run).get("vision")
        assert got is not None and [amount for _, _, amount in got] == [0, Decimal("3.60")], (
            f"an hour of a100 at {price}/h and an hour of h100 at 3.60/h billed as "
            f"{run.invoices}, rejected {run.rejected}; want lines of 0.00 (a100) and 3.60 (h100)")


_SEVERAL_BAD_ARGUMENTS: dict[str, tuple[dict[str, Any], Any, Any]] = {
    "float_price_and_naive_start": ({"h100": 3.6}, P0.replace(tzinfo=None), P1),
    "negative_price_and_date_end": ({"h100": Decimal(-1)}, P0, date(2026, 4, 1)),
    "float_price_then_negative_price": ({"h100": 3.6, "a100": Decimal(-1)}, P0, P1),
    "negative_price_then_float_price": ({"h100": Decimal(-1), "a100": 3.6}, P0, P1),
    "naive_start_and_str_end": ({"h100": Decimal(1)}, P0.replace(tzinfo=None), "2026-04-01"),
    "nan_price_and_inverted_period": ({"h100": Decimal("NaN")}, P1, P0),
}


@pytest.mark.category("bad_input")
def test_several_bad_arguments_raise_one_of_their_errors() -> None:
    """With several bad arguments, bill raises the TypeError or ValueError of one of them."""
    for case, (prices, start, end) in _SEVERAL_BAD_ARGUMENTS.items():
        try:
            run_of([], prices, start, end)
        except (TypeError, ValueError):
            continue
        except Exception as exc:
            pytest.fail(f"{case}: bill([], {prices}, {start!r}, {end!r}) raised {exc!r}; want "
                        "the TypeError or ValueError of one of the bad arguments")
        pytest.fail(f"{case}: bill([], {prices}, {start!r}, {end!r}) returned; want the "
                    "TypeError or ValueError of one of the bad arguments")


def _pulled_into(pulled: list[UsageRecord]) -> Iterator[UsageRecord]:
    """Three good records, each appended to `pulled` as it is read."""
    for i in range(3):
        pulled.append(rec(f"r{i}"))
        yield pulled[-1]


@pytest.mark.category("bad_input")
def test_a_bad_price_raises_before_any_record_is_read() -> None:
    """A bad price raises before any record is read: a generator of records is left untouched."""
    for bad, error in (({"h100": 3.6}, TypeError), ({"gpu-x": Decimal(-1)}, ValueError)):
        pulled: list[UsageRecord] = []
        with pytest.raises(error):
            run_of(_pulled_into(pulled), {**PRICES, **bad})
        assert not pulled, (f"bill(records, prices with {bad}) raised {error.__name__}, but only "
                            f"after reading {len(pulled)} record(s) of a one-shot generator; "
                            "check every price before reading any record")


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("bound", ["period_start", "period_end"])
def test_a_naive_period_bound_raises_value_error(bound: str) -> None:
    """A naive period bound raises ValueError."""
    start, end = (P0.replace(tzinfo=None), P1) if bound == "period_start" else (P0, P1.replace(
        tzinfo=None))
    with pytest.raises(ValueError, match=bound):
        run_of([rec()], start=start, end=end)




@pytest.mark.category("bad_input")
def test_a_period_bound_whose_zone_gives_no_offset_is_naive() -> None:
    """A period bound whose tzinfo gives no UTC offset is naive: it raises ValueError."""
    for start, end in ((P0.replace(tzinfo=FLOATING), P1), (P0, P1.replace(tzinfo=FLOATING))):
        with pytest.raises(ValueError):
            run_of([rec()], start=start, end=end)


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("end", [P0, P0 - MIN, P0.astimezone(TOKYO)],
                         ids=["equal", "inverted", "equal_instant_other_zone"])
def test_an_empty_or_inverted_period_raises_value_error(end: datetime) -> None:
    """period_end <= period_start raises ValueError."""
    with pytest.raises(ValueError):
        run_of([rec()], end=end)


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("start", [date(2026, 3, 1), "2026-03-01T00:00:00+00:00"],
                         ids=["date", "str"])
def test_a_period_bound_that_is_not_a_datetime_raises_type_error(start: object) -> None:
    """A period bound that is not a datetime raises TypeError."""
    with pytest.raises(TypeError):
        run_of([rec()], start=start)



# --- Bad records are rejected, never raised, never dropped --------------------------------------

class _StampLike:
    """Not a datetime, though it subtracts and compares like one (as some libraries' stamps do)."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __sub__(self, other: Any) -> Any:
        return self.at - (other.at if isinstance(other, _StampLike) else other)

    def __rsub__(self, other: Any) -> Any:
        return other - self.at

    def __lt__(self, other: Any) -> bool:
        return bool(self.at < (other.at if isinstance(other, _StampLike) else other))

    def __repr__(self) -> str:
        return f"StampLike({self.at.isoformat()})"


_BAD_TIMES: dict[str, dict[str, Any]] = {
    "naive_start": {"start": NAIVE}, "naive_end": {"start": P0, "end": NAIVE},
    "start_is_a_string": {"start": "2026-03-01T00:00:00+00:00"},
    "end_is_a_date": {"end": date(2026, 3, 2)}, "end_is_none": {"end": None},
    "end_acts_like_a_datetime": {"end": _StampLike(P0 + 60 * MIN)}}


class _Int64Like:
    """A stand-in for numpy's int64: an Integral with __index__ that is not an int."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    __int__ = __index__

    def __eq__(self, other: object) -> bool:
        return self.value == other

    def __hash__(self) -> int:
        return hash(self.value)

    def __lt__(self, other: int) -> bool:
        return self.value < other

    def __ge__(self, other: int) -> bool:
        return self.value >= other

    def __mul__(self, other: Any) -> Any:
        return self.value * other

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"int64({self.value})"


numbers.Integral.register(_Int64Like)  # as numpy registers its integer types

_BAD_COUNTS: dict[str, object] = {"zero": 0, "negative": -2, "bool": True, "float": 2.0,
                                  "str": "2", "int64_not_an_int": _Int64Like(2)}


def _assert_rejected_alone(fields: dict[str, Any], reason: RejectReason) -> None:
    """A bad record beside a good one: the bad one is rejected with `reason`, the run goes on."""
    run = run_of([rec("bad", **fields), rec("good", 60, 120)])
    assert reasons(run) == [("bad", reason)], f"bad record {fields}: rejected {run.rejected}"
    assert run.billed_ids == {"good"}, f"billed_ids = {set(run.billed_ids)}, want {{'good'}}"
    assert total_of(run) == Decimal("3.60"), f"the good record billed {total_of(run)}, want 3.60"
    detail = run.rejected[0].detail
    assert isinstance(detail, str) and detail.strip(), f"detail {detail!r} should explain"


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("fields", list(_BAD_TIMES.values()), ids=list(_BAD_TIMES))
def test_a_naive_or_non_datetime_timestamp_is_rejected(fields: dict[str, Any]) -> None:
    """A record with a naive or non-datetime timestamp is rejected, and the run goes on."""
    _assert_rejected_alone(fields, R.NAIVE_TIMESTAMP)


@pytest.mark.category("bad_input")
def test_an_aware_time_of_day_is_not_a_timestamp() -> None:
    """A time of day is not a datetime, even with a tzinfo: rejected, and the run goes on."""
    _assert_rejected_alone({"start": time(9, tzinfo=UTC)}, R.NAIVE_TIMESTAMP)


@pytest.mark.category("bad_input")
def test_timestamps_written_as_iso_text_are_rejected() -> None:
    """Timestamps written as ISO-8601 text are not datetimes, even with an offset: rejected."""
    for start, end in (("2026-03-01T00:00:00+00:00", "2026-03-01T01:00:00+00:00"),
                       ("2026-03-01T09:00:00+09:00", "2026-03-01T01:00:00Z")):
        try:
            _assert_rejected_alone({"start": start, "end": end}, R.NAIVE_TIMESTAMP)
        except AssertionError as exc:
            pytest.fail(f"a record from {start!r} to {end!r} (text, both): {exc}; a timestamp "
                        "must be a datetime, so text is naive_timestamp, never parsed")


@pytest.mark.category("bad_input")
def test_a_timestamp_whose_zone_gives_no_offset_is_rejected_as_naive() -> None:
    """A timestamp whose tzinfo gives no UTC offset is naive: rejected, and the run goes on."""
    for fields in ({"start": NAIVE.replace(tzinfo=FLOATING)},
                   {"start": P0, "end": NAIVE.replace(tzinfo=FLOATING)}):
        try:
            _assert_rejected_alone(fields, R.NAIVE_TIMESTAMP)
        except (TypeError, ValueError) as exc:
            pytest.fail(f"a record with {fields} made bill raise {type(exc).__name__}({exc}); "
                        "its tzinfo's utcoffset() is None, so it is naive: a rejection")


@pytest.mark.category("bad_input")
def test_a_record_that_ends_before_it_starts_is_rejected() -> None:
    """A record whose end is before its start is rejected, and the run goes on."""
    _assert_rejected_alone({"start": 120, "end": 60}, R.END_BEFORE_START)


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("count", list(_BAD_COUNTS.values()), ids=list(_BAD_COUNTS))
def test_a_bad_gpu_count_is_rejected(count: object) -> None:
    """A gpu_count below 1, a bool or not an int is rejected, and the run goes on."""
    _assert_rejected_alone({"gpu_count": count}, R.BAD_GPU_COUNT)


@pytest.mark.category("bad_input")
def test_an_unhashable_gpu_count_is_rejected() -> None:
    """A gpu_count that cannot be hashed (a list) is rejected too, and the run goes on."""
    _assert_rejected_alone({"gpu_count": [2]}, R.BAD_GPU_COUNT)


@pytest.mark.category("bad_input")
def test_a_gpu_type_with_no_price_is_rejected() -> None:
    """A record whose gpu_type has no price is rejected, and the run goes on."""
    _assert_rejected_alone({"gpu_type": "tpu-v5"}, R.UNKNOWN_GPU_TYPE)


@pytest.mark.category("bad_input")
def test_a_gpu_type_is_matched_to_its_price_exactly() -> None:
    """A gpu_type is matched to prices exactly: "H100" or "h100 " has no price when "h100" does."""
    for gpu_type in ("H100", "h100 ", " h100", "H100-SXM"):
        try:
            _assert_rejected_alone({"gpu_type": gpu_type}, R.UNKNOWN_GPU_TYPE)
        except AssertionError as exc:
            pytest.fail(f"a record of gpu_type {gpu_type!r}, with prices only for "
                        f"{sorted(PRICES)}: {exc}; a gpu_type is a price's key as issued, "
                        "with no change of case or spaces, so it is unknown_gpu_type")


_SEVERAL: dict[str, tuple[list[UsageRecord], RejectReason]] = {
    "duplicate_before_naive": ([rec("x", NAIVE), rec("x")], R.CONFLICTING_DUPLICATE),
    "naive_before_end_before_start": (
        [rec("x", NAIVE, NAIVE - MIN, gpu_count=0)], R.NAIVE_TIMESTAMP),
    "end_before_start_before_gpu_count": (
        [rec("x", 120, 60, gpu_count=0, gpu_type="tpu")], R.END_BEFORE_START),
    "gpu_count_before_gpu_type": ([rec("x", gpu_count=0, gpu_type="tpu")], R.BAD_GPU_COUNT),
    "gpu_type_before_period": ([rec("x", -120, -60, gpu_type="tpu")], R.UNKNOWN_GPU_TYPE),
}


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize(("records", "reason"), list(_SEVERAL.values()), ids=list(_SEVERAL))
def test_a_record_with_several_faults_gets_the_first_reason(records: list[UsageRecord],
                                                           reason: RejectReason) -> None:
    """A record with several faults is rejected once, with the first reason in the order."""
    run = run_of(records)
    assert reasons(run) == [("x", reason)], f"bill({records}) rejected {run.rejected}"


@pytest.mark.category("edge_cases")
def test_a_naive_and_an_aware_copy_of_one_wall_time_conflict() -> None:
    """A naive copy and an aware copy of a record at the same wall time are different content."""
    run = run_of([rec("x", P0.replace(tzinfo=None)), rec("x")])
    assert reasons(run) == [("x", R.CONFLICTING_DUPLICATE)], (
        f"copies of 'x' starting at {P0.replace(tzinfo=None)} (naive) and at {P0} (aware): "
        f"rejected {run.rejected}; a naive timestamp has no instant, so it is not the aware "
        "one's content: conflicting_duplicate")


@pytest.mark.category("edge_cases")
def test_a_retried_bad_record_is_rejected_once_with_its_own_reason() -> None:
    """Identical copies of a bad record are rejected once, with their own reason."""
    run = run_of([rec("b", gpu_count=0), rec("b", gpu_count=0), rec("b", gpu_count=0)])
    assert reasons(run) == [("b", R.BAD_GPU_COUNT)], f"rejected {run.rejected}"


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize(("fields", "reason"), [
    ({"gpu_count": 0}, R.BAD_GPU_COUNT), ({"gpu_count": True}, R.BAD_GPU_COUNT),
    ({"gpu_type": "tpu-v5"}, R.UNKNOWN_GPU_TYPE)], ids=["zero_gpus", "bool_gpus", "no_price"])
def test_a_zero_length_record_with_another_fault_is_rejected(fields: dict[str, Any],
                                                            reason: RejectReason) -> None:
    """A zero-length record is judged by every other rule: a fault still rejects it."""
    _assert_rejected_alone({"start": 600, "end": 600, **fields}, reason)


class _Stamp(datetime):
    """An aware datetime subclass, as pandas' Timestamp or pendulum's DateTime."""


@pytest.mark.category("bad_input")
def test_an_aware_datetime_subclass_is_billed() -> None:
    """A timestamp of a datetime subclass (pandas' Timestamp) is a datetime: aware, it is billed."""
    start, end = _Stamp(2026, 3, 2, 9, tzinfo=TOKYO), _Stamp(2026, 3, 2, 10, tzinfo=TOKYO)
    run = run_of([rec("sub", start, end), rec("good", 60, 120)])
    assert not run.rejected and run.billed_ids == {"sub", "good"}, (
        f"a record from {start!r} to {end!r} (aware, of a datetime subclass): rejected "
        f"{run.rejected}, billed {set(run.billed_ids)}; a datetime subclass is a datetime")
    assert total_of(run) == Decimal("7.20"), f"two hours billed {total_of(run)}, want 7.20"


@pytest.mark.category("bad_input")
def test_a_period_bound_of_a_datetime_subclass_is_a_datetime() -> None:
    """A period bound of a datetime subclass (pandas' Timestamp) is a datetime: it is used."""
    start, end = _Stamp(2026, 3, 1, tzinfo=UTC), _Stamp(2026, 4, 1, tzinfo=TOKYO)
    try:
        run = run_of([rec("a", -60, 60)], start=start, end=end)
    except (TypeError, ValueError) as exc:
        pytest.fail(f"bill with period {start!r} to {end!r} (aware, of a datetime subclass) "
                    f"raised {type(exc).__name__}({exc}); a datetime subclass is a datetime")
    got = only_line(run)
    assert got is not None and got.gpu_seconds == 3600, (
        f"a record from an hour before to an hour after that period's start billed {got}, "
        f"rejected {run.rejected}; want its 3600 GPU-seconds inside")


_EMPTY_VALUES: dict[str, tuple[dict[str, Any], RejectReason]] = {
    "empty_gpu_type": ({"gpu_type": ""}, R.UNKNOWN_GPU_TYPE),
    "empty_str_gpu_count": ({"gpu_count": ""}, R.BAD_GPU_COUNT),
    "empty_str_start": ({"start": ""}, R.NAIVE_TIMESTAMP),
    "blank_gpu_type": ({"gpu_type": " "}, R.UNKNOWN_GPU_TYPE),
}


@pytest.mark.category("bad_input")
def test_a_rejection_explains_itself_even_for_an_empty_value() -> None:
    """A rejection's detail is never empty, even when the bad value is an empty string."""
    for case, (fields, reason) in _EMPTY_VALUES.items():
        run = run_of([rec("bad", **fields), rec("good", 60, 120)])
        got = [(r.record_id, r.reason, r.detail) for r in run.rejected]
        assert len(got) == 1 and got[0][:2] == ("bad", reason), f"{case}: rejected {got}"
        detail = got[0][2]
        assert isinstance(detail, str) and detail.strip(), (
            f"{case}: a record with {fields} was rejected as {reason} with detail {detail!r}; "
            "the detail says which field and which value, so it is never empty")
