"""Set the grading child's resource limits, then become `python -m pytest ...`.

Copied into the sandbox and run as `python _boot.py LIMITS_JSON -m pytest ARGS...`; exec keeps the
process (and so its session) the same, so the parent's watchdog still owns it.
"""

import json
import os
import resource
import sys


def _limit(which: int, soft: int, hard: int | None = None) -> None:
    hard = soft if hard is None else hard
    current = resource.getrlimit(which)[1]
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(which, (soft, hard))


def main() -> None:
    limits = json.loads(sys.argv[1])
    _limit(resource.RLIMIT_AS, limits["memory"])
    _limit(resource.RLIMIT_FSIZE, limits["file_size"])
    _limit(resource.RLIMIT_NOFILE, limits["open_files"])
    _limit(resource.RLIMIT_CPU, limits["cpu"], limits["cpu"] + 5)
    _limit(resource.RLIMIT_CORE, 0)
    os.execv(sys.executable, [sys.executable, *sys.argv[2:]])


if __name__ == "__main__":
    main()
