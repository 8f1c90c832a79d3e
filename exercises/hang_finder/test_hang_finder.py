"""Visible tests for hang_finder: the statement's worked examples and two properties.

Run them with `uv run pytest exercises/hang_finder`; the grader adds hidden checks.
"""

from __future__ import annotations

import io
import json
import random
from typing import Any

from hang_finder import Finding, RankDump, Report, find_hang, load_dump
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)
Doc = dict[str, Any]


def _entry(record_id: int, seq: int, state: str = "completed", *, pg_id: int = 0,
           sizes: list[list[int]] | None = None, name: str = "nccl:all_reduce") -> Doc:
    shape = [[3, 4]] if sizes is None else sizes
    return {"record_id": record_id, "pg_id": pg_id, "process_group": [str(pg_id), "default_pg"],
            "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
            "profiling_name": name, "time_created_ns": 1724779239936775119 + record_id,
            "input_sizes": shape, "input_dtypes": ["Float"], "output_sizes": shape,
            "output_dtypes": ["Float"], "state": state, "time_discovered_started_ns": None,
            "time_discovered_completed_ns": None, "retired": state == "completed",
            "timeout_ms": 600000, "is_p2p": False, "frames": []}


def _dump(world: int, enqueued: int, completed: int, entries: list[Doc]) -> Doc:
    return {"version": "2.9",
            "pg_config": {"0": {"name": "0", "desc": "default_pg",
                                "ranks": json.dumps(list(range(world)))}},
            "pg_status": {"0": {"last_enqueued_collective": enqueued,
                                "last_started_collective": -1,
                                "last_completed_collective": completed}},
            "entries": entries}


def _load(docs: dict[int, Doc]) -> list[RankDump]:
    return [load_dump(io.StringIO(json.dumps(doc)), rank=r) for r, doc in docs.items()]


def _example_1() -> dict[int, Doc]:
    """4 ranks, buffers of 2: ranks 0-2 wait in collective 12; rank 3 stopped after 11."""
    waiting = [_entry(10, 11), _entry(11, 12, "scheduled")]
    docs = {r: _dump(4, 12, 11, waiting) for r in range(3)}
    docs[3] = _dump(4, 11, 11, [_entry(9, 10), _entry(10, 11)])
    return docs


def test_example_1_a_rank_that_never_entered_is_missing() -> None:
    """Example 1: ranks 0-2 entered collective 12, rank 3 stopped at 11: rank 3 is missing."""
    report = find_hang(_load(_example_1()), 4)
    want = Report("missing_rank", (Finding("0", "default_pg", (0, 1, 2, 3), 12, "missing_rank",
                                           "nccl:all_reduce", (3,), (), ()),), ())
    assert report == want, f"find_hang(example 1) returned {report}, expected {want}"


def test_example_2_other_sizes_are_a_mismatch() -> None:
    """Example 2: rank 1 entered collective 12 with other sizes: a mismatch, not a missing rank."""
    docs = _example_1()
    docs[3] = docs[0]
    docs[1] = _dump(4, 12, 11, [_entry(10, 11), _entry(11, 12, "scheduled", sizes=[[4, 5]])])
    report = find_hang(_load(docs), 4)
    assert report.kind == "mismatch", f"kind is {report.kind!r}, expected 'mismatch'"
    (f,) = report.findings
    assert (f.seq, f.missing, f.mismatched) == (12, (), (1,)), f"got {f}"


def test_example_3_no_dump_and_a_rotated_buffer() -> None:
    """Example 3: rank 3 left no dump; rank 2's seq-12 entry fell off its buffer but counts."""
    docs = _example_1()
    del docs[3]
    docs[2] = _dump(4, 12, 11, [])  # every entry rotated out; pg_status still says 12
    report = find_hang(_load(docs), 4)
    want = Report("missing_rank", (Finding("0", "default_pg", (0, 1, 2, 3), 12, "missing_rank",
                                           "nccl:all_reduce", (), (), (3,)),), (3,))
    assert report == want, f"find_hang(example 3) returned {report}, expected {want}"


def _job(world: int, done: int, lagging: set[int], buffer: int) -> dict[int, Doc]:
    """Every rank completed `done` collectives; the others also entered collective done + 1.
    pg_status says -1, as PyTorch writes it, where a rank has none yet."""
    docs = {}
    for r in range(world):
        last = done if r in lagging else done + 1
        entries = [_entry(i, i + 1, "completed" if i < done else "scheduled")
                   for i in range(last)]
        docs[r] = _dump(world, last or -1, done or -1, entries[-buffer:] if buffer else [])
    return docs


@settings(max_examples=40, phases=_PHASES)
@given(st.integers(2, 6), st.integers(0, 5), st.sets(st.integers(0, 5)), st.integers(0, 4))
@example(4, 11, {3}, 2)
@example(3, 0, {1}, 2)  # nothing completed yet (-1): seq is 1, and rank 1 is missing
def test_the_lagging_ranks_are_missing_whatever_the_buffer(
        world: int, done: int, lagging: set[int], buffer: int) -> None:
    """Ranks that stopped one collective early are missing, however few entries were kept."""
    lagging = {r for r in lagging if r < world}
    report = find_hang(_load(_job(world, done, lagging, buffer)), world)
    if len(lagging) == world:
        assert report.kind == "no_hang", f"nobody entered collective {done + 1}: got {report}"
        return
    (f,) = report.findings
    assert (f.seq, f.missing) == (done + 1, tuple(sorted(lagging))), (
        f"{world} ranks, {sorted(lagging)} stopped after {done}, buffer {buffer}: got {f}")
    want_kind = "missing_rank" if lagging else "all_entered"
    assert f.kind == want_kind, f"kind is {f.kind!r}, expected {want_kind!r}"


@settings(max_examples=30, phases=_PHASES)
@given(st.integers(2, 6), st.integers(0, 5), st.sets(st.integers(0, 5)), st.randoms())
def test_the_order_of_the_dumps_changes_nothing(
        world: int, done: int, lagging: set[int], rnd: random.Random) -> None:
    """Reading the dumps in another order gives the same report."""
    dumps = _load(_job(world, done, {r for r in lagging if r < world}, 3))
    want = find_hang(dumps, world)
    rnd.shuffle(dumps)
    got = find_hang(dumps, world)
    assert got == want, f"dumps read in order {[d.rank for d in dumps]}: {got}, expected {want}"
