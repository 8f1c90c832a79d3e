"""GPU-hour invoices in exact money.

Fill in `bill`. The data classes are complete: use them as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import StrEnum

__all__ = ["BillingRun", "Invoice", "LineItem", "RejectReason", "Rejection", "UsageRecord", "bill"]


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
    raise NotImplementedError("bill: price the period's valid records per (team, gpu_type)")
