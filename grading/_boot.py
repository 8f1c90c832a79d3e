"""Start grading children: set their resource limits, then run `python -m pytest ARGS`.

Two ways, the same result:

* `python _boot.py LIMITS_JSON -m pytest ARGS...` sets the limits, then execs Python; exec keeps
  the process (and so its session) the same, so the parent's watchdog still owns it.
* `python -P _boot.py --serve FD TABLES LIBRARIES` is a fork server (see `forkserver.py`): it
  imports pytest, hypothesis and the libraries the exercises it serves import (all of
  `LIBRARIES` when LIBRARIES is `*`) once, then for each request on the socket FD forks a
  monitor, which forks the child and reports the child's pid and, later, its exit status (after
  stopping the child's orphans, and killing the child if the grader hangs up). The child starts
  a session, sets its limits, takes the request's stdin, output, directory and environment, and
  runs pytest in-process, so a run costs a fork instead of a second of imports.

What the server loads, and the Unicode tables it reads, are `_preloads.py`'s, laid beside this
file.

This file is trusted: it runs before the submission is imported and imports only the standard
library until it serves.
"""

import contextlib
import gc
import importlib
import importlib.util
import json
import os
import select
import signal
import socket
import sys
import tempfile
import threading
import time
import types
from typing import Any

_PR_SET_CHILD_SUBREAPER = 36  # prctl(2)

try:  # absent on Windows: the parent's watchdog holds the time limits there (see hostos.py)
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]
_PASSED_FDS = 3  # with each request: the monitor's report socket, the child's stdin, its output


def _limit(which: int, soft: int, hard: int | None = None) -> None:
    assert resource is not None
    hard = soft if hard is None else hard
    current = resource.getrlimit(which)[1]
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(which, (soft, hard))


def _set_limits(limits: dict[str, Any]) -> None:
    without = set(limits.get("without", ()))
    if limits.get("cgroup"):  # the run's pids cgroup: this process and all it starts
        with open(os.path.join(limits["cgroup"], "cgroup.procs"), "w") as procs:
            procs.write("0")  # 0: the writing process, in whatever PID namespace it is
    if resource is None or "resource" in without:
        return  # the parent enforces what it can (hostos.py)
    if not limits.get("cgroup") and limits.get("nproc"):
        _limit(resource.RLIMIT_NPROC, limits["nproc"])
    _limit(resource.RLIMIT_AS, limits["memory"])
    _limit(resource.RLIMIT_FSIZE, limits["file_size"])
    _limit(resource.RLIMIT_NOFILE, limits["open_files"])
    _limit(resource.RLIMIT_CPU, limits["cpu"], limits["cpu"] + 5)
    _limit(resource.RLIMIT_CORE, 0)


def _beside(name: str) -> types.ModuleType:
    """The module `NAME.py` beside this file (run with -P, its folder is not on the path)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no {name} beside {__file__}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def serve(control: socket.socket, tables: str = "",
          libraries: frozenset[str] | None = None) -> None:
    """Fork a monitor per request until the grader closes its end of the socket."""
    # What is imported here lives as long as the server: collecting garbage among it while it
    # loads is wasted work (about a tenth of job_api's second of imports).
    gc.disable()
    preloads = _beside("_preloads")
    preloads.load(preloads.preloads(libraries))
    if tables:
        with contextlib.suppress(Exception):
            preloads.unicode_tables(tables)
    with contextlib.suppress(Exception):  # a hypothesis without it: each child looks itself
        preloads.local_constants()
    if threading.active_count() != 1:
        return  # forking a process with threads is unsafe: the grader falls back to exec
    gc.freeze()  # children's collections skip what was imported here (and do not copy it)
    gc.enable()  # before any fork: every child collects as a plain Python process would
    control.send(b"ready")
    while True:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass  # reap the monitors that have finished
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 20, 3)
        except OSError:
            return
        if not message:
            return  # the grader has gone
        if len(fds) == _PASSED_FDS and os.fork() == 0:
            control.close()
            code = 1
            with contextlib.suppress(BaseException):
                _monitor(json.loads(message), *fds)
                code = 0
            os._exit(code)
        for fd in fds:
            os.close(fd)


def _monitor(request: dict[str, Any], report_fd: int, stdin_fd: int, out_fd: int) -> None:
    report = socket.socket(fileno=report_fd)
    _become_subreaper()
    ready, started = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready)
        _child(request, stdin_fd, out_fd, started)
    os.close(started)
    os.close(stdin_fd)
    os.close(out_fd)
    os.read(ready, 1)  # the end of the pipe: the child leads its own session (or is gone)
    os.close(ready)
    try:
        report.send(str(pid).encode())
    except OSError:  # the grader stopped waiting: nobody would stop the child
        os.killpg(pid, signal.SIGKILL)
        raise
    status = _wait(pid, report)
    _stop_orphans("proc" not in request["limits"].get("without", ()))
    report.send(str(os.waitstatus_to_exitcode(status)).encode())


def _wait(pid: int, report: socket.socket) -> int:
    """The child's wait status; if the grader hangs up first (it died), the child is killed."""
    with contextlib.suppress(OSError, AttributeError):  # pidfd_open: Linux 5.3 and later
        child = os.pidfd_open(pid)
        try:
            if child not in select.select([child, report.fileno()], [], [])[0]:
                with contextlib.suppress(OSError):  # `report` hung up: the grader is gone
                    os.killpg(pid, signal.SIGKILL)
        finally:
            os.close(child)
    return os.waitpid(pid, 0)[1]


def _become_subreaper() -> None:
    """Make the child's orphans (a process it started in a session of its own, which the kill of
    its process group misses) this process's children, so `_stop_orphans` finds them."""
    with contextlib.suppress(Exception):  # Linux only; elsewhere such a process outlives the run
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _stop_orphans(use_proc: bool = True) -> None:
    """Kill every process left that is this one's child (the child's orphans) and reap it."""
    me = os.getpid()
    children = _children_from_proc if use_proc and os.path.isdir("/proc/self") else _children
    for _ in range(200):  # a child that is not listed yet is waited for 2 s at most
        found = children(me)
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            if not os.waitpid(-1, 0 if found else os.WNOHANG)[0]:
                time.sleep(0.01)  # one is alive but was not listed yet
        except ChildProcessError:
            return  # none left


def _children_from_proc(me: int) -> list[int]:
    return [pid for pid in _pids() if _parent_of(pid) == me]


def _children(me: int) -> list[int]:
    """This process's children, through psutil (where there is no /proc to read)."""
    try:
        import psutil

        return [child.pid for child in psutil.Process(me).children()]
    except Exception:
        return []


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _parent_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _child(request: dict[str, Any], stdin_fd: int, out_fd: int, started: int) -> None:
    """Become `python -m pytest ARGS` in the request's directory, environment and limits."""
    code: object = 1
    try:
        # A session of its own, as `start_new_session` gives the exec path: the watchdog kills
        # its process group, which it cannot leave for a group in another session.
        os.setsid()
        os.close(started)
        os.dup2(stdin_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0] if resource else 4096)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # read TMPDIR afresh
        extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = extra  # as `python -P -m` with PYTHONPATH set would: lib, then work
        importlib.invalidate_caches()
        _set_limits(request["limits"])
        import pytest

        sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"),
                    *request["args"]]
        code = pytest.main(request["args"])
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # reported as Python reports an uncaught exception
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(0 if code is None else code if isinstance(code, int) else 1)


def main() -> None:
    if sys.argv[1] == "--serve":  # --serve FD TABLES LIBRARIES ("" for no tables, "*" for all)
        libraries = None if sys.argv[4] == "*" else frozenset(sys.argv[4].split(","))
        serve(socket.socket(fileno=int(sys.argv[2])), sys.argv[3], libraries)
        return
    _set_limits(json.loads(sys.argv[1]))
    if os.name != "posix":  # exec on Windows starts another process: run pytest in this one
        import runpy

        sys.argv = [sys.argv[0], *sys.argv[4:]]  # after "-m pytest"
        sys.path[:0] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
        return
    # -P: the working directory is on the path only where PYTHONPATH puts it (after the plugin's
    # folder), as in a child of the fork server.
    os.execv(sys.executable, [sys.executable, "-P", *sys.argv[2:]])


if __name__ == "__main__":
    main()
