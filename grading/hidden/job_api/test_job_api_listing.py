"""Hidden checks for job_api: listing order, keyset paging, cursors, durability."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import job_api
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from job_api_helpers import (
    JOB,
    T0,
    Clock,
    drive,
    expect_problem,
    open_api,
)


@pytest.mark.points(2)
def test_listing_is_newest_first_with_ties_in_a_total_order() -> None:
    """GET /jobs is newest first, and jobs with equal created_at keep one stable order."""
    clock = Clock()
    with open_api(clock=clock) as api:
        ids = []
        for i in range(9):
            clock.t = T0 + i // 3  # three jobs per timestamp
            ids.append(api.create()["id"])
        listed = [j["id"] for j in api.call("GET", "/jobs").json()["items"]]
        assert sorted(listed, key=ids.index) == ids and len(listed) == 9
        for group in range(3):
            want = set(ids[3 * group: 3 * group + 3])
            assert set(listed[6 - 3 * group: 9 - 3 * group]) == want, f"order {listed}"
        assert [j["id"] for j in api.walk(2)] == listed, "paging disagrees with one big page"


def test_newest_first_holds_when_the_clock_gains_a_digit() -> None:
    """Newest first compares times as numbers: 1,000,000,000.5 is newer than 999,999,999.5."""
    clock = Clock()
    with open_api(clock=clock) as api:
        ids = []
        for t in (9.5, 10.5, 999_999_999.5, 1_000_000_000.5, 1_000_000_001.25):
            clock.t = t  # 2001-09-09: the epoch's seconds gained a digit
            ids.append(api.create()["id"])
        listed = [j["id"] for j in api.call("GET", "/jobs").json()["items"]]
        assert listed == ids[::-1], (
            f"jobs created at 9.5, 10.5, 999999999.5, 1000000000.5 and 1000000001.25 (ids {ids}) "
            f"were listed as {listed}; expected newest first, {ids[::-1]}: compare the times as "
            "numbers (a TEXT column compares '9.5' > '10.5')")
        assert [j["id"] for j in api.walk(2)] == listed, "paging disagrees with one big page"

@pytest.mark.points(2)
@pytest.mark.timeout(60)
@settings(max_examples=10)
@given(st.integers(0, 10), st.integers(1, 4))
def test_paging_visits_every_job_once(n: int, limit: int) -> None:
    """Paging returns every job exactly once and no trailing empty page."""
    with open_api() as api:
        ids = [api.create()["id"] for _ in range(n)]
        got = [j["id"] for j in api.walk(limit)]
        assert got == ids[::-1], f"{n} jobs paged by {limit} gave {got}, expected {ids[::-1]}"


@pytest.mark.points(4)
def test_paging_while_submitting_neither_skips_nor_repeats() -> None:
    """Jobs submitted between pages shift nothing: each earlier job appears exactly once."""
    clock = Clock()
    with open_api(clock=clock) as api:
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
    with open_api() as api:
        ids = [api.create()["id"] for _ in range(9)]
        for job_id in ids[::2]:
            drive(api, job_id, ["running"])
        got = [j["id"] for j in api.walk(2, state="running")]
        assert got == ids[::2][::-1], f"state=running paged by 2 gave {got}"
        assert [j["id"] for j in api.walk(3, state="queued")] == ids[1::2][::-1]


@pytest.mark.category("bad_input")
@pytest.mark.points(2)
def test_garbled_tampered_or_forged_cursor_is_400() -> None:
    """A garbled, tampered, hand-made or empty cursor is 400."""
    with open_api() as api:
        for _ in range(5):
            api.create()
        cursor = api.call("GET", "/jobs", params={"limit": 2}).json()["next_cursor"]
        mid = len(cursor) // 2
        tampered = cursor[:mid] + ("B" if cursor[mid] in "Aa" else "A") + cursor[mid + 1:]
        for bad in ("garbage", "!!!", "2", "MiM", "eyJvZmZzZXQiOiAyfQ", tampered, cursor[:-3],
                    "", "é" + cursor):
            expect_problem(api.call("GET", "/jobs", params={"cursor": bad}), 400)


@pytest.mark.points(3)
def test_file_database_survives_restart(tmp_path: Path) -> None:
    """A new app on the same file serves the jobs, replays keys and honours old cursors."""
    db = str(tmp_path / "jobs.sqlite3")
    with open_api(db) as api:
        jobs = [api.create(JOB | {"gpus": g}) for g in (1, 2, 3)]
        cursor = api.call("GET", "/jobs", params={"limit": 2}).json()["next_cursor"]
    with open_api(db) as api:
        assert api.call("GET", f"/jobs/{jobs[0]['id']}").json() == jobs[0]
        r = api.submit(JOB | {"gpus": 2}, key="key-2")
        assert r.status_code == 201 and r.json() == jobs[1], f"replay after restart: {r.text}"
        page = api.call("GET", "/jobs", params={"limit": 2, "cursor": cursor})
        assert page.status_code == 200, f"old cursor answered {page.status_code} {page.text}"
        assert [j["id"] for j in page.json()["items"]] == [jobs[0]["id"]]


@pytest.mark.category("edge_cases")
def test_a_cursor_under_another_filter_continues_or_is_400() -> None:
    """A cursor used with another state filter continues from its position, or is 400."""
    clock = Clock()
    with open_api(clock=clock) as api:
        ids = []
        for i in range(6):
            clock.t = T0 + i
            ids.append(api.create()["id"])
        for job_id in ids[::2]:
            drive(api, job_id, ["running"])
        first = api.call("GET", "/jobs", params={"limit": 2, "state": "running"}).json()
        r = api.call("GET", "/jobs", params={"cursor": first["next_cursor"], "state": "queued"})
        if r.status_code != 200:  # the reading where a cursor is tied to its filter
            expect_problem(r, 400)
            return
        # The other reading: the queued jobs older than the cursor's position (job ids[2]).
        got = [j["id"] for j in r.json()["items"]]
        assert got == [ids[1]], f"queued after the cursor at job {ids[2]} gave {got}"


@pytest.mark.category("bad_input")
def test_a_cursor_with_junk_characters_inserted_is_400() -> None:
    """A cursor with characters inserted is 400, even where a lenient decoder would skip them."""
    with open_api() as api:
        for _ in range(5):
            api.create()
        cursor = api.call("GET", "/jobs", params={"limit": 2}).json()["next_cursor"]
        mid = len(cursor) // 2
        for bad in (cursor[:mid] + "!*" + cursor[mid:], cursor + "!*"):
            r = api.call("GET", "/jobs", params={"limit": 2, "cursor": bad})
            assert r.status_code == 400, (
                f"GET /jobs with the issued cursor {cursor!r} changed to {bad!r} answered "
                f"{r.status_code}, expected 400: the API did not issue that cursor")
            expect_problem(r, 400)


_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"


@pytest.mark.category("bad_input")
def test_a_cursor_with_any_one_character_changed_is_400() -> None:
    """A cursor with any one character changed is 400, even where the change decodes to the
    same bytes."""
    with open_api() as api:
        for _ in range(5):
            api.create()
        cursor = api.call("GET", "/jobs", params={"limit": 2}).json()["next_cursor"]
        accepted = []
        for i, char in enumerate(cursor):
            if char not in _BASE64:
                continue  # separators and padding stay as they are
            # The neighbour in the base64 alphabet: only the lowest of the character's six bits
            # differs, which is a spare bit when the character is the last of a base64 text.
            other = _BASE64[_BASE64.index(char) ^ 1]
            bad = cursor[:i] + other + cursor[i + 1:]
            r = api.call("GET", "/jobs", params={"limit": 2, "cursor": bad})
            if r.status_code != 400:
                accepted.append((bad, r.status_code))
        assert not accepted, (
            f"GET /jobs with the issued cursor {cursor!r} changed in one character answered "
            f"{accepted[:3]}, expected 400: the API did not issue that cursor (a signature over "
            "the decoded bytes misses a change in the spare bits of a base64 text's last "
            "character; sign or compare the cursor as issued)")



@pytest.mark.category("bad_input")
def test_a_cursor_with_a_letter_in_another_case_or_whitespace_inserted_is_400() -> None:
    """A cursor with a letter's case changed or a space inserted is 400.

    A case-blind or space-skipping decoder (bytes.fromhex) reads both as the issued bytes.
    """
    with open_api() as api:
        for _ in range(5):
            api.create()
        cursor = api.call("GET", "/jobs", params={"limit": 2}).json()["next_cursor"]
        changed = {cursor.upper(), cursor.lower()} - {cursor}
        changed |= {cursor[:i] + cursor[i].swapcase() + cursor[i + 1:]
                    for i in range(len(cursor)) if cursor[i].swapcase() != cursor[i]}
        changed |= {cursor[:i] + " " + cursor[i:] for i in range(1, len(cursor))}
        accepted = []
        for bad in sorted(changed):
            r = api.call("GET", "/jobs", params={"limit": 2, "cursor": bad})
            if r.status_code != 400:
                accepted.append((bad, r.status_code))
        assert not accepted, (
            f"GET /jobs with the issued cursor {cursor!r} changed in case or with a space "
            f"inserted answered {accepted[:3]}, expected 400: the API did not issue that cursor "
            "(bytes.fromhex, for one, ignores case and spaces; compare the cursor as issued)")

_SUBMIT_IN_ANOTHER_PROCESS = """
import sys
from fastapi.testclient import TestClient
import job_api
client = TestClient(job_api.create_app(sys.argv[1]))
r = client.post("/jobs", json={"name": "train-llama", "command": ["python", "train.py"],
                "gpus": 8}, headers={"Idempotency-Key": "restart-key"})
print(r.status_code, r.json()["id"])
"""


@pytest.mark.timeout(60)
def test_a_key_replays_after_a_restart_in_another_process(tmp_path: Path) -> None:
    """A key used by one process replays in a new process on the same file database."""
    db = str(tmp_path / "jobs.sqlite3")
    here = os.path.dirname(os.path.abspath(job_api.__file__))
    env = {**os.environ, "PYTHONHASHSEED": "4242",
           "PYTHONPATH": os.pathsep.join([here, *sys.path])}
    run = subprocess.run([sys.executable, "-c", _SUBMIT_IN_ANOTHER_PROCESS, db], env=env,
                         capture_output=True, text=True, timeout=50, cwd=here, check=False)
    assert run.returncode == 0, f"the first process failed:\n{run.stderr[-2000:]}"
    status, first_id = run.stdout.split()[-2:]
    assert status == "201", f"the first process's POST answered {status}"
    with open_api(db) as api:
        r = api.submit(JOB, key="restart-key")
        assert r.status_code == 201 and str(r.json().get("id")) == first_id, (
            f"the same POST and key, in a new process on the same database, answered "
            f"{r.status_code} {r.text[:200]}; expected the replay of job {first_id}: what decides "
            "'the same body' must not change from one process to the next (hash() is salted)")
