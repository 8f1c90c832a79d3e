"""What this operating system offers the grader, probed once; every absence has a fallback.

* `resource` (rlimits), on Linux and macOS. Without it (Windows) the child gets no CPU,
  file-size or open-file limit; the parent's watchdog still holds each check's time limit and
  the wall limit, and watches memory.
* An enforced address-space limit, on Linux. macOS does not enforce RLIMIT_AS, and Windows has
  none: the parent watches the child's memory through psutil and kills it past the limit.
* `fork` for a fork server, on Linux. On macOS forking a process that loaded Apple's frameworks
  can crash, and Windows has no fork: every child is started afresh
  (`GRADER_NO_FORK_SERVER=1` does the same anywhere).
* `/proc`, on Linux: elsewhere a run's leftover processes are found through psutil.
* Process groups (`killpg`), on Linux and macOS: on Windows a child's process tree is killed
  through psutil.

`GRADER_WITHOUT=resource,fork,proc` makes the grader act as if those were absent, so that each
fallback is tested on Linux. Standard library only (psutil is imported where it is used).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import socket
import sys

ENV = "GRADER_WITHOUT"
FEATURES = ("resource", "fork", "proc")


def without() -> frozenset[str]:
    """The features `GRADER_WITHOUT` says to do without."""
    return frozenset(f.strip() for f in os.environ.get(ENV, "").split(",") if f.strip())


@functools.cache
def _has_resource_module() -> bool:
    return importlib.util.find_spec("resource") is not None


def has_resource() -> bool:
    return "resource" not in without() and _has_resource_module()


def has_fork_server() -> bool:
    """Children may be forked from a server: Linux only (see the table above)."""
    return ("fork" not in without() and sys.platform == "linux" and hasattr(os, "fork")
            and hasattr(socket, "send_fds") and not os.environ.get("GRADER_NO_FORK_SERVER"))


def has_proc() -> bool:
    return "proc" not in without() and os.path.isdir("/proc/self")


def enforces_memory_limit() -> bool:
    """The kernel holds a child to RLIMIT_AS (Linux with `resource`); elsewhere the parent
    watches the child's memory."""
    return sys.platform == "linux" and has_resource()


def has_process_groups() -> bool:
    return hasattr(os, "killpg") and hasattr(os, "setsid")


def describe() -> str:
    """One line for `grader.py list`: the limits this machine gives a child."""
    parts = ["limits: time (per check and per run)"]
    if has_resource():
        parts.append("CPU, file size, open files")
    parts.append("memory" + ("" if enforces_memory_limit() else " (watched by the grader)"))
    parts.append("children forked from a server" if has_fork_server()
                 else "each child started afresh")
    return ", ".join(parts)
