"""What every grading child imports, made ready outside the sandbox: the libraries a fork
server preloads, their bytecode, and hypothesis's Unicode tables.

A child, or the fork server it is forked from, imports pytest, hypothesis and the exercises'
libraries before it reads the submission. Under bubblewrap it cannot write bytecode or caches
where they would last, so the grader has them written once, by processes that run no
submission, and the server loads what they wrote.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from grading import _preloads, catalog, isolation

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows, which has no fork server either
    fcntl = None  # type: ignore[assignment]

_SCRIPT = Path(_preloads.__file__)  # run as a script to compile or to build the tables
_TABLES = catalog.ROOT / ".grader" / "unicode"
_BYTECODE_LOCK = catalog.ROOT / ".grader" / "bytecode.lock"
_LIMIT = 60.0  # seconds for building the tables or compiling the preloads


def libraries_of(exercises: Iterable[catalog.Exercise]) -> frozenset[str]:
    """Which of `_preloads.LIBRARIES` the exercises' stubs and tests import."""
    found = catalog.imports_of(path for exercise in exercises
                               for path in (exercise.stub, exercise.visible_tests,
                                            *exercise.hidden_files))
    return frozenset(found & _preloads.LIBRARIES.keys())


def uncompiled(names: tuple[str, ...]) -> list[str]:
    """The modules among `names` whose source has no bytecode beside it, in a folder this
    process may write to (found without importing anything)."""
    missing = []
    for name in names:
        top, *rest = name.split(".")
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.has_location or not spec.origin:
            continue
        source = Path(spec.origin)
        if rest:
            inner = source.parent.joinpath(*rest)
            source = inner / "__init__.py" if inner.is_dir() else inner.with_suffix(".py")
        if source.suffix != ".py" or not source.is_file():
            continue
        if not Path(importlib.util.cache_from_source(str(source))).is_file() \
                and os.access(source.parent, os.W_OK):
            missing.append(name)
    return missing


def unicode_tables(lib: Path, env: dict[str, str]) -> str:
    """A fresh copy in `lib` of hypothesis's Unicode tables, for the server to load (see
    `_preloads.unicode_tables`); "" if they cannot be had, and the children build them.

    They are built once per hypothesis and Unicode version into `.grader/unicode/`, by a process
    that runs no submission, so what the server loads was written by nothing a submission ran.
    """
    try:
        key = (f"hypothesis-{importlib.metadata.version('hypothesis')}"
               f"-unicode-{unicodedata.unidata_version}")
        trusted = _TABLES / key
        if not (trusted / ".complete").exists():
            scratch = _TABLES / f"{key}.{os.getpid()}"
            shutil.rmtree(scratch, ignore_errors=True)
            subprocess.run([sys.executable, "-P", str(_SCRIPT), "--warm", str(scratch)], env=env,
                           check=True, timeout=_LIMIT, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            (scratch / ".complete").touch()
            try:
                scratch.rename(trusted)
            except OSError:  # another grader built them first
                shutil.rmtree(scratch, ignore_errors=True)
        copy = lib / "unicode"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(trusted, copy)
    except (OSError, subprocess.SubprocessError, importlib.metadata.PackageNotFoundError):
        return ""
    return str(copy)


class _Bytecode:
    """Bytecode for what every child imports, written once by a process outside the sandbox.

    Under bubblewrap the Python environment is read-only to the children (and to the server), so
    in an environment nobody has compiled (uv does not compile on install) each server, and each
    child started without one, compiles pytest, hypothesis, fastapi and schemathesis from source
    again: about a second a run, on every run. Here a process that runs no submission imports
    them once, which writes their bytecode beside them; when it is there, nothing runs.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._checked = False

    def ensure(self) -> None:
        with self._lock:
            if self._checked or isolation.mode() != "bwrap":
                return
            self._checked = True
            if not uncompiled(_preloads.preloads()):
                return
            with contextlib.ExitStack() as held:
                with contextlib.suppress(OSError):  # graders starting together compile once
                    _BYTECODE_LOCK.parent.mkdir(parents=True, exist_ok=True)
                    lock = held.enter_context(_BYTECODE_LOCK.open("a"))
                    if fcntl is not None:
                        fcntl.flock(lock, fcntl.LOCK_EX)
                    if not uncompiled(_preloads.preloads()):
                        return
                # -I: neither the working directory nor PYTHON* variables (the caller's
                # PYTHONDONTWRITEBYTECODE among them) have a say in what it imports or writes.
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    subprocess.run([sys.executable, "-I", str(_SCRIPT), "--compile"],
                                   cwd=catalog.ROOT,
                                   check=False, timeout=_LIMIT, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


_BYTECODE = _Bytecode()


def compile_preloads() -> None:
    """Bytecode on disk for what every child imports (see `_Bytecode`): at most once a process,
    and only under bubblewrap. `spawn` sees to it; a caller about to start many graders at once
    can call it first, so that they do not all start by waiting for it."""
    _BYTECODE.ensure()
