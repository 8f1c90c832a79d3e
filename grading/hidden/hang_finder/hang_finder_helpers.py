"""Builders for hang_finder's hidden checks: flight-recorder dumps in the real JSON schema.

`job(...)` simulates a lock-step training job (default, tensor-parallel and data-parallel
groups, optional send/recv), stops it at one collective with one injected fault, and returns
each rank's dump document after the ring buffer kept only its newest entries.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hang_finder import DumpError, RankDump, load_dump

Doc = dict[str, Any]
FRAMES = [
    {"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py", "line": 2696},
    {"name": "train_step", "filename": "train.py", "line": 118},
]


def entry(record_id: int, pg_id: int, seq: int, *, name: str = "nccl:all_reduce",
          sizes: list[list[int]] | None = None, dtype: str = "Float",
          state: str = "completed", p2p: bool = False, p2p_seq: int = 0,
          desc: str = "default_pg") -> Doc:
    """One entry, every field PyTorch writes (timestamps made up but monotone)."""
    shape = [[1024, 1024]] if sizes is None else sizes
    t = 1_724_779_239_936_775_119 + record_id * 1_000_000
    return {
        "record_id": record_id, "pg_id": pg_id, "process_group": [str(pg_id), desc],
        "collective_seq_id": seq, "p2p_seq_id": p2p_seq, "op_id": record_id + 1,
        "profiling_name": name, "time_created_ns": t,
        "input_sizes": shape, "input_dtypes": [dtype] * len(shape),
        "output_sizes": shape, "output_dtypes": [dtype] * len(shape),
        "state": state,
        "time_discovered_started_ns": None if state == "scheduled" else t + 5_000,
        "time_discovered_completed_ns": t + 39_036_605 if state == "completed" else None,
        "retired": state == "completed", "timeout_ms": 600000, "is_p2p": p2p,
        "frames": FRAMES,
    }


def document(groups: dict[str, tuple[str, list[int]]], status: dict[str, tuple[int, int, int]],
             entries: list[Doc]) -> Doc:
    """A whole dump: pg_config (ranks JSON-encoded, as PyTorch writes them) and pg_status."""
    return {
        "version": "2.9",
        "pg_config": {pg: {"name": pg, "desc": desc, "ranks": json.dumps(ranks)}
                      for pg, (desc, ranks) in groups.items()},
        "pg_status": {pg: {"last_enqueued_collective": e, "last_started_collective": s,
                           "last_completed_collective": c} for pg, (e, s, c) in status.items()},
        "entries": entries,
    }


def parse(doc: Doc, rank: int) -> RankDump:
    """The document as the submission's load_dump reads it from a text stream."""
    return load_dump(io.StringIO(json.dumps(doc)), rank=rank)


@dataclass
class _Rank:
    entries: list[Doc] = field(default_factory=list)
    status: dict[str, list[int]] = field(default_factory=dict)  # pg -> [enq, started, done]
    p2p: int = 0


@dataclass(frozen=True)
class Job:
    """The dumps of a simulated job and what the diagnosis must say about it."""

    docs: dict[int, Doc]
    world: int
    group: str            # the stuck group's id ("" when healthy)
    members: tuple[int, ...]
    seq: int              # the stuck collective_seq_id (0 when healthy)


def groups_of(world: int, tp: int) -> dict[int, dict[str, tuple[str, list[int]]]]:
    """Per rank: default group "0" (all ranks), tp group "1" and dp group "2" (its peers)."""
    out: dict[int, dict[str, tuple[str, list[int]]]] = {}
    for r in range(world):
        tp_ranks = [r - r % tp + i for i in range(tp)]
        dp_ranks = list(range(r % tp, world, tp))
        out[r] = {"0": ("default_pg", list(range(world))), "1": ("tp", tp_ranks),
                  "2": ("dp", dp_ranks)}
    return out


_OPS = ("1", "1", "2", "0")  # per step: two tp all-reduces, a dp all-reduce, a default barrier


def job(world: int, tp: int, steps: int, *, fault: str = "none", culprit: int = 0,  # noqa: PLR0915 - one simulation, read top to bottom
        hang_op: int = 0, buffer: int = 2000, sends: bool = False,
        timing: bool = False) -> Job:
    """Run `steps` full steps, then hang at op `hang_op` of the next step in the culprit's group.

    fault: "none" (healthy, no hang), "missing" (the culprit never issues the op), "crash"
    (no dump from the culprit), "sizes" / "op" / "dtype" (the culprit issues a different op),
    "all_entered" (everyone issues it, nobody completes). `sends`: a send/recv pair between
    tp peers after every step. `timing`: entries in flight are "started", else "scheduled".
    """
    groups = groups_of(world, tp)
    ranks = {r: _Rank(status={pg: [-1, -1, -1] for pg in "012"}) for r in range(world)}
    seqs: dict[tuple[str, tuple[int, ...]], int] = {}

    def issue(r: int, pg: str, members: tuple[int, ...], seq: int, state: str,
              **kw: Any) -> None:
        me = ranks[r]
        me.entries.append(entry(len(me.entries), int(pg), seq, state=state,
                                desc=groups[r][pg][0], **kw))
        st = me.status[pg]
        st[0] = max(st[0], seq)
        if timing or state == "completed":
            st[1] = max(st[1], seq)
        if state == "completed":
            st[2] = max(st[2], seq)

    def run_op(pg: str, stuck: tuple[int, ...] | None) -> int:
        seq_out = 0
        done: set[tuple[int, ...]] = set()
        for r in range(world):
            members = tuple(groups[r][pg][1])
            if members in done:
                continue
            done.add(members)
            seq = seqs[(pg, members)] = seqs.get((pg, members), 0) + 1
            hung = stuck is not None and members == stuck
            for m in members:
                kw: dict[str, Any] = {"sizes": [[4096, 8192 if pg == "1" else 1024]]}
                if hung:
                    if m == culprit and fault in ("missing", "crash"):
                        continue
                    if m == culprit and fault == "sizes":
                        kw["sizes"] = [[4096, 4096]]
                    if m == culprit and fault == "op":
                        kw["name"] = "nccl:broadcast"
                    if m == culprit and fault == "dtype":
                        kw["dtype"] = "BFloat16"
                issue(m, pg, members, seq, ("started" if timing else "scheduled") if hung
                      else "completed", **kw)
            if hung:
                seq_out = seq
        return seq_out

    for _ in range(steps):
        for pg in _OPS:
            run_op(pg, None)
        if sends:
            for r in range(world):
                me, peer = ranks[r], (r + 1) % tp + r - r % tp
                if peer == r:
                    continue
                me.p2p += 1
                # A send/recv carries the group's current collective_seq_id, not a new one.
                seq = seqs[("1", tuple(groups[r]["1"][1]))]
                me.entries.append(entry(len(me.entries), 1, seq, p2p=True, p2p_seq=me.p2p,
                                        name="nccl:send" if r % 2 == 0 else "nccl:recv",
                                        desc="tp"))
    group, seq = "", 0
    members: tuple[int, ...] = ()
    if fault != "none":
        group = _OPS[hang_op]
        members = tuple(groups[culprit][group][1])
        for pg in _OPS[:hang_op]:
            run_op(pg, None)
        seq = run_op(group, members)
    docs = {}
    for r, me in ranks.items():
        if fault == "crash" and r == culprit:
            continue
        status = {pg: (st[0], st[1], st[2]) for pg, st in me.status.items()}
        kept = me.entries[-buffer:] if buffer else []
        for i, e in enumerate(kept):
            e["record_id"] = len(me.entries) - len(kept) + i
        docs[r] = document(groups[r], status, kept)
    return Job(docs, world, group, members, seq)


def dumps_of(docs: dict[int, Doc], order: Iterable[int] | None = None) -> Iterator[RankDump]:
    """The documents parsed one at a time (a generator), in `order` (default: by rank)."""
    for r in sorted(docs) if order is None else order:
        yield parse(docs[r], r)


def report_of(docs: dict[int, Doc], world: int) -> Any:
    """find_hang over the documents, parsed one at a time."""
    from hang_finder import find_hang

    return find_hang(dumps_of(docs), world)


def summary(report: Any) -> list[tuple[Any, ...]]:
    """The findings as plain tuples, for messages and comparisons."""
    return [(f.group, f.ranks, f.seq, f.kind, f.missing, f.mismatched, f.no_dump)
            for f in report.findings]


def two_rank(status: dict[str, tuple[int, int, int]], entries: list[Doc],
             groups: dict[str, tuple[str, list[int]]] | None = None) -> Doc:
    """A dump of a rank in a 2-rank job whose groups "0" and "1" both hold ranks 0 and 1."""
    cfg = groups or {"0": ("default_pg", [0, 1]), "1": ("tp", [0, 1])}
    return document(cfg, status, entries)


def refusal(path: Path) -> str:
    """What load_dump does with the file, in words."""
    try:
        load_dump(path)
    except DumpError as err:
        named = path.name in str(err)
        return "DumpError naming the file" if named else f"DumpError without the file: {err}"
    except Exception as err:  # any other exception is the failure reported
        return f"{type(err).__name__}: {err}, not DumpError"
    return "accepted the dump; expected DumpError"
