"""Find the rank a stuck NCCL collective is waiting for, from PyTorch flight-recorder dumps.

Each rank's dump (JSON) lists the last N collectives it issued (a ring buffer) and, per process
group, how far it got (``pg_status``). ``find_hang`` reads the dumps one at a time, keeps a few
numbers per (group, rank), and names, for every stuck group, the first collective not completed
by every member and the members that never entered it, entered a different one, or left no dump.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, NamedTuple, TextIO

__all__ = [
    "DumpError",
    "Entry",
    "Finding",
    "GroupInfo",
    "GroupStatus",
    "Kind",
    "RankDump",
    "Report",
    "find_hang",
    "load_dump",
    "main",
    "scan",
]

Kind = Literal["missing_rank", "mismatch", "all_entered", "no_hang"]
State = Literal["scheduled", "started", "completed"]
_STATES = ("scheduled", "started", "completed")
_SEVERITY: tuple[Kind, ...] = ("missing_rank", "mismatch", "all_entered")


class DumpError(ValueError):
    """A dump that cannot be read: not JSON, cut short, or a required field missing or mistyped."""


@dataclass(frozen=True)
class GroupInfo:
    """One ``pg_config`` item: the group's name, description and sorted global member ranks."""

    name: str
    desc: str
    ranks: tuple[int, ...]


@dataclass(frozen=True)
class GroupStatus:
    """One ``pg_status`` item: the last collective sequence number enqueued, started, completed."""

    last_enqueued: int
    last_started: int
    last_completed: int


class Entry(NamedTuple):
    """One flight-recorder entry: the fields the diagnosis reads (sizes and dtypes as lists)."""

    record_id: int
    pg_id: str
    collective_seq_id: int
    p2p_seq_id: int
    profiling_name: str
    input_sizes: list[Any]
    input_dtypes: list[Any]
    output_sizes: list[Any]
    output_dtypes: list[Any]
    state: State
    is_p2p: bool


@dataclass(frozen=True)
class RankDump:
    """One rank's dump: ``groups`` and ``status`` are keyed by process-group id (a string)."""

    rank: int
    version: str
    groups: Mapping[str, GroupInfo]
    status: Mapping[str, GroupStatus]
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class Finding:
    """One stuck process group: at ``seq``, who never entered, who entered another op, no dump."""

    group: str
    desc: str
    ranks: tuple[int, ...]
    seq: int
    kind: Kind
    op: str
    missing: tuple[int, ...]
    mismatched: tuple[int, ...]
    no_dump: tuple[int, ...]


@dataclass(frozen=True)
class Report:
    """Every stuck group (sorted by members, then id), the ranks with no dump, unreadable files."""

    kind: Kind
    findings: tuple[Finding, ...]
    no_dump: tuple[int, ...]
    unreadable: tuple[tuple[str, str], ...] = ()


# ---------------------------------------------------------------- loading

_TRAILING_NUMBER = re.compile(r"(\d+)\D*$")


def _rank_from_name(name: str) -> int | None:
    match = _TRAILING_NUMBER.search(Path(name).name)
    return None if match is None else int(match.group(1))


def _need(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key)
    if value is None or not isinstance(value, kind) or (
        isinstance(value, bool) and kind is int
    ):
        raise DumpError(f"{where}: {key!r} is missing or not a {_type_name(kind)}, got {value!r}")
    return value


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _ranks(raw: object, where: str) -> tuple[int, ...]:
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, nested too deep, a number too long
            value = None
    if not isinstance(value, list) or not all(
        isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in value
    ) or len(set(value)) != len(value):
        raise DumpError(f"{where}: 'ranks' must be a list of distinct ranks, got {raw!r}")
    return tuple(sorted(value))


def _slow_entry(e: object, groups: Mapping[str, GroupInfo], at: str) -> Entry:
    """The entry, checked field by field: raises DumpError naming the first bad field."""
    if not isinstance(e, dict):
        raise DumpError(f"{at} is not an object")
    pg_id = str(_need(e, "pg_id", int, at))
    if pg_id not in groups:
        raise DumpError(f"{at}: pg_id {pg_id} is not in pg_config")
    state = e.get("state")
    if state not in _STATES:
        raise DumpError(f"{at}: 'state' must be one of {_STATES}, got {state!r}")
    return Entry(
        _need(e, "record_id", int, at), pg_id, _need(e, "collective_seq_id", int, at),
        _need(e, "p2p_seq_id", int, at), _need(e, "profiling_name", str, at),
        _need(e, "input_sizes", list, at), _need(e, "input_dtypes", list, at),
        _need(e, "output_sizes", list, at), _need(e, "output_dtypes", list, at),
        state, _need(e, "is_p2p", bool, at))


def _parse(doc: object, rank: int, where: str) -> RankDump:
    if not isinstance(doc, dict):
        raise DumpError(f"{where}: the document is not a JSON object")
    version = _need(doc, "version", str, where)
    groups: dict[str, GroupInfo] = {}
    for pg, cfg in _need(doc, "pg_config", dict, where).items():
        at = f"{where}: pg_config[{pg!r}]"
        if not isinstance(cfg, dict):
            raise DumpError(f"{at} is not an object")
        groups[pg] = GroupInfo(_need(cfg, "name", str, at), _need(cfg, "desc", str, at),
                               _ranks(cfg.get("ranks"), at))
    status: dict[str, GroupStatus] = {}
    for pg, st in _need(doc, "pg_status", dict, where).items():
        at = f"{where}: pg_status[{pg!r}]"
        if not isinstance(st, dict):
            raise DumpError(f"{at} is not an object")
        status[pg] = GroupStatus(_need(st, "last_enqueued_collective", int, at),
                                 _need(st, "last_started_collective", int, at),
                                 _need(st, "last_completed_collective", int, at))
    entries = []
    for i, e in enumerate(_need(doc, "entries", list, where)):
        try:  # the fast path: every field present with its JSON type
            row = Entry(e["record_id"], str(e["pg_id"]), e["collective_seq_id"],
                        e["p2p_seq_id"], e["profiling_name"], e["input_sizes"],
                        e["input_dtypes"], e["output_sizes"], e["output_dtypes"], e["state"],
                        e["is_p2p"])
            ok = (type(e["pg_id"]) is int and type(row.record_id) is int
                  and type(row.collective_seq_id) is int and type(row.p2p_seq_id) is int
                  and type(row.profiling_name) is str and type(row.input_sizes) is list
                  and type(row.input_dtypes) is list and type(row.output_sizes) is list
                  and type(row.output_dtypes) is list and type(row.is_p2p) is bool
                  and row.state in _STATES and row.pg_id in groups)
        except (KeyError, TypeError):
            ok = False
        entries.append(row if ok else _slow_entry(e, groups, f"{where}: entries[{i}]"))
    return RankDump(rank, version, groups, status, tuple(entries))


def load_dump(source: str | os.PathLike[str] | TextIO, rank: int | None = None) -> RankDump:
    """One rank's flight-recorder dump, from a path or a text stream.

    The rank is ``rank`` if given, else the last number in the file's name
    (``nccl_trace_rank_17.json`` is rank 17; a stream's ``name`` is used if it has one).
    Unknown keys are ignored.

    Raises:
        ValueError: no ``rank`` and no number in the name, or ``rank < 0``.
        DumpError: the text is not JSON, is cut short, lacks a required field or has it with
            another JSON type (``12.0`` is not an integer), or a group repeats a rank (the
            message names the file).
        OSError: the file cannot be opened.
    """
    name = os.fspath(source) if isinstance(source, str | os.PathLike) else getattr(
        source, "name", None)
    where = str(name) if isinstance(name, str) else "<stream>"
    if rank is None:
        rank = _rank_from_name(name) if isinstance(name, str) else None
        if rank is None:
            raise ValueError(f"no rank given and no number in the name of {where}")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise ValueError(f"{where}: rank must be an int >= 0, got {rank!r}")
    try:
        if isinstance(source, str | os.PathLike):
            with open(source, encoding="utf-8") as f:
                doc = json.load(f)
        else:
            doc = json.load(source)
    except UnicodeDecodeError as err:
        raise DumpError(f"{where}: not UTF-8 text ({err.reason})") from None
    except json.JSONDecodeError as err:
        raise DumpError(f"{where}: not valid JSON ({err.msg} at line {err.lineno})") from None
    except (ValueError, RecursionError) as err:  # nested too deep, or an integer too long
        raise DumpError(f"{where}: JSON that cannot be read ({type(err).__name__})") from None
    return _parse(doc, rank, where)


# ---------------------------------------------------------------- the diagnosis

_Signature = tuple[str, str]


@dataclass
class _Progress:
    """One rank in one group: the newest sequence number it reached, the last it completed,
    and the signatures of its entries newer than that (the only ones a diagnosis can need)."""

    newest: int
    done: int
    pending: dict[int, _Signature] = field(default_factory=dict)


def _signature(e: Entry) -> _Signature:
    sizes = json.dumps([e.input_sizes, e.input_dtypes, e.output_sizes, e.output_dtypes])
    return e.profiling_name, sizes


def _member(rank: int, ranks: tuple[int, ...]) -> bool:
    """``rank in ranks``: a binary search of the sorted members, not a scan of 4,096 of them per
    dump; the scan only when the search misses (a hand-built GroupInfo may be unsorted)."""
    i = bisect_left(ranks, rank)
    return (i < len(ranks) and ranks[i] == rank) or rank in ranks


class _Tally:
    """What ``find_hang`` keeps: per group (id and members), per dumped member, its progress.

    Invariant: memory is O(groups x ranks + pending entries), never O(all entries).
    """

    def __init__(self) -> None:
        self.groups: dict[tuple[str, tuple[int, ...]], tuple[GroupInfo, dict[int, _Progress]]] = {}
        self.dumped: set[int] = set()
        # (id, id of the members tuple) -> that tuple and its group's members: dumps that share
        # one GroupInfo find their group without hashing all 4,096 members once per dump (which
        # made find_hang quadratic in the ranks). Only a group's first tuple is kept: one a group.
        self._known: dict[tuple[str, int], tuple[tuple[int, ...], dict[int, _Progress]]] = {}

    def add(self, dump: RankDump) -> None:
        if dump.rank in self.dumped:
            raise ValueError(f"two dumps claim rank {dump.rank}")
        self.dumped.add(dump.rank)
        mine: dict[str, _Progress] = {}
        for pg, info in dump.groups.items():
            if not _member(dump.rank, info.ranks):
                continue  # a group this rank only knows of; its members report it
            st = dump.status.get(pg, GroupStatus(-1, -1, -1))
            # Sequence numbers start at 1; -1 (PyTorch's "none yet") and 0 mean nothing.
            mine[pg] = _Progress(max(st.last_enqueued, 0), max(st.last_completed, 0))
        unfinished: list[tuple[_Progress, Entry]] = []
        for e in dump.entries:
            p = mine.get(e.pg_id)
            if p is None or e.is_p2p:
                continue  # send/recv count on p2p_seq_id; their collective_seq_id repeats
            seq = e.collective_seq_id
            # Comparisons, not max(): this loop runs once per entry, and its two max() calls were
            # 15% of scan's work beyond json.load (callgrind instruction counts).
            if seq > p.newest:  # noqa: PLR1730 -- see the comment above
                p.newest = seq
            if e.state != "completed":
                unfinished.append((p, e))
            elif seq > p.done:
                p.done = seq
        for p, e in unfinished:  # once `done` is final: keep what is pending
            if e.collective_seq_id > p.done:
                p.pending[e.collective_seq_id] = _signature(e)
        for pg, p in mine.items():
            self._members(pg, dump.groups[pg])[dump.rank] = p

    def _members(self, pg: str, info: GroupInfo) -> dict[int, _Progress]:
        known = self._known.get((pg, id(info.ranks)))
        if known is not None and known[0] is info.ranks:
            return known[1]
        _, members = self.groups.setdefault((pg, info.ranks), (info, {}))
        if not members:  # a new group: remember its tuple
            self._known[(pg, id(info.ranks))] = (info.ranks, members)
        return members

    def report(self, world_size: int) -> Report:
        findings = [f for (pg, ranks), (info, members) in sorted(
            self.groups.items(), key=lambda item: (item[0][1], item[0][0]))
            if (f := _finding(pg, info, members, self.dumped)) is not None]
        no_dump = tuple(r for r in range(world_size) if r not in self.dumped)
        kinds = {f.kind for f in findings} | ({"missing_rank"} if no_dump else set())
        kind: Kind = next((k for k in _SEVERITY if k in kinds), "no_hang")
        return Report(kind, tuple(findings), no_dump)


def _finding(pg: str, info: GroupInfo, members: dict[int, _Progress],
             dumped: set[int]) -> Finding | None:
    # The first collective not completed by every member that left a dump.
    seq = min(p.done for p in members.values()) + 1
    if all(p.newest < seq for p in members.values()):
        return None  # nobody is waiting: the group is idle
    # A member is missing only if its newest record is older than `seq`: a record that fell
    # off the ring buffer was still issued (pg_status says so). A member whose dump does not
    # list the group issued nothing in it.
    missing = tuple(r for r in info.ranks if r in dumped
                    and (r not in members or members[r].newest < seq))
    seen = {r: p.pending[seq] for r, p in members.items() if seq in p.pending}
    counts = Counter(seen.values())
    # The signature most members share; on a tie, the one of the lowest rank.
    ref = min(seen.items(), key=lambda rs: (-counts[rs[1]], rs[0]))[1] if seen else None
    mismatched = tuple(sorted(r for r, sig in seen.items() if sig != ref))
    no_dump = tuple(r for r in info.ranks if r not in dumped)
    kind: Kind = ("missing_rank" if missing or no_dump else
                  "mismatch" if mismatched else "all_entered")
    return Finding(pg, info.desc, info.ranks, seq, kind, ref[0] if ref else "",
                   missing, mismatched, no_dump)


def find_hang(dumps: Iterable[RankDump], world_size: int) -> Report:
    """Diagnose a hang from every rank's dump, read once and one at a time.

    A group is identified by its id *and* its member ranks. For each group in which a member
    has reached a collective that not every member has completed, the report has a Finding at
    the first such ``collective_seq_id``. ``Report.no_dump`` lists the ranks in
    ``range(world_size)`` with no dump. Send/recv entries (``is_p2p``) are not collectives.

    Raises:
        ValueError: ``world_size < 1``; two dumps with one rank; a rank ``>= world_size``.
    """
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be an int >= 1, got {world_size!r}")
    tally = _Tally()
    for dump in dumps:
        if dump.rank >= world_size:
            raise ValueError(f"rank {dump.rank} is outside world_size {world_size}")
        tally.add(dump)
    return tally.report(world_size)


def scan(directory: str | os.PathLike[str], world_size: int | None = None) -> Report:
    """``find_hang`` over every file in ``directory``, each read once, one at a time.

    A file that cannot be read is listed in ``Report.unreadable`` as (file name, reason), and its
    rank counts as having no dump. ``world_size`` defaults to one more than the highest rank in
    any file name or group, and at least 1 (an empty folder: rank 0 left no dump).

    Raises:
        ValueError: ``directory`` is not a directory, two readable files claim one rank, or as
            ``find_hang``.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise ValueError(f"not a directory: {folder}")
    files = sorted(p for p in folder.iterdir() if p.is_file())
    if world_size is not None and (isinstance(world_size, bool) or world_size < 1):
        raise ValueError(f"world_size must be an int >= 1, got {world_size!r}")
    tally = _Tally()
    unreadable: list[tuple[str, str]] = []
    highest = -1
    for path in files:
        try:
            dump = load_dump(path)
        except (OSError, ValueError) as err:
            unreadable.append((path.name, str(err)))
            highest = max(highest, _rank_from_name(path.name) or 0)
            continue
        if world_size is not None and dump.rank >= world_size:
            raise ValueError(f"rank {dump.rank} is outside world_size {world_size}")
        highest = max(highest, dump.rank, *(r for g in dump.groups.values() for r in g.ranks))
        tally.add(dump)
        # Drop this dump before the next one is parsed: with the loop variable holding it while
        # json.load built the next, scan took about 1.35x as long.
        del dump
    report = tally.report(world_size if world_size is not None else max(highest + 1, 1))
    return replace(report, unreadable=tuple(unreadable))


# ---------------------------------------------------------------- the command line


def _ranks_text(ranks: Sequence[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def _paragraph(report: Report) -> str:
    if report.kind == "no_hang" and not report.unreadable:
        return "No hang found: every group's members completed everything they issued."
    parts = []
    for f in report.findings:
        head = (f"Process group {f.group} ({f.desc}, {_ranks_text(f.ranks)}) is stuck at "
                f"collective {f.seq}" + (f" ({f.op})" if f.op else "") + f": {f.kind}.")
        if f.missing:
            head += f" {_ranks_text(f.missing)} never entered it."
        if f.mismatched:
            head += f" {_ranks_text(f.mismatched)} entered a different op, sizes or dtypes."
        if f.no_dump:
            head += f" {_ranks_text(f.no_dump)} left no dump."
        if f.kind == "all_entered":
            head += " Every member entered and none completed: suspect the network or a GPU."
        parts.append(head)
    if report.no_dump:
        parts.append(f"No dump from {_ranks_text(report.no_dump)}: check whether it crashed.")
    parts.extend(f"Could not read {name}: {why}." for name, why in report.unreadable)
    return " ".join(parts)


def _json(report: Report) -> str:
    data = asdict(report)
    data["unreadable"] = [{"file": n, "reason": r} for n, r in report.unreadable]
    return json.dumps(data, indent=2)


def _print(text: str) -> None:
    """Print ``text``; a file name that stdout cannot encode is shown escaped, not a crash."""
    try:
        print(text)
    except UnicodeEncodeError:
        encoding = sys.stdout.encoding or "utf-8"
        print(text.encode(encoding, "backslashreplace").decode(encoding))


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise _Usage(message)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hang_finder DUMP_DIR [--world-size N] [--format text|json]``.

    Prints one paragraph (or a JSON object) to stdout. Exit status: 0 no hang, 1 a hang or a
    missing dump was found, 2 bad usage (one line on stderr).
    """
    parser = _Parser(prog="python -m hang_finder",
                     description="Name the rank a stuck NCCL collective is waiting for.",
                     epilog="example: python -m hang_finder /tmp/fr_dumps --world-size 4096")
    parser.add_argument("directory", help="folder of per-rank flight-recorder JSON dumps")
    parser.add_argument("--world-size", type=int, help="number of ranks (default: inferred)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    try:
        args = parser.parse_args(argv)
        report = scan(args.directory, args.world_size)
    except (_Usage, ValueError) as err:
        # One line, even for a folder or an option whose name holds a newline.
        print("hang_finder: " + "\\n".join(str(err).splitlines()), file=sys.stderr)
        return 2
    _print(_json(report) if args.format == "json" else _paragraph(report))
    return 0 if report.kind == "no_hang" else 1


if __name__ == "__main__":
    sys.exit(main())
