"""Starting a grading child, watching what the kernel does not enforce, and killing it with
everything it started.

A child is forked from a fork server where one runs (`forkserver`), else started afresh as
`python _boot.py LIMITS -m pytest ...`, in a session of its own, under isolation (`isolation`).
Every child running is registered, so that Ctrl-C can kill them all (`kill_all`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading import forkserver, hostos, isolation

OVER = "the submission used over"  # how a kill for memory or processes begins

_LIVE: set[forkserver.Process] = set()  # children running now, for `kill_all`
_LIVE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Launch:
    """One child to start: `python -m pytest ARGS` in `work` under `rlimits` (see `_boot`),
    with `lib` then `work` first on its path and `tmp` as its TMPDIR."""

    args: list[str]
    work: Path
    lib: Path
    tmp: Path
    rlimits: dict[str, Any]


def start(launch: Launch, stdin: int, out: int) -> forkserver.Process:
    """Start `launch`'s child, reading `stdin` and writing its output to `out`."""
    env = child_env(launch.lib, launch.tmp, launch.work)
    request = {"args": launch.args, "cwd": str(launch.work), "env": env,
               "limits": launch.rlimits}
    proc = forkserver.spawn(request, child_env(None, None), stdin, out)
    if proc is None:
        argv = [sys.executable, str(launch.lib / "_boot.py"), json.dumps(launch.rlimits),
                "-m", "pytest", *launch.args]
        proc = subprocess.Popen(isolation.wrap(argv), cwd=launch.work, env=env, stdin=stdin,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    with _LIVE_LOCK:
        _LIVE.add(proc)
    return proc


def environ() -> dict[str, str]:
    """A copy of this process's environment, whole even while another thread changes it (a test
    runner that grades in threads, pytest, sets and removes PYTEST_CURRENT_TEST around every
    test): `dict(os.environ)` lists the names, then reads each, and one may be gone by then."""
    while True:
        try:
            return dict(os.environ)
        except KeyError:
            continue


def child_env(lib: Path | None, tmp: Path | None, work: Path | None = None) -> dict[str, str]:
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


class Watcher:
    """Where the kernel does not hold a child to its memory limit (macOS, Windows) or its
    process limit (no pids cgroup, no RLIMIT_NPROC), the parent looks at the child's process
    tree through psutil, a few times a second, and kills it past either limit."""

    def __init__(self, pid: int, memory: int | None, processes: bool) -> None:
        self._pid, self._memory, self._processes = pid, memory, processes
        self._next = 0.0

    @classmethod
    def needed(cls, proc: forkserver.Process, memory: int) -> Watcher | None:
        """A watcher of `proc`, held to `memory` bytes, where the kernel enforces too little."""
        if isolation.mode() == "bwrap":  # Linux: the pid is another namespace's
            return None
        watch_memory = not hostos.enforces_memory_limit()
        processes = not hostos.has_resource() and isolation.cgroup_base() is None
        if not (watch_memory or processes):
            return None
        return cls(proc.pid, memory if watch_memory else None, processes)

    def over(self, now: float) -> str:
        """Why the child must be killed now ("" when it need not)."""
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
            return f"{OVER} {isolation.PROCESSES} processes (the process limit)"
        if self._memory is not None:
            used = 0
            for process in tree:
                with contextlib.suppress(psutil.Error):
                    used += process.memory_info().rss
            if used > self._memory:
                return f"{OVER} {self._memory / (1 << 30):g} GiB of memory (the limit)"
        return ""


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


def _kill_group(proc: forkserver.Process) -> None:
    kill_group = getattr(proc, "kill_group", None)
    if kill_group is not None:  # a fork server's child: its monitor knows its real pid
        kill_group()
    else:
        _kill_tree(proc.pid)


def kill_all() -> None:
    """Kill every child running now, without waiting for any (the grader is about to exit)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        with contextlib.suppress(OSError):
            _kill_group(proc)


def kill(proc: forkserver.Process) -> int:
    """Kill the child's process group (what it left running too); its exit status."""
    _kill_group(proc)
    try:
        return proc.wait()
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
