"""Shared by billing's hidden checks: records, zones, a brute-force model and a CPU timer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from decimal import Decimal
from fractions import Fraction
from typing import Any

from billing import BillingRun, LineItem, RejectReason, UsageRecord, bill
from hypothesis import strategies as st

R = RejectReason
P0 = datetime(2026, 3, 1, tzinfo=UTC)  # the period used unless a check says otherwise
P1 = datetime(2026, 4, 1, tzinfo=UTC)
END = 31 * 24 * 60  # P1 in minutes after P0
PRICES: dict[str, Any] = {"h100": Decimal("3.60"), "a100": Decimal("1.10")}  # h100: 0.1 c/s
MIN = timedelta(minutes=1)
SEC = timedelta(seconds=1)
US = timedelta(microseconds=1)
TOKYO = timezone(timedelta(hours=9))
NEW_YORK = timezone(timedelta(hours=-5))
NAIVE = datetime(2026, 3, 2, 9)


class Cet(tzinfo):
    """Central European time in 2026: +01:00, and +02:00 from 29 March to 25 October."""

    _SPRING = datetime(2026, 3, 29, 2)  # wall clocks jump from 02:00 to 03:00
    _AUTUMN = datetime(2026, 10, 25, 2)  # wall clocks run 02:00-03:00 twice (fold=1: 2nd time)

    def utcoffset(self, dt: datetime | None) -> timedelta:
        if dt is None:
            return timedelta(hours=1)
        wall = dt.replace(tzinfo=None, fold=0)
        if self._AUTUMN <= wall < self._AUTUMN + timedelta(hours=1):
            summer = dt.fold == 0
        else:
            summer = self._SPRING <= wall < self._AUTUMN
        return timedelta(hours=2 if summer else 1)

    def dst(self, dt: datetime | None) -> timedelta:
        return self.utcoffset(dt) - timedelta(hours=1)

    def tzname(self, dt: datetime | None) -> str:
        return "CEST" if self.dst(dt) else "CET"


CET = Cet()


class _NoOffset(tzinfo):
    """A "floating" zone that knows no offset: by Python's rule, its datetimes are naive."""

    def utcoffset(self, dt: datetime | None) -> None:
        return None

    def dst(self, dt: datetime | None) -> None:
        return None

    def tzname(self, dt: datetime | None) -> str:
        return "floating"


FLOATING = _NoOffset()


def rec(rid: str = "r1", start: Any = 0, end: Any = 60, **fields: Any) -> UsageRecord:
    """A record; int start/end are minutes after P0, anything else is used as it is."""
    s = P0 + start * MIN if type(start) is int else start
    e = P0 + end * MIN if type(end) is int else end
    row: dict[str, Any] = {"team": "vision", "gpu_type": "h100", "gpu_count": 1, **fields}
    return UsageRecord(rid, row["team"], row["gpu_type"], row["gpu_count"], s, e)


def run_of(records: Iterable[UsageRecord], prices: Mapping[str, Any] = PRICES,
           start: Any = P0, end: Any = P1) -> BillingRun:
    """`bill` over March 2026 (or the given period) at PRICES (or the given prices)."""
    return bill(records, prices, start, end)


def reasons(run: BillingRun) -> list[tuple[str, RejectReason]]:
    return [(r.record_id, r.reason) for r in run.rejected]


def lines_of(run: BillingRun) -> dict[str, list[tuple[str, Fraction, Decimal]]]:
    """Invoices by team as (gpu_type, GPU-seconds, amount) in the run's order."""
    return {team: [(li.gpu_type, Fraction(li.gpu_seconds), li.amount) for li in inv.lines]
            for team, inv in run.invoices.items()}


def only_line(run: BillingRun, team: str = "vision") -> LineItem | None:
    invoice = run.invoices.get(team)
    return invoice.lines[0] if invoice is not None and len(invoice.lines) == 1 else None


def total_of(run: BillingRun, team: str = "vision") -> Decimal | None:
    invoice = run.invoices.get(team)
    return None if invoice is None else invoice.total


def priced(price: str, minutes: list[int]) -> Decimal | None:
    """Total of one-GPU records of the given lengths at `price` per hour."""
    records, at = [], 0
    for i, length in enumerate(minutes):
        records.append(rec(f"r{i}", at, at + length, gpu_type="x"))
        at += length
    return total_of(run_of(records, {"x": Decimal(price)}))


def cents_half_up(gpu_seconds: Fraction, price: Decimal) -> Decimal:
    """The exact amount of a line, rounded once to cents, half up (amounts are never < 0)."""
    cents = int(gpu_seconds * Fraction(price) / 36 + Fraction(1, 2))
    return Decimal(f"{cents}e-2")  # exact: scaleb would round to the context's 28 digits


# --- Random runs and a brute-force model over a short period -----------------------------------

PH = P0 + timedelta(hours=6)  # a short period, so that records straddle both ends
PRICE = st.integers(0, 99_999).map(lambda n: Decimal(n).scaleb(-4))
PRICE_MAPS = st.fixed_dictionaries({"h100": PRICE, "a100": PRICE})
SOME_PRICES = {"h100": Decimal("2.4875"), "a100": Decimal("1.1")}
SOME_RUN = [rec("a"), rec("a", gpu_count=2), rec("b", -30, 30), rec("c", gpu_type="tpu"),
            rec("d", 90, 150, gpu_type="a100", gpu_count=3), rec("e", 400, 420)]


def utc(t: object) -> datetime | None:
    return t.astimezone(UTC) if isinstance(t, datetime) and t.utcoffset() is not None else None


def content(r: UsageRecord) -> list[tuple[type, object]]:
    return [(type(v), utc(v) or v) for v in (r.team, r.gpu_type, r.gpu_count, r.start, r.end)]


def a_billed_record(run: BillingRun, records: list[UsageRecord],
                    pick: int) -> tuple[UsageRecord, datetime, datetime] | None:
    """The billed record numbered `pick` (modulo their number) with its start and end in UTC;
    None when the run billed nothing."""
    if not run.billed_ids:
        return None
    rid = sorted(run.billed_ids)[pick % len(run.billed_ids)]
    record = next(r for r in records if r.record_id == rid)
    start, end = utc(record.start), utc(record.end)
    assert start is not None and end is not None, f"billed {record} has a naive timestamp"
    return record, start, end

RAW = st.tuples(
    st.sampled_from("abcdefgh"), st.integers(-7200, 28_800), st.booleans(),
    st.integers(-600, 14_400), st.sampled_from([UTC, TOKYO, NEW_YORK, CET]),
    st.sampled_from(["", "", "", "", "naive", "none"]), st.sampled_from(["nlp", "vision"]),
    st.sampled_from(["h100", "a100", "tpu"]), st.sampled_from([1, 1, 2, 3, 8, 0, -1, True, 2.0]))


def record_of(raw: tuple[Any, ...]) -> UsageRecord:
    rid, at, odd, length, zone, flaw, team, gpu_type, count = raw
    start = P0 + at * SEC + odd * US
    start, end = start.astimezone(zone), (start + length * SEC).astimezone(zone)
    return rec(rid, start.replace(tzinfo=None) if flaw == "naive" else start,
               None if flaw == "none" else end, team=team, gpu_type=gpu_type, gpu_count=count)


@st.composite
def runs(draw: st.DrawFn) -> list[UsageRecord]:
    """Good and bad records around a short period, with colliding ids and exporter retries."""
    records = [record_of(raw) for raw in draw(st.lists(RAW, max_size=10))]
    for retry, zone in draw(st.lists(st.tuples(st.sampled_from(records), st.sampled_from(
            [UTC, TOKYO])), max_size=4)) if records else []:
        s, e = utc(retry.start), utc(retry.end)  # the same instants, told in another zone
        records.append(retry if s is None or e is None else
                       rec(retry.record_id, s.astimezone(zone), e.astimezone(zone),
                           team=retry.team, gpu_type=retry.gpu_type, gpu_count=retry.gpu_count))
    return records


def model(records: list[UsageRecord], prices: Mapping[str, Decimal],
          lo: datetime = P0, hi: datetime = PH) -> tuple[
        dict[str, list[tuple[str, Fraction, Decimal]]], list[tuple[str, RejectReason]], set[str]]:
    """Brute force over [lo, hi): each id judged once, each line priced with Fractions."""
    groups: dict[str, list[UsageRecord]] = {}
    for record in records:
        groups.setdefault(record.record_id, []).append(record)
    why: dict[str, RejectReason] = {}
    seconds: dict[tuple[str, str], Fraction] = {}
    for rid, copies in groups.items():
        r, s, e = copies[0], utc(copies[0].start), utc(copies[0].end)
        if any(content(c) != content(r) for c in copies):
            why[rid] = R.CONFLICTING_DUPLICATE
        elif s is None or e is None:
            why[rid] = R.NAIVE_TIMESTAMP
        elif e < s:
            why[rid] = R.END_BEFORE_START
        elif type(r.gpu_count) is not int or r.gpu_count < 1:
            why[rid] = R.BAD_GPU_COUNT
        elif r.gpu_type not in prices:
            why[rid] = R.UNKNOWN_GPU_TYPE
        elif not (lo <= s < hi if s == e else s < hi and e > lo):
            why[rid] = R.OUTSIDE_PERIOD
        elif s != e:
            span = Fraction((min(e, hi) - max(s, lo)) // US, 10**6)
            key = (r.team, r.gpu_type)
            seconds[key] = seconds.get(key, Fraction(0)) + r.gpu_count * span
    lines: dict[str, list[tuple[str, Fraction, Decimal]]] = {}
    for (team, gpu_type), secs in sorted(seconds.items()):
        lines.setdefault(team, []).append((gpu_type, secs, cents_half_up(secs, prices[gpu_type])))
    return lines, sorted(why.items()), set(groups) - set(why)


# --- Performance: workloads (measured with kata_measure) ------------------------------------


def workload(n: int) -> list[UsageRecord]:
    return [UsageRecord(f"id{i}", f"team{i % 7}", ("h100", "a100")[i % 2], 1 + i % 8,
                        P0 + i * SEC, P0 + (i + 3600 + i % 97) * SEC) for i in range(n)]


def read_fields(records: list[UsageRecord]) -> None:
    for r in records:
        _ = (r.record_id, r.team, r.gpu_type, r.gpu_count, r.end - r.start)


def rejected_workload(n: int) -> list[UsageRecord]:
    """`n` records with distinct ids, every one with a gpu_count of 0: a run of rejections."""
    return [UsageRecord(f"id{i}", "vision", "h100", 0, P0 + i * SEC, P0 + (i + 60) * SEC)
            for i in range(n)]


def descending_rejections(n: int) -> list[UsageRecord]:
    """`n` records with a gpu_count of 0, their ids in descending order: a run of rejections
    that arrives back to front."""
    start, end = P0 + SEC, P0 + 61 * SEC
    return [UsageRecord(f"id{i:07d}", "vision", "h100", 0, start, end) for i in range(n, 0, -1)]


def conflicts_workload(n: int) -> list[UsageRecord]:
    """`n` ids, each sent twice with a different gpu_count: `n` conflicting duplicates."""
    return [UsageRecord(f"id{i}", "vision", "h100", count, P0 + i * SEC, P0 + (i + 60) * SEC)
            for i in range(n) for count in (1, 2)]


def teams_workload(n: int) -> list[UsageRecord]:
    """`n` good records, each of a team of its own: `n` invoices of one line."""
    return [UsageRecord(f"id{i}", f"team{i}", "h100", 1, P0 + i * SEC, P0 + (i + 60) * SEC)
            for i in range(n)]


@dataclass(frozen=True)
class _Row:
    """A plain result row for the floors below (the candidate's classes are not timed twice)."""

    key: str
    kind: str
    value: object


def reject_each(records: list[UsageRecord]) -> tuple[_Row, ...]:
    """The plain work of rejecting every record: one row with a detail each, sorted by id."""
    rows = []
    for r in records:
        _ = r.end - r.start
        rows.append(_Row(r.record_id, "bad_gpu_count", f"gpu_count {r.gpu_count!r} of {r.team}"))
    return tuple(sorted(rows, key=lambda row: row.key))


def invoice_each(records: list[UsageRecord]) -> dict[str, _Row]:
    """The plain work of one invoice per record: its GPU-seconds and an amount as Decimals."""
    invoices = {}
    for r in records:
        micros = r.gpu_count * ((r.end - r.start) // US)
        line = (r.gpu_type, Decimal(f"{micros}e-6"), Decimal(f"{micros // 1000}e-2"))
        invoices[r.team] = _Row(r.team, "invoice", (line,))
    return invoices


def types_workload(n: int) -> tuple[list[UsageRecord], dict[str, Decimal]]:
    """`n` good records of one team, each of a gpu_type of its own, and their prices: one
    invoice of `n` lines."""
    prices = {f"gpu-{i:06d}": Decimal("2.49") for i in range(n)}
    return [UsageRecord(f"id{i}", "vision", f"gpu-{i:06d}", 1, P0 + i * SEC,
                        P0 + (i + 60) * SEC) for i in range(n)], prices


def line_each(records: list[UsageRecord]) -> _Row:
    """The plain work of one line per record, in one invoice: Decimals, sorted by gpu_type."""
    lines = []
    for r in records:
        micros = r.gpu_count * ((r.end - r.start) // US)
        lines.append((r.gpu_type, Decimal(f"{micros}e-6"), Decimal(f"{micros // 1000}e-2")))
    return _Row("vision", "invoice", tuple(sorted(lines)))
