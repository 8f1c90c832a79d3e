"""Hidden checks for job_api: concurrent duplicates and real HTTP under uvicorn."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import job_api
import pytest
import uvicorn
from job_api_helpers import (
    JOB,
    RendezvousClock,
    drive,
    open_api,
)


@pytest.mark.category("concurrency")
@pytest.mark.points(5)
@pytest.mark.timeout(30)
def test_concurrent_duplicates_create_exactly_one_job() -> None:
    """Sixteen concurrent POSTs with one key create one job; each gets it replayed or a 409."""
    with open_api(clock=RendezvousClock()) as api:
        post = ("POST", "/jobs", {"json": JOB, "headers": {"Idempotency-Key": "same"}})
        answers = api.gather([post] * 16)
        codes = sorted(r.status_code for r in answers)
        assert all(c in (201, 409) for c in codes), f"concurrent duplicates answered {codes}"
        created = {r.text for r in answers if r.status_code == 201}
        assert len(created) == 1, f"duplicates got {len(created)} different jobs: {created}"
        for r in answers:  # Retry-After in delta-seconds: a non-negative integer
            after = r.headers.get("retry-after", "")
            assert r.status_code == 201 or after.isdigit(), f"409 with Retry-After {after!r}"
        items = api.call("GET", "/jobs").json()["items"]
        assert len(items) == 1, f"16 concurrent duplicates left {len(items)} jobs, expected 1"


@pytest.mark.category("concurrency")
@pytest.mark.points(2)
@pytest.mark.timeout(30)
def test_concurrent_distinct_keys_create_distinct_jobs() -> None:
    """Sixteen concurrent POSTs with distinct keys create sixteen distinct jobs."""
    with open_api(clock=RendezvousClock()) as api:
        answers = api.gather([("POST", "/jobs", {"json": JOB | {"gpus": 1 + i},
                                                 "headers": {"Idempotency-Key": f"k{i}"}})
                              for i in range(16)])
        assert [r.status_code for r in answers] == [201] * 16, [r.text for r in answers]
        ids = {r.json()["id"] for r in answers}
        listed = {j["id"] for j in api.walk(100)}
        assert len(ids) == 16 and listed == ids, f"created {ids}, listed {listed}"


@pytest.mark.category("concurrency")
@pytest.mark.points(2)
@pytest.mark.timeout(60)
def test_cancel_racing_the_end_of_a_job_never_reopens_it() -> None:
    """A cancel racing the worker's "succeeded" leaves the job succeeded: cancel is 202 or 409."""
    clock = RendezvousClock(armed=False)
    with open_api(clock=clock) as api:
        for _ in range(8):
            job = api.create()
            drive(api, job["id"], ["running"])
            clock.arm()  # the two requests' clock reads meet: both are inside the server at once
            cancel, done = api.gather([  # and the cancel, once past the clock, ends last
                ("POST", f"/jobs/{job['id']}/cancel", {}),
                ("POST", f"/jobs/{job['id']}/transitions", {"json": {"to": "succeeded"}})], hold=0)
            assert done.status_code == 200, f"running -> succeeded answered {done.status_code}"
            assert cancel.status_code in (202, 409), f"cancel answered {cancel.status_code}"
            state = api.call("GET", f"/jobs/{job['id']}").json()["state"]
            assert state == "succeeded", (
                f"a cancel ({cancel.status_code}) racing running -> succeeded (200) left the job"
                f" {state}: cancel must read and write the state in one transaction")


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
            first = client.post("/jobs", json=JOB, headers=key)
            assert first.status_code == 201, f"POST /jobs over HTTP answered {first.status_code}"
            again = client.post("/jobs", json=JOB, headers=key)
            assert again.status_code == 201 and again.json() == first.json(), again.text
            got = client.get(first.headers["location"])
            assert got.status_code == 200 and got.json() == first.json(), got.text
    finally:
        # uvicorn notices within its 0.1 s tick, waits 0.1 s more, closes the socket and ends its
        # daemon thread: the check need not wait for that, nor does the submission decide it.
        server.should_exit = True
