"""Hidden checks for job_api: the cost of a page as the number of jobs grows."""

from __future__ import annotations

import gc
import sqlite3
import statistics
import time
from typing import Any

import job_api
import kata_measure
import pytest
from job_api_helpers import JOB, Api, Clock, open_api


def _page_time(api: Api) -> float:
    start = time.perf_counter()
    r = api.call("GET", "/jobs", params={"limit": 1})
    elapsed = time.perf_counter() - start
    assert r.status_code == 200, f"GET /jobs answered {r.status_code} {r.text[:200]}"
    return elapsed


@pytest.mark.category("performance")
@pytest.mark.points(3)
@pytest.mark.timeout(90)
def test_page_cost_does_not_grow_with_the_number_of_jobs() -> None:
    """A page costs about the same with 16x more jobs (a keyset query, not a scan)."""
    wide = JOB | {"command": ["--flag"] * 4000}  # rows a scan must decode: the cost is visible
    with open_api(clock=Clock()) as few, open_api(clock=Clock()) as many:
        for _ in range(12):
            few.create(wide)
        for _ in range(192):
            many.create(wide)
        # Paired rounds, the order alternating: each ratio compares two requests made moments
        # apart, so load on the machine hits both alike; the median ignores rounds a burst of
        # load split. The cyclic GC is paused while timing, as timeit does.
        ratios: list[float] = []
        gc.collect()
        gc.disable()
        try:
            for i in range(31):
                pair = (few, many) if i % 2 else (many, few)
                first, second = _page_time(pair[0]), _page_time(pair[1])
                ratios.append(second / first if i % 2 else first / second)
        finally:
            gc.enable()
        ratio = statistics.median(ratios)
    kata_measure.report("paired wall-time median", ratio, 4.0)
    assert ratio < 4.0, (
        f"a page of 1 took {ratio:.1f}x longer at 192 jobs than at 12 (median of 31 paired"
        " requests); expected about 1x and at most 4x (a scan of every job gives about 12x)")


class _SqlSteps:
    """Counts the SQLite virtual-machine steps of every connection opened while it is installed.

    The statement asks for SQLite through the standard library's `sqlite3`; wrapping
    `sqlite3.connect` measures the database work a request does, without timing anything.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.steps, connect = 0, sqlite3.connect

        def counting(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            db: sqlite3.Connection = connect(*args, **kwargs)
            db.set_progress_handler(self._tick, _GRAIN)
            return db

        monkeypatch.setattr(sqlite3, "connect", counting)
        if getattr(job_api, "connect", None) is connect:  # `from sqlite3 import connect`
            monkeypatch.setattr(job_api, "connect", counting)

    def _tick(self) -> int:
        self.steps += _GRAIN
        return 0  # carry on


_GRAIN = 10  # the progress handler runs every _GRAIN steps


def _page_steps(monkeypatch: pytest.MonkeyPatch, n: int, state: str | None,
                deep: bool, step: float = 0.0) -> int:
    """Steps of one page of 4 among `n` jobs, the first or a deep one; by default the jobs share
    one created_at (a clock that stands still: one bulk submission), else `step` apart."""
    sql = _SqlSteps(monkeypatch)
    with open_api(clock=Clock(step=step)) as api:
        for _ in range(n):
            api.create()
        params: dict[str, Any] = {"state": state} if state else {}
        for seen in range(0, n - 8 if deep else 0, 100):  # pages up to 8 jobs from the end
            params["limit"] = min(100, n - 8 - seen)
            r = api.call("GET", "/jobs", params=params)
            assert r.status_code == 200, f"GET /jobs {params} answered {r.status_code} {r.text}"
            params["cursor"] = r.json()["next_cursor"]
            assert params["cursor"], f"GET /jobs {params} over {n} jobs gave no next_cursor"
        params["limit"] = 4
        before = sql.steps
        page = api.call("GET", "/jobs", params=params)
        steps = sql.steps - before
        assert page.status_code == 200, f"GET /jobs {params} answered {page.status_code}"
        assert len(page.json()["items"]) == 4, f"GET /jobs {params} over {n} jobs: {page.text}"
    return steps


def _assert_flat(few: int, many: int, why: str) -> None:
    """`many` steps (the larger size) stay under twice `few` plus a constant; with no steps
    counted (no SQL went through sqlite3.connect) there is nothing this check can measure."""
    if few == 0:
        return
    kata_measure.count(2 * few + 200, many, label="count: SQLite steps")
    assert many < 2 * few + 200, why


@pytest.mark.category("performance")
@pytest.mark.parametrize("state", [None, "queued"])
@pytest.mark.timeout(60)
def test_deep_page_among_jobs_sharing_created_at_costs_the_same(
        monkeypatch: pytest.MonkeyPatch, state: str | None) -> None:
    """A deep page among jobs that share one created_at costs the same with 8x more of them."""
    few = _page_steps(monkeypatch, 16, state, deep=True)
    many = _page_steps(monkeypatch, 128, state, deep=True)
    _assert_flat(few, many, (
        f"a deep page took {many} SQLite steps among 128 jobs sharing one created_at, {few} among"
        " 16: a keyset query must seek to the cursor, not walk every job with its created_at"
        " (a row value `(created_at, id) < (?, ?)` does)"))


@pytest.mark.category("performance")
@pytest.mark.timeout(60)
def test_a_deep_page_costs_the_same_sqlite_steps_with_16x_more_jobs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A page deep in the list costs the same SQLite steps with 16x more jobs."""
    few = _page_steps(monkeypatch, 16, None, deep=True, step=0.001)
    many = _page_steps(monkeypatch, 256, None, deep=True, step=0.001)
    _assert_flat(few, many, (
        f"a page 8 jobs from the end took {many} SQLite steps with 248 newer jobs before its "
        f"cursor, {few} with 8: a keyset query must seek to the cursor, not walk the newer jobs "
        "(SQLite scans the whole index for `created_at < ? OR (created_at = ? AND id < ?)`)"))


@pytest.mark.category("performance")
@pytest.mark.timeout(60)
def test_first_page_costs_the_same_sqlite_steps_with_8x_more_jobs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The first page costs the same SQLite steps with 8x more jobs (an index, not a sort)."""
    few = _page_steps(monkeypatch, 16, None, deep=False)
    many = _page_steps(monkeypatch, 128, None, deep=False)
    _assert_flat(few, many, (
        f"the first page took {many} SQLite steps at 128 jobs, {few} at 16: an index on the"
        " listing order lets SQLite read one page instead of sorting every job"))


def _rare_state_page_steps(monkeypatch: pytest.MonkeyPatch, n: int) -> int:
    """Steps of the first page filtered to a state only the oldest of `n + 1` jobs is in."""
    sql = _SqlSteps(monkeypatch)
    with open_api(clock=Clock(step=0.001)) as api:
        rare = api.create()["id"]
        r = api.call("POST", f"/jobs/{rare}/cancel")
        assert r.status_code == 202, f"cancel of a queued job answered {r.status_code} {r.text}"
        for _ in range(n):
            api.create()
        before = sql.steps
        page = api.call("GET", "/jobs", params={"state": "cancelled", "limit": 1})
        steps = sql.steps - before
        assert page.status_code == 200, f"GET /jobs?state=cancelled answered {page.status_code}"
        got = [j["id"] for j in page.json()["items"]]
        assert got == [rare], f"GET /jobs?state=cancelled&limit=1 gave {got}, expected [{rare}]"
    return steps


@pytest.mark.category("performance")
@pytest.mark.timeout(60)
def test_a_page_filtered_to_a_rare_state_costs_the_same_with_8x_more_jobs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A page filtered by state costs the same SQLite steps with 8x more jobs in other states."""
    few = _rare_state_page_steps(monkeypatch, 16)
    many = _rare_state_page_steps(monkeypatch, 128)
    _assert_flat(few, many, (
        f"the first page of state=cancelled (one job, the oldest) took {many} SQLite steps with"
        f" 128 queued jobs newer than it, {few} with 16: the filtered order needs an index of"
        " its own (state, then the listing order), or SQLite walks every newer job to find it"))
