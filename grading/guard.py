"""What the submission cannot forge: the checks that run are the ones the grader read.

Part of the grading child (laid into `lib/` beside the plugin, which makes one `Guard` at
import). The test files' bytes are read before the submission can run; every test module (and
the hidden helpers module) is compiled from them, whatever the files on disk say by the time
pytest imports them, and only code compiled here may run as a check. The pytest machinery a
check's outcome rests on is remembered too, so that a submission that replaces it is caught.

Standard library and pytest only. `python -I guard.py --compile FILE...` is how the grader
compiles the test modules once, outside any run (see `testcode`).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import marshal
import os
import sys
import types

import pytest


class Guard:
    """The test sources of the work directory and the pytest machinery, as they were before the
    submission ran. `folders` are where test files lie (the work directory and the hidden
    checks' folder); `compiled` is the grader's precompiled code (see `compile_files`)."""

    def __init__(self, submission: str, folders: tuple[str, ...], compiled: str) -> None:
        self._sources = _test_sources(os.path.realpath(submission) if submission else "",
                                      folders)
        self._precompiled = _precompiled(compiled) if self._sources else {}
        self._ours: set[int] = set()  # ids of the code objects compiled from the sources
        self._pristine = _guarded()

    def install(self, config: pytest.Config) -> None:
        """From now on, the test modules are imported from the sources read at the start."""
        if self._sources:
            sys.meta_path.insert(0, _VerifiedFinder(self, config))

    def verified(self, item: pytest.Item) -> str:
        """Why `item` is not one of the checks read before the submission ran ("" if it is)."""
        function = getattr(item, "function", None)
        inner = getattr(getattr(function, "hypothesis", None), "inner_test", None)  # @given's
        code = getattr(inspect.unwrap(inner or function), "__code__", None) if function else None
        if self._sources and (code is None or id(code) not in self._ours):
            return "the test function is not the one the grader read (was it replaced?)"
        return ""

    def tampered(self) -> str:
        """What of pytest the submission replaced ("" when nothing)."""
        changed = [name for name, obj in _guarded().items() if obj is not self._pristine[name]]
        return ", ".join(changed)

    def _exec(self, module: types.ModuleType, path: str, source: bytes,
              config: pytest.Config) -> None:
        name = os.path.basename(path).removesuffix(".py")
        digest, code = self._precompiled.get(name, (b"", None))
        if code is not None and digest == hashlib.sha256(source).digest():
            code = _relocated(code, path)
        else:
            code = _compile(path, source, config)
        stack = [code]
        while stack:
            current = stack.pop()
            self._ours.add(id(current))
            stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
        exec(code, module.__dict__)


def _test_sources(submission: str, folders: tuple[str, ...]) -> dict[str, tuple[str, bytes]]:
    found: dict[str, tuple[str, bytes]] = {}
    for folder in folders:
        with contextlib.suppress(OSError):
            for entry in sorted(os.listdir(folder)):
                path = os.path.realpath(os.path.join(folder, entry))
                if entry.endswith(".py") and path != submission and entry != "conftest.py":
                    with open(path, "rb") as f:
                        found[entry[:-3]] = (path, f.read())
    return found


def _precompiled(compiled: str) -> dict[str, tuple[bytes, types.CodeType]]:
    """The test modules as the grader compiled them, by module name: the sha256 of the source
    each was compiled from, and its code. Read with the sources, before the submission can run;
    a module whose source differs is compiled here instead."""
    try:
        with open(compiled, "rb") as f:
            data = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {name: (digest, code) for name, (digest, code) in data.items()
            if isinstance(digest, bytes) and isinstance(code, types.CodeType)}


def _compile(path: str, source: bytes, config: pytest.Config | None) -> types.CodeType:
    """A test file's code as pytest would import it: `test_*` files with their asserts rewritten.

    `--compile` passes `config=None`, which rewrites the same way as long as the run's pytest.ini
    does not set `enable_assertion_pass_hook` (the only option the rewriting reads)."""
    tree = ast.parse(source, filename=path)
    if os.path.basename(path).startswith("test_"):
        from _pytest.assertion.rewrite import rewrite_asserts

        rewrite_asserts(tree, source, path, config)
    return compile(tree, path, "exec", dont_inherit=True, optimize=0)


def _relocated(code: types.CodeType, filename: str) -> types.CodeType:
    """`code` and every code object in it, as if compiled from `filename`."""
    consts = tuple(_relocated(c, filename) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _guarded() -> dict[str, object]:
    """The pytest machinery a check's outcome rests on, as it is now."""
    from _pytest import outcomes, python, raises, reports, runner

    return {"pytest.fail": pytest.fail, "pytest.raises": pytest.raises,
            "pytest.skip": pytest.skip, "pytest.approx": pytest.approx,
            "outcomes.fail": outcomes.fail, "raises.raises": raises.raises,
            "CallInfo.from_call": vars(runner.CallInfo)["from_call"],
            "TestReport.__init__": vars(reports.TestReport)["__init__"],
            "TestReport.from_item_and_call": vars(reports.TestReport)["from_item_and_call"],
            "Function.runtest": vars(python.Function)["runtest"],
            "pytest_pyfunc_call": python.pytest_pyfunc_call}


class _VerifiedLoader(importlib.abc.Loader):
    def __init__(self, guard: Guard, path: str, source: bytes, config: pytest.Config) -> None:
        self._guard, self._path, self._source, self._config = guard, path, source, config

    def exec_module(self, module: types.ModuleType) -> None:
        self._guard._exec(module, self._path, self._source, self._config)


class _VerifiedFinder(importlib.abc.MetaPathFinder):
    def __init__(self, guard: Guard, config: pytest.Config) -> None:
        self._guard, self._config = guard, config

    def find_spec(self, name: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name not in self._guard._sources:
            return None
        origin, source = self._guard._sources[name]
        return importlib.util.spec_from_file_location(
            name, origin, loader=_VerifiedLoader(self._guard, origin, source, self._config))


def compile_files(paths: list[str]) -> bytes:
    """The marshalled {module name: (sha256 of its source, code)} of the test files `paths`; a
    file whose compiling warns or fails is left out (the child compiles it, and shows the same)."""
    import warnings

    found: dict[str, tuple[bytes, types.CodeType]] = {}
    for path in paths:
        with open(path, "rb") as f:
            source = f.read()
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            try:
                code = _compile(path, source, None)
            except (SyntaxError, ValueError):
                continue
        if not said:
            name = os.path.basename(path).removesuffix(".py")
            found[name] = (hashlib.sha256(source).digest(), code)
    return marshal.dumps(found)


if __name__ == "__main__":  # `python -I guard.py --compile FILE...`: the grader, outside any run
    if sys.argv[1:2] == ["--compile"]:
        sys.stdout.buffer.write(compile_files(sys.argv[2:]))
