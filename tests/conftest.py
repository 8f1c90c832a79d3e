"""Start the slow work as soon as the tests are collected: every grading job (a few at a time, in
test order) and each selected module's `start_background()`, so it all runs while tests wait.

The modules whose tests wait for that work run last: the others (which drive the grader in
processes of their own) run meanwhile, so the cores stay busy and none of them is left to run
alone at the end."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers import ISOLATION_NOTICE, SUMMARY, cancel_pending, prefetch


def pytest_configure(config: pytest.Config) -> None:
    """Every grading the suite starts records its score in a file of the session's own, never
    in the user's `.grader/state.json` (which `grader.py list` reads)."""
    from grading import state

    place = Path(tempfile.mkdtemp(prefix="kata-suite-state-"))
    os.environ[state.ENV] = str(place / "state.json")
    config.add_cleanup(lambda: _remove(place))


def _remove(place: Path) -> None:
    import shutil

    shutil.rmtree(place, ignore_errors=True)


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what will not run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if sys.platform != "linux":  # a laptop's CI leg: what needs Linux says so and skips
        for item in items:
            marker = item.get_closest_marker("linux_only")
            if marker is not None:
                item.add_marker(pytest.mark.skip(reason=f"needs Linux: {marker.args[0]}"))
    if config.option.collectonly:
        return  # listing the tests starts no grading, type check or attack
    from grading import preload

    # In a fresh environment, compiled once here, before the graders the suite starts at once.
    preload.compile_preloads()
    modules = {item.module for item in items if isinstance(item, pytest.Function)}
    waiting: set[object] = set()
    for module in modules:
        start = getattr(module, "start_background", None)
        if start is not None:
            start()  # a module's slow background work (type checks, attacks) begins now
            waiting.add(module)
    for item in items:
        callspec = getattr(item, "callspec", None)
        job = callspec.params.get("job") if callspec is not None else None
        if job is not None:
            prefetch(*job)
            waiting.add(getattr(item, "module", None))
    # Modules that wait for background work last, each in its own order.
    items.sort(key=lambda item: getattr(item, "module", None) in waiting)


def pytest_sessionfinish(session: pytest.Session) -> None:
    cancel_pending()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from grading import isolation

    terminalreporter.write_line(ISOLATION_NOTICE or f"graded with isolation: {isolation.mode()}")
    for line in SUMMARY:
        terminalreporter.write_line(line)
