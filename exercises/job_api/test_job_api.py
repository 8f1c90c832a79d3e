"""Visible tests for job_api: the README's worked examples and two properties.

Run them with `uv run pytest exercises/job_api`. Each test drives the app in-process through
httpx.AsyncClient + ASGITransport, behind a small synchronous helper.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import example, given, settings
from hypothesis import strategies as st
from job_api import create_app

JOB = {"name": "train-llama", "command": ["python", "train.py"], "gpus": 8}


class Clock:
    """A clock the test sets by hand; it moves `step` seconds per call."""

    def __init__(self, t: float = 1_700_000_000.0, step: float = 0.0) -> None:
        self.t, self.step = t, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t - self.step


class Api:
    """Synchronous calls to the app, made by an AsyncClient running in an anyio portal."""

    def __init__(self, portal: BlockingPortal, clock: Clock) -> None:
        transport = httpx.ASGITransport(app=create_app(clock=clock), raise_app_exceptions=False)
        self.client = httpx.AsyncClient(transport=transport, base_url="http://jobs.test")
        self.portal = portal

    def call(self, method: str, url: str, **kw: Any) -> httpx.Response:
        return self.portal.call(partial(self.client.request, method, url, **kw))

    def submit(self, body: Any, key: str | None) -> httpx.Response:
        headers = {} if key is None else {"Idempotency-Key": key}
        return self.call("POST", "/jobs", json=body, headers=headers)


@contextmanager
def api_for(clock: Clock | None = None) -> Iterator[Api]:
    with start_blocking_portal() as portal:
        api = Api(portal, clock or Clock(step=0.001))  # jobs made in turn: a strict order
        try:
            yield api
        finally:
            portal.call(api.client.aclose)


def expect(r: httpx.Response, status: int) -> Any:
    """Assert the status; return the JSON body."""
    assert r.status_code == status, (
        f"{r.request.method} {r.request.url.path} answered {r.status_code} {r.text[:300]},"
        f" expected {status}")
    return r.json()


def test_first_post_creates_a_queued_job() -> None:
    """Example 1: a first POST answers 201, the queued job and its Location."""
    with api_for() as api:
        job = expect(api.submit(JOB, key="a1b2"), 201)
        assert job["state"] == "queued", job
        assert {k: job[k] for k in JOB} == JOB, job
        r = api.call("GET", f"/jobs/{job['id']}")
        assert expect(r, 200) == job


def test_retry_with_the_same_key_replays_the_job() -> None:
    """Example 2: a retry with the same key gets the same 201 back, marked as a replay."""
    with api_for() as api:
        first = api.submit(JOB, key="a1b2")
        job = expect(first, 201)
        again = api.submit(JOB, key="a1b2")
        assert expect(again, 201) == job
        assert again.headers.get("Idempotent-Replayed") == "true", dict(again.headers)
        assert again.headers.get("Location") == f"/jobs/{job['id']}", dict(again.headers)
        assert first.headers.get("Location") == f"/jobs/{job['id']}", dict(first.headers)
        assert len(expect(api.call("GET", "/jobs"), 200)["items"]) == 1, "a second job appeared"


@pytest.mark.category("bad_input")
def test_same_key_with_a_different_body_is_422() -> None:
    """The same key with a different body is 422, an application/problem+json."""
    with api_for() as api:
        expect(api.submit(JOB, key="a1b2"), 201)
        r = api.submit(JOB | {"gpus": 64}, key="a1b2")
        problem = expect(r, 422)
        assert r.headers["content-type"].startswith("application/problem+json"), r.headers
        assert problem["status"] == 422, problem


@pytest.mark.category("bad_input")
def test_missing_idempotency_key_is_400() -> None:
    """A POST without Idempotency-Key is 400, an application/problem+json."""
    with api_for() as api:
        r = api.submit(JOB, key=None)
        problem = expect(r, 400)
        assert r.headers["content-type"].startswith("application/problem+json"), r.headers
        assert set(problem) >= {"type", "title", "status", "detail"}, problem


def test_cancel_of_a_running_job_answers_202_cancelling() -> None:
    """Example 3: cancelling a running job answers 202 and the job is cancelling."""
    with api_for() as api:
        job = expect(api.submit(JOB, key="a1b2"), 201)
        expect(api.call("POST", f"/jobs/{job['id']}/transitions", json={"to": "running"}), 200)
        cancelled = expect(api.call("POST", f"/jobs/{job['id']}/cancel"), 202)
        assert cancelled["state"] == "cancelling", cancelled
        done = api.call("POST", f"/jobs/{job['id']}/transitions", json={"to": "cancelled"})
        assert expect(done, 200)["state"] == "cancelled"


def test_a_finished_job_cannot_be_cancelled() -> None:
    """Cancelling a succeeded job is 409."""
    with api_for() as api:
        job = expect(api.submit(JOB, key="a1b2"), 201)
        for to in ("running", "succeeded"):
            expect(api.call("POST", f"/jobs/{job['id']}/transitions", json={"to": to}), 200)
        expect(api.call("POST", f"/jobs/{job['id']}/cancel"), 409)


def test_pages_come_newest_first_with_a_cursor() -> None:
    """Example 4: five jobs in pages of two: newest first, and no cursor after the last page."""
    clock = Clock()
    with api_for(clock) as api:
        ids = []
        for i in range(5):
            clock.t += 1
            ids.append(expect(api.submit(JOB, key=f"k{i}"), 201)["id"])
        first = expect(api.call("GET", "/jobs", params={"limit": 2}), 200)
        assert [j["id"] for j in first["items"]] == [ids[4], ids[3]], first
        params = {"limit": 2, "cursor": first["next_cursor"]}
        second = expect(api.call("GET", "/jobs", params=params), 200)
        assert [j["id"] for j in second["items"]] == [ids[2], ids[1]], second
        params["cursor"] = second["next_cursor"]
        third = expect(api.call("GET", "/jobs", params=params), 200)
        assert [j["id"] for j in third["items"]] == [ids[0]], third
        assert third["next_cursor"] is None, "the last page must have next_cursor null"


BODIES = st.fixed_dictionaries({
    "name": st.text(min_size=1, max_size=20),
    "command": st.lists(st.text(max_size=10), min_size=1, max_size=4),
    "gpus": st.integers(1, 64),
})


@pytest.mark.timeout(60)
def test_a_replay_is_identical_whatever_the_key_order() -> None:
    """For any valid body, a retry (keys in any order) replays exactly the first response."""
    with api_for() as api:
        keys = iter(range(10**6))

        @settings(max_examples=25)
        @given(body=BODIES, order=st.permutations(["name", "command", "gpus"]))
        @example(body=JOB, order=["gpus", "command", "name"])
        def retry(body: dict[str, Any], order: list[str]) -> None:
            key = f"key-{next(keys)}"
            first = api.submit(body, key=key)
            job = expect(first, 201)
            again = api.submit({k: body[k] for k in order}, key=key)
            assert expect(again, 201) == job, f"retry of {body} gave {again.text}, expected {job}"
            assert again.headers.get("Location") == first.headers.get("Location")
            newest = expect(api.call("GET", "/jobs", params={"limit": 1}), 200)["items"]
            assert newest == [job], f"the newest job is {newest}, expected only {job}: a duplicate?"

        retry()


@pytest.mark.timeout(60)
@settings(max_examples=10)
@given(n=st.integers(0, 10), limit=st.integers(1, 4))
@example(n=5, limit=2)
@example(n=4, limit=2)
def test_paging_returns_every_job_once_newest_first(n: int, limit: int) -> None:
    """Following next_cursor lists every job exactly once, newest first, with no empty page."""
    with api_for() as api:
        ids = [expect(api.submit(JOB, key=f"k{i}"), 201)["id"] for i in range(n)]
        seen: list[Any] = []
        params: dict[str, Any] = {"limit": limit}
        for _ in range(n + 2):  # more pages than jobs means the cursor never ends
            page = expect(api.call("GET", "/jobs", params=params), 200)
            assert page["items"] or not seen, f"an empty page after {seen}"
            seen += [j["id"] for j in page["items"]]
            if page["next_cursor"] is None:
                break
            params["cursor"] = page["next_cursor"]
        assert seen == ids[::-1], f"{n} jobs paged by {limit} gave {seen}, expected {ids[::-1]}"
