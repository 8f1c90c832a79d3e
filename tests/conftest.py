"""Start every grading job as soon as the tests are collected, two at a time, in test order,
so the slow part of the suite (grading references and mutants) runs while tests wait."""

from __future__ import annotations

import pytest

from tests.helpers import cancel_pending, prefetch


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what will not run
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        job = callspec.params.get("job") if callspec is not None else None
        if job is not None:
            prefetch(*job)


def pytest_sessionfinish(session: pytest.Session) -> None:
    cancel_pending()
