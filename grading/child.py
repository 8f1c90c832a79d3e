"""One grading child's lifecycle: its folder, its limits, its start, the watch, the kill, and
the settling of what it left unreported.

Each child gets a fresh work directory holding the submission, the visible tests and the hidden
checks (laid out as `contract` names them), runs in a session of its own under resource limits
(`processes`), reads its configuration on stdin and reports over a channel file (`channel`).
The watch here enforces each check's time limit and the run's wall limit; a check that never
reports (the child crashed, hung or exited) is failed with the reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from grading import contract, forkserver, hostos, isolation, processes, testcode
from grading.catalog import CHILD_SIDE, Exercise
from grading.channel import ChannelReader, ChildReport, Progress
from grading.limits import AFTER_STRIKES, GRACE, Limits, Strikes
from grading.results import Result

_PROGRESS = re.compile(r"^[.FEsxX]+(\s*\[\s*\d+%\])?")
_PAST_LIMIT = "the check ran past its"
# Once enough checks of a grading stopped at their limits (`Strikes.hangs`), a child dealt its
# checks before that is stopped, and a new one runs the checks still to run under the limits
# cut since; it also leaves behind what the stuck calls left running (threads still spinning).
_RESTART = "the submission hangs: the checks still to run start again under shorter limits"
_LIBRARY = threading.Lock()


@dataclass(frozen=True)
class Run:
    """What every child of one grading shares."""

    exercise: Exercise
    submission: Path
    limits: Limits
    deadline: float  # time.monotonic() when the run's wall limit is reached
    folder: Path  # the grading's own temporary folder, where each child gets one of its own
    progress: Progress | None = None
    strikes: Strikes | None = None


def run_child(run: Run, attempt: int, config: contract.Config, results: dict[str, Result],
              stop: threading.Event | None = None) -> ChildReport:
    """One child process: start it, watch it, and settle what it left unreported."""
    lib, ini = library(run.limits)
    # A folder of its own, under a name no child can guess before it exists (children share the
    # folder of runs: one could plant a file, or a link to a file of the grader's, where the next
    # would go). Nothing the last child wrote survives into it.
    place = Path(tempfile.mkdtemp(prefix=f"child-{attempt}-", dir=run.folder))
    work = place / "work"
    channel, output = place / "channel.jsonl", place / "output.txt"
    token = secrets.token_hex(16)
    out_fd = _new_file(output, os.O_RDWR)  # read back through this descriptor, never the path
    reader = ChannelReader(_new_file(channel, os.O_RDONLY), token)
    work.mkdir()
    lay_out(work, run.exercise, run.submission)
    cgroup = isolation.new_run_cgroup()
    files = _test_files(run.exercise, config.get("only"), results)
    args = contract.pytest_args(ini, work, files, collect=config.get("mode") == "collect")
    stdin_read, stdin_write = os.pipe()
    try:
        proc = processes.start(processes.Launch(args, work, lib, run.folder,
                                                _rlimits(run, cgroup)), stdin_read, out_fd)
    except BaseException:
        os.close(stdin_write)
        os.close(out_fd)
        reader.close()
        raise
    finally:
        os.close(stdin_read)
    sent: contract.Config = {**config, "token": token, "channel": str(channel),
                             "timeout": run.limits.timeout,
                             "submission": str(work / contract.submission_file(run.exercise.name))}
    with contextlib.suppress(OSError), open(stdin_write, "wb") as stdin:
        stdin.write(json.dumps(sent).encode())  # a child already gone is handled below
    child = ChildReport(results, run.progress)
    killed_for = ""  # stays so when the watch itself is interrupted (Ctrl-C)
    try:
        killed_for = _watch(run, proc, reader, child, stop)
    finally:
        code = processes.kill(proc)
        isolation.end_run_cgroup(cgroup)
        try:
            last = reader.records()
        finally:
            reader.close()
            with open(out_fd, "rb") as out:
                tail = _tail(out)
                past = killed_for.startswith(_PAST_LIMIT)
                stuck = _stuck_at(out, run.exercise.name) if past else ""
    for record in last:  # after the files are closed: a bad record raises
        child.apply(record)
    _count_stops(run, child)
    if run.strikes is not None and killed_for.startswith(_PAST_LIMIT):
        run.strikes.add()
    _conclude(child, config, f"{killed_for}; stuck at {stuck}" if stuck else killed_for,
              _exit_reason(code, tail))
    return child


def _rlimits(run: Run, cgroup: str) -> dict[str, Any]:
    """What `_boot` holds the child to (see `Limits`): its CPU time to the run's wall limit."""
    limits = run.limits
    return {"memory": limits.memory, "file_size": limits.file_size,
            "open_files": limits.open_files,
            "cpu": int(max(1, run.deadline - time.monotonic())) + 5, "cgroup": cgroup,
            "nproc": 0 if cgroup else isolation.nproc_budget(),
            "without": sorted(hostos.without())}


def library(limits: Limits) -> tuple[Path, Path]:
    """The folder holding the child's side of the grader (`CHILD_SIDE`) and the boot script,
    and the pytest configuration for `limits`: written by the grader into the folder of runs'
    `lib`, which children under bubblewrap see read-only (see `isolation.LIB`); shared by every
    child of this process."""
    lib = forkserver.boot_script().parent
    ini = lib / f"pytest-{limits.timeout:g}.ini"
    with _LIBRARY:
        for source in CHILD_SIDE:
            name = contract.lib_module(source.stem)
            if not (lib / f"{name}.py").is_file():
                shutil.copyfile(source, lib / f"{name}.py")
        if not ini.is_file():
            ini.write_text(contract.pytest_ini(limits.timeout))
    return lib, ini


def _new_file(path: Path, mode: int) -> int:
    """A descriptor (`mode`: os.O_RDONLY or os.O_RDWR) on `path`, made here, new and empty:
    never a file or link that was there before."""
    extra = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)  # POSIX only
    return os.open(path, mode | os.O_CREAT | os.O_EXCL | extra, 0o600)


def _watch(run: Run, proc: forkserver.Process, reader: ChannelReader, child: ChildReport,
           stop: threading.Event | None) -> str:
    """Follow the child until it exits; return why it had to be killed ("" if it was not)."""
    started = time.monotonic()
    watcher = processes.Watcher.needed(proc, run.limits.memory)
    # Whether its checks were dealt under limits cut for a hang, as they were dealt (before any
    # child of this round started).
    dealt_hung = run.strikes is None or run.strikes.dealt_hung
    while True:
        exited = proc.poll() is not None
        for record in reader.records():
            child.apply(record)
        _count_stops(run, child)
        if exited:
            return ""
        if run.strikes is not None and run.strikes.restart(dealt_hung) and not child.done:
            return _RESTART
        if stop is not None and stop.is_set():
            return "the grading was stopped"
        now = time.monotonic()
        late = _overdue(run, child, now - started, now)
        if late:
            return late
        if child.done and now - child.started_at > GRACE:
            return ""  # finished, but a thread it left keeps the process alive
        over = watcher.over(now) if watcher is not None else ""
        if over:
            return over
        time.sleep(0.02)


def _count_stops(run: Run, child: ChildReport) -> None:
    """Tell the grading's strikes of the checks this child stopped at their limits since."""
    if run.strikes is not None and child.timed_out > child.counted:
        run.strikes.add_stopped(child.timed_out - child.counted)
        child.counted = child.timed_out


def _overdue(run: Run, child: ChildReport, running: float, now: float) -> str:
    """Why the child must be stopped for time now ("" if it need not)."""
    if now >= run.deadline:
        return f"the run exceeded its wall limit of {run.limits.wall:g} s"
    collect_limit = min(run.limits.collect, run.limits.wall)
    if child.collected is None and running > collect_limit:
        return f"importing the submission took over {collect_limit:g} s"
    if child.current is not None and child.current in child.results:
        limit = child.results[child.current].check.timeout
        grace = GRACE if limit > AFTER_STRIKES else AFTER_STRIKES / 2
        if now - child.started_at > limit + grace:
            return f"{_PAST_LIMIT} {limit:g} s limit and did not stop"
    return ""


def _test_files(exercise: Exercise, only: list[str] | None,
                results: dict[str, Result]) -> list[str]:
    """The test files to hand pytest: those holding a wanted check (a file none of whose checks
    is wanted is not even imported); all of them when every check is wanted."""
    visible, hidden = contract.visible_tests_file(exercise.name), contract.HIDDEN_DIR
    if only is None:
        return [visible, hidden]
    files: set[str] = set()
    for cid in only:
        known = results[cid].check.file if cid in results else ""
        files.add(known or (hidden if cid.startswith(f"{contract.HIDDEN}::") else visible))
    if hidden in files:  # the whole folder already holds every hidden file
        files = {f for f in files if not f.startswith(f"{hidden}/")}
    return sorted(files)


def lay_out(work: Path, exercise: Exercise, submission: Path) -> None:
    """`work` as a child finds it: the submission, the visible tests, the hidden checks in their
    folder, the data files and the test modules as the grader compiled them."""
    for extra in exercise.data_files:
        shutil.copyfile(extra, work / extra.name)
    shutil.copyfile(submission, work / contract.submission_file(exercise.name))
    shutil.copyfile(exercise.visible_tests, work / contract.visible_tests_file(exercise.name))
    (work / contract.HIDDEN_DIR).mkdir()
    for path in exercise.hidden_files:
        shutil.copyfile(path, work / contract.HIDDEN_DIR / path.name)
    compiled = testcode.compiled(exercise)
    if compiled:
        (work / contract.COMPILED).write_bytes(compiled)


def fail(results: Iterable[Result], status: contract.FinalStatus, message: str) -> None:
    """Give every pending one of `results` `status` with `message`."""
    for result in results:
        if result.status == "pending":
            result.status, result.message = status, message


def _conclude(child: ChildReport, config: contract.Config, killed_for: str,
              exit_reason: str) -> None:
    """Settle what the child left unreported: the check it was killed in, the check it died
    in, or the checks it was asked for and never collected."""
    if killed_for == _RESTART:  # nothing to blame: the checks still to run stay pending
        return
    if killed_for or not child.done:
        child.ended = killed_for or exit_reason
    if killed_for:
        _settle(child, "crashed" if killed_for.startswith(processes.OVER) else "timeout",
                killed_for)
    elif not child.done:
        _settle(child, "crashed", exit_reason)
    elif child.collected is not None:
        missing = [child.results[i] for i in config.get("only", ()) if i not in child.collected]
        why = (f"the check could not be collected: {child.collect_errors[0]}"
               if child.collect_errors else
               "the check was not collected (were the test files changed while it ran?)")
        fail(missing, "error", why)


def _settle(child: ChildReport, status: contract.FinalStatus, reason: str) -> None:
    """The child stopped without finishing: blame the check in progress, or all if none ran."""
    if child.current is not None and child.current in child.results:
        fail([child.results[child.current]], status, reason)
    elif child.collected is None:
        fail(child.results.values(), status, f"{reason} (while importing the submission)")


def _exit_reason(code: int | None, tail: str) -> str:
    if code == forkserver.LOST:
        what = "the process watching the child stopped reporting (killed by the submission?)"
    elif code is not None and code < 0:
        try:
            what = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            what = f"killed by signal {-code}"
        if -code == getattr(signal, "SIGXFSZ", None):
            what += " (output or a file exceeded the size limit)"
        elif -code == getattr(signal, "SIGXCPU", None):
            what += " (CPU time limit)"
    else:
        what = f"the process exited with status {code} (sys.exit, os._exit or a crash)"
    return f"{what}: {tail}" if tail else what


def _tail(output: BinaryIO, lines: int = 3) -> str:
    try:
        output.seek(max(0, output.seek(0, os.SEEK_END) - 1000))
        text = output.read().decode(errors="replace")
    except OSError:
        return ""
    # pytest's progress characters are noise here; what the process printed last is not.
    kept = [_PROGRESS.sub("", line).strip() for line in text.splitlines()]
    kept = [line for line in kept if line]
    return " | ".join(kept[-lines:])


def _stuck_at(output: BinaryIO, name: str) -> str:
    """Where the submission was when the child's stacks were dumped past its limit (see the
    plugin's `_STACKS`): `NAME.py:LINE in FUNCTION`, the innermost frame of the submission in
    the last dump's first thread that is in it; "" when there is none."""
    try:
        output.seek(max(0, output.seek(0, os.SEEK_END) - (64 << 10)))
        text = output.read().decode(errors="replace")
    except OSError:
        return ""
    _, found_dump, dump = text.rpartition("most recent call first")
    if not found_dump:
        return ""
    found = re.search(rf'File "[^"]*[/\\]{re.escape(name)}\.py", line (\d+) in (\w+)', dump)
    return f"{name}.py:{found[1]} in {found[2]}" if found else ""
