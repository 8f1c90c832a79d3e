"""Hidden checks for job_api: every rule of the statement, the traps, bad input, concurrency."""

from __future__ import annotations

import gc
import re
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import job_api
import pytest
import uvicorn
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import given, settings
from hypothesis import strategies as st

_JOB = {"name": "train-llama", "command": ["python", "train.py"], "gpus": 8}
_T0 = 1_700_000_000.0
_DAY = 24 * 3600.0


class _Clock:
    """A settable clock that moves `step` per call; `fail` makes that many next calls raise."""

    def __init__(self, t: float = _T0, step: float = 0.0) -> None:
        self.t, self.step, self.fail = t, step, 0

    def __call__(self) -> float:
        if self.fail:
            self.fail -= 1
            raise RuntimeError("clock failure injected by the test")
        self.t += self.step
        return self.t - self.step


class _RendezvousClock(_Clock):
    """The first two calls wait for each other, so two concurrent requests overlap in time.

    A solution that reads the clock while holding its own lock makes the first caller wait out
    the bound alone; the outcome is the same, only slower.
    """

    def __init__(self) -> None:
        super().__init__()
        self._calls, self._lock = 0, threading.Lock()
        self._barrier = threading.Barrier(2, timeout=2.0)

    def __call__(self) -> float:
        with self._lock:
            self._calls += 1
            first = self._calls <= 2
        if first:
            with suppress(threading.BrokenBarrierError):
                self._barrier.wait()
        return self.t


class _Api:
    """A synchronous face on httpx.AsyncClient + ASGITransport, run through an anyio portal."""

    def __init__(self, app: Any, portal: BlockingPortal) -> None:
        self.portal = portal
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        self.client = httpx.AsyncClient(transport=transport, base_url="http://jobs.test")
        self._keys = 0

    def call(self, method: str, url: str, **kw: Any) -> httpx.Response:
        return self.portal.call(partial(self.client.request, method, url, **kw))

    def submit(self, body: Any = None, key: str | None = None) -> httpx.Response:
        self._keys += 1
        headers = {"Idempotency-Key": key if key is not None else f"key-{self._keys}"}
        return self.call("POST", "/jobs", json=_JOB if body is None else body, headers=headers)

    def create(self, body: Any = None) -> dict[str, Any]:
        r = self.submit(body)
        assert r.status_code == 201, f"POST /jobs answered {r.status_code} {r.text}, expected 201"
        job: dict[str, Any] = r.json()
        return job

    def gather(self, calls: list[tuple[str, str, dict[str, Any]]]) -> list[httpx.Response]:
        async def run() -> list[httpx.Response]:
            out: list[httpx.Response | None] = [None] * len(calls)

            async def one(i: int, method: str, url: str, kw: dict[str, Any]) -> None:
                out[i] = await self.client.request(method, url, **kw)

            async with anyio.create_task_group() as tg:
                for i, (method, url, kw) in enumerate(calls):
                    tg.start_soon(one, i, method, url, kw)
            return [r for r in out if r is not None]

        return self.portal.call(run)

    def walk(self, limit: int, state: str | None = None,
             between: Callable[[], object] | None = None) -> list[dict[str, Any]]:
        """Page through GET /jobs; `between` runs after each page but the last."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": limit} | ({"state": state} if state else {})
        for _ in range(300):  # more pages than any test has jobs: a cursor that never ends
            r = self.call("GET", "/jobs", params=params)
            assert r.status_code == 200, f"GET /jobs {params} answered {r.status_code} {r.text}"
            page = r.json()
            items += page["items"]
            if page["next_cursor"] is None:
                return items
            assert page["items"], f"GET /jobs {params} returned an empty page with a next_cursor"
            params["cursor"] = page["next_cursor"]
            if between is not None:
                between()
        raise AssertionError("paging did not end")


@contextmanager
def _api(database: str = ":memory:", clock: Callable[[], float] | None = None) -> Iterator[_Api]:
    # By default time moves on a little per call, so jobs made in turn are in a strict order
    # whatever the solution breaks ties with.
    app = job_api.create_app(database, clock=clock or _Clock(step=0.001))
    with start_blocking_portal() as portal:
        api = _Api(app, portal)
        try:
            yield api
        finally:
            portal.call(api.client.aclose)


def _problem(r: httpx.Response, *statuses: int) -> dict[str, Any]:
    """Assert `r` is an RFC 9457 problem with one of `statuses`; return its body."""
    what = f"{r.request.method} {r.request.url.path} answered {r.status_code} {r.text[:300]}"
    assert r.status_code in statuses, f"{what}; expected {' or '.join(map(str, statuses))}"
    ctype = r.headers.get("content-type", "")
    assert ctype.startswith("application/problem+json"), (
        f"{what} with content-type {ctype}, expected application/problem+json")
    body: dict[str, Any] = r.json()
    missing = {"type", "title", "status", "detail"} - set(body)
    assert not missing and body["status"] == r.status_code, f"{what}: problem body lacks {missing}"
    return body


def _unknown(job_id: Any) -> Any:
    return job_id + 1_000_000 if isinstance(job_id, int) else f"{job_id}x"


def _epoch(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    from datetime import UTC, datetime
    stamp = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


# --- submission and idempotency -------------------------------------------------------------

@pytest.mark.points(2)
def test_first_post_answers_201_with_location_and_job() -> None:
    """A first POST answers 201, the queued job, and Location /jobs/{id} that serves it."""
    with _api() as api:
        r = api.submit(key="k1")
        assert r.status_code == 201, f"POST /jobs answered {r.status_code} {r.text}, expected 201"
        job = r.json()
        assert {k: job.get(k) for k in _JOB} == _JOB and job.get("state") == "queued", job
        assert r.headers.get("location") == f"/jobs/{job['id']}", r.headers
        assert "idempotent-replayed" not in r.headers, "a first request is not a replay"
        got = api.call("GET", r.headers["location"])
        assert got.status_code == 200 and got.json() == job, f"GET Location gave {got.text}"


@pytest.mark.points(3)
def test_retry_with_same_key_creates_no_second_job() -> None:
    """A retry with the same key and body creates no second job."""
    with _api() as api:
        first, again = api.submit(key="k1"), api.submit(key="k1")
        assert first.status_code == 201, f"POST /jobs answered {first.status_code} {first.text}"
        items = api.call("GET", "/jobs").json()["items"]
        assert len(items) == 1, f"two POSTs with one key left {len(items)} jobs, expected 1"
        assert again.json()["id"] == first.json()["id"], "the retry names another job"


@pytest.mark.points(3)
def test_replay_returns_the_original_201_response() -> None:
    """A replay answers the stored 201: same body even after the job moved on, same Location."""
    with _api() as api:
        first = api.submit(key="k1")
        job = first.json()
        api.call("POST", f"/jobs/{job['id']}/cancel")
        again = api.submit(key="k1")
        assert again.status_code == 201, f"replay answered {again.status_code}, expected 201"
        assert again.json() == job, f"replay body {again.text}, expected the original {job}"
        assert again.headers.get("location") == first.headers.get("location")
        assert again.headers.get("idempotent-replayed") == "true", again.headers


@pytest.mark.points(2)
def test_same_body_in_another_key_order_or_spacing_replays() -> None:
    """The body is compared as canonical JSON: key order and whitespace do not matter."""
    with _api() as api:
        job = api.submit(key="k1").json()
        text = ' {\n  "gpus" : 8 , "command":[ "python","train.py" ],"name" : "train-llama"} '
        r = api.call("POST", "/jobs", content=text.encode(),
                     headers={"Idempotency-Key": "k1", "Content-Type": "application/json"})
        assert r.status_code == 201 and r.json() == job, f"reordered body got {r.status_code}"
        assert r.headers.get("idempotent-replayed") == "true", r.headers


@pytest.mark.points(3)
def test_same_key_different_body_is_422_with_its_own_type() -> None:
    """Same key, different body: 422 whose problem type differs from a validation error's."""
    with _api() as api:
        api.submit(key="k1")
        reused = _problem(api.submit(_JOB | {"gpus": 16}, key="k1"), 422)
        invalid = _problem(api.submit(_JOB | {"gpus": 0}, key="k2"), 422)
        assert reused["type"] != invalid["type"], f"both 422s have type {reused['type']!r}"
        assert len(api.call("GET", "/jobs").json()["items"]) == 1


@pytest.mark.category("edge_cases")
@pytest.mark.points(2)
def test_validation_failure_leaves_key_reusable() -> None:
    """A request rejected as invalid stores nothing: a corrected retry with its key succeeds."""
    with _api() as api:
        _problem(api.submit(_JOB | {"gpus": 65}, key="k1"), 422)
        r = api.submit(key="k1")
        assert r.status_code == 201, f"corrected retry answered {r.status_code} {r.text}"


@pytest.mark.category("edge_cases")
@pytest.mark.points(3)
def test_server_error_leaves_key_reusable() -> None:
    """A request that fails inside the server stores nothing: a retry with its key succeeds."""
    clock = _Clock()
    with _api(clock=clock) as api:
        clock.fail = 1
        failed = api.submit(key="k1")
        assert failed.status_code >= 500, f"with a failing clock POST answered {failed.status_code}"
        for attempt in range(2):
            r = api.submit(key="k1")
            assert r.status_code == 201, f"retry {attempt + 1} answered {r.status_code} {r.text}"
        assert len(api.call("GET", "/jobs").json()["items"]) == 1


@pytest.mark.category("edge_cases")
def test_key_replays_within_24_hours() -> None:
    """A key used 23 hours ago still replays."""
    clock = _Clock()
    with _api(clock=clock) as api:
        job = api.create()
        clock.t += _DAY - 3600
        r = api.submit(key="key-1")
        assert r.status_code == 201 and r.json()["id"] == job["id"], r.text


@pytest.mark.category("edge_cases")
def test_key_expires_after_24_hours() -> None:
    """A key older than 24 hours is forgotten: the request is new and creates a job."""
    clock = _Clock()
    with _api(clock=clock) as api:
        job = api.create()
        clock.t += _DAY + 60
        r = api.submit(_JOB | {"gpus": 2}, key="key-1")
        assert r.status_code == 201, f"expired key answered {r.status_code} {r.text}"
        assert r.json()["id"] != job["id"] and "idempotent-replayed" not in r.headers


def test_timestamps_come_from_the_injected_clock() -> None:
    """created_at and updated_at come from the injected clock."""
    clock = _Clock()
    with _api(clock=clock) as api:
        job = api.create()
        clock.t += 90
        moved = api.call("POST", f"/jobs/{job['id']}/transitions", json={"to": "running"}).json()
        assert _epoch(job["created_at"]) == _epoch(job["updated_at"]) == _T0, job
        assert _epoch(moved["created_at"]) == _T0 and _epoch(moved["updated_at"]) == _T0 + 90


# --- cancel and the state machine -----------------------------------------------------------

_ALLOWED = {"queued": {"running", "cancelled"}, "running": {"succeeded", "failed", "cancelling"},
            "cancelling": {"cancelled", "succeeded", "failed"}}
_CANCEL = {"queued": "cancelled", "running": "cancelling"}


def _drive(api: _Api, job_id: Any, path: list[str]) -> None:
    for to in path:
        r = api.call("POST", f"/jobs/{job_id}/transitions", json={"to": to})
        assert r.status_code == 200, f"transition to {to} answered {r.status_code} {r.text}"


@pytest.mark.points(2)
@pytest.mark.parametrize(("path", "after"), [([], "cancelled"), (["running"], "cancelling")])
def test_cancel_answers_202_and_moves_the_job(path: list[str], after: str) -> None:
    """Cancel answers 202 with the job: queued becomes cancelled, running becomes cancelling."""
    with _api() as api:
        job = api.create()
        _drive(api, job["id"], path)
        r = api.call("POST", f"/jobs/{job['id']}/cancel")
        assert r.status_code == 202, f"cancel answered {r.status_code} {r.text}, expected 202"
        assert r.json()["state"] == after, f"cancel gave {r.json()}, expected state {after}"
        assert api.call("GET", f"/jobs/{job['id']}").json()["state"] == after


@pytest.mark.points(2)
@pytest.mark.parametrize("path", [[], ["running"]])
def test_second_cancel_is_a_202_no_op(path: list[str]) -> None:
    """Cancelling a cancelling or cancelled job answers 202 and changes nothing."""
    clock = _Clock()
    with _api(clock=clock) as api:
        job = api.create()
        _drive(api, job["id"], path)
        first = api.call("POST", f"/jobs/{job['id']}/cancel").json()
        clock.t += 5
        r = api.call("POST", f"/jobs/{job['id']}/cancel")
        assert r.status_code == 202, f"second cancel answered {r.status_code} {r.text}"
        assert api.call("GET", f"/jobs/{job['id']}").json() == first == r.json()


@pytest.mark.points(2)
@pytest.mark.parametrize("end", ["succeeded", "failed"])
def test_cancel_of_a_finished_job_is_409_naming_its_state(end: str) -> None:
    """Cancelling a succeeded or failed job is 409 naming the state; the job is unchanged."""
    with _api() as api:
        job = api.create()
        _drive(api, job["id"], ["running", end])
        problem = _problem(api.call("POST", f"/jobs/{job['id']}/cancel"), 409)
        assert end in problem["detail"], f"409 detail {problem['detail']!r} does not name {end}"
        assert api.call("GET", f"/jobs/{job['id']}").json()["state"] == end


@pytest.mark.points(2)
@pytest.mark.parametrize("end", ["succeeded", "failed", "cancelled"])
def test_terminal_states_never_change(end: str) -> None:
    """No transition leaves a terminal state: each attempt is 409 and the job is unchanged."""
    with _api() as api:
        job = api.create()
        _drive(api, job["id"], ["running", end] if end != "cancelled" else [])
        if end == "cancelled":
            api.call("POST", f"/jobs/{job['id']}/cancel")
        before = api.call("GET", f"/jobs/{job['id']}").json()
        for to in ("running", "succeeded", "failed", "cancelled"):
            r = api.call("POST", f"/jobs/{job['id']}/transitions", json={"to": to})
            _problem(r, 409)
        assert api.call("GET", f"/jobs/{job['id']}").json() == before


@pytest.mark.points(2)
def test_transition_outside_the_table_is_409_naming_allowed_targets() -> None:
    """A transition not in the table is 409 and its detail names the allowed targets."""
    with _api() as api:
        job = api.create()
        problem = _problem(api.call("POST", f"/jobs/{job['id']}/transitions",
                                    json={"to": "succeeded"}), 409)
        for allowed in ("running", "cancelled"):
            assert allowed in problem["detail"], f"detail {problem['detail']!r} lacks {allowed}"
        assert api.call("GET", f"/jobs/{job['id']}").json()["state"] == "queued"


@pytest.mark.points(3)
@pytest.mark.timeout(60)
def test_jobs_follow_the_state_machine() -> None:
    """Any sequence of cancels and transitions matches the state-machine model."""
    with _api() as api:

        @settings(max_examples=30)
        @given(st.lists(st.sampled_from(["cancel", "running", "succeeded", "failed",
                                         "cancelled"]), max_size=7))
        def run(ops: list[str]) -> None:
            job, state = api.create(), "queued"
            for op in ops:
                if op == "cancel":
                    r = api.call("POST", f"/jobs/{job['id']}/cancel")
                    want = 409 if state in ("succeeded", "failed") else 202
                    state = _CANCEL.get(state, state)
                else:
                    r = api.call("POST", f"/jobs/{job['id']}/transitions", json={"to": op})
                    want = 200 if op in _ALLOWED.get(state, ()) else 409
                    state = op if want == 200 else state
                assert r.status_code == want, f"{op} answered {r.status_code}, model says {want}"
            got = api.call("GET", f"/jobs/{job['id']}").json()["state"]
            assert got == state, f"after {ops} the job is {got}, model says {state}"

        run()


# --- listing ---------------------------------------------------------------------------------

@pytest.mark.points(2)
def test_listing_is_newest_first_with_ties_in_a_total_order() -> None:
    """GET /jobs is newest first, and jobs with equal created_at keep one stable order."""
    clock = _Clock()
    with _api(clock=clock) as api:
        ids = []
        for i in range(9):
            clock.t = _T0 + i // 3  # three jobs per timestamp
            ids.append(api.create()["id"])
        listed = [j["id"] for j in api.call("GET", "/jobs").json()["items"]]
        assert sorted(listed, key=ids.index) == ids and len(listed) == 9
        for group in range(3):
            want = set(ids[3 * group: 3 * group + 3])
            assert set(listed[6 - 3 * group: 9 - 3 * group]) == want, f"order {listed}"
        assert [j["id"] for j in api.walk(2)] == listed, "paging disagrees with one big page"


@pytest.mark.points(2)
@pytest.mark.timeout(60)
@settings(max_examples=10)
@given(st.integers(0, 10), st.integers(1, 4))
def test_paging_visits_every_job_once(n: int, limit: int) -> None:
    """Paging returns every job exactly once and no trailing empty page."""
    with _api() as api:
        ids = [api.create()["id"] for _ in range(n)]
        got = [j["id"] for j in api.walk(limit)]
        assert got == ids[::-1], f"{n} jobs paged by {limit} gave {got}, expected {ids[::-1]}"


@pytest.mark.points(4)
def test_paging_while_submitting_neither_skips_nor_repeats() -> None:
    """Jobs submitted between pages shift nothing: each earlier job appears exactly once."""
    clock = _Clock()
    with _api(clock=clock) as api:
        before = []
        for _ in range(7):
            clock.t += 0.001
            before.append(api.create()["id"])

        def submit_two() -> None:
            clock.t += 1
            api.create()
            api.create()

        seen = [j["id"] for j in api.walk(3, between=submit_two)]
        assert len(seen) == len(set(seen)), f"a job was repeated: {seen}"
        assert [i for i in seen if i in before] == before[::-1], f"paging gave {seen}"


@pytest.mark.points(2)
def test_state_filter_combines_with_the_cursor() -> None:
    """A state filter repeated on every page lists exactly the jobs in that state."""
    with _api() as api:
        ids = [api.create()["id"] for _ in range(9)]
        for job_id in ids[::2]:
            _drive(api, job_id, ["running"])
        got = [j["id"] for j in api.walk(2, state="running")]
        assert got == ids[::2][::-1], f"state=running paged by 2 gave {got}"
        assert [j["id"] for j in api.walk(3, state="queued")] == ids[1::2][::-1]


@pytest.mark.category("bad_input")
@pytest.mark.points(2)
def test_garbled_tampered_or_forged_cursor_is_400() -> None:
    """A garbled, tampered or hand-made cursor is 400."""
    with _api() as api:
        for _ in range(5):
            api.create()
        cursor = api.call("GET", "/jobs", params={"limit": 2}).json()["next_cursor"]
        mid = len(cursor) // 2
        tampered = cursor[:mid] + ("B" if cursor[mid] in "Aa" else "A") + cursor[mid + 1:]
        for bad in ("garbage", "!!!", "2", "MiM", "eyJvZmZzZXQiOiAyfQ", tampered, cursor[:-3]):
            _problem(api.call("GET", "/jobs", params={"cursor": bad}), 400)


@pytest.mark.points(3)
def test_file_database_survives_restart(tmp_path: Path) -> None:
    """A new app on the same file serves the jobs, replays keys and honours old cursors."""
    db = str(tmp_path / "jobs.sqlite3")
    with _api(db) as api:
        jobs = [api.create(_JOB | {"gpus": g}) for g in (1, 2, 3)]
        cursor = api.call("GET", "/jobs", params={"limit": 2}).json()["next_cursor"]
    with _api(db) as api:
        assert api.call("GET", f"/jobs/{jobs[0]['id']}").json() == jobs[0]
        r = api.submit(_JOB | {"gpus": 2}, key="key-2")
        assert r.status_code == 201 and r.json() == jobs[1], f"replay after restart: {r.text}"
        page = api.call("GET", "/jobs", params={"limit": 2, "cursor": cursor})
        assert page.status_code == 200, f"old cursor answered {page.status_code} {page.text}"
        assert [j["id"] for j in page.json()["items"]] == [jobs[0]["id"]]


# --- bad input -------------------------------------------------------------------------------

@pytest.mark.category("bad_input")
@pytest.mark.points(2)
@pytest.mark.parametrize("headers", [{}, {"Idempotency-Key": ""}, {"Idempotency-Key": "k" * 256}])
def test_missing_empty_or_long_idempotency_key_is_400(headers: dict[str, str]) -> None:
    """Idempotency-Key missing, empty or over 255 characters is 400 and creates nothing."""
    with _api() as api:
        api.create()
        _problem(api.call("POST", "/jobs", json=_JOB, headers=headers), 400)
        r = api.submit(key="k" * 255)
        assert r.status_code == 201, f"a 255-character key answered {r.status_code}"
        assert len(api.call("GET", "/jobs").json()["items"]) == 2


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("gpus", ["4", True, 4.0])
def test_gpus_is_not_coerced_from_a_string_bool_or_float(gpus: Any) -> None:
    """Types are strict: "4", true or 4.0 for gpus is a 422 problem, not coerced."""
    with _api() as api:
        api.create()
        _problem(api.submit(_JOB | {"gpus": gpus}), 422)
        assert len(api.call("GET", "/jobs").json()["items"]) == 1, f"gpus={gpus!r} made a job"


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("change", [
    {"gpus": 0}, {"gpus": 65}, {"gpus": None}, {"name": ""}, {"name": "n" * 201}, {"name": 5},
    {"command": []}, {"command": "ls"}, {"command": ["ls", 1]}, {"priority": 1},
])
def test_invalid_or_unknown_fields_are_422(change: dict[str, Any]) -> None:
    """Wrong types, out-of-range values and unknown fields are 422 problems."""
    with _api() as api:
        api.create()
        _problem(api.submit(_JOB | change), 422)
        assert len(api.call("GET", "/jobs").json()["items"]) == 1, f"{change} created a job"


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("content", [b"{", b"[]", b"null", b'{"name": "x"}', b"\xff\xfe"])
def test_malformed_json_is_a_4xx_problem(content: bytes) -> None:
    """Malformed or incomplete JSON is a 4xx problem, never a 5xx."""
    with _api() as api:
        api.create()
        headers = {"Idempotency-Key": "k", "Content-Type": "application/json"}
        _problem(api.call("POST", "/jobs", content=content, headers=headers), 400, 422)


@pytest.mark.category("bad_input")
def test_body_over_64_kib_is_413() -> None:
    """A request body over 64 KiB is 413."""
    with _api() as api:
        api.create()
        big = _JOB | {"command": ["x" * 1000] * 70}
        _problem(api.submit(big), 413)
        ok = _JOB | {"command": ["x" * 1000] * 60}
        assert api.submit(ok).status_code == 201, "a 61 KB body was refused"


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"limit": "ten"},
                                    {"state": "sleeping"}])
def test_bad_list_parameters_are_422(params: dict[str, Any]) -> None:
    """limit outside 1..100 or an unknown state filter is 422."""
    with _api() as api:
        api.create()
        _problem(api.call("GET", "/jobs", params=params), 422)


@pytest.mark.category("bad_input")
def test_unknown_state_name_in_a_transition_is_422() -> None:
    """A transition to an unknown state name is 422; queued or cancelling as a target is 4xx."""
    with _api() as api:
        job = api.create()
        url = f"/jobs/{job['id']}/transitions"
        _problem(api.call("POST", url, json={"to": "paused"}), 422)
        _problem(api.call("POST", url, json={"to": "queued"}), 409, 422)
        _problem(api.call("POST", url, json={}), 422)


@pytest.mark.category("bad_input")
def test_unknown_job_is_404() -> None:
    """GET, cancel and transitions on an unknown id are 404."""
    with _api() as api:
        missing = _unknown(api.create()["id"])
        _problem(api.call("GET", f"/jobs/{missing}"), 404)
        _problem(api.call("POST", f"/jobs/{missing}/cancel"), 404)
        _problem(api.call("POST", f"/jobs/{missing}/transitions", json={"to": "running"}), 404)


_OPERATIONS = [("post", "/jobs"), ("get", "/jobs"), ("get", "/jobs/{}"),
               ("post", "/jobs/{}/cancel"), ("post", "/jobs/{}/transitions")]
_PROBLEMS = {("post", "/jobs"): (400, 422), ("get", "/jobs"): (400, 422),
             ("get", "/jobs/{}"): (404,), ("post", "/jobs/{}/cancel"): (404, 409),
             ("post", "/jobs/{}/transitions"): (404, 409, 422)}


def _operation(doc: dict[str, Any], method: str, path: str) -> tuple[str, dict[str, Any]]:
    for template, ops in doc["paths"].items():
        if re.sub(r"\{[^}]*\}", "{}", template) == path and method in ops:
            return template, ops[method]
    raise AssertionError(f"the OpenAPI document has no {method.upper()} {path}")


@pytest.mark.category("bad_input")
@pytest.mark.parametrize(("method", "path"), list(_PROBLEMS))
def test_problem_responses_are_documented(method: str, path: str) -> None:
    """Each operation documents its problem responses as application/problem+json."""
    with _api() as api:
        api.create()
        _, op = _operation(api.call("GET", "/openapi.json").json(), method, path)
        for code in _PROBLEMS[(method, path)]:
            content = op.get("responses", {}).get(str(code), {}).get("content", {})
            assert "application/problem+json" in content, (
                f"{method.upper()} {path} does not document {code} as application/problem+json")


def _resolve(schema: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = doc
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


_CHARS = st.characters(codec="utf-8", exclude_categories=["Cs"])  # no lone surrogates
_TEXT = st.text(_CHARS, max_size=12)
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | _TEXT,
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=6)


def _values(schema: dict[str, Any], doc: dict[str, Any]) -> st.SearchStrategy[Any]:  # noqa: PLR0911 one return per JSON type
    """Values valid for a JSON schema (the subset FastAPI emits)."""
    schema = _resolve(schema, doc)
    if "anyOf" in schema or "oneOf" in schema:
        return st.one_of([_values(s, doc) for s in schema.get("anyOf", schema.get("oneOf", []))])
    if "enum" in schema or "const" in schema:
        return st.sampled_from(schema.get("enum", [schema.get("const")]))
    kind = schema.get("type")
    if kind == "object":
        props = {k: _values(v, doc) for k, v in schema.get("properties", {}).items()}
        need = set(schema.get("required", ()))
        return st.fixed_dictionaries({k: v for k, v in props.items() if k in need},
                                     optional={k: v for k, v in props.items() if k not in need})
    if kind == "array":
        low = schema.get("minItems", 0)
        return st.lists(_values(schema.get("items", {}), doc), min_size=low,
                        max_size=min(schema.get("maxItems", low + 3), low + 3))
    if kind == "string":
        low = schema.get("minLength", 0)
        top = min(schema.get("maxLength", low + 12), low + 12)
        return st.text(_CHARS, min_size=low, max_size=top)
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return _JSON


def _conforms(value: Any, schema: dict[str, Any], doc: dict[str, Any]) -> bool:
    """Whether `value` matches a JSON schema (the subset FastAPI emits)."""
    schema = _resolve(schema, doc)
    if "anyOf" in schema or "oneOf" in schema:
        return any(_conforms(value, s, doc) for s in schema.get("anyOf", schema.get("oneOf", [])))
    if "enum" in schema and value not in schema["enum"]:
        return False
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool,
             "integer": int, "number": int | float, "null": type(None)}
    kind = schema.get("type")
    if kind in kinds and (not isinstance(value, kinds[kind])
                          or (isinstance(value, bool) and kind in ("integer", "number"))):
        return False
    if kind == "object":
        props = schema.get("properties", {})
        return set(schema.get("required", ())) <= set(value) and all(
            _conforms(v, props[k], doc) for k, v in value.items() if k in props)
    if kind == "array":
        return all(_conforms(v, schema.get("items", {}), doc) for v in value)
    return True


def _request(doc: dict[str, Any], template: str, op: dict[str, Any],
             ids: list[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Requests for one operation: schema-valid parts mixed with malformed ones."""
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for p in op.get("parameters", []):
        valid = _values(p.get("schema", {}), doc)
        if p["in"] == "path":
            valid = st.sampled_from(ids) | valid if ids else valid
        junk = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=300)
        if p["in"] == "header":  # httpx sends ASCII header values only
            valid = st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=20)
        if p["in"] == "path":
            junk = st.text("abcxyz0123456789-_", min_size=1, max_size=30)
        parts[p["in"] + ":" + p["name"]] = valid | junk | st.none()
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
    if body:
        valid = _values(body.get("schema", {}), doc)
        extra = valid.flatmap(lambda v: st.just(v | {"zz": 1} if isinstance(v, dict) else v))
        parts["body"] = valid | valid | extra | _JSON
    return st.fixed_dictionaries(parts).map(lambda d: {"template": template, **d})


def _send(api: _Api, method: str, req: dict[str, Any]) -> httpx.Response:
    url, params, headers = req["template"], {}, {}
    for name, value in req.items():
        where, _, key = name.partition(":")
        if value is None or where not in ("path", "query", "header"):
            continue
        if where == "path":
            url = url.replace("{" + key + "}", str(value))
        elif where == "query":
            params[key] = str(value).lower() if isinstance(value, bool) else value
        else:
            headers[key] = str(value)
    url = re.sub(r"\{[^}]*\}", "1", url)
    if "body" in req:
        return api.call(method, url, params=params, headers=headers, json=req["body"])
    return api.call(method, url, params=params, headers=headers)


@pytest.mark.category("bad_input")
@pytest.mark.points(2)
@pytest.mark.timeout(60)
@pytest.mark.parametrize(("method", "path"), _OPERATIONS)
def test_fuzzed_requests_get_no_5xx_and_match_the_schema(method: str, path: str) -> None:
    """Requests built from the OpenAPI document never get 5xx or an undocumented response."""
    with _api() as api:
        ids = [api.create(_JOB | {"gpus": g})["id"] for g in (1, 2, 3)]
        _drive(api, ids[1], ["running"])
        doc = api.call("GET", "/openapi.json").json()
        template, op = _operation(doc, method, path)

        @settings(max_examples=25)
        @given(_request(doc, template, op, ids))
        def fuzz(req: dict[str, Any]) -> None:
            r = _send(api, method, req)
            assert r.status_code < 500, f"{method.upper()} {req} answered {r.status_code}"
            doc_r = op["responses"].get(str(r.status_code), op["responses"].get("default"))
            assert doc_r is not None, f"{method.upper()} {req}: {r.status_code} is undocumented"
            ctype = r.headers.get("content-type", "").split(";")[0]
            if r.status_code >= 400:
                _problem(r, r.status_code)
            schema = doc_r.get("content", {}).get(ctype, {}).get("schema")
            assert schema is None or _conforms(r.json(), schema, doc), (
                f"{method.upper()} {req}: {r.status_code} body {r.text[:200]} breaks its schema")

        fuzz()


# --- concurrency and real HTTP ---------------------------------------------------------------

@pytest.mark.category("concurrency")
@pytest.mark.points(5)
@pytest.mark.timeout(30)
def test_concurrent_duplicates_create_exactly_one_job() -> None:
    """Sixteen concurrent POSTs with one key create one job; each gets it replayed or a 409."""
    with _api(clock=_RendezvousClock()) as api:
        post = ("POST", "/jobs", {"json": _JOB, "headers": {"Idempotency-Key": "same"}})
        answers = api.gather([post] * 16)
        codes = sorted(r.status_code for r in answers)
        assert all(c in (201, 409) for c in codes), f"concurrent duplicates answered {codes}"
        created = {r.text for r in answers if r.status_code == 201}
        assert len(created) == 1, f"duplicates got {len(created)} different jobs: {created}"
        for r in answers:
            assert r.status_code == 201 or r.headers.get("retry-after"), "409 lacks Retry-After"
        items = api.call("GET", "/jobs").json()["items"]
        assert len(items) == 1, f"16 concurrent duplicates left {len(items)} jobs, expected 1"


@pytest.mark.category("concurrency")
@pytest.mark.points(2)
@pytest.mark.timeout(30)
def test_concurrent_distinct_keys_create_distinct_jobs() -> None:
    """Sixteen concurrent POSTs with distinct keys create sixteen distinct jobs."""
    with _api(clock=_RendezvousClock()) as api:
        answers = api.gather([("POST", "/jobs", {"json": _JOB | {"gpus": 1 + i},
                                                 "headers": {"Idempotency-Key": f"k{i}"}})
                              for i in range(16)])
        assert [r.status_code for r in answers] == [201] * 16, [r.text for r in answers]
        ids = {r.json()["id"] for r in answers}
        listed = {j["id"] for j in api.walk(100)}
        assert len(ids) == 16 and listed == ids, f"created {ids}, listed {listed}"


@pytest.mark.category("concurrency")
@pytest.mark.points(2)
@pytest.mark.timeout(30)
def test_serves_real_http_under_uvicorn() -> None:
    """`job_api.app` served by uvicorn on 127.0.0.1 creates, replays and serves a job."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)  # connections queue here until uvicorn accepts: no polling for readiness
    config = uvicorn.Config(job_api.app, log_level="warning", lifespan="off", ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with httpx.Client(base_url=base, timeout=10.0, trust_env=False) as client:
            key = {"Idempotency-Key": f"uvicorn-{time.monotonic_ns()}"}
            first = client.post("/jobs", json=_JOB, headers=key)
            assert first.status_code == 201, f"POST /jobs over HTTP answered {first.status_code}"
            again = client.post("/jobs", json=_JOB, headers=key)
            assert again.status_code == 201 and again.json() == first.json(), again.text
            got = client.get(first.headers["location"])
            assert got.status_code == 200 and got.json() == first.json(), got.text
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
    assert not thread.is_alive(), "uvicorn did not shut down"


# --- performance -----------------------------------------------------------------------------

def _page_time(api: _Api) -> float:
    start = time.perf_counter()
    r = api.call("GET", "/jobs", params={"limit": 1})
    elapsed = time.perf_counter() - start
    assert r.status_code == 200, f"GET /jobs answered {r.status_code} {r.text[:200]}"
    return elapsed


@pytest.mark.category("performance")
@pytest.mark.points(3)
@pytest.mark.timeout(90)
def test_page_cost_does_not_grow_with_the_number_of_jobs() -> None:
    """A page costs about the same with 8x more jobs (a keyset query, not a scan)."""
    wide = _JOB | {"command": ["--flag"] * 4000}  # rows a scan must decode: the cost is visible
    with start_blocking_portal() as portal:  # one event loop and one thread pool for both apps
        few = _Api(job_api.create_app(clock=_Clock()), portal)
        many = _Api(job_api.create_app(clock=_Clock()), portal)
        for _ in range(12):
            few.create(wide)
        for _ in range(96):
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
            portal.call(few.client.aclose)
            portal.call(many.client.aclose)
        ratio = statistics.median(ratios)
    assert ratio < 2.5, (
        f"a page of 1 took {ratio:.1f}x longer at 96 jobs than at 12 (median of 31 paired"
        " requests); expected about 1x and at most 2.5x (a scan of every job gives about 5x)")
