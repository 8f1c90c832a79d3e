"""Streaming triage of NVIDIA Xid errors in kernel logs.

`parse_line` turns one kernel-log line into an `XidEvent` (or None), `classify` maps an event to
the `Action` an operator takes, and `summarize` folds a stream of lines into a `Summary` whose
size depends on the number of distinct GPUs and codes, never on the number of lines.
Run as a program, it prints the summary of one or more (optionally gzipped) log files:

    python xid_log_parser.py sample.log [--top K] [--host NAME] [--format text|json]

See README.md for the rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum


class Action(StrEnum):
    """What to do about an Xid, in increasing severity (definition order is the severity).

    Careful: a StrEnum compares as text, so `max()` over actions is not "most severe".
    """

    IGNORE = "ignore"  # informational
    RESTART_APP = "restart_app"  # the application faulted: retry the job, the GPU stays in service
    UNKNOWN = "unknown"  # a code not in the table: a human must look
    RESET_GPU = "reset_gpu"  # drain the node, reset the GPU (or reboot)
    HARDWARE = "hardware"  # file a hardware ticket (RMA / field service)


class MalformedXidLine(ValueError):
    """A line that contains `NVRM: Xid` but does not follow the Xid line grammar."""


@dataclass(frozen=True)
class XidEvent:
    """One Xid line.

    host: from a syslog prefix (the word before `kernel:`), else the default host; never "".
    pci: normalized "dddd:bb:dd", lower case, no MIG suffix.
    pid, process: None when absent or `<unknown>`.
    message: the text after the code (and after pid/name), without the ", " separators and
        without trailing whitespace or line ending.
    """

    host: str | None
    pci: str
    code: int
    pid: int | None
    process: str | None
    message: str


@dataclass(frozen=True)
class GpuReport:
    """Everything a summary keeps about one GPU, identified by `(host, pci)`.

    codes: code -> number of events; action: the most severe action among its events.
    """

    host: str | None
    pci: str
    events: int
    codes: Mapping[int, int]
    action: Action


@dataclass(frozen=True)
class Summary:
    """What `summarize` returns.

    lines: every line read; events: Xid events parsed; malformed: Xid lines that failed to parse.
    malformed_samples: (1-based line number, line without its ending cut to 200 chars), first 10.
    by_code / by_action: events per code / per action (entries of 0 may be left out).
    top_gpus: the `top` GPUs with most events, ties by `(host or "", pci)` ascending.
    actionable: every GPU whose action is UNKNOWN, RESET_GPU or HARDWARE, most severe first,
        then by `(host or "", pci)`.
    """

    lines: int
    events: int
    malformed: int
    malformed_samples: tuple[tuple[int, str], ...]
    by_code: Mapping[int, int]
    by_action: Mapping[Action, int]
    top_gpus: tuple[GpuReport, ...]
    actionable: tuple[GpuReport, ...]


def parse_line(line: str, *, default_host: str | None = None) -> XidEvent | None:
    """Parse one kernel-log line.

    Returns None for a line that does not contain `NVRM: Xid`. Anything before `NVRM:` is a
    prefix; a syslog host in it (the word before `kernel:`) wins over `default_host`.

    >>> parse_line("NVRM: Xid (PCI:0000:3B:00): 79, GPU has fallen off the bus.").pci
    '0000:3b:00'

    Raises:
        MalformedXidLine: the line contains `NVRM: Xid` but not the Xid grammar.
        TypeError: `line` is not a str, or `default_host` is neither a str nor None.
        ValueError: `default_host` is the empty string.
    """
    raise NotImplementedError("parse_line: parse one kernel-log line into an XidEvent")


def classify(event: XidEvent) -> Action:
    """The action for one event: the code table, NVLink5 `Fatal`/`Nonfatal`, Xid 154's target.

    Every code has an answer: codes outside the table are `Action.UNKNOWN`.
    """
    raise NotImplementedError("classify: map an XidEvent to its Action")


def summarize(
    lines: Iterable[str | bytes], *, top: int = 10, default_host: str | None = None
) -> Summary:
    """Fold a stream of log lines (str or bytes, one line per item) into a `Summary`.

    Reads `lines` once; memory is proportional to the distinct GPUs and codes, never to the
    number of lines. A malformed Xid line is counted and sampled; nothing about a line stops
    the run.

    Raises:
        TypeError: `lines` is a single str or bytes, `top` is not an int, `default_host` not a str.
        ValueError: `top` is negative, or `default_host` is the empty string.
    """
    raise NotImplementedError("summarize: fold a stream of lines into a Summary")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the program on `argv` (default: `sys.argv[1:]`).

    `FILE... [--top K] [--host NAME] [--format text|json]`; files may be gzipped, `-` is stdin.
    Returns 0, or 1 when a file could not be read (reported on stderr, the rest still
    summarized). Bad usage exits with status 2.
    """
    raise NotImplementedError("main: the command-line program")


if __name__ == "__main__":
    raise SystemExit(main())
