"""The pytest plugin loaded in the grading child process.

The grader copies this file into the folder of runs' `lib` as `contract.PLUGIN_MODULE`, with
the contract beside it as `contract.MODULE`, and loads it with `-p`; it imports nothing but the
standard library, the contract, pytest and (lazily) hypothesis.

It reads its configuration (`contract.Config`) as JSON from standard input at import, before any
test module (and so the submission) is imported: the channel file to report to, a per-run token
that marks every record as its own, and which checks to run. It then reports one JSON line per
event, each a record `contract` defines: `check` (collect mode: one per check), `collected`,
`collect_error`, `start`, `figure`, `result` and `done`.

A check passes only when its own call ran to the end: a hook wrapper around the test function
records that, so a submission that stops tests from running cannot turn them into passes.
"""

from __future__ import annotations

import ast
import contextlib
import faulthandler
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import json
import marshal
import os
import random
import re
import sys
import time
import types
from collections.abc import Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from grading import contract
else:
    def _contract() -> types.ModuleType:
        """The contract beside this file: `MODULE.py` in a child's `lib`, `contract.py` when the
        grader runs this file itself (`--compile`)."""
        here = os.path.dirname(os.path.abspath(__file__))
        for name in ("_kata_contract.py", "contract.py"):
            spec = importlib.util.spec_from_file_location("_kata_contract",
                                                          os.path.join(here, name))
            if spec is not None and spec.loader is not None and os.path.isfile(spec.origin or ""):
                module = importlib.util.module_from_spec(spec)
                sys.modules["_kata_contract"] = module
                spec.loader.exec_module(module)
                return module
        raise ImportError(f"no contract beside {__file__}")

    contract = _contract()
_TIMEOUT_RE = re.compile(r"Timeout \(>[0-9.]+s\) from pytest-timeout")
_MESSAGE_CHARS = 2000


def _read_config() -> dict[str, Any]:
    chunks = []
    while chunk := os.read(0, 65536):
        chunks.append(chunk)
    data = b"".join(chunks)
    return json.loads(data) if data else {}


try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

_CONFIG = _read_config()
_DEFAULT_LIMIT = float(_CONFIG.get("timeout", contract.CHECK_LIMIT))  # where no marker says
_TOKEN: str = _CONFIG.get("token", "")
_FD = -1
if _CONFIG.get("channel"):
    _raw = os.open(_CONFIG["channel"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    # Out of the way of code that scribbles on low file descriptors (where fcntl exists).
    _FD = fcntl.fcntl(_raw, fcntl.F_DUPFD_CLOEXEC, 300) if fcntl is not None else os.dup(_raw)
    os.close(_raw)


# ---- what the submission cannot forge ------------------------------------------------------
# The test files' bytes, read before the submission can run: every test module (and the hidden
# helpers module) is compiled from these, whatever the files on disk say by the time pytest
# imports them. Only code compiled here may run as a check.
def _test_sources() -> dict[str, tuple[str, bytes]]:
    submission = os.path.realpath(_CONFIG.get("submission", "")) if _CONFIG else ""
    found: dict[str, tuple[str, bytes]] = {}
    for folder in (".", contract.HIDDEN_DIR):
        with contextlib.suppress(OSError):
            for entry in sorted(os.listdir(folder)):
                path = os.path.realpath(os.path.join(folder, entry))
                if entry.endswith(".py") and path != submission and entry != "conftest.py":
                    with open(path, "rb") as f:
                        found[entry[:-3]] = (path, f.read())
    return found


_SOURCES = _test_sources() if _CONFIG.get("mode") else {}
_OURS: set[int] = set()  # ids of the code objects compiled from _SOURCES


def _precompiled() -> dict[str, tuple[bytes, types.CodeType]]:
    """The test modules as the grader compiled them (`python plugin.py --compile`), by module
    name: the sha256 of the source each was compiled from, and its code. Read with the sources,
    before the submission can run; a module whose source differs is compiled here instead."""
    try:
        with open(contract.COMPILED, "rb") as f:
            data = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {name: (digest, code) for name, (digest, code) in data.items()
            if isinstance(digest, bytes) and isinstance(code, types.CodeType)}


_PRECOMPILED = _precompiled() if _SOURCES else {}


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
    """The pytest machinery a check's outcome rests on, as it was before the submission ran."""
    from _pytest import outcomes, python, raises, reports, runner

    return {"pytest.fail": pytest.fail, "pytest.raises": pytest.raises,
            "pytest.skip": pytest.skip, "pytest.approx": pytest.approx,
            "outcomes.fail": outcomes.fail, "raises.raises": raises.raises,
            "CallInfo.from_call": vars(runner.CallInfo)["from_call"],
            "TestReport.__init__": vars(reports.TestReport)["__init__"],
            "TestReport.from_item_and_call": vars(reports.TestReport)["from_item_and_call"],
            "Function.runtest": vars(python.Function)["runtest"],
            "pytest_pyfunc_call": python.pytest_pyfunc_call}


_PRISTINE = _guarded()


def _tampered() -> str:
    """What of pytest the submission replaced ("" when nothing)."""
    changed = [name for name, obj in _guarded().items() if obj is not _PRISTINE[name]]
    return ", ".join(changed)


class _VerifiedLoader(importlib.abc.Loader):
    def __init__(self, path: str, source: bytes, config: pytest.Config) -> None:
        self._path, self._source, self._config = path, source, config

    def exec_module(self, module: types.ModuleType) -> None:
        name = os.path.basename(self._path).removesuffix(".py")
        digest, code = _PRECOMPILED.get(name, (b"", None))
        if code is not None and digest == hashlib.sha256(self._source).digest():
            code = _relocated(code, self._path)
        else:
            code = _compile(self._path, self._source, self._config)
        stack = [code]
        while stack:
            current = stack.pop()
            _OURS.add(id(current))
            stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
        exec(code, module.__dict__)


class _VerifiedFinder(importlib.abc.MetaPathFinder):
    def __init__(self, config: pytest.Config) -> None:
        self._config = config

    def find_spec(self, name: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name not in _SOURCES:
            return None
        origin, source = _SOURCES[name]
        return importlib.util.spec_from_file_location(
            name, origin, loader=_VerifiedLoader(origin, source, self._config))


def _verified(item: pytest.Item) -> str:
    """Why `item` is not one of the checks read before the submission ran ("" if it is)."""
    function = getattr(item, "function", None)
    inner = getattr(getattr(function, "hypothesis", None), "inner_test", None)  # @given's test
    code = getattr(inspect.unwrap(inner or function), "__code__", None) if function else None
    if _SOURCES and (code is None or id(code) not in _OURS):
        return "the test function is not the one the grader read (was it replaced?)"
    return ""


_completed: set[str] = set()
_generators: list[tuple[str, random.Random]] = []
_failures: dict[str, tuple[str, str]] = {}
_reports: dict[str, list[pytest.TestReport]] = {}


def _emit(record: dict[str, Any]) -> None:
    record["token"] = _TOKEN
    line = b"\n" + json.dumps(record).encode() + b"\n"
    with contextlib.suppress(OSError):  # if the channel is gone, the parent fails the checks
        os.write(_FD, line)


_current: list[str] = []  # the id of the check running now, if any
# Where a check that outlives its limit leaves every thread's stack (faulthandler, which needs
# nothing of the submission's cooperation): the child's own output, duplicated before pytest
# captures it. The grader reads the submission's innermost line from there when it has to kill.
_STACKS = os.fdopen(os.dup(2), "w") if hasattr(os, "dup") else None
_STACKS_AFTER = 0.5  # seconds past a check's limit; the grader kills at 1 s past it


def note_figure(label: str, figure: float, limit: float) -> None:
    """What a hidden check measured (see `kata_measure`), reported with the check's id: the
    grader shows it in `python -m grading.margins`; it never changes a score."""
    if _current:
        _emit({"ev": contract.FIGURE, "id": _current[-1], "label": str(label),
               "figure": float(figure), "limit": float(limit)})


def check_id(item: pytest.Item) -> str:
    """`visible::test_x` or `hidden::test_x[param]`: stable across runs and submissions."""
    return f"{_visibility(item)}::{item.name}"


def _visibility(item: pytest.Item) -> str:
    # The hidden checks are laid out in their folder, the visible tests beside the submission.
    return contract.HIDDEN if item.path.parent.name == contract.HIDDEN_DIR else contract.VISIBLE


def _metadata(item: pytest.Item) -> dict[str, Any]:
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    summary = doc.strip().split("\n\n", 1)[0]  # the first line, or its wrapped paragraph
    name = " ".join(summary.split()) or item.name.removeprefix("test_").replace("_", " ")
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        name = f"{name} [{callspec.id}]"
    points_marker = item.get_closest_marker("points")
    category_marker = item.get_closest_marker("category")
    timeout_marker = item.get_closest_marker("timeout")
    points = points_marker.args[0] if points_marker else 1
    category = category_marker.args[0] if category_marker else "correctness"
    timeout = timeout_marker.args[0] if timeout_marker else _DEFAULT_LIMIT
    return {
        "id": check_id(item),
        "name": name,
        "visibility": _visibility(item),
        "category": category,
        "points": points,
        "timeout": timeout,
        "file": item.nodeid.split("::", 1)[0],  # relative to the work directory
    }


def pytest_configure(config: pytest.Config) -> None:
    if _SOURCES:
        sys.meta_path.insert(0, _VerifiedFinder(config))
    config.addinivalue_line("markers", "points(n): what the check is worth (default 1)")
    config.addinivalue_line("markers", f"category(name): one of {', '.join(contract.CATEGORIES)}")
    from hypothesis import settings

    contract.register_profile()
    settings.load_profile(contract.PROFILE)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _emit({"ev": contract.COLLECT_ERROR, "message": _cut(str(report.longrepr))})


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _CONFIG.get("mode") == "collect":
        for item in items:
            _emit({"ev": contract.CHECK, **_metadata(item)})
    only = _CONFIG.get("only")
    limits = _CONFIG.get("limits") or {}
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        cid = check_id(item)
        if cid in limits:  # the grader's limit for this check comes first (see sandbox)
            item.add_marker(pytest.mark.timeout(float(limits[cid])), append=False)
        (keep if only is None or cid in only else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
    _emit({"ev": contract.COLLECTED, "ids": [check_id(item) for item in keep]})


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    # The test modules, so the submission and the libraries they use, are imported by now.
    _generators[:] = _module_generators()
    _restore_printer()


def _restore_printer() -> None:
    """schemathesis, once imported (job_api's checks use it), swaps hypothesis's printer for one
    that prints nothing; every falsifying example would then show blank values."""
    core = sys.modules.get("hypothesis.core")
    pretty = sys.modules.get("hypothesis.vendor.pretty")
    if core is not None and pretty is not None:
        setattr(core, "RepresentationPrinter", pretty.RepresentationPrinter)  # noqa: B010


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # The same numbers for a check however many checks ran before it, in whatever process.
    cid = check_id(item)
    for name, generator in _generators:
        generator.seed(f"{cid}|{name}")


def _module_generators() -> list[tuple[str, random.Random]]:
    """Every `random.Random` a module holds: the `random` module's own, the one trio shuffles
    its run queue with, the submission's. (Not `SystemRandom`: it cannot be seeded.)"""
    found: dict[int, tuple[str, random.Random]] = {}
    for module_name, module in list(sys.modules.items()):
        try:
            names = list(vars(module).items())
        except Exception:  # not a module after all: nothing to seed there
            continue
        for name, value in names:
            if type(value) is random.Random and id(value) not in found:
                found[id(value)] = (f"{module_name}.{name}", value)
    return sorted(found.values(), key=lambda pair: pair[0])


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    result = yield  # raises if the test raised: then the check is not completed
    why = _verified(pyfuncitem) or (f"the submission replaced pytest's {changed}"
                                    if (changed := _tampered()) else "")
    if why:
        _failures.setdefault(pyfuncitem.nodeid, (f"not graded: {why}", ""))
    else:
        _completed.add(pyfuncitem.nodeid)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.excinfo is not None and item.nodeid not in _failures:
        exc = call.excinfo.value
        notes = "\n".join(str(n) for n in getattr(exc, "__notes__", ()))
        _failures[item.nodeid] = (_describe(exc), notes)
    return report


def _describe(exc: BaseException) -> str:
    """What failed, for a person: the exception's type and message, and the submission's own
    line where it was raised (or, for a timeout, where it was stuck). An exception group is
    reported as its leaf exceptions, one line each, however deeply they are nested."""
    leaves = _leaves(exc)
    if len(leaves) == 1 and leaves[0] is exc:
        where = _where(exc.__traceback__)
        if where:
            verb = "stuck at" if _TIMEOUT_RE.search(str(exc)) else "at"
            return f"{_one_line(exc)}\n  {verb} {where}"
        return _one_line(exc) + "".join(f"\n  from {line}" for line in _origins(exc))
    lines = [f"{type(exc).__name__} with {len(leaves)} leaf "
             f"exception{'s' if len(leaves) > 1 else ''}:"]
    raised_at = _where(exc.__traceback__)  # for a leaf made but never raised on its own
    for leaf in leaves:
        where = _where(leaf.__traceback__) or raised_at
        lines.append(f"  {_one_line(leaf)}" + (f" (at {where})" if where else ""))
    return "\n".join(lines)


def _origins(exc: BaseException) -> list[str]:
    """The submission's exceptions that a check's own failure was raised while handling (a
    check that catches the submission's error and fails with its own words), with their lines."""
    seen: set[int] = set()
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        found = [f"{_one_line(leaf)} (at {where})" for leaf in _leaves(cause)
                 if (where := _where(leaf.__traceback__))]
        if found:
            return found
        cause = cause.__cause__ or cause.__context__
    return []


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _where(tb: TracebackType | None) -> str:
    """`NAME.py:LINE in FUNCTION` for the deepest frame of the submission in `tb`, or ""."""
    submission = _CONFIG.get("submission")
    if not submission:
        return ""
    target, found = os.path.realpath(submission), ""
    while tb is not None:
        code = tb.tb_frame.f_code
        if os.path.realpath(code.co_filename) == target:
            found = f"{os.path.basename(submission)}:{tb.tb_lineno} in {code.co_name}"
        tb = tb.tb_next
    return found


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _reports.setdefault(report.nodeid, []).append(report)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    cid = check_id(item)
    _emit({"ev": contract.START, "id": cid})
    _current.append(cid)
    marker = item.get_closest_marker("timeout")
    limit = float(marker.args[0]) if marker and marker.args else _DEFAULT_LIMIT
    if _STACKS is not None:
        faulthandler.dump_traceback_later(limit + _STACKS_AFTER, file=_STACKS)
    started = time.perf_counter()
    try:
        return (yield)
    finally:
        if _STACKS is not None:
            faulthandler.cancel_dump_traceback_later()
        _current.remove(cid)
        status, message, falsifying = _outcome(item)
        _emit({"ev": contract.RESULT, "id": cid, "status": status, "message": message,
               "falsifying": falsifying, "duration": round(time.perf_counter() - started, 4)})


def _outcome(item: pytest.Item) -> tuple[contract.Status, str, str]:
    reports = _reports.pop(item.nodeid, [])
    exconly, notes = _failures.pop(item.nodeid, ("", ""))
    falsifying = _falsifying(notes)
    for report in reports:
        if report.failed:
            message = _cut(exconly or report.longreprtext)
            if _TIMEOUT_RE.search(message):
                return "timeout", message, falsifying
            return ("failed" if report.when == "call" else "error"), message, falsifying
        if report.skipped:
            return "failed", f"skipped: {_cut(str(report.longrepr))}", ""
    if item.nodeid not in _completed:
        message = exconly or "the test did not run to completion"
        return "failed", message, ""
    if changed := _tampered():
        return "failed", f"not graded: the submission replaced pytest's {changed}", ""
    _completed.discard(item.nodeid)
    return "passed", "", ""


def _falsifying(notes: str) -> str:
    """Hypothesis's notes: the falsifying (or failing explicit) example and its explanation."""
    return _cut(notes.strip())


# pytest's advice about its own flags (`-v`, `-vv`), which the grader does not take.
_ADVICE = re.compile(r"(?i)^\s*(use -v+ to get more diff|.*, use -v+ to show|full diff:)\s*$")


def _cut(text: str) -> str:
    """`text` without pytest's flag advice, cut in the middle when long (a message's first
    lines say what failed; its last often say why)."""
    text = "\n".join(line for line in text.splitlines() if not _ADVICE.match(line))
    if len(text) <= _MESSAGE_CHARS:
        return text
    head, tail = _MESSAGE_CHARS * 2 // 3, _MESSAGE_CHARS // 3
    return f"{text[:head]} ... ({len(text) - head - tail} characters) ... {text[-tail:]}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _emit({"ev": contract.DONE})


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # Threads the submission left running must not keep the process alive.
    os._exit(0)


def _compile_files(paths: list[str]) -> bytes:
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


if __name__ == "__main__":  # `python -I plugin.py --compile FILE...`: the grader, outside any run
    if sys.argv[1:2] == ["--compile"]:
        sys.stdout.buffer.write(_compile_files(sys.argv[2:]))
