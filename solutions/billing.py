"""GPU-hour invoices in exact money: the reference solution.

Each record's span is added, as an exact `timedelta`, to its (team, gpu_type, gpu_count) group;
each group becomes integer GPU-microseconds once, and `Decimal` is touched once per line, when
the line is priced and rounded, never once per record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from enum import StrEnum

__all__ = ["BillingRun", "Invoice", "LineItem", "RejectReason", "Rejection", "UsageRecord", "bill"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_MICROSECONDS_PER_HOUR = 3_600_000_000


@dataclass(frozen=True)
class UsageRecord:
    """One exporter record: `gpu_count` GPUs of `gpu_type` used by `team` over `[start, end)`.

    Nothing is checked when a record is built: records come from exporters and may be wrong
    (naive timestamps, a gpu_count of 0 or 1.0, end before start). `bill` judges them.
    """

    record_id: str
    team: str
    gpu_type: str
    gpu_count: int
    start: datetime  # must be timezone-aware to be billed
    end: datetime  # must be timezone-aware to be billed


class RejectReason(StrEnum):
    """Why a record was not billed (the precedence among several faults is in `bill`)."""

    NAIVE_TIMESTAMP = "naive_timestamp"
    END_BEFORE_START = "end_before_start"
    BAD_GPU_COUNT = "bad_gpu_count"
    UNKNOWN_GPU_TYPE = "unknown_gpu_type"
    CONFLICTING_DUPLICATE = "conflicting_duplicate"
    OUTSIDE_PERIOD = "outside_period"


@dataclass(frozen=True)
class Rejection:
    """A record that was not billed, with the reason and a human-readable detail."""

    record_id: str
    reason: RejectReason
    detail: str  # which field, which value


@dataclass(frozen=True)
class LineItem:
    """One (team, gpu_type) line: exact GPU-seconds and the amount rounded once, to cents."""

    gpu_type: str
    gpu_seconds: Decimal  # exact, unrounded
    amount: Decimal  # rounded to cents


@dataclass(frozen=True)
class Invoice:
    """A team's invoice: lines sorted by gpu_type; total is the sum of the line amounts."""

    team: str
    lines: tuple[LineItem, ...]
    total: Decimal


@dataclass(frozen=True)
class BillingRun:
    """Every distinct record_id is in exactly one of `billed_ids` and `rejected`."""

    invoices: Mapping[str, Invoice]  # by team
    rejected: tuple[Rejection, ...]  # sorted by (record_id, reason)
    billed_ids: frozenset[str]


def bill(
    records: Iterable[UsageRecord],
    prices: Mapping[str, Decimal],
    period_start: datetime,
    period_end: datetime,
) -> BillingRun:
    """Bill the part of each valid record inside `[period_start, period_end)`.

    Prices are `Decimal` per GPU-hour. A record contributes `gpu_count * (end - start)`
    GPU-seconds, exactly, clipped to the period; each (team, gpu_type) line is priced from its
    exact GPU-seconds and rounded once, to cents, `ROUND_HALF_UP`; an invoice's total is the sum
    of its lines. Lines with zero GPU-seconds are omitted, and so is a team with no lines.

    A bad record never raises: it is rejected once, with the first reason that applies in the
    order CONFLICTING_DUPLICATE, NAIVE_TIMESTAMP, END_BEFORE_START, BAD_GPU_COUNT,
    UNKNOWN_GPU_TYPE, OUTSIDE_PERIOD. Copies of a record with identical content are billed once;
    records sharing a record_id with different content are all rejected. Every distinct
    record_id ends in exactly one of `billed_ids` and `rejected`. `records` is read once.

    Raises:
        TypeError: a price that is not a `Decimal`; a period bound that is not a `datetime`.
        ValueError: a negative or non-finite price; a naive period bound;
            `period_end <= period_start`.

    >>> from datetime import UTC
    >>> t0 = datetime(2026, 3, 1, tzinfo=UTC)
    >>> r = UsageRecord("r1", "vision", "h100", 2, t0, t0.replace(minute=45))
    >>> run = bill([r], {"h100": Decimal("2.49")}, t0, t0.replace(day=31))
    >>> run.invoices["vision"].total  # 2 GPUs x 0.75 h x 2.49 = 3.735
    Decimal('3.74')
    """
    _check_prices(prices)
    lo = _period_bound(period_start, "period_start")
    hi = _period_bound(period_end, "period_end")
    if hi <= lo:
        raise ValueError(f"period_end must be after period_start, got {period_start}..{period_end}")

    # Pass 1: one representative per record_id; an id seen with two contents is conflicting.
    # Identical content is an equivalence relation, so "some copy differs from the first"
    # does not depend on which copy came first.
    first: dict[str, UsageRecord] = {}
    conflicting: set[str] = set()
    for record in records:
        seen = first.setdefault(record.record_id, record)
        if seen is not record and _content(seen) != _content(record):
            conflicting.add(record.record_id)
    rejected = [
        Rejection(rid, RejectReason.CONFLICTING_DUPLICATE, f"record_id {rid!r} has two contents")
        for rid in conflicting
    ]
    for rid in conflicting:
        del first[rid]

    # Pass 2: judge and clip each record, and add its span to its (team, gpu_type, gpu_count)
    # group. A span is a timedelta: adding two is exact and one C operation, while turning one
    # into integer microseconds is several big-int operations. So that happens once per group,
    # with the multiplication by gpu_count, not once per record: at 200,000 records, 0.7x the
    # time. Invariant: each id of `first` is billed unless it ends in `rejected`.
    spans: dict[tuple[str, str, int], timedelta] = {}
    carried: dict[tuple[str, str, int], int] = {}  # microseconds moved out of a full timedelta
    for record in first.values():
        span = _judge(record, prices, lo, hi)
        if not isinstance(span, timedelta):
            rejected.append(span)
            continue
        key = (record.team, record.gpu_type, record.gpu_count)
        try:
            spans[key] += span
        except KeyError:
            spans[key] = span
        except OverflowError:  # past timedelta's 999,999,999 days: carry the sum as an int
            carried[key] = carried.get(key, 0) + spans[key] // _MICROSECOND
            spans[key] = span

    # Exact GPU-microseconds per (team, gpu_type) line; every value > 0.
    usage: dict[tuple[str, str], int] = {}
    for (team, gpu_type, count), span in spans.items():
        micros = count * (carried.get((team, gpu_type, count), 0) + span // _MICROSECOND)
        if micros:
            usage[team, gpu_type] = usage.get((team, gpu_type), 0) + micros

    for rejection in rejected:
        first.pop(rejection.record_id, None)  # what is left of `first` is billed
    rejected.sort(key=lambda r: (r.record_id, r.reason))
    return BillingRun(
        invoices=_invoices(usage, prices),
        rejected=tuple(rejected),
        billed_ids=frozenset(first),
    )


def _check_prices(prices: Mapping[str, Decimal]) -> None:
    for gpu_type, price in prices.items():
        if not isinstance(price, Decimal):
            raise TypeError(
                f"price for {gpu_type!r} must be a Decimal, got {type(price).__name__} {price!r}"
            )
        if not price.is_finite() or price < 0:
            raise ValueError(f"price for {gpu_type!r} must be finite and >= 0, got {price}")


def _period_bound(value: datetime, name: str) -> timedelta:
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime, got {type(value).__name__} {value!r}")
    if value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got naive {value}")
    return _since_epoch(value)


def _since_epoch(value: object) -> timedelta:
    """The instant `value` as an exact offset from the epoch.

    Raises TypeError unless `value` is an aware datetime. Subtracting an instant in another
    tzinfo goes through UTC, so a record across a daylight-saving change in a local zone lasts
    its true elapsed time (`end - start` within one zone would subtract wall clocks).
    """
    if not isinstance(value, datetime):
        raise TypeError(f"not a datetime: {value!r}")
    return value - _EPOCH  # TypeError when naive


def _content(record: UsageRecord) -> tuple[object, ...]:
    """What makes two copies identical: equal fields of equal types, timestamps as instants."""
    stamps: list[tuple[type, object]] = []
    for stamp in (record.start, record.end):
        try:
            stamps.append((type(stamp), _since_epoch(stamp)))
        except TypeError:
            stamps.append((type(stamp), stamp))
    return (type(record.team), record.team, type(record.gpu_type), record.gpu_type,
            type(record.gpu_count), record.gpu_count, *stamps)


def _judge(record: UsageRecord, prices: Mapping[str, Decimal], lo: timedelta,
           hi: timedelta) -> timedelta | Rejection:
    """The part of the record's `[start, end)` inside `[lo, hi)`, or why it is rejected."""
    rid, start, end, count = record.record_id, record.start, record.end, record.gpu_count
    try:  # `_since_epoch` of both, written out: two calls per record cost 8% more
        if not (isinstance(start, datetime) and isinstance(end, datetime)):
            raise TypeError
        s, e = start - _EPOCH, end - _EPOCH  # TypeError when naive
    except TypeError:  # naive, or not a datetime at all
        return Rejection(rid, RejectReason.NAIVE_TIMESTAMP,
                         f"start={start!r}, end={end!r}: both must be timezone-aware datetimes")
    if e < s:
        return Rejection(rid, RejectReason.END_BEFORE_START, f"end {end} is before start {start}")
    if type(count) is not int or count < 1:
        return Rejection(rid, RejectReason.BAD_GPU_COUNT,
                         f"gpu_count must be an int >= 1, got {count!r}")
    if record.gpu_type not in prices:
        return Rejection(rid, RejectReason.UNKNOWN_GPU_TYPE,
                         f"gpu_type {record.gpu_type!r} has no price")
    # A zero-length record is inside when lo <= s < hi; a longer one when it overlaps [lo, hi).
    if s >= hi or (e <= lo and not s == e == lo):
        return Rejection(rid, RejectReason.OUTSIDE_PERIOD,
                         f"[{start}, {end}) does not overlap the billing period")
    return (e if e < hi else hi) - (s if s > lo else lo)


def _invoices(
    usage: Mapping[tuple[str, str], int], prices: Mapping[str, Decimal]
) -> dict[str, Invoice]:
    """One invoice per team with usage; `Decimal` is built here, once per line."""
    lines: dict[str, list[tuple[LineItem, int]]] = {}
    for (team, gpu_type), micros in sorted(usage.items()):
        cents = _cents(micros, prices[gpu_type])
        item = LineItem(gpu_type, Decimal(f"{micros}e-6"), Decimal(f"{cents}e-2"))
        lines.setdefault(team, []).append((item, cents))
    return {
        team: Invoice(team, tuple(item for item, _ in items),
                      Decimal(f"{sum(cents for _, cents in items)}e-2"))
        for team, items in lines.items()
    }


def _cents(micros: int, price: Decimal) -> int:
    """GPU-microseconds at `price` per GPU-hour, in cents, rounded half up, in exact integers."""
    num, den = price.as_integer_ratio()
    num, den = micros * num * 100, den * _MICROSECONDS_PER_HOUR
    return (2 * num + den) // (2 * den)  # floor(x + 1/2): half up, as amounts are never negative
