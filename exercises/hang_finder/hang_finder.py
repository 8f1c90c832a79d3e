"""Find the rank a stuck NCCL collective is waiting for, from PyTorch flight-recorder dumps.

Each rank's dump (JSON) lists the last N collectives it issued (a ring buffer) and, per process
group, how far it got (``pg_status``). ``find_hang`` reads the dumps one at a time, keeps a few
numbers per (group, rank), and names, for every stuck group, the first collective not completed
by every member and the members that never entered it, entered a different one, or left no dump.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
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
    raise NotImplementedError("load_dump is not written yet")


def find_hang(dumps: Iterable[RankDump], world_size: int) -> Report:
    """Diagnose a hang from every rank's dump, read once and one at a time.

    A group is identified by its id *and* its member ranks. For each group in which a member
    has reached a collective that not every member has completed, the report has a Finding at
    the first such ``collective_seq_id``. ``Report.no_dump`` lists the ranks in
    ``range(world_size)`` with no dump. Send/recv entries (``is_p2p``) are not collectives.

    Raises:
        ValueError: ``world_size < 1``; two dumps with one rank; a rank ``>= world_size``.
    """
    raise NotImplementedError("find_hang is not written yet")


def scan(directory: str | os.PathLike[str], world_size: int | None = None) -> Report:
    """``find_hang`` over every file in ``directory``, each read once, one at a time.

    A file that cannot be read is listed in ``Report.unreadable`` as (file name, reason), and its
    rank counts as having no dump. ``world_size`` defaults to one more than the highest rank in
    any file name or group, and at least 1 (an empty folder: rank 0 left no dump).

    Raises:
        ValueError: ``directory`` is not a directory, two readable files claim one rank, or as
            ``find_hang``.
    """
    raise NotImplementedError("scan is not written yet")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hang_finder DUMP_DIR [--world-size N] [--format text|json]``.

    Prints one paragraph (or a JSON object) to stdout. Exit status: 0 no hang, 1 a hang or a
    missing dump was found, 2 bad usage (one line on stderr).
    """
    raise NotImplementedError("main is not written yet")


if __name__ == "__main__":
    sys.exit(main())
