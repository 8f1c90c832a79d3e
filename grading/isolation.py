"""OS isolation for grading children, and a bound on the processes they may start.

`--isolation` chooses the mode for the whole grader process:

* `bwrap`: every child runs under bubblewrap, with no network (its own loopback only), its own
  PID namespace and /proc (no grader process is in view), a private /tmp, and a read-only view
  of only the system directories and the Python environment; the one writable place is the
  grader's folder of runs. The repository (its `solutions/`, `tests/`, `grading/hidden/`) and
  the home directory are not there. The fork server itself runs inside, so its children are too.
* `none`: children run as the grader's user with the file system in view.
* `auto` (the default): `bwrap` where bubblewrap is installed and works, else `none`, said in a
  one-line notice.

In every mode a run's processes (threads count) are bounded: by a cgroup's `pids.max` where the
grader may make one (as root, with a writable pids controller), else by RLIMIT_NPROC (which the
kernel does not enforce for root).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

MODES = ("auto", "bwrap", "none")
# The environment variable that sets the default mode (as `--isolation` does for one command):
# the test suite and CI use it to prove both paths on a machine that has bubblewrap.
ENV = "GRADER_ISOLATION"
PROCESSES = 256  # per run: uvicorn's workers, thread checks and hypothesis need far fewer


class _State:
    """This grader process's choices and resources (one per process)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.mode = "none"
        self.runs: Path | None = None
        self.cgroups: Path | None = None  # Path() once known to be unavailable
        self.counter = 0


_state = _State()


class IsolationError(Exception):
    """The mode asked for cannot be had here; the message says why."""


def choose(requested: str) -> str:
    """Set the mode for this grader process; return a one-line notice ("" if none is due)."""
    if requested not in MODES:
        raise IsolationError(f"--isolation (or ${ENV}) must be one of {', '.join(MODES)}, "
                             f"got {requested!r}")
    problem = bwrap_problem() if requested != "none" else ""
    if requested == "bwrap" and problem:
        raise IsolationError(f"--isolation bwrap: {problem}")
    _state.mode = "bwrap" if requested != "none" and not problem else "none"
    if requested == "auto" and problem:
        return (f"grader: isolation: none ({problem}); submissions run as you, with the network "
                "and the file system in view")
    return ""


def mode() -> str:
    return _state.mode


def describe() -> str:
    """The mode a grading gets by default here, in a line for `list`."""
    forced = os.environ.get(ENV, "auto")
    if forced == "none":
        return f"isolation: none (set by {ENV}=none)"
    problem = bwrap_problem()
    return ("isolation: bwrap (no network, no view of the repository or home)" if not problem
            else f"isolation: none ({problem})")


@functools.cache
def bwrap_problem() -> str:
    """Why bubblewrap cannot isolate a child here ("" when it can)."""
    if sys.platform != "linux":
        return "bubblewrap needs Linux"
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    try:
        done = subprocess.run([*_bwrap(Path(tempfile.gettempdir())), "--", sys.executable,
                               "-c", "pass"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap did not start: {exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"bubblewrap cannot make namespaces here: {last}"
    return ""


def runs_dir() -> Path:
    """This grader process's folder of runs: every run's temporary folder is made inside it."""
    with _state.lock:
        if _state.runs is None:
            _state.runs = Path(tempfile.mkdtemp(prefix="kata-grader-"))
            (_state.runs / LIB).mkdir()
            atexit.register(shutil.rmtree, _state.runs, True)
        return _state.runs


# The folder of runs' subfolder for what children load and must not change (the grading plugin,
# the boot script, pytest's configuration): the grader writes it, and under bubblewrap children
# see it read-only. Otherwise a child could rewrite the plugin that the next child of the same
# grading loads (one started again after a crash) and have it report every check passed.
LIB = "lib"


def wrap(argv: list[str]) -> list[str]:
    """`argv` as it runs in the current mode."""
    return [*_bwrap(runs_dir()), "--", *argv] if _state.mode == "bwrap" else argv


def _bwrap(writable: Path) -> list[str]:
    args = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--die-with-parent", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for system in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"):
        args += ["--ro-bind-try", system, system]
    for prefix in sorted({sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(
            sys.executable))}):
        if not prefix.startswith(("/usr/", "/bin", "/lib")):
            args += ["--ro-bind", prefix, prefix]
    args += ["--bind", str(writable), str(writable)]
    if (writable / LIB).is_dir():
        args += ["--ro-bind", str(writable / LIB), str(writable / LIB)]
    group = cgroup_base()
    if group is not None:
        args += ["--bind", str(group), str(group)]
    return [*args, "--setenv", "HOME", "/tmp"]  # the working directory is kept


# ---- the process bound ----------------------------------------------------------------------

def cgroup_base() -> Path | None:
    """This grader's pids cgroup (made on first use), or None where none can be made."""
    with _state.lock:
        if _state.cgroups is None:
            _state.cgroups = _make_base() or Path()
            if _state.cgroups != Path():
                atexit.register(_remove_base, _state.cgroups)
        return _state.cgroups if _state.cgroups != Path() else None


def _make_base() -> Path | None:
    if sys.platform != "linux" or os.geteuid() != 0:
        return None
    for root in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):  # v1, then v2
        if not (root / "cgroup.procs").is_file():
            continue
        if root == Path("/sys/fs/cgroup"):
            controllers = root / "cgroup.subtree_control"
            with contextlib.suppress(OSError):
                if "pids" not in controllers.read_text().split():
                    controllers.write_text("+pids")
        base = root / f"kata-grader-{os.getpid()}"
        try:
            base.mkdir(exist_ok=True)
            if root == Path("/sys/fs/cgroup"):
                (base / "cgroup.subtree_control").write_text("+pids")
            if (base / "pids.max").is_file():
                # A bound on all runs at once too, for a child that moves itself up a level.
                (base / "pids.max").write_text(str(PROCESSES * 8))
                return base
        except OSError:
            pass
        with contextlib.suppress(OSError):
            base.rmdir()
    return None


def nproc_budget() -> int:
    """RLIMIT_NPROC for a run where there is no cgroup: the tasks this user has now, plus the
    run's share (0 for root, whom the kernel does not hold to it)."""
    geteuid = getattr(os, "geteuid", None)  # POSIX only; Windows has no RLIMIT_NPROC either
    if geteuid is None or geteuid() == 0:
        return 0
    import psutil

    tasks = 0
    for process in psutil.process_iter(["uids", "num_threads"]):
        uids, threads = process.info.get("uids"), process.info.get("num_threads")
        if uids is not None and uids.effective == geteuid() and threads:
            tasks += threads
    return tasks + PROCESSES


def new_run_cgroup() -> str:
    """A fresh cgroup for one run, bounded to PROCESSES; "" when there are no cgroups here."""
    base = cgroup_base()
    if base is None:
        return ""
    with _state.lock:
        _state.counter += 1
        group = base / f"run-{_state.counter}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(PROCESSES))
    except OSError:
        return ""
    return str(group)


def end_run_cgroup(group: str) -> None:
    """Kill whatever is left in a run's cgroup and remove it."""
    if not group:
        return
    path = Path(group)
    for _ in range(100):
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        threading.Event().wait(0.02)
    with contextlib.suppress(OSError):
        path.rmdir()


def _remove_base(base: Path) -> None:
    for group in base.glob("run-*"):
        end_run_cgroup(str(group))
    with contextlib.suppress(OSError):
        base.rmdir()
