"""Start grading children from a fork server, so a child does not pay a second of imports.

A child that starts as a fresh `python -m pytest` spends about a second importing pytest,
hypothesis and the exercises' libraries before it reads the submission. The fork server
(`_boot.py --serve`) imports them once per grader process; every child is a fork of it, in a
session of its own, with its own limits, directory, environment, stdin and output, exactly as
the exec path would have it. A monitor process between server and child reports the child's pid
and exit status, stops the child's orphans when it ends, and kills the child if the grader dies.
If the server cannot start, dies or stops answering (a submission may kill or stop it: it runs
as the same user), the run falls back to exec and the next run starts a new server.

Set GRADER_NO_FORK_SERVER=1 to exec every child (slower, same results).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol, TypeVar

from grading import catalog, hostos, isolation, preload

_BOOT = Path(__file__).with_name("_boot.py")
_START_LIMIT = 60.0  # seconds for the server's imports
_FORK_LIMIT = 5.0  # seconds for a fork to report its pid (it takes milliseconds; a stopped
# server never does, and the run then falls back to exec)
_STARTS = 3  # servers that fail to start before the grader stops trying
_WAIT_LIMIT = 10.0  # seconds to hear a killed child's exit status before giving up on it
_T = TypeVar("_T")
LOST = 1 << 16  # the exit status of a child whose monitor was killed: no real status is this


class Process(Protocol):
    """What the sandbox needs of a child: `subprocess.Popen` has it, and so does a fork."""

    pid: int

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...


class _Forked:
    """A child of the fork server; its monitor reports its pid, then its exit status."""

    def __init__(self, pid: int, report: socket.socket) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._report = report

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._report], [], [], 0)[0]:
            self._finish()
        return self.returncode

    def kill_group(self) -> None:
        """Ask the monitor to kill the child's process group: the pid it reported may be one of
        another PID namespace (under isolation), which this process must not signal."""
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self._report.send(b"kill")
            if isolation.mode() == "none":  # the pid is this namespace's: no need to wait
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)

    def wait(self) -> int:
        if self.returncode is None:
            self._report.settimeout(_WAIT_LIMIT)
            self._finish()
        assert self.returncode is not None
        return self.returncode

    def _finish(self) -> None:
        try:
            self.returncode = int(self._report.recv(64))
        except (OSError, ValueError):
            self.returncode = LOST
        self._report.close()


class _Launcher:
    """Starts fork servers from one thread that lives as long as the grader.

    bubblewrap's `--die-with-parent` (PR_SET_PDEATHSIG) kills the sandbox when the *thread* that
    started it ends, not the process: a server started by a shard's worker thread would die with
    that thread at the end of its grading, taking with it the monitor of every child then
    running (their checks would crash, blamed on the submission).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def call(self, start: Callable[[], _T]) -> _T:
        """`start()`, called in the launcher's thread; its result, or what it raised."""
        done: Future[_T] = Future()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="fork-server-launcher",
                                                daemon=True)
                self._thread.start()
        self._jobs.put((start, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            start, done = self._jobs.get()
            try:
                done.set_result(start())
            except BaseException as exc:  # handed to the caller, which raises it
                done.set_exception(exc)


_LAUNCHER = _Launcher()


class _Server:
    def __init__(self, env: dict[str, str], libraries: frozenset[str] | None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        runs = isolation.runs_dir()
        # Where an isolated server can read them and no child can write (the folder of runs'
        # `lib`, read-only in the sandbox): the server must not run or read what a child wrote.
        boot = boot_script()
        tables = preload.unicode_tables(runs / isolation.LIB, env)
        wanted = "*" if libraries is None else ",".join(sorted(libraries))
        argv = isolation.wrap([sys.executable, "-P", str(boot), "--serve",
                               str(theirs.fileno()), tables, wanted])
        with theirs:
            self._proc = _LAUNCHER.call(lambda: subprocess.Popen(
                argv, pass_fds=[theirs.fileno()], env=env, cwd=runs,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True))
        self._sock = ours
        self._lock = threading.Lock()
        try:
            ours.settimeout(_START_LIMIT)
            if ours.recv(16) != b"ready":
                raise OSError("the fork server did not start")
            ours.settimeout(_FORK_LIMIT)  # a request a stopped server never reads fails
        except OSError:
            self.close()
            raise

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    def spawn(self, request: dict[str, Any], stdin_fd: int, out_fd: int) -> _Forked:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with theirs, self._lock:
                socket.send_fds(self._sock, [json.dumps(request).encode()],
                                [theirs.fileno(), stdin_fd, out_fd])
            ours.settimeout(_FORK_LIMIT)
            return _Forked(int(ours.recv(64)), ours)
        except (OSError, ValueError):
            ours.close()
            raise

    def close(self, monitors: bool = False) -> None:
        """Stop the server; with `monitors`, also any monitor still in its process group (one a
        submission stopped), which only the grader's exit may do: others watch live runs."""
        self._sock.close()  # the server exits when it reads the end of its socket
        try:
            self._proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if monitors:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)


_BOOT_COPY = threading.Lock()


def boot_script() -> Path:
    """The boot script in the folder of runs' `lib` (copied there once, with the `_preloads.py`
    it loads beside it), which servers and children started without one run."""
    lib = isolation.runs_dir() / isolation.LIB
    with _BOOT_COPY:
        for source in (_BOOT, _BOOT.with_name("_preloads.py")):
            if not (lib / source.name).is_file():
                shutil.copyfile(source, lib / source.name)
    return lib / _BOOT.name


class _Servers:
    """The grader's one fork server: started on first use, started again if it died."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._retired: list[_Server] = []  # their process groups are killed at exit
        self._failed = 0  # starts that failed: after a few, do not pay for one on every run
        self.libraries: frozenset[str] | None = None  # what a new server loads (None: all)

    def get(self, env: dict[str, str]) -> _Server | None:
        with self._lock:
            if self._server is not None and not self._server.alive():
                self._retired.append(self._server)
                self._server.close()
                self._server = None
            if self._server is None and self._failed < _STARTS:
                try:
                    self._server = _Server(env, self.libraries)
                except OSError:
                    self._failed += 1
            return self._server

    def drop(self, server: _Server) -> None:
        with self._lock:
            if self._server is server:
                self._server = None
            self._retired.append(server)
        server.close()

    def shutdown(self) -> None:
        with self._lock:
            servers = [*self._retired, *([self._server] if self._server else [])]
            self._server, self._retired = None, []
        for server in servers:
            server.close(monitors=True)


    def kill(self) -> None:
        """Kill every server's process group now, waiting for nothing: under bubblewrap that
        ends its sandbox, every monitor and child in it."""
        for server in [*self._retired, *([self._server] if self._server else [])]:
            with contextlib.suppress(OSError):
                os.killpg(server.pid, signal.SIGKILL)


_SERVERS = _Servers()
atexit.register(_SERVERS.shutdown)


def kill_servers() -> None:
    _SERVERS.kill()


def expect(exercises: Iterable[catalog.Exercise]) -> None:
    """Declare what this process will grade: a fork server started from now on loads only the
    libraries those exercises' files import (by default it loads every exercise's)."""
    _SERVERS.libraries = preload.libraries_of(exercises)


def spawn(request: dict[str, Any], server_env: dict[str, str], stdin_fd: int,
          out_fd: int) -> Process | None:
    """`python -m pytest ARGS` forked from the server, or None: then the caller execs it.

    `request` is {"args": ARGS, "cwd": the work directory, "env": the child's environment,
    "limits": its resource limits (see `_boot`)}; `server_env` is the part of the environment
    that is the same for every child (read when the server starts; PYTHONHASHSEED, for one, is
    fixed at start-up).
    """
    preload.compile_preloads()
    if not hostos.has_fork_server():
        return None
    server = _SERVERS.get(server_env)
    if server is None:
        return None
    try:
        return server.spawn(request, stdin_fd, out_fd)
    except (OSError, ValueError):
        _SERVERS.drop(server)
        return None
