"""One grading's children: the fork server and what it loads, the compiled test modules, how
checks are dealt out by their costs, and the cut of limits once a submission hangs.

Submissions are made from the token_bucket reference with one change each.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grading import (
    _preloads,
    child,
    collect,
    contract,
    forkserver,
    isolation,
    preload,
    processes,
    sandbox,
    signatures,
    testcode,
)
from grading.limits import AFTER_STRIKES, Limits, Strikes
from grading.results import Check, Result
from tests.helpers import (
    EXERCISES,
    caught_by,
    checks_of,
    edited_reference,
    mutant_file,
    run_grader,
)


def test_children_started_without_the_fork_server_grade_the_same() -> None:
    interval_union = next(e for e in EXERCISES if e.name == "interval_union")
    patch = next(m for m in interval_union.mutants if m.stem == "closed_intervals")
    mutant = mutant_file(patch)
    stack = [a for path in (interval_union.solution, mutant) for a in ("--submission", str(path))]
    # Checks that catch the mutant (two with hypothesis's falsifying examples), and one it passes.
    checks = [*caught_by(patch), "test_merge_matches_a_unit_cell_count",
              "test_results_match_a_brute_force_count",
              "test_a_reversed_interval_raises_value_error"]
    outcomes = []
    for env in ({}, {"GRADER_NO_FORK_SERVER": "1"}):
        done = run_grader(["interval_union", "--no-mypy", "--format", "json", *stack,
                           *(a for c in checks for a in ("--check", c))], env=env)
        assert done.code == 1, done.stderr
        outcomes.append({(g["submission"], c["id"]): (c["status"], c["falsifying_example"])
                         for g in done.json_lines() for c in g["checks"]})
    forked, execed = outcomes
    assert forked == execed
    assert {status for status, _ in forked.values()} == {"passed", "failed"}
    assert any(example for _, example in forked.values()), "no falsifying example to compare"


def test_a_fork_server_loads_only_the_libraries_its_exercises_import() -> None:
    by_name = {e.name: e for e in EXERCISES}
    assert preload.libraries_of([by_name["token_bucket"]]) == frozenset()
    assert preload.libraries_of([by_name["micro_batcher"]]) == {"anyio", "trio"}
    web = preload.libraries_of([by_name["job_api"]])
    assert {"fastapi", "httpx", "schemathesis", "uvicorn"} <= web
    assert preload.libraries_of(EXERCISES) >= web | {"trio"}
    assert "schemathesis" not in _preloads.preloads(frozenset({"anyio"}))
    assert "schemathesis.specs.openapi.schemas" in _preloads.preloads(web)


@pytest.mark.skipif(isolation.mode() != "bwrap",
                    reason="only bubblewrap's sandbox dies with the thread that started it")
def test_a_fork_server_outlives_the_thread_that_started_it() -> None:
    """A grading's worker thread may be the first to need the server, and it ends with that
    grading: the server, and every child then running in it, must not end with the thread."""
    started: list[forkserver._Server] = []
    thread = threading.Thread(target=lambda: started.append(
        forkserver._Server(processes.child_env(None, None), frozenset())))
    thread.start()
    thread.join()
    server = started[0]
    try:
        time.sleep(0.5)  # the signal of a parent's death lands at once
        assert server.alive(), "the fork server died with the thread that started it"
    finally:
        server.close(monitors=True)


@pytest.mark.skipif(isolation.mode() != "bwrap",
                    reason="only under bubblewrap can children not write their own bytecode")
def test_what_every_child_imports_is_compiled_outside_the_sandbox() -> None:
    preload.compile_preloads()
    missing = preload.uncompiled(_preloads.preloads())
    assert not missing, f"no bytecode for {missing}: every run compiles them from source"


# --- one grading, two children -------------------------------------------------------------------


def test_a_grading_is_split_the_same_way_whatever_the_machine() -> None:
    checks = list(checks_of("job_api"))
    pending = [Result(c) for c in checks]
    shards = sandbox.deal(pending, 2)
    ids = [[r.check.id for r in shard] for shard in shards]
    assert sorted(i for shard in ids for i in shard) == sorted(c.id for c in checks)
    order = {c.id: n for n, c in enumerate(checks)}
    assert all(shard == sorted(shard, key=order.__getitem__) for shard in ids), \
        "a shard should run its checks in collection order"
    loads = [sum(r.check.cost for r in shard) for shard in shards]
    assert max(loads) - min(loads) <= max(c.cost for c in checks), loads
    again = [[r.check.id for r in shard] for shard in sandbox.deal([Result(c) for c in checks], 2)]
    assert again == ids
    few = [Result(Check(f"hidden::test_{n}", f"test_{n}", "hidden", "rules", 1, 10.0))
           for n in range(3)]
    assert [len(s) for s in sandbox.deal(few, 1)] == [3]


def test_checks_are_dealt_by_what_they_cost_the_reference() -> None:
    """Two children finish together: the costliest checks spread out, and a check the stored
    costs do not know (one added since the last refresh) weighs the median of the others."""
    ours = [Check(f"hidden::test_{n}", f"test_{n}", "hidden", "correctness", 1, 10.0)
            for n in range(6)]
    costs = {"hidden::test_0": 3.0, "hidden::test_1": 2.0, "hidden::test_2": 0.5,
             "hidden::test_3": 0.5, "hidden::test_4": 1.0}
    weighed = collect.with_costs(ours, costs)
    assert [c.cost for c in weighed] == [3.0, 2.0, 0.5, 0.5, 1.0, 1.0]
    dealt = sandbox.deal([Result(c) for c in weighed], 2)
    assert [[r.check.id[-6:] for r in shard] for shard in dealt] == [
        ["test_0", "test_5"], ["test_1", "test_2", "test_3", "test_4"]]  # 4.0 and 4.0
    assert [c.cost for c in collect.with_costs(ours, {})] == [10.0] * 6  # nothing stored
    for exercise in EXERCISES:
        stored = signatures.costs(exercise)
        known = {c.id for c in checks_of(exercise.name)}
        assert stored.keys() == known, (
            f"{exercise.name}'s stored costs are not for the checks it has: run "
            f"`uv run python -m grading.signatures refresh {exercise.name}`")


def test_a_submission_that_hangs_has_its_limits_cut_and_one_that_does_not_never() -> None:
    """Three checks stopped at their limits: the submission hangs, and children started since run
    each check whose cost is known to 5x that cost (at least 1 s; a limit of its own too), and
    a child dealt before must restart. Three killed for ignoring their limits: every check runs
    to 0.5 s. Limits the user set (`--timeout`) are only cut for kills."""
    own = Check("hidden::test_threads", "t", "hidden", "concurrency", 1, 60.0, cost=2.0,
                costed=True)
    cheap = Check("hidden::test_cheap", "c", "hidden", "correctness", 1, 3.0, cost=0.01,
                  costed=True)
    unknown = Check("hidden::test_new", "n", "hidden", "correctness", 1, 10.0, cost=0.3)

    def cut(strikes: Strikes) -> list[float]:
        shard = [Result(c) for c in (own, cheap, unknown)]
        strikes.cut(shard)
        return [r.check.timeout for r in shard]

    strikes = Strikes()
    strikes.add_stopped(2)
    assert not strikes.hangs() and cut(strikes) == [60.0, 3.0, 10.0]
    assert not strikes.restart(dealt_hung=False)
    strikes.add_stopped(1)
    assert strikes.restart(dealt_hung=False) and not strikes.restart(dealt_hung=True)
    assert strikes.hangs() and cut(strikes) == [10.0, 1.0, 10.0] and strikes.dealt_hung
    users = Strikes(from_costs=False)
    users.add_stopped(5)
    assert not users.hangs() and cut(users) == [60.0, 3.0, 10.0]
    killed = Strikes()
    for _ in range(3):
        killed.add()
    assert cut(killed) == [AFTER_STRIKES] * 3
# --- test modules compiled once, by the grader ---------------------------------------------------


def test_every_test_module_is_compiled_once_by_the_grader() -> None:
    """No child rewrites and compiles the test files itself: the grader hands each one all of
    its exercise's test modules compiled (none left out for a warning or an error)."""
    for exercise in EXERCISES:
        compiled = marshal.loads(testcode.compiled(exercise))
        files = [exercise.visible_tests, *exercise.hidden_files]
        assert compiled.keys() == {p.stem for p in files if p.suffix == ".py"}, exercise.name
        for path in files:
            if path.suffix == ".py":
                assert compiled[path.stem][0] == hashlib.sha256(path.read_bytes()).digest()


def test_a_child_runs_compiled_code_only_for_the_source_it_read(tmp_path: Path) -> None:
    """A module's compiled code is run only when it was compiled from the very bytes the child
    read; for any other source the child compiles the file itself."""
    source = b"def test_x() -> None:\n    assert 1 + 1 == 2\n"
    other = compile("def test_x():\n    assert False, 'the compiled copy ran'\n", "x", "exec")
    lib, ini = child.library(Limits())
    for label, digest, expected in (("matching", hashlib.sha256(source).digest(), "failed"),
                                    ("stale", hashlib.sha256(b"older").digest(), "passed")):
        work = tmp_path / label
        work.mkdir()
        (work / "test_x.py").write_bytes(source)
        (work / contract.COMPILED).write_bytes(marshal.dumps({"test_x": (digest, other)}))
        channel = tmp_path / f"{label}.jsonl"
        config = {"mode": "run", "token": label, "channel": str(channel),
                  "submission": str(work / "x.py")}
        args = contract.pytest_args(ini, work, ["test_x.py"], collect=False)
        subprocess.run([sys.executable, "-m", "pytest", *args],
                       check=False, cwd=work, env=processes.child_env(lib, tmp_path),
                       input=json.dumps(config).encode(), capture_output=True, timeout=60)
        records = [json.loads(line) for line in channel.read_text().splitlines() if line]
        outcome = [r for r in records if r.get("ev") == "result"]
        assert [r["status"] for r in outcome] == [expected], (label, records)


def test_a_check_that_swallows_its_timeout_says_where_it_was_stuck(tmp_path: Path) -> None:
    """A call that catches every exception in a loop ignores the timeout; the report still
    names the submission's line, taken from the child's stacks without its cooperation."""
    sub = edited_reference(tmp_path, "        amount = _request(tokens, self._capacity)\n",
                           "        while True:\n            try:\n"
                           "                sum(range(1000))\n            except BaseException:\n"
                           "                pass\n")
    done = run_grader(["token_bucket", "--no-mypy", "--submission", str(sub),
                       "--check", "test_a_new_bucket_is_full"])
    assert re.search(r"did not stop; stuck at \w+\.py:\d+ in try_acquire", done.stdout), \
        done.stdout
