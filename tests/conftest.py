"""Start the slow work as soon as the tests are collected: every grading job (a few at a time, in
test order) and each selected module's `start_background()`, so it all runs while tests wait.

The modules whose tests wait for that work run last: the others (which drive the grader in
processes of their own) run meanwhile, so the cores stay busy and none of them is left to run
alone at the end."""

from __future__ import annotations

import pytest

from tests.helpers import ISOLATION_NOTICE, SUMMARY, cancel_pending, prefetch


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what will not run
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
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
