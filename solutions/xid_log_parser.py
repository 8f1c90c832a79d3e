"""Streaming triage of NVIDIA Xid errors in kernel logs.

`parse_line` turns one kernel-log line into an `XidEvent` (or None), `classify` maps an event to
the `Action` an operator takes, and `summarize` folds a stream of lines into a `Summary` whose
size depends on the number of distinct GPUs and codes, never on the number of lines.
Run as a program, it prints the summary of one or more (optionally gzipped) log files.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import heapq
import io
import json
import os
import re
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import IO, Any, cast


class Action(StrEnum):
    """What to do about an Xid, in increasing severity (definition order is the severity)."""

    IGNORE = "ignore"
    RESTART_APP = "restart_app"
    UNKNOWN = "unknown"
    RESET_GPU = "reset_gpu"
    HARDWARE = "hardware"


# A StrEnum compares as text ("hardware" < "ignore"), so severity needs its own rank.
_ACTIONS = list(Action)
_RANK: dict[Action, int] = {action: rank for rank, action in enumerate(_ACTIONS)}


class MalformedXidLine(ValueError):
    """A line that contains `NVRM: Xid` but does not follow the Xid line grammar."""


@dataclass(frozen=True)
class XidEvent:
    """One Xid line: the GPU `(host, pci)`, the code, the process if known, and the text."""

    host: str | None
    pci: str
    code: int
    pid: int | None
    process: str | None
    message: str


@dataclass(frozen=True)
class GpuReport:
    """Everything `summarize` keeps about one GPU."""

    host: str | None
    pci: str
    events: int
    codes: Mapping[int, int]
    action: Action


@dataclass(frozen=True)
class Summary:
    """What `summarize` returns: exact counts, a few bad lines, the GPUs to look at."""

    lines: int
    events: int
    malformed: int
    malformed_samples: tuple[tuple[int, str], ...]
    by_code: Mapping[int, int]
    by_action: Mapping[Action, int]
    top_gpus: tuple[GpuReport, ...]
    actionable: tuple[GpuReport, ...]


_MARK = "NVRM: Xid"
_BMARK = _MARK.encode()
_SAMPLES = 10
_SAMPLE_CHARS = 200

# One pass over the Xid part of the line; pid and name are optional and may be '<unknown>'.
# The code follows "): " exactly, as drivers print it; `PCI:`, `GPU-I:`, `GPU-CI:` are upper case.
# Numbers stop at 4,300 digits, int()'s limit: a longer code is malformed, a longer pid text.
_XID = re.compile(
    r"NVRM: Xid\s*\(\s*(?:PCI:)?"
    r"(?P<pci>[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"
    r"(?:\s+GPU-I:[0-9]+(?:\s+GPU-CI:[0-9]+)?)?\s*\): (?P<code>[0-9]{1,4300})"
    r"(?:,\s*"
    r"(?:pid=(?:'<unknown>'|<unknown>|(?P<pid>[0-9]{1,4300}))(?:,\s*|\Z))?"
    r"(?:name=(?P<name>.*?)(?:,\s+|,?\Z))?"
    r"(?P<message>.*))?\Z",
    re.DOTALL,
)
_NVLINK5_SEVERITY = re.compile(r"(?<!\S)(?P<word>Fatal|Nonfatal)(?!\S)")
_RECOVERY_TO = re.compile(r"\bto\s+0x[0-9a-fA-F]+\s*\((?P<name>[^)]*)\)")

_TABLE: dict[int, Action] = {
    **dict.fromkeys((8, 13, 31, 32, 43, 45, 68, 69, 80, 94), Action.RESTART_APP),
    **dict.fromkeys((46, 48, 62, 74, 79, 95, 109, 119, 120, 136, 140, 143), Action.RESET_GPU),
    **dict.fromkeys((54, 64), Action.HARDWARE),
    **dict.fromkeys((63, 92, 121), Action.IGNORE),
}

_Fields = tuple[str | None, str, int, int | None, str | None, str]


def _check_host(default_host: str | None) -> None:
    if default_host is not None and not isinstance(default_host, str):
        raise TypeError(f"default_host must be a str or None, got {default_host!r}")
    if default_host == "":
        raise ValueError("default_host must be non-empty or None, got ''")


def _parse(line: str, at: int, default_host: str | None) -> _Fields:
    """The XidEvent fields of `line`, whose `NVRM: Xid` starts at index `at`."""
    match = _XID.match(line.rstrip(), at)
    if match is None:
        raise MalformedXidLine(f"not an Xid line: {line[:_SAMPLE_CHARS]!r}")
    pci, code, pid, name, message = match.group("pci", "code", "pid", "name", "message")
    host = default_host
    # The host is the word before "kernel:", unless that word is the time (it holds a ':').
    kernel = line.find(" kernel:", 0, at)
    if kernel > 0:
        words = line[:kernel].rsplit(None, 1)
        if words and ":" not in words[-1]:
            host = words[-1]
    process = None if name in (None, "", "<unknown>") else name
    return host, pci.lower(), int(code), int(pid) if pid else None, process, message or ""


def parse_line(line: str, *, default_host: str | None = None) -> XidEvent | None:
    """Parse one kernel-log line.

    Returns None for a line without `NVRM: Xid`; anything before `NVRM:` is a prefix, whose
    syslog host (the word before `kernel:`) wins over `default_host`.

    Raises:
        MalformedXidLine: the line contains `NVRM: Xid` but not the Xid grammar.
        TypeError: `line` is not a str, or `default_host` is neither a str nor None.
        ValueError: `default_host` is the empty string.
    """
    if not isinstance(line, str):
        raise TypeError(f"line must be a str, got {type(line).__name__}")
    _check_host(default_host)
    at = line.find(_MARK)
    return None if at < 0 else XidEvent(*_parse(line, at, default_host))


def _action(code: int, message: str) -> Action:
    action = _TABLE.get(code)
    if action is not None:
        return action
    if 144 <= code <= 150:
        found = _NVLINK5_SEVERITY.search(message)
        if found is None:
            return Action.UNKNOWN
        return Action.RESET_GPU if found["word"] == "Fatal" else Action.IGNORE
    if code == 154:
        target = _RECOVERY_TO.search(message)
        if target is None:
            return Action.UNKNOWN
        return Action.IGNORE if target["name"].strip() == "None" else Action.RESET_GPU
    return Action.UNKNOWN


def classify(event: XidEvent) -> Action:
    """The action for one event: the table, NVLink5 severity words, Xid 154's target action.

    Every code has an answer; codes outside the table are `Action.UNKNOWN`.
    """
    return _action(event.code, event.message)


class _Gpu:
    """Running counters for one GPU."""

    __slots__ = ("codes", "events", "rank")

    def __init__(self) -> None:
        # Invariants: events == sum(codes.values()); rank is the highest _RANK of its events.
        self.events = 0
        self.codes: dict[int, int] = {}
        self.rank = 0

    def report(self, key: tuple[str | None, str]) -> GpuReport:
        codes = dict(sorted(self.codes.items()))
        return GpuReport(key[0], key[1], self.events, codes, _ACTIONS[self.rank])


class _Tally:
    """Counters for the Xid lines of one stream."""

    def __init__(self, default_host: str | None) -> None:
        # Invariants: every container is bounded by distinct GPUs, distinct codes or _SAMPLES;
        # events == sum(by_code.values()) == sum(by_rank).
        self.default_host = default_host
        self.gpus: dict[tuple[str | None, str], _Gpu] = {}
        self.by_code: dict[int, int] = {}
        self.by_rank = [0] * len(_ACTIONS)  # events per action, indexed by _RANK
        self.samples: list[tuple[int, str]] = []
        self.events = self.malformed = 0

    def add(self, number: int, raw: str | bytes) -> None:
        """Count line `number`, which contains `NVRM: Xid`."""
        line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        try:
            host, pci, code, _, _, message = _parse(line, line.find(_MARK), self.default_host)
        except MalformedXidLine:
            self.malformed += 1
            if len(self.samples) < _SAMPLES:
                self.samples.append((number, line.rstrip("\r\n")[:_SAMPLE_CHARS]))
            return
        rank = _RANK[_action(code, message)]
        self.events += 1
        self.by_code[code] = self.by_code.get(code, 0) + 1
        self.by_rank[rank] += 1
        gpu = self.gpus.get((host, pci))
        if gpu is None:
            gpu = self.gpus[host, pci] = _Gpu()
        gpu.events += 1
        gpu.codes[code] = gpu.codes.get(code, 0) + 1
        gpu.rank = max(gpu.rank, rank)

    def summary(self, lines: int, top: int) -> Summary:
        gpus = self.gpus.items()
        # A bounded heap: O(GPUs * log top); the key makes ties independent of input order.
        best = heapq.nsmallest(top, gpus, key=lambda kv: (-kv[1].events, kv[0][0] or "", kv[0][1]))
        urgent = sorted(
            (kv for kv in gpus if kv[1].rank >= _RANK[Action.UNKNOWN]),
            key=lambda kv: (-kv[1].rank, kv[0][0] or "", kv[0][1]),
        )
        return Summary(
            lines=lines,
            events=self.events,
            malformed=self.malformed,
            malformed_samples=tuple(self.samples),
            by_code=dict(sorted(self.by_code.items())),
            by_action={_ACTIONS[r]: n for r, n in reversed(list(enumerate(self.by_rank))) if n},
            top_gpus=tuple(gpu.report(key) for key, gpu in best),
            actionable=tuple(gpu.report(key) for key, gpu in urgent),
        )


def summarize(
    lines: Iterable[str | bytes], *, top: int = 10, default_host: str | None = None
) -> Summary:
    """Fold a stream of log lines (str or bytes, each one line) into a `Summary`.

    Reads `lines` once; memory is O(distinct GPUs + distinct codes), whatever the stream's length.
    Malformed Xid lines are counted and the first 10 kept; they never stop the run.

    Raises:
        TypeError: `lines` is a single str or bytes, `top` is not an int, `default_host` not a str.
        ValueError: `top` is negative, or `default_host` is the empty string.
    """
    if isinstance(lines, (str, bytes)):
        raise TypeError("lines must be an iterable of lines, not a single str or bytes")
    if not isinstance(top, int) or isinstance(top, bool):
        raise TypeError(f"top must be an int, got {top!r}")
    if top < 0:
        raise ValueError(f"top must be >= 0, got {top}")
    _check_host(default_host)
    tally = _Tally(default_host)
    items = enumerate(lines, 1)
    count, raw, mark = 0, cast(object, None), cast(str | bytes, _MARK)
    while True:
        try:
            # ~98% of lines cost only this substring test: no decoding, no regex.
            for count, raw in items:
                if mark in raw:  # type: ignore[operator]  # str vs bytes is handled below
                    tally.add(count, raw)
            break
        except TypeError:
            # `raw` is bytes while `mark` is str, or the reverse: switch marks, resume the stream.
            if isinstance(raw, str) == isinstance(mark, str) or not isinstance(raw, str | bytes):
                raise
            mark = _MARK if isinstance(raw, str) else _BMARK
            if mark in raw:  # type: ignore[operator]
                tally.add(count, raw)
    return tally.summary(count, top)


_EXAMPLES = """\
examples:
  python xid_log_parser.py /var/log/kern.log
  python xid_log_parser.py node-*.log.gz --top 5
  journalctl -k -o short | python xid_log_parser.py - --format json
  dmesg | python xid_log_parser.py - --host node-17
"""


def _top(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


def _host(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("must be non-empty")
    return text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xid_log_parser.py",
        description="Summarize NVIDIA Xid errors in kernel logs (plain or gzipped).",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="a log file, or - for stdin")
    parser.add_argument("--top", type=_top, default=10, metavar="K", help="GPUs to list (10)")
    parser.add_argument("--host", type=_host, help="host for lines without a syslog host")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output")
    return parser


def _lines(paths: Sequence[str], failed: list[str]) -> Iterator[str]:
    """Every line of every file, in order; a file that cannot be read is reported and skipped."""
    for path in paths:
        try:
            if path == "-":
                yield from _text_lines(sys.stdin.buffer)
            else:
                with open(path, "rb") as stream:
                    yield from _text_lines(stream)
        except (OSError, EOFError, zlib.error) as exc:
            failed.append(path)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            print(f"xid_log_parser: cannot read {path}: {reason}", file=sys.stderr)


def _text_lines(stream: IO[bytes]) -> Iterator[str]:
    """The stream's lines as text, gunzipped when it starts with the gzip magic number.

    Decoding here (bad bytes become U+FFFD) hands `summarize` str lines, its fast path;
    newline="\n" splits on LF only, as the kernel writes them, and keeps any CR for rstrip.
    """
    buffered = stream
    if not isinstance(buffered, io.BufferedReader):  # peek() needs a buffered reader
        buffered = io.BufferedReader(cast(Any, stream))
    binary: IO[bytes] = buffered
    if buffered.peek(2)[:2] == b"\x1f\x8b":
        binary = cast(IO[bytes], gzip.GzipFile(fileobj=buffered))
    text = io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline="\n")
    try:
        yield from text
    finally:
        text.detach()  # leave the caller's stream (stdin) open


def _gpu_rows(gpus: Sequence[GpuReport]) -> list[str]:
    rows = [f"  {'ACTION':<12} {'HOST':<16} {'PCI':<14} {'EVENTS':>7}  CODES"]
    for gpu in gpus:
        codes = " ".join(f"{code}x{n}" for code, n in gpu.codes.items())
        host = gpu.host or "-"
        rows.append(f"  {gpu.action:<12} {host:<16} {gpu.pci:<14} {gpu.events:>7}  {codes}")
    return rows if gpus else ["  (none)"]


def _text(summary: Summary) -> str:
    out = [
        f"{summary.lines} lines, {summary.events} Xid events, {summary.malformed} malformed",
        "by action: " + (", ".join(f"{a} {n}" for a, n in summary.by_action.items()) or "-"),
        "by code:   " + (", ".join(f"{c} x{n}" for c, n in summary.by_code.items()) or "-"),
        "",
        f"Actionable GPUs ({len(summary.actionable)}):",
        *_gpu_rows(summary.actionable),
        "",
        f"Top GPUs by events ({len(summary.top_gpus)}):",
        *_gpu_rows(summary.top_gpus),
    ]
    if summary.malformed_samples:
        out += ["", f"Malformed lines (first {len(summary.malformed_samples)}):"]
        out += [f"  line {n}: {text}" for n, text in summary.malformed_samples]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the program; returns 0, or 1 when a file could not be read. Bad usage exits 2."""
    args = _parser().parse_args(argv)
    failed: list[str] = []
    summary = summarize(_lines(args.files, failed), top=args.top, default_host=args.host)
    report = json.dumps(dataclasses.asdict(summary), indent=2) if args.format == "json" else None
    try:
        print(report or _text(summary))
    except BrokenPipeError:  # the reader left (`| head`): no traceback, and no failed flush at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
