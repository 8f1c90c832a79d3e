"""Hidden checks for job_api: submission, idempotency, cancel and the state machine."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from job_api_helpers import (
    ALLOWED,
    CANCEL,
    JOB,
    T0,
    Clock,
    drive,
    epoch,
    expect_problem,
    open_api,
)


@pytest.mark.points(2)
def test_first_post_answers_201_with_location_and_job() -> None:
    """A first POST answers 201, the queued job, and Location /jobs/{id} that serves it."""
    with open_api() as api:
        r = api.submit(key="k1")
        assert r.status_code == 201, f"POST /jobs answered {r.status_code} {r.text}, expected 201"
        job = r.json()
        assert {k: job.get(k) for k in JOB} == JOB and job.get("state") == "queued", job
        assert r.headers.get("location") == f"/jobs/{job['id']}", r.headers
        assert "idempotent-replayed" not in r.headers, "a first request is not a replay"
        got = api.call("GET", r.headers["location"])
        assert got.status_code == 200 and got.json() == job, f"GET Location gave {got.text}"


@pytest.mark.points(3)
def test_retry_with_same_key_creates_no_second_job() -> None:
    """A retry with the same key and body creates no second job."""
    with open_api() as api:
        first, again = api.submit(key="k1"), api.submit(key="k1")
        assert first.status_code == 201, f"POST /jobs answered {first.status_code} {first.text}"
        items = api.call("GET", "/jobs").json()["items"]
        assert len(items) == 1, f"two POSTs with one key left {len(items)} jobs, expected 1"
        assert again.json()["id"] == first.json()["id"], "the retry names another job"


@pytest.mark.points(3)
def test_replay_returns_the_original_201_response() -> None:
    """A replay answers the stored 201: same body even after the job moved on, same Location."""
    with open_api() as api:
        first = api.submit(key="k1")
        job = first.json()
        api.call("POST", f"/jobs/{job['id']}/cancel")
        again = api.submit(key="k1")
        assert again.status_code == 201, f"replay answered {again.status_code}, expected 201"
        assert again.json() == job, f"replay body {again.text}, expected the original {job}"
        assert again.headers.get("location") == first.headers.get("location")
        assert again.headers.get("idempotent-replayed") == "true", again.headers
        ctype = again.headers.get("content-type", "")
        assert ctype.startswith("application/json"), (
            f"replay answered with content-type {ctype!r}, expected the stored application/json")


@pytest.mark.points(2)
def test_same_body_in_another_key_order_or_spacing_replays() -> None:
    """The body is compared as canonical JSON: key order and whitespace do not matter."""
    with open_api() as api:
        job = api.submit(key="k1").json()
        text = ' {\n  "gpus" : 8 , "command":[ "python","train.py" ],"name" : "train-llama"} '
        r = api.call("POST", "/jobs", content=text.encode(),
                     headers={"Idempotency-Key": "k1", "Content-Type": "application/json"})
        assert r.status_code == 201 and r.json() == job, f"reordered body got {r.status_code}"
        assert r.headers.get("idempotent-replayed") == "true", r.headers


@pytest.mark.points(3)
def test_same_key_different_body_is_422_with_its_own_type() -> None:
    """Same key, different body: 422 whose problem type differs from a validation error's."""
    with open_api() as api:
        api.submit(key="k1")
        reused = expect_problem(api.submit(JOB | {"gpus": 16}, key="k1"), 422)
        invalid = expect_problem(api.submit(JOB | {"gpus": 0}, key="k2"), 422)
        assert reused["type"] != invalid["type"], f"both 422s have type {reused['type']!r}"
        assert len(api.call("GET", "/jobs").json()["items"]) == 1


_WRITES = [("cancel of a queued job", [], "cancel", None),
           ("cancel of a running job", ["running"], "cancel", None),
           ("transition queued -> running", [], "transitions", {"to": "running"}),
           ("transition running -> succeeded", ["running"], "transitions", {"to": "succeeded"})]


@pytest.mark.category("edge_cases")
def test_a_cancel_or_transition_that_fails_inside_the_server_changes_nothing() -> None:
    """A cancel or transition that fails inside the server (5xx) leaves the job as it was."""
    for what, path, action, body in _WRITES:
        for skip in range(3):  # the clock fails at its first, second, ... read of the request
            clock = Clock()
            with open_api(clock=clock) as api:
                job_id = api.create()["id"]
                drive(api, job_id, path)
                before = api.call("GET", f"/jobs/{job_id}").json()
                clock.t += 60
                clock.fail, clock.skip = 1, skip
                r = api.call("POST", f"/jobs/{job_id}/{action}", json=body)
                clock.fail = 0
                after = api.call("GET", f"/jobs/{job_id}").json()
                if r.status_code >= 500:
                    assert after == before, (
                        f"the {what} answered {r.status_code} (clock read {skip + 1} failed), "
                        f"yet the job changed from {before} to {after}; expected no change: a "
                        "request that fails inside the server stores nothing (one transaction)")
                else:
                    assert r.status_code in (200, 202) and after != before, (
                        f"the {what} answered {r.status_code} {r.text[:200]} and left {after}")


@pytest.mark.category("edge_cases")
def test_a_failure_inside_the_server_is_a_5xx_problem() -> None:
    """A request that fails inside the server answers a 5xx application/problem+json body."""
    clock = Clock()
    with open_api(clock=clock) as api:
        one, two = api.create()["id"], api.create()["id"]
        clock.fail = 1_000_000  # every read of the clock raises from now on
        submit = {"json": JOB, "headers": {"Idempotency-Key": "k"}}
        for method, url, kw in (("POST", "/jobs", submit), ("POST", f"/jobs/{one}/cancel", {}),
                                ("POST", f"/jobs/{two}/transitions", {"json": {"to": "running"}})):
            r = api.call(method, url, **kw)
            assert r.status_code >= 500, (
                f"with a clock that raises, {method} {url} answered {r.status_code} {r.text[:200]}")
            expect_problem(r, r.status_code)


_BODY = st.fixed_dictionaries({
    "name": st.sampled_from(["a", "a b", "a|b"]),
    "command": st.lists(st.sampled_from(["a", "b", "a b", "|", ""]), min_size=1, max_size=3),
    "gpus": st.integers(1, 3),
})


@pytest.mark.points(2)
@pytest.mark.timeout(60)
def test_any_other_body_with_the_key_is_422() -> None:
    """With one key, a body equal as JSON replays; any other body is 422."""
    keys = itertools.count()
    with open_api() as api:  # one app: each example takes a key of its own

        @settings(max_examples=15)
        @example({"name": "a", "command": ["a b"], "gpus": 1},  # joined by a space: equal
                 {"name": "a", "command": ["a", "b"], "gpus": 1})
        @example({"name": "a", "command": ["a|b"], "gpus": 1},  # joined by "|": equal
                 {"name": "a|b", "command": ["b"], "gpus": 1})
        @example({"name": "a", "command": ["a"], "gpus": 1},
                 {"name": "a", "command": ["a"], "gpus": 1})
        @given(_BODY, _BODY)
        def run(first: dict[str, Any], second: dict[str, Any]) -> None:
            key = f"k{next(keys)}"
            job = api.submit(first, key=key).json()
            r = api.submit(second, key=key)
            if first == second:
                assert r.status_code == 201 and r.json() == job, f"the same body answered {r.text}"
            else:
                assert r.status_code == 422, (
                    f"{first} then {second} with one key answered {r.status_code}, expected 422")

        run()


def test_timestamps_come_from_the_injected_clock() -> None:
    """created_at and updated_at come from the injected clock."""
    clock = Clock()
    with open_api(clock=clock) as api:
        job = api.create()
        clock.t += 90
        moved = api.call("POST", f"/jobs/{job['id']}/transitions", json={"to": "running"}).json()
        assert epoch(job["created_at"]) == epoch(job["updated_at"]) == T0, job
        assert epoch(moved["created_at"]) == T0 and epoch(moved["updated_at"]) == T0 + 90


def test_a_cancel_that_moves_the_job_stamps_updated_at_and_a_repeat_does_not() -> None:
    """A cancel that changes the state sets updated_at from the clock; a repeated cancel,
    which changes nothing, leaves it as it was."""
    for path in ([], ["running"]):
        clock = Clock()
        with open_api(clock=clock) as api:
            job_id = api.create()["id"]
            clock.t += 10
            drive(api, job_id, path)
            clock.t += 30
            first = api.call("POST", f"/jobs/{job_id}/cancel").json()
            clock.t += 30
            again = api.call("POST", f"/jobs/{job_id}/cancel").json()
            shown = api.call("GET", f"/jobs/{job_id}").json()
            state = CANCEL["running" if path else "queued"]
            for what, job, want in [("the cancel's answer", first, T0 + 40),
                                    ("the repeated cancel's answer", again, T0 + 40),
                                    ("GET after both", shown, T0 + 40)]:
                got = (job["state"], epoch(job["created_at"]), epoch(job["updated_at"]))
                assert got == (state, T0, want), (
                    f"{' then '.join(['queued', *path])}, cancelled at T0+40 and again at "
                    f"T0+70: {what} has state, created_at, updated_at = {got}, expected "
                    f"{(state, T0, want)}")


@pytest.mark.points(2)
@pytest.mark.parametrize(("path", "after"), [([], "cancelled"), (["running"], "cancelling")])
def test_cancel_answers_202_and_moves_the_job(path: list[str], after: str) -> None:
    """Cancel answers 202 with the job: queued becomes cancelled, running becomes cancelling."""
    with open_api() as api:
        job = api.create()
        drive(api, job["id"], path)
        r = api.call("POST", f"/jobs/{job['id']}/cancel")
        assert r.status_code == 202, f"cancel answered {r.status_code} {r.text}, expected 202"
        assert r.json()["state"] == after, f"cancel gave {r.json()}, expected state {after}"
        assert api.call("GET", f"/jobs/{job['id']}").json()["state"] == after


@pytest.mark.points(2)
@pytest.mark.parametrize("path", [[], ["running"]])
def test_second_cancel_is_a_202_no_op(path: list[str]) -> None:
    """Cancelling a cancelling or cancelled job answers 202 and changes nothing."""
    clock = Clock()
    with open_api(clock=clock) as api:
        job = api.create()
        drive(api, job["id"], path)
        first = api.call("POST", f"/jobs/{job['id']}/cancel").json()
        clock.t += 5
        r = api.call("POST", f"/jobs/{job['id']}/cancel")
        assert r.status_code == 202, f"second cancel answered {r.status_code} {r.text}"
        assert api.call("GET", f"/jobs/{job['id']}").json() == first == r.json()


@pytest.mark.points(2)
@pytest.mark.parametrize("end", ["succeeded", "failed"])
def test_cancel_of_a_finished_job_is_409_naming_its_state(end: str) -> None:
    """Cancelling a succeeded or failed job is 409 naming the state; the job is unchanged."""
    with open_api() as api:
        job = api.create()
        drive(api, job["id"], ["running", end])
        problem = expect_problem(api.call("POST", f"/jobs/{job['id']}/cancel"), 409)
        assert end in problem["detail"], f"409 detail {problem['detail']!r} does not name {end}"
        assert api.call("GET", f"/jobs/{job['id']}").json()["state"] == end


@pytest.mark.points(2)
@pytest.mark.parametrize("end", ["succeeded", "failed", "cancelled"])
def test_terminal_states_never_change(end: str) -> None:
    """No transition leaves a terminal state: each attempt is 409 and the job is unchanged."""
    with open_api() as api:
        job = api.create()
        drive(api, job["id"], ["running", end] if end != "cancelled" else [])
        if end == "cancelled":
            api.call("POST", f"/jobs/{job['id']}/cancel")
        before = api.call("GET", f"/jobs/{job['id']}").json()
        for to in ("running", "succeeded", "failed", "cancelled"):
            r = api.call("POST", f"/jobs/{job['id']}/transitions", json={"to": to})
            expect_problem(r, 409)
        assert api.call("GET", f"/jobs/{job['id']}").json() == before


@pytest.mark.points(2)
def test_transition_outside_the_table_is_409_naming_allowed_targets() -> None:
    """A transition not in the table is 409 and its detail names the allowed targets."""
    with open_api() as api:
        job = api.create()
        problem = expect_problem(api.call("POST", f"/jobs/{job['id']}/transitions",
                                          json={"to": "succeeded"}), 409)
        for allowed in ("running", "cancelled"):
            assert allowed in problem["detail"], f"detail {problem['detail']!r} lacks {allowed}"
        assert api.call("GET", f"/jobs/{job['id']}").json()["state"] == "queued"
        # From running, the detail names succeeded and failed; naming cancelling is optional.
        drive(api, job["id"], ["running"])
        problem = expect_problem(api.call("POST", f"/jobs/{job['id']}/transitions",
                                          json={"to": "running"}), 409)
        for allowed in ("succeeded", "failed"):
            assert allowed in problem["detail"], f"detail {problem['detail']!r} lacks {allowed}"


@pytest.mark.points(3)
@pytest.mark.timeout(60)
def test_jobs_follow_the_state_machine() -> None:
    """Any sequence of cancels and transitions matches the state-machine model."""
    with open_api() as api:

        @settings(max_examples=30)
        @example(["cancelled"])  # the worker drops a queued job: an edge of the table
        @example(["running", "cancelled"])  # not an edge: running stops through cancelling
        @example(["running", "cancel", "succeeded", "cancel"])  # finished before the cancel
        @given(st.lists(st.sampled_from(["cancel", "running", "succeeded", "failed",
                                         "cancelled"]), max_size=7))
        def run(ops: list[str]) -> None:
            job, state = api.create(), "queued"
            for op in ops:
                if op == "cancel":
                    r = api.call("POST", f"/jobs/{job['id']}/cancel")
                    want = 409 if state in ("succeeded", "failed") else 202
                    state = CANCEL.get(state, state)
                else:
                    r = api.call("POST", f"/jobs/{job['id']}/transitions", json={"to": op})
                    want = 200 if op in ALLOWED.get(state, ()) else 409
                    state = op if want == 200 else state
                assert r.status_code == want, f"{op} answered {r.status_code}, model says {want}"
            got = api.call("GET", f"/jobs/{job['id']}").json()["state"]
            assert got == state, f"after {ops} the job is {got}, model says {state}"

        run()


def test_a_reordered_command_is_a_different_body() -> None:
    """With one key, the same command in another order is a different body: 422."""
    with open_api() as api:
        r = api.submit(JOB | {"command": ["rm", "-rf", "/tmp/x"]}, key="k")
        assert r.status_code == 201, f"first POST answered {r.status_code} {r.text}"
        for command in (["-rf", "rm", "/tmp/x"], ["/tmp/x", "-rf", "rm"]):
            r = api.submit(JOB | {"command": command}, key="k")
            assert r.status_code == 422, (
                f"command ['rm', '-rf', '/tmp/x'] then {command} with one key answered "
                f"{r.status_code}, expected 422: the order of a list is part of its value")


def test_text_in_another_unicode_normalization_is_a_different_body() -> None:
    """With one key, a name or command in other Unicode code points is 422.

    Text that normalizes to the same string (NFC, NFKC) is still another value.
    """
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"name": "caf\u00e9"}, {"name": "cafe\u0301"}),  # precomposed, then combining
        ({"command": ["cafe\u0301"]}, {"command": ["caf\u00e9"]}),
        ({"command": ["\ufb01le"]}, {"command": ["file"]}),  # the ligature, then two letters
    ]
    with open_api() as api:
        for i, (first, second) in enumerate(pairs):
            r = api.submit(JOB | first, key=f"k{i}")
            assert r.status_code == 201, f"POST /jobs with {first!a} answered {r.status_code}"
            r = api.submit(JOB | second, key=f"k{i}")
            assert r.status_code == 422, (
                f"POST /jobs with {first!a}, then with {second!a} under the same key, answered "
                f"{r.status_code} {r.text[:200]}; expected 422: the values differ in their code "
                "points, and only key order and whitespace may differ in the same body")
