"""The parent's side of a child's channel: the records read back, and what they say.

The plugin appends one JSON object a line to the channel file (see `contract` for the events);
`ChannelReader` yields the whole ones that carry this run's token, and `ChildReport` keeps what
they said, one method per event, in the shape of pytest-xdist's `dsession`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from grading import contract
from grading.results import Result

Progress = Callable[[int, int, str], None]  # (checks done, checks in all, the one starting)


class ProtocolError(Exception):
    """The child reported what the contract does not allow. Only the plugin writes records with
    the run's token, so this is a fault of the grader's: the grade is marked not graded, with
    the error as its reason. (A submission that reads the token from the plugin in its own
    process and writes such a record only makes its own grade "not graded".)"""


class ChannelReader:
    """Tails the channel file; yields only whole records carrying this run's token."""

    def __init__(self, fd: int, token: str) -> None:
        self._file = open(fd, "rb")  # noqa: SIM115  # closed by `close`
        self._token = token
        self._partial = b""

    def records(self) -> list[dict[str, Any]]:
        data = self._partial + self._file.read()
        *lines, self._partial = data.split(b"\n")
        out = []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # garbage written to the channel by the submission
            if isinstance(record, dict) and record.get("token") == self._token:
                out.append(record)
        return out

    def close(self) -> None:
        self._file.close()


@dataclass
class ChildReport:
    """What one child reported, applied to the results of the checks it was given."""

    results: dict[str, Result]
    progress: Progress | None = None
    collected: list[str] | None = None  # the ids about to run, once collection is over
    collect_errors: list[str] = field(default_factory=list)
    current: str | None = None  # the check running now
    started_at: float = 0.0  # when it started (or when the session finished)
    done: bool = False  # the session finished
    checks: list[dict[str, Any]] = field(default_factory=list)  # collect mode: the checks
    ended: str = ""  # why the child was killed, or how it exited, when it did not finish
    timed_out: int = 0  # checks that reported running out of time
    counted: int = 0  # of those, how many the grading's strikes were told of

    def apply(self, record: dict[str, Any]) -> None:
        """Take one record read from the channel."""
        ev = record.get("ev")
        if ev not in contract.EVENTS:
            raise ProtocolError(f"the child reported an unknown event {ev!r}")
        getattr(self, f"on_{ev}")(record)

    def on_check(self, record: dict[str, Any]) -> None:
        if record.get("visibility") not in contract.VISIBILITIES:
            raise ProtocolError(f"the child reported a check {record.get('id')!r} of unknown "
                                f"visibility {record.get('visibility')!r}")
        self.checks.append(record)

    def on_collected(self, record: dict[str, Any]) -> None:
        self.collected = [str(i) for i in record.get("ids", [])]

    def on_collect_error(self, record: dict[str, Any]) -> None:
        self.collect_errors.append(collect_message(str(record.get("message", ""))))

    def on_start(self, record: dict[str, Any]) -> None:
        self.current, self.started_at = str(record.get("id")), time.monotonic()
        if self.progress is not None and self.current in self.results:
            done = sum(r.status != "pending" for r in self.results.values())
            self.progress(done, len(self.results), self.results[self.current].check.name)

    def on_figure(self, record: dict[str, Any]) -> None:
        result = self.results.get(str(record.get("id")))
        if result is not None and result.status == "pending":
            with contextlib.suppress(TypeError, ValueError, KeyError):
                result.figures.append({"label": str(record.get("label", "")),
                                       "figure": float(record["figure"]),
                                       "limit": float(record["limit"])})

    def on_result(self, record: dict[str, Any]) -> None:
        self.current = None
        status = record.get("status")
        if status not in contract.REPORTED:
            raise ProtocolError(f"the child reported an unknown status {status!r} for "
                                f"{record.get('id')!r}")
        result = self.results.get(str(record.get("id")))
        if result is not None and result.status == "pending":
            result.status = cast("contract.Status", status)
            self.timed_out += status == "timeout"
            result.message = str(record.get("message", ""))
            result.falsifying = str(record.get("falsifying", ""))
            result.duration = float(record.get("duration", 0.0))

    def on_done(self, _record: dict[str, Any]) -> None:
        self.done, self.current, self.started_at = True, None, time.monotonic()


def collect_message(longrepr: str) -> str:
    """The lines that say what went wrong (pytest marks them `E`), not the whole traceback."""
    said = [line[1:].strip() for line in longrepr.splitlines() if line.startswith("E ")]
    kept = said or [line for line in longrepr.splitlines() if line.strip()][-3:]
    return "\n".join(kept)
