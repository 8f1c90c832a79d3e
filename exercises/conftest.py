"""Hypothesis profiles for running the visible tests by hand (`uv run pytest exercises/NAME`).

`dev` is the default: random examples, a local example database so a failure is replayed first.
`grading` is what the grader uses: derandomized, no database, no deadline. Choose one with
`HYPOTHESIS_PROFILE=grading uv run pytest exercises/NAME`.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

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
