"""Shared by job_api's hidden checks: a settable clock, a synchronous client, problem checks."""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any

import anyio
import httpx
import job_api
from anyio.from_thread import BlockingPortal

JOB = {"name": "train-llama", "command": ["python", "train.py"], "gpus": 8}
T0 = 1_700_000_000.0
DAY = 24 * 3600.0


class Clock:
    """A settable clock that moves `step` per call.

    `fail` makes that many calls raise, once `skip` more calls have succeeded.
    """

    def __init__(self, t: float = T0, step: float = 0.0) -> None:
        self.t, self.step, self.fail, self.skip = t, step, 0, 0

    def __call__(self) -> float:
        if self.fail and self.skip:
            self.skip -= 1
        elif self.fail:
            self.fail -= 1
            raise RuntimeError("clock failure injected by the test")
        self.t += self.step
        return self.t - self.step


# Set by `Api.gather(hold=...)` in the held request's task; the app's worker threads inherit it.
_HOLD: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("hold", default=None)


class RendezvousClock(Clock):
    """The first two calls wait for each other, so two concurrent requests overlap in time.

    A call made for a request that `Api.gather` holds then waits until every other request of
    that gather has its response, so the held request finishes last whatever the scheduler does.

    A solution that reads the clock while holding its own lock makes the first caller wait out
    the bound alone; the outcome is the same, only slower.
    """

    def __init__(self, *, armed: bool = True) -> None:
        super().__init__()
        self._calls, self._lock = 0 if armed else 2, threading.Lock()
        self._barrier = threading.Barrier(2, timeout=2.0)

    def arm(self) -> None:
        """The next two calls wait for each other."""
        with self._lock:
            self._calls, self._barrier = 0, threading.Barrier(2, timeout=2.0)

    def __call__(self) -> float:
        with self._lock:
            self._calls += 1
            first = self._calls <= 2
        if first:
            with suppress(threading.BrokenBarrierError):
                self._barrier.wait()
        held = _HOLD.get()
        if held is not None:
            held.wait(timeout=2.0)
        return self.t


class Api:
    """A synchronous face on the app through httpx's ASGI transport, run through an anyio portal.

    Requests go straight to the transport: an `AsyncClient` would add cookie, redirect and URL
    merging work to each of the thousands of requests a grading makes, none of which the app
    sees. No redirect is followed either way.
    """

    def __init__(self, app: Any, portal: BlockingPortal) -> None:
        self.portal = portal
        self.transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        self._keys = 0

    async def send(self, method: str, url: str, **kw: Any) -> httpx.Response:
        request = httpx.Request(method, f"http://jobs.test{url}", **kw)
        response = await self.transport.handle_async_request(request)
        response.request = request
        await response.aread()
        return response

    def call(self, method: str, url: str, **kw: Any) -> httpx.Response:
        return self.portal.call(partial(self.send, method, url, **kw))

    def submit(self, body: Any = None, key: str | None = None) -> httpx.Response:
        self._keys += 1
        headers = {"Idempotency-Key": key if key is not None else f"key-{self._keys}"}
        return self.call("POST", "/jobs", json=JOB if body is None else body, headers=headers)

    def create(self, body: Any = None) -> dict[str, Any]:
        r = self.submit(body)
        assert r.status_code == 201, f"POST /jobs answered {r.status_code} {r.text}, expected 201"
        job: dict[str, Any] = r.json()
        return job

    def gather(self, calls: list[tuple[str, str, dict[str, Any]]],
               hold: int | None = None) -> list[httpx.Response]:
        """Send the calls at once; the clock holds call `hold` until the others are answered."""
        release, waiting = threading.Event(), len(calls) - (hold is not None)

        async def run() -> list[httpx.Response]:
            out: list[httpx.Response | None] = [None] * len(calls)

            async def one(i: int, method: str, url: str, kw: dict[str, Any]) -> None:
                nonlocal waiting
                if i == hold:
                    _HOLD.set(release)
                try:
                    out[i] = await self.send(method, url, **kw)
                finally:
                    if i != hold:
                        waiting -= 1
                        if waiting == 0:
                            release.set()

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
            assert page["items"] or "cursor" not in params, (
                f"a next_cursor led to an empty page (GET /jobs {params}): it must be null when"
                " no further item exists")
            if page["next_cursor"] is None:
                return items
            assert page["items"], f"GET /jobs {params} returned an empty page with a next_cursor"
            params["cursor"] = page["next_cursor"]
            if between is not None:
                between()
        raise AssertionError("paging did not end")


_loops: list[tuple[threading.Thread, BlockingPortal]] = []


def portal() -> BlockingPortal:
    """The run's event loop, on a thread of its own, started by the first check that asks.

    One loop serves every check (each check still gets a new app and database): starting a
    loop and its thread per check cost more than most checks' requests. A loop that has ended
    (a submission stopped it) is replaced. The thread is a daemon, so a loop that a submission
    left blocked cannot keep the process alive.
    """
    if _loops and _loops[-1][0].is_alive():
        return _loops[-1][1]
    ready: queue.Queue[BlockingPortal] = queue.Queue()

    async def serve() -> None:
        async with BlockingPortal() as started:
            ready.put(started)
            await started.sleep_until_stopped()

    thread = threading.Thread(target=anyio.run, args=(serve,), daemon=True,
                              name="job_api checks' event loop")
    thread.start()
    _loops.append((thread, ready.get(timeout=30)))
    return _loops[-1][1]


@contextmanager
def open_api(database: str = ":memory:", clock: Callable[[], float] | None = None,
             app: Any = None) -> Iterator[Api]:
    """A client on `app`, or on a new app over `database` with `clock`."""
    # By default time moves on a little per call, so jobs made in turn are in a strict order
    # whatever the solution breaks ties with.
    if app is None:
        app = job_api.create_app(database, clock=clock or Clock(step=0.001))
    yield Api(app, portal())


def expect_problem(r: httpx.Response, *statuses: int) -> dict[str, Any]:
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


def unknown_id(job_id: Any) -> Any:
    return job_id + 1_000_000 if isinstance(job_id, int) else f"{job_id}x"


def epoch(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    from datetime import UTC, datetime
    stamp = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


ALLOWED = {"queued": {"running", "cancelled"}, "running": {"succeeded", "failed", "cancelling"},
           "cancelling": {"cancelled", "succeeded", "failed"}}
CANCEL = {"queued": "cancelled", "running": "cancelling"}
# The five operations, path parameters written `{}`.
OPERATIONS = [("post", "/jobs"), ("get", "/jobs"), ("get", "/jobs/{}"),
              ("post", "/jobs/{}/cancel"), ("post", "/jobs/{}/transitions")]


def drive(api: Api, job_id: Any, path: list[str]) -> None:
    for to in path:
        r = api.call("POST", f"/jobs/{job_id}/transitions", json={"to": to})
        assert r.status_code == 200, f"transition to {to} answered {r.status_code} {r.text}"
