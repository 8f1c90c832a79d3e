"""Hidden checks for job_api: idempotency keys after a failure, their expiry, their comparison."""

from __future__ import annotations

import pytest
from job_api_helpers import DAY, JOB, Clock, expect_problem, open_api


@pytest.mark.category("edge_cases")
@pytest.mark.points(2)
def test_validation_failure_leaves_key_reusable() -> None:
    """A request rejected as invalid stores nothing: a corrected retry with its key succeeds."""
    with open_api() as api:
        expect_problem(api.submit(JOB | {"gpus": 65}, key="k1"), 422)
        r = api.submit(key="k1")
        assert r.status_code == 201, f"corrected retry answered {r.status_code} {r.text}"


@pytest.mark.category("edge_cases")
@pytest.mark.points(3)
def test_server_error_leaves_key_reusable() -> None:
    """A request that fails inside the server stores nothing: a retry with its key succeeds."""
    clock = Clock()
    with open_api(clock=clock) as api:
        clock.fail = 1
        failed = api.submit(key="k1")
        assert failed.status_code >= 500, f"with a failing clock POST answered {failed.status_code}"
        for attempt in range(2):
            r = api.submit(key="k1")
            assert r.status_code == 201, f"retry {attempt + 1} answered {r.status_code} {r.text}"
        assert len(api.call("GET", "/jobs").json()["items"]) == 1


@pytest.mark.category("edge_cases")
@pytest.mark.points(2)
def test_a_failure_at_any_clock_read_leaves_the_key_reusable() -> None:
    """A submission that fails at any point inside the server leaves its key reusable."""
    for skip in range(4):  # the clock fails at its first, second, ... read of the submission
        clock = Clock()
        with open_api(clock=clock) as api:
            clock.fail, clock.skip = 1, skip
            first = api.submit(key="k1")
            clock.fail = 0
            r = api.submit(key="k1")
            assert r.status_code == 201, (
                f"with clock read {skip + 1} failing, POST answered {first.status_code}, and the"
                f" retry with its key {r.status_code} {r.text[:200]}; expected 201")
            items = api.call("GET", "/jobs").json()["items"]
            assert len(items) == 1, f"a failed POST and its retry left {len(items)} jobs"


@pytest.mark.category("edge_cases")
def test_key_replays_within_24_hours() -> None:
    """A key used 23 hours ago still replays."""
    clock = Clock()
    with open_api(clock=clock) as api:
        job = api.create()
        clock.t += DAY - 3600
        r = api.submit(key="key-1")
        assert r.status_code == 201 and r.json()["id"] == job["id"], r.text


@pytest.mark.category("edge_cases")
def test_key_expires_after_24_hours() -> None:
    """A key older than 24 hours is forgotten: the request is new and creates a job."""
    clock = Clock()
    with open_api(clock=clock) as api:
        job = api.create()
        clock.t += DAY + 60
        r = api.submit(JOB | {"gpus": 2}, key="key-1")
        assert r.status_code == 201, f"expired key answered {r.status_code} {r.text}"
        assert r.json()["id"] != job["id"] and "idempotent-replayed" not in r.headers


@pytest.mark.category("edge_cases")
def test_a_replay_does_not_extend_the_key() -> None:
    """A key is kept 24 hours from its first use: replays do not extend it."""
    clock = Clock()
    with open_api(clock=clock) as api:
        job = api.create()
        clock.t += DAY - 3600
        again = api.submit(key="key-1")
        assert again.status_code == 201 and again.json()["id"] == job["id"], again.text
        clock.t += 3600 + 60  # 24 hours and a minute after the first use
        r = api.submit(JOB | {"gpus": 2}, key="key-1")
        assert r.status_code == 201 and r.json()["id"] != job["id"], (
            f"a key first used 24 h 1 min ago (replayed at 23 h) answered {r.status_code}"
            f" {r.text[:200]}; expected a new job")


@pytest.mark.category("edge_cases")
def test_a_key_used_again_after_expiry_is_kept_24_hours_from_that_use() -> None:
    """A key used again after it expired starts its 24 hours anew: a retry then replays."""
    clock = Clock()
    with open_api(clock=clock) as api:
        api.create()
        clock.t += DAY + 3600
        second = api.submit(JOB | {"gpus": 2}, key="key-1")
        assert second.status_code == 201, f"expired key answered {second.status_code} {second.text}"
        clock.t += 60
        retry = api.submit(JOB | {"gpus": 2}, key="key-1")
        assert retry.status_code == 201 and retry.json()["id"] == second.json()["id"], (
            f"a retry a minute after the key's new use answered {retry.status_code}"
            f" {retry.text[:200]}; expected the replay of job {second.json()['id']}")
        assert retry.headers.get("idempotent-replayed") == "true", retry.headers


def test_keys_are_compared_exactly_not_ignoring_case() -> None:
    """Idempotency keys are compared exactly: Order-7 and order-7 are two keys, two jobs."""
    with open_api() as api:
        first = api.submit(key="Order-7")
        assert first.status_code == 201, f"POST with key Order-7 answered {first.status_code}"
        for key, body in (("order-7", JOB | {"gpus": 2}), ("ORDER-7", JOB)):
            r = api.submit(body, key=key)
            assert r.status_code == 201 and "idempotent-replayed" not in r.headers, (
                f"POST with key {key!r} after one with 'Order-7' answered {r.status_code} "
                f"{r.text[:200]}; expected 201, a new job: keys differ in case, so they differ")
            assert r.json()["id"] != first.json()["id"], (
                f"key {key!r} replayed the job of key 'Order-7'; keys are compared exactly")


def test_keys_that_read_as_one_number_are_different_keys() -> None:
    """Idempotency keys are compared as text: 7, 007, 7.0 and 7e0 are four keys, four jobs."""
    with open_api() as api:
        ids = []
        for i, key in enumerate(("7", "007", "7.0", "7e0")):
            r = api.submit(JOB | {"gpus": i + 1}, key=key)
            assert r.status_code == 201 and "idempotent-replayed" not in r.headers, (
                f"POST with key {key!r} after keys {['7', '007', '7.0', '7e0'][:i]} answered "
                f"{r.status_code} {r.text[:200]}; expected 201, a new job: keys are compared "
                "exactly, as sent (a key column without TEXT affinity stores '007' as the "
                "number 7)")
            ids.append(r.json()["id"])
        assert len(set(ids)) == 4, f"keys 7, 007, 7.0 and 7e0 made jobs {ids}, expected four"
