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

import contextlib
import faulthandler
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import random
import sys
import time
import types
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from grading import contract, describe, guard
else:
    def _beside(module_name: str) -> types.ModuleType:
        """The child-side module laid beside this file in `lib` as `MODULE_NAME.py`."""
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{module_name}.py")
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"no {module_name} beside {__file__}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        return module

    contract = _beside("_kata_contract")  # contract.MODULE: the name known before the contract
    describe = _beside(contract.lib_module("describe"))
    guard = _beside(contract.lib_module("guard"))


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
# The test sources and pytest's machinery, read now: before any test module, so before the
# submission, is imported.
_GUARD = guard.Guard(_CONFIG.get("submission", ""),
                     (".", contract.HIDDEN_DIR) if _CONFIG.get("mode") else (), contract.COMPILED)
_SUBMISSION: str = _CONFIG.get("submission", "")
_DEFAULT_LIMIT = float(_CONFIG.get("timeout", contract.CHECK_LIMIT))  # where no marker says
_TOKEN: str = _CONFIG.get("token", "")
_FD = -1
if _CONFIG.get("channel"):
    _raw = os.open(_CONFIG["channel"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    # Out of the way of code that scribbles on low file descriptors (where fcntl exists).
    _FD = fcntl.fcntl(_raw, fcntl.F_DUPFD_CLOEXEC, 300) if fcntl is not None else os.dup(_raw)
    os.close(_raw)


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
    _GUARD.install(config)
    config.addinivalue_line("markers", "points(n): what the check is worth (default 1)")
    config.addinivalue_line("markers", f"category(name): one of {', '.join(contract.CATEGORIES)}")
    from hypothesis import settings

    contract.register_profile()
    settings.load_profile(contract.PROFILE)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _emit({"ev": contract.COLLECT_ERROR, "message": describe.cut(str(report.longrepr))})


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
    why = _GUARD.verified(pyfuncitem) or (f"the submission replaced pytest's {changed}"
                                    if (changed := _GUARD.tampered()) else "")
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
        _failures[item.nodeid] = (describe.describe(exc, _SUBMISSION), notes)
    return report


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
    falsifying = describe.falsifying(notes)
    for report in reports:
        if report.failed:
            message = describe.cut(exconly or report.longreprtext)
            if describe.TIMEOUT.search(message):
                return "timeout", message, falsifying
            return ("failed" if report.when == "call" else "error"), message, falsifying
        if report.skipped:
            return "failed", f"skipped: {describe.cut(str(report.longrepr))}", ""
    if item.nodeid not in _completed:
        message = exconly or "the test did not run to completion"
        return "failed", message, ""
    if changed := _GUARD.tampered():
        return "failed", f"not graded: the submission replaced pytest's {changed}", ""
    _completed.discard(item.nodeid)
    return "passed", "", ""


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _emit({"ev": contract.DONE})


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # Threads the submission left running must not keep the process alive.
    os._exit(0)
