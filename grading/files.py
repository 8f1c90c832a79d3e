"""Two file helpers every cache of the grader uses: a digest of a set of files, and an atomic
write that readers see whole or not at all. Standard library only."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterable
from pathlib import Path


def digest(paths: Iterable[Path], salt: str = "") -> str:
    """sha256 (hex) of `salt` and each of `paths`' name and bytes, in order; a path that is not
    a file counts as its name alone."""
    h = hashlib.sha256(salt.encode())
    for path in paths:
        h.update(path.name.encode() + b"\0")
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def write_atomic(path: Path, data: bytes, *, stale: str = "") -> None:
    """Write `data` to `path` through a file of this process and thread beside it, renamed
    over it, after removing the files of its folder that match the glob `stale` (older copies
    of a cache). Raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if stale:
        for old in path.parent.glob(stale):
            if old != path:
                old.unlink(missing_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        partial.write_bytes(data)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
