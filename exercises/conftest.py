"""Hypothesis profiles for running the visible tests by hand (`uv run pytest exercises/NAME`).

`dev` is the default: random examples, a local example database so a failure is replayed first.
`grading` is what the grader uses: derandomized, no database, no deadline. Choose one with
`HYPOTHESIS_PROFILE=grading uv run pytest exercises/NAME`.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings


def pytest_configure(config: pytest.Config) -> None:
    # The grader's markers, so a visible test file copied anywhere with this file runs quietly.
    config.addinivalue_line("markers", "points(n): how many points the check is worth")
    config.addinivalue_line("markers", "category(name): the check's category")


settings.register_profile("dev", deadline=None)
settings.register_profile(
    "grading",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow],
    # A failing check reports its first minimal example; explaining it costs many seconds.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    report_multiple_bugs=False,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
