"""Hidden checks for job_api: what must not depend on page size, filter order or request order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from job_api_helpers import ALLOWED, CANCEL, T0, Api, Clock, epoch, open_api


def _jobs_in_groups(api: Api, clock: Clock, groups: list[tuple[int, float]]) -> list[Any]:
    """Create jobs in bulk groups (size, time after T0): a group's jobs share one created_at."""
    ids = []
    for size, after in groups:
        clock.t = T0 + after
        ids += [api.create()["id"] for _ in range(size)]
    return ids


# Seconds after T0: out of order (the clock may step back), and closer than a millisecond.
_TIMES = st.sampled_from([0.0, 1.0, 2.0, -1.0, 0.0001, 0.0002, 0.0005])


@pytest.mark.points(2)
@pytest.mark.timeout(60)
@settings(max_examples=6)
@example([(1, 0.0)])
@example([(5, 0.0)])  # one bulk: every page after the first starts inside a shared created_at
@example([(3, 0.0), (1, 1.0), (3, 2.0)])
@example([(2, 2.0), (2, 1.0), (2, 0.0)])  # the clock steps back: ids no longer follow time
@example([(2, 0.0), (2, 0.0002), (2, 0.0001)])  # sub-millisecond apart
@given(st.lists(st.tuples(st.integers(1, 3), _TIMES), min_size=1, max_size=4))
def test_paging_is_the_same_at_every_page_size(groups: list[tuple[int, float]]) -> None:
    """Paging gives one sequence at every page size, jobs that share a created_at included."""
    clock = Clock()
    with open_api(clock=clock) as api:
        _jobs_in_groups(api, clock, groups)
        listed = api.walk(100)
        stamps = [epoch(j["created_at"]) for j in listed]
        assert stamps == sorted(stamps, reverse=True), f"groups {groups} listed at {stamps}"
        whole = [j["id"] for j in listed]
        for limit in range(1, len(whole) + 2):  # up to past the end: no trailing empty page
            got = [j["id"] for j in api.walk(limit)]
            assert got == whole, f"groups {groups} paged by {limit} gave {got}, one page {whole}"


@pytest.mark.points(1)
@pytest.mark.timeout(60)
@settings(max_examples=6)
@example([0, 2, 4], 2)
@example([5, 6], 2)  # the filter's last job ends a page, and older jobs of other states follow
@example([3, 4, 5, 6], 2)
@given(st.lists(st.integers(0, 7), max_size=6, unique=True), st.integers(1, 3))
def test_a_state_filter_commutes_with_paging(running: list[int], limit: int) -> None:
    """Paging with a state filter lists the unfiltered listing's jobs in that state, in order."""
    clock = Clock()
    with open_api(clock=clock) as api:
        ids = _jobs_in_groups(api, clock, [(3, 0.0), (2, 1.0), (3, 2.0)])
        for i in running:
            r = api.call("POST", f"/jobs/{ids[i]}/transitions", json={"to": "running"})
            assert r.status_code == 200, f"queued -> running answered {r.status_code} {r.text}"
        whole = api.walk(100)
        for state in ("queued", "running"):
            want = [j["id"] for j in whole if j["state"] == state]
            got = [j["id"] for j in api.walk(limit, state=state)]
            assert got == want, f"state={state} paged by {limit} gave {got}, expected {want}"


_OPS = ["cancel", "running", "succeeded", "failed", "cancelled"]


def _apply(api: Api, job_id: Any, op: str) -> int:
    if op == "cancel":
        return api.call("POST", f"/jobs/{job_id}/cancel").status_code
    return api.call("POST", f"/jobs/{job_id}/transitions", json={"to": op}).status_code


def _model(ops: list[str]) -> tuple[list[int], str]:
    codes, state = [], "queued"
    for op in ops:
        if op == "cancel":
            codes.append(409 if state in ("succeeded", "failed") else 202)
            state = CANCEL.get(state, state)
        else:
            ok = op in ALLOWED.get(state, ())
            codes.append(200 if ok else 409)
            state = op if ok else state
    return codes, state


@pytest.mark.points(2)
@pytest.mark.timeout(60)
def test_requests_on_different_jobs_commute() -> None:
    """Cancels and transitions of different jobs, interleaved in any order, act per job."""
    with open_api() as api:  # one app: each example makes jobs of its own

        @settings(max_examples=10)
        @example([["running", "cancel", "cancelled"], ["cancel", "running"]], [0, 1, 1, 0, 0])
        @example([["running", "succeeded"], ["running", "failed"], ["cancel"]], [2, 1, 0, 1, 0])
        @given(st.lists(st.lists(st.sampled_from(_OPS), max_size=4), min_size=2, max_size=3),
               st.lists(st.integers(0, 2), max_size=12))
        def run(plans: list[list[str]], order: list[int]) -> None:
            ids = [api.create()["id"] for _ in plans]
            cursor, codes = [0] * len(plans), [list[int]() for _ in plans]
            # The interleaving `order` picks whose next request goes; leftovers go job by job.
            picks = [i % len(plans) for i in order] + [i for i, p in enumerate(plans) for _ in p]
            for i in picks:
                if cursor[i] < len(plans[i]):
                    codes[i].append(_apply(api, ids[i], plans[i][cursor[i]]))
                    cursor[i] += 1
            for job_id, plan, got in zip(ids, plans, codes, strict=True):
                want, state = _model(plan)
                assert got == want, f"job {job_id}: {plan} answered {got}, alone it would be {want}"
                now = api.call("GET", f"/jobs/{job_id}").json()["state"]
                assert now == state, f"job {job_id} after {plan} is {now}, expected {state}"

        run()
