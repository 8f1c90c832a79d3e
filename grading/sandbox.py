"""Run pytest on one submission in a child process and turn what it reports into results.

Each child gets a fresh work directory holding the submission (as `NAME.py`), the visible tests
and the hidden checks (in `hidden/`), runs in a session of its own under resource limits
(started by `forkserver.py`), and reports over a channel file (see `plugin.py`). A watchdog here
enforces each check's time limit and the run's wall limit. A check that never reports (the child
crashed, hung, or exited) is failed with the reason, and a new child resumes the run without the
checks already recorded, so one bad check costs only its own points. The check list itself
(names, points) always comes from collecting the trusted stub, never from the submission's run.

A grading deals its checks out to `Limits.shards` children that run at once (`_deal`), by what
each check cost the reference (stored with the exercise's signatures), so that they finish
together; a child costs a few tenths of a second to start, so a grading is split only when it
has `_SHARD_MIN` checks for each child (one check, or a mutant's few, run in one child). The
split depends on the check list alone (stored costs included), never on the machine or on this
run's timing, so a submission that leaks state from one check into another scores the same
everywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

from grading import forkserver, hostos, isolation, testcode
from grading.catalog import ROOT, Exercise
from grading.results import Check, Result

CACHE = ROOT / ".grader" / "checks"
_PLUGIN = "_kata_grading_plugin"
_PROGRESS = re.compile(r"^[.FEsxX]+(\s*\[\s*\d+%\])?")
_GRACE = 1.0  # seconds past a check's own timeout before the watchdog kills the child
_FLOOR = 3.0  # the least time limit a check is given from its cost (see `bounded`)
_COST_FACTOR = 30.0  # a check's limit, in times what it cost the reference
# After this many checks of a grading were killed for running past their limits without
# stopping (the submission ignores the timeout), the rest run to `_AFTER_STRIKES` seconds each:
# a check that does not call the hanging code passes in far less.
_STRIKES, _AFTER_STRIKES = 3, 0.5
_PAST_LIMIT = "the check ran past its"
_HIDDEN_DIR = "hidden"  # where the hidden checks go in a work directory (see plugin.py)
_COLLECT_LIMIT = 60.0  # seconds allowed for importing the submission and collecting
_SHARD_MIN = 8  # the fewest checks a child is dealt when a grading is split


@dataclass(frozen=True)
class Limits:
    """Resource limits for one graded run."""

    wall: float = 240.0  # seconds for the whole run, resumes included
    memory: int = 4 << 30  # bytes of address space
    file_size: int = 64 << 20  # bytes any one file (captured output included) may grow to
    open_files: int = 512
    timeout: float = 10.0  # default per-check limit; `@pytest.mark.timeout(s)` overrides
    shards: int = 2  # children that share a grading's checks, running at once
    from_costs: bool = True  # limits from what each check cost the reference (`bounded`)


@dataclass
class _Child:
    """What one child run reported."""

    collected: list[str] | None = None
    collect_errors: list[str] = field(default_factory=list)
    current: str | None = None
    started_at: float = 0.0
    done: bool = False
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)


class GradingError(Exception):
    """The grader could not grade at all (e.g. the exercise's own test files do not collect)."""


Progress = Callable[[int, int, str], None]


def collect(exercise: Exercise, limits: Limits = Limits(),
            costs: dict[str, float] | None = None) -> list[Check]:
    """The checks of an exercise, collected with its stub (trusted code), with `costs` (what
    each cost the reference: `signatures.costs`) where given.

    Cached in `.grader/checks/` under a hash of everything collection reads, so a repeat costs
    no child process.
    """
    return with_costs(_collected(exercise, limits), costs or {})


def with_costs(checks: Iterable[Check], costs: dict[str, float]) -> list[Check]:
    """`checks`, each with the cost it is dealt by: the seconds stored for it; the median of the
    stored ones for a check that has none yet (added since the last refresh); its time limit
    when the exercise has no costs stored at all."""
    if not costs:
        return [replace(c, cost=c.timeout) for c in checks]
    usual = statistics.median(costs.values())
    return [replace(c, cost=costs.get(c.id, usual), costed=c.id in costs) for c in checks]


def bounded(checks: Iterable[Check], limits: Limits) -> list[Check]:
    """`checks`, each with the time limit it runs under: with `limits.from_costs`, a check on
    the default limit whose cost on the reference is stored gets `_COST_FACTOR` times that cost
    (at least `_FLOOR` seconds, at most the default), so that a submission that hangs costs
    seconds, not the default limit, in every check that calls the hanging code. The factor
    leaves room for a correct answer slower than the reference on a loaded machine. A check
    that sets its own limit (the measuring checks, whose wrong answers run to a budget) keeps
    it: its verdict must not turn on the machine's load."""
    if not limits.from_costs:
        return list(checks)
    return [replace(c, timeout=min(c.timeout, max(_FLOOR, _COST_FACTOR * c.cost)))
            if c.costed and c.timeout == limits.timeout else c for c in checks]


def _collected(exercise: Exercise, limits: Limits) -> list[Check]:
    digest = hashlib.sha256(f"{sys.version}|{limits.timeout}".encode())
    for path in (Path(__file__).with_name("plugin.py"), exercise.stub, exercise.visible_tests,
                 *exercise.hidden_files):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    cache = CACHE / f"{exercise.name}-{digest.hexdigest()[:16]}.json"
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        return [Check(**c) for c in json.loads(cache.read_text(encoding="utf-8"))]
    checks = _collect(exercise, limits)
    with contextlib.suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        for stale in cache.parent.glob(f"{exercise.name}-*.json"):
            stale.unlink(missing_ok=True)
        partial = cache.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps([c.__dict__ for c in checks]), encoding="utf-8")
        partial.replace(cache)  # readers see the whole file or none
    return checks


def _collect(exercise: Exercise, limits: Limits) -> list[Check]:
    trusted = replace(limits, wall=_COLLECT_LIMIT)  # the stub is not held to a run's wall limit
    with tempfile.TemporaryDirectory(prefix="run-", dir=isolation.runs_dir()) as tmp:
        child = _run_child(Path(tmp), 0, exercise, exercise.stub, {"mode": "collect"}, trusted,
                           time.monotonic() + _COLLECT_LIMIT, {}, None)
    if child.collect_errors or not child.checks:
        detail = child.collect_errors[0] if child.collect_errors else "no checks were collected"
        raise GradingError(f"cannot collect the checks of {exercise.name}: {detail}")
    return [
        Check(c["id"], c["name"], c["visibility"], c["category"], float(c["points"]),
              float(c["timeout"]), str(c.get("file", "")))
        for c in child.checks
    ]


def grade(exercise: Exercise, submission: Path, checks: Iterable[Check],
          limits: Limits = Limits(), progress: Progress | None = None) -> list[Result]:
    """Run every check against `submission`; every check gets a final status."""
    results = {c.id: Result(c) for c in bounded(checks, limits)}
    deadline = time.monotonic() + limits.wall
    strikes = _Strikes()
    shown = threading.Lock()

    def overall(_done: int, _total: int, name: str) -> None:
        """A shard's progress, told as the whole grading's."""
        if progress is not None:
            with shown:
                progress(sum(r.status != "pending" for r in results.values()), len(results), name)

    attempt = 0
    with tempfile.TemporaryDirectory(prefix="run-", dir=isolation.runs_dir()) as tmp:
        _library(limits)  # made once, before children start at once
        for _ in range(len(results) + 1):
            pending = [r for r in results.values() if r.status == "pending"]
            if not pending:
                break
            if time.monotonic() >= deadline:
                _fail(pending, "timeout", f"the run exceeded its wall limit of {limits.wall:g} s")
                break
            shards = _deal(pending, max(1, min(limits.shards, len(pending) // _SHARD_MIN)))
            runs = [partial(_run_child, Path(tmp), attempt + i, exercise, submission,
                            strikes.config(shard), limits, deadline,
                            {r.check.id: r for r in shard}, overall, strikes=strikes)
                    for i, shard in enumerate(shards)]
            attempt += len(runs)
            _run_at_once(runs)
            if sum(r.status == "pending" for r in results.values()) == len(pending):
                break  # no progress: new children would do the same
        _fail([r for r in results.values() if r.status == "pending"], "crashed",
              "the check never reported a result")
    return list(results.values())


class _Strikes:
    """Checks of one grading killed for running past their limits without stopping."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.count += 1

    def config(self, shard: list[Result]) -> dict[str, Any]:
        """A child's run config for `shard`, its checks' limits cut once the strikes are out."""
        cut = self.count >= _STRIKES
        if cut:
            for r in shard:
                r.check = replace(r.check, timeout=min(r.check.timeout, _AFTER_STRIKES))
        return {"mode": "run", "only": [r.check.id for r in shard],
                "limits": {r.check.id: r.check.timeout for r in shard}}


def _deal(pending: list[Result], count: int) -> list[list[Result]]:
    """`pending` dealt out to `count` shards: costliest check first, each to the shard whose
    costs add up least so far (ties: the first such shard), so the shards' costs differ by at
    most one check's; each shard keeps the collection order. The stored costs and the order are
    all it reads, so the same checks are dealt the same way on every machine."""
    load, shard_of = [0.0] * count, {}
    for result in sorted(pending, key=lambda r: -r.check.cost):  # stable: ties keep order
        least = min(range(count), key=lambda i: (load[i], i))
        load[least] += result.check.cost
        shard_of[result.check.id] = least
    return [[r for r in pending if shard_of[r.check.id] == i] for i in range(count)]


def _run_at_once(runs: Sequence[Callable[[threading.Event], object]]) -> None:
    """Call each of `runs` at once, the first in this thread; if one raises (Ctrl-C, say),
    `stop` tells the others to kill their children, and the error goes on once they have."""
    stop = threading.Event()
    with ThreadPoolExecutor(max(1, len(runs) - 1)) as pool:
        others = [pool.submit(run, stop) for run in runs[1:]]
        try:
            runs[0](stop)
            for other in others:
                other.result()
        except BaseException:
            stop.set()
            raise


def _fail(results: Iterable[Result], status: str, message: str) -> None:
    for result in results:
        if result.status == "pending":
            result.status, result.message = status, message


def _run_child(tmp: Path, attempt: int, exercise: Exercise, submission: Path,
               config: dict[str, Any], limits: Limits, deadline: float,
               results: dict[str, Result], progress: Progress | None,
               stop: threading.Event | None = None, *, strikes: _Strikes | None = None) -> _Child:
    """One child process: start it, watch it, and settle what it left unreported."""
    lib, ini = _library(limits)
    # A folder of its own, under a name no child can guess before it exists (children share the
    # folder of runs: one could plant a file, or a link to a file of the grader's, where the next
    # would go). Nothing the last child wrote survives into it.
    place = Path(tempfile.mkdtemp(prefix=f"child-{attempt}-", dir=tmp))
    work = place / "work"
    channel, output = place / "channel.jsonl", place / "output.txt"
    token = secrets.token_hex(16)
    out_fd = _new_file(output, os.O_RDWR)  # read back through this descriptor, never the path
    reader = _ChannelReader(_new_file(channel, os.O_RDONLY), token)
    work.mkdir()
    _lay_out(work, exercise, submission)
    cgroup = isolation.new_run_cgroup()
    rlimits: dict[str, Any] = {"memory": limits.memory, "file_size": limits.file_size,
                               "open_files": limits.open_files,
                               "cpu": int(max(1, deadline - time.monotonic())) + 5,
                               "cgroup": cgroup,
                               "nproc": 0 if cgroup else isolation.nproc_budget(),
                               "without": sorted(hostos.without())}
    # --tb=line: a failed check's message is the plugin's own, never pytest's traceback, which
    # would cost a failing run ~40 ms (the source of every frame, found by scanning every module
    # the fork server loaded); what a collection error says (its `E` lines) is the same.
    args = ["-c", str(ini), "--rootdir", str(work), "-p", _PLUGIN,
            "-p", "no:cacheprovider", "-p", "no:schemathesis", "-q", "--no-header", "-rN",
            "--tb=line"]
    args.extend(_test_files(exercise, config.get("only"), results))
    if config["mode"] == "collect":
        args.append("--collect-only")
    stdin_read, stdin_write = os.pipe()
    try:
        proc = _start(args, work, lib, tmp, rlimits, stdin_read, out_fd)
    except BaseException:
        os.close(stdin_write)
        os.close(out_fd)
        reader.close()
        raise
    finally:
        os.close(stdin_read)
    with contextlib.suppress(OSError), open(stdin_write, "wb") as stdin:
        # A child already gone is handled below.
        stdin.write(json.dumps({**config, "token": token, "channel": str(channel),
                                "timeout": limits.timeout,
                                "submission": str(work / f"{exercise.name}.py")}).encode())
    child = _Child()
    killed_for = ""  # stays so when the watch itself is interrupted (Ctrl-C)
    try:
        killed_for = _watch(proc, reader, child, results, progress, limits, deadline, stop)
    finally:
        code = _kill(proc)
        isolation.end_run_cgroup(cgroup)
        for record in reader.records():
            _apply(child, record, results, progress)
        reader.close()
        with open(out_fd, "rb") as out:
            tail = _tail(out)
            stuck = _stuck_at(out, exercise.name) if killed_for.startswith(_PAST_LIMIT) else ""
    if strikes is not None and killed_for.startswith(_PAST_LIMIT):
        strikes.add()
    _conclude(child, results, config, f"{killed_for}; stuck at {stuck}" if stuck else killed_for,
              _exit_reason(code, tail))
    return child


def _conclude(child: _Child, results: dict[str, Result], config: dict[str, Any],
              killed_for: str, exit_reason: str) -> None:
    """Settle what the child left unreported: the check it was killed in, the check it died
    in, or the checks it was asked for and never collected."""
    if killed_for:
        _settle(child, results, "crashed" if killed_for.startswith(_OVER) else "timeout",
                killed_for)
    elif not child.done:
        _settle(child, results, "crashed", exit_reason)
    elif child.collected is not None:
        missing = [results[i] for i in config.get("only", ()) if i not in child.collected]
        why = (f"the check could not be collected: {child.collect_errors[0]}"
               if child.collect_errors else
               "the check was not collected (were the test files changed while it ran?)")
        _fail(missing, "error", why)


def _start(args: list[str], work: Path, lib: Path, tmp: Path, rlimits: dict[str, Any],
           stdin: int, out: int) -> forkserver.Process:
    """`python -P -m pytest ARGS` in `work`, in a session of its own, under `rlimits`, with
    `lib` then `work` first on its path."""
    env = _child_env(lib, tmp, work)
    proc: forkserver.Process | None = forkserver.spawn(args, work, env, _child_env(None, None),
                                                       rlimits, stdin, out)
    if proc is None:
        proc = subprocess.Popen(isolation.wrap([sys.executable, str(lib / "_boot.py"),
                                                json.dumps(rlimits), "-m", "pytest", *args]),
                                cwd=work, env=env, stdin=stdin, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    with _LIVE_LOCK:
        _LIVE.add(proc)
    return proc


_LIBRARY = threading.Lock()


def _library(limits: Limits) -> tuple[Path, Path]:
    """The folder holding the plugin and the boot script, and the pytest configuration for
    `limits`: written by the grader into the folder of runs' `lib`, which children under
    bubblewrap see read-only (see `isolation.LIB`); shared by every child of this process."""
    lib = forkserver.boot_script().parent
    ini = lib / f"pytest-{limits.timeout:g}.ini"
    with _LIBRARY:
        if not (lib / f"{_PLUGIN}.py").is_file():
            shutil.copyfile(Path(__file__).with_name("plugin.py"), lib / f"{_PLUGIN}.py")
        if not ini.is_file():
            ini.write_text(f"[pytest]\ntimeout = {limits.timeout:g}\ntimeout_method = signal\n"
                           "python_files = test_*.py\n")
    return lib, ini


def _new_file(path: Path, mode: int) -> int:
    """A descriptor (`mode`: os.O_RDONLY or os.O_RDWR) on `path`, made here, new and empty:
    never a file or link that was there before."""
    extra = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)  # POSIX only
    return os.open(path, mode | os.O_CREAT | os.O_EXCL | extra, 0o600)


def _watch(proc: forkserver.Process, reader: _ChannelReader, child: _Child,
           results: dict[str, Result], progress: Progress | None, limits: Limits,
           deadline: float, stop: threading.Event | None = None) -> str:
    """Follow the child until it exits; return why it had to be killed ("" if it was not)."""
    started = time.monotonic()
    watcher = _Watcher.needed(proc, limits)
    while True:
        exited = proc.poll() is not None
        for record in reader.records():
            _apply(child, record, results, progress)
        if exited:
            return ""
        if stop is not None and stop.is_set():
            return "the grading was stopped"
        now = time.monotonic()
        late = _overdue(child, results, limits, deadline, now - started, now)
        if late:
            return late
        if child.done and now - child.started_at > _GRACE:
            return ""  # finished, but a thread it left keeps the process alive
        over = watcher.over(now) if watcher is not None else ""
        if over:
            return over
        time.sleep(0.02)


_OVER = "the submission used over"


class _Watcher:
    """Where the kernel does not hold a child to its memory limit (macOS, Windows) or its
    process limit (no pids cgroup, no RLIMIT_NPROC), the parent looks at the child's process
    tree through psutil, a few times a second, and kills it past either limit."""

    def __init__(self, pid: int, limits: Limits, memory: bool, processes: bool) -> None:
        self._pid, self._limits = pid, limits
        self._memory, self._processes = memory, processes
        self._next = 0.0

    @classmethod
    def needed(cls, proc: forkserver.Process, limits: Limits) -> _Watcher | None:
        if isolation.mode() == "bwrap":  # Linux: the pid is another namespace's
            return None
        memory = not hostos.enforces_memory_limit()
        processes = not hostos.has_resource() and isolation.cgroup_base() is None
        return cls(proc.pid, limits, memory, processes) if memory or processes else None

    def over(self, now: float) -> str:
        if now < self._next:
            return ""
        self._next = now + 0.2
        import psutil

        try:
            root = psutil.Process(self._pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            return ""
        if self._processes and len(tree) > isolation.PROCESSES:
            return f"{_OVER} {isolation.PROCESSES} processes (the process limit)"
        if self._memory:
            used = 0
            for process in tree:
                with contextlib.suppress(psutil.Error):
                    used += process.memory_info().rss
            if used > self._limits.memory:
                return f"{_OVER} {self._limits.memory / (1 << 30):g} GiB of memory (the limit)"
        return ""


def _overdue(child: _Child, results: dict[str, Result], limits: Limits, deadline: float,
             running: float, now: float) -> str:
    """Why the child must be stopped for time now ("" if it need not)."""
    if now >= deadline:
        return f"the run exceeded its wall limit of {limits.wall:g} s"
    collect_limit = min(_COLLECT_LIMIT, limits.wall)
    if child.collected is None and running > collect_limit:
        return f"importing the submission took over {collect_limit:g} s"
    if child.current is not None and child.current in results:
        limit = results[child.current].check.timeout
        grace = _GRACE if limit > _AFTER_STRIKES else _AFTER_STRIKES / 2
        if now - child.started_at > limit + grace:
            return f"{_PAST_LIMIT} {limit:g} s limit and did not stop"
    return ""


def _test_files(exercise: Exercise, only: list[str] | None,
                results: dict[str, Result]) -> list[str]:
    """The test files to hand pytest: those holding a wanted check (a file none of whose checks
    is wanted is not even imported); all of them when every check is wanted."""
    visible, hidden = f"test_{exercise.name}.py", _HIDDEN_DIR
    if only is None:
        return [visible, hidden]
    files: set[str] = set()
    for cid in only:
        known = results[cid].check.file if cid in results else ""
        files.add(known or (hidden if cid.startswith("hidden::") else visible))
    if hidden in files:  # the whole folder already holds every hidden file
        files = {f for f in files if not f.startswith(f"{hidden}/")}
    return sorted(files)


def _lay_out(work: Path, exercise: Exercise, submission: Path) -> None:
    for extra in exercise.data_files:
        shutil.copyfile(extra, work / extra.name)
    shutil.copyfile(submission, work / f"{exercise.name}.py")
    shutil.copyfile(exercise.visible_tests, work / f"test_{exercise.name}.py")
    (work / _HIDDEN_DIR).mkdir()
    for path in exercise.hidden_files:
        shutil.copyfile(path, work / _HIDDEN_DIR / path.name)
    compiled = testcode.compiled(exercise)
    if compiled:
        (work / testcode.FILENAME).write_bytes(compiled)


def environ() -> dict[str, str]:
    """A copy of this process's environment, whole even while another thread changes it (a test
    runner that grades in threads, pytest, sets and removes PYTEST_CURRENT_TEST around every
    test): `dict(os.environ)` lists the names, then reads each, and one may be gone by then."""
    while True:
        try:
            return dict(os.environ)
        except KeyError:
            continue


def _child_env(lib: Path | None, tmp: Path | None, work: Path | None = None) -> dict[str, str]:
    """The child's environment; without `lib` and `tmp`, the part every child shares."""
    env = {k: v for k, v in environ().items()
           if not k.startswith(("PYTEST_", "PYTHON", "HYPOTHESIS", "COV_", "GRADER_"))}
    # Bytecode is written (the variable is dropped above): a child that compiled pytest and
    # hypothesis from source would spend seconds on every run.
    env.update(PYTHONHASHSEED="0", NO_COLOR="1")
    if lib is not None and tmp is not None:
        # The plugin is found in `lib` before anything a child could plant in `work`.
        path = [str(lib), *([str(work)] if work is not None else [])]
        env.update(PYTHONPATH=os.pathsep.join(path), TMPDIR=str(tmp))
    return env


def _apply(child: _Child, record: dict[str, Any], results: dict[str, Result],
           progress: Progress | None) -> None:
    ev = record.get("ev")
    if ev == "check":
        child.checks.append(record)
    elif ev == "collected":
        child.collected = [str(i) for i in record.get("ids", [])]
    elif ev == "collect_error":
        child.collect_errors.append(_collect_message(str(record.get("message", ""))))
    elif ev == "start":
        child.current, child.started_at = str(record.get("id")), time.monotonic()
        if progress is not None and child.current in results:
            done = sum(r.status != "pending" for r in results.values())
            progress(done, len(results), results[child.current].check.name)
    elif ev == "figure":
        result = results.get(str(record.get("id")))
        if result is not None and result.status == "pending":
            with contextlib.suppress(TypeError, ValueError):
                result.figures.append({"label": str(record.get("label", "")),
                                       "figure": float(record["figure"]),
                                       "limit": float(record["limit"])})
    elif ev == "result":
        cid = str(record.get("id"))
        child.current = None
        result = results.get(cid)
        if result is not None and result.status == "pending":
            result.status = str(record.get("status", "failed"))
            if result.status not in ("passed", "failed", "error", "timeout"):
                result.status = "failed"
            result.message = str(record.get("message", ""))
            result.falsifying = str(record.get("falsifying", ""))
            result.duration = float(record.get("duration", 0.0))
    elif ev == "done":
        child.done, child.current, child.started_at = True, None, time.monotonic()


def _collect_message(longrepr: str) -> str:
    """The lines that say what went wrong (pytest marks them `E`), not the whole traceback."""
    said = [line[1:].strip() for line in longrepr.splitlines() if line.startswith("E ")]
    kept = said or [line for line in longrepr.splitlines() if line.strip()][-3:]
    return "\n".join(kept)


def _settle(child: _Child, results: dict[str, Result], status: str, reason: str) -> None:
    """The child stopped without finishing: blame the check in progress, or all if none ran."""
    if child.current is not None and child.current in results:
        _fail([results[child.current]], status, reason)
    elif child.collected is None:
        where = "while importing the submission"
        _fail(results.values(), status, f"{reason} ({where})")


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


_LIVE: set[forkserver.Process] = set()  # children running now, for `kill_all`
_LIVE_LOCK = threading.Lock()


def _stuck_at(output: BinaryIO, name: str) -> str:
    """Where the submission was when the child's stacks were dumped past its limit (see the
    plugin's `_STACKS`): `NAME.py:LINE in FUNCTION`, the innermost frame of the submission in
    the last dump's first thread that is in it; "" when there is none."""
    try:
        output.seek(max(0, output.seek(0, os.SEEK_END) - (64 << 10)))
        text = output.read().decode(errors="replace")
    except OSError:
        return ""
    dump = text.rsplit("most recent call first", 1)
    if len(dump) < 2:
        return ""
    found = re.search(rf'File "[^"]*[/\\]{re.escape(name)}\.py", line (\d+) in (\w+)', dump[1])
    return f"{name}.py:{found[1]} in {found[2]}" if found else ""


def _kill_tree(pid: int) -> None:
    """Kill a child started afresh and what it started: its process group where there are
    process groups, and its process tree as psutil sees it (which also finds a process that
    left the group for a session of its own, while its parent lives)."""
    with contextlib.suppress(Exception):
        import psutil

        for process in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                process.kill()
    if hostos.has_process_groups():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    else:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)


def kill_all() -> None:
    """Kill every child running now, without waiting for any (the grader is about to exit)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        kill_group = getattr(proc, "kill_group", None)
        with contextlib.suppress(OSError):
            if kill_group is not None:
                kill_group()
            else:
                _kill_tree(proc.pid)


def _kill(proc: forkserver.Process) -> int:
    """Kill the child's process group (what it left running too); its exit status."""
    kill_group = getattr(proc, "kill_group", None)
    if kill_group is not None:  # a fork server's child: its monitor knows its real pid
        kill_group()
    else:
        _kill_tree(proc.pid)
    try:
        return proc.wait()
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)


class _ChannelReader:
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
