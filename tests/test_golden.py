"""Each report format rendered from one fixed grading, compared with its file in tests/golden/.

The grading holds every status, both visibilities, a falsifying example, a long message, a
diagnosis and a mypy line, so a change to any format shows here as a diff of its golden file.
After a deliberate change, rewrite the files with `GOLDEN_UPDATE=1 uv run pytest
tests/test_golden.py` and review the diff.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from grading import report
from grading.contract import Visibility
from grading.request import FORMATS
from grading.results import Check, Grade, Result

GOLDEN = Path(__file__).resolve().parent / "golden"


def _grading() -> list[Grade]:
    def check(name: str, visibility: Visibility = "hidden", category: str = "correctness",
              points: float = 1.0) -> Check:
        return Check(f"{visibility}::test_{name}", f"The {name.replace('_', ' ')} rule.",
                     visibility, category, points, 10.0)

    results = [
        Result(check("bucket_starts_full", "visible"), "passed", duration=0.01),
        Result(check("refill_is_exact", points=2.0), "failed",
               "AssertionError: refilled 4.999 tokens, expected 5\n  at tb.py:12 in try_acquire",
               "Falsifying example: test_refill_is_exact(rate=0.1, elapsed=50.0)", 0.25),
        Result(check("concurrent_callers", category="concurrency", points=3.0), "timeout",
               "the check ran past its 3 s limit and did not stop; stuck at tb.py:40 in _wait",
               duration=4.0),
        Result(check("bad_rate_is_refused", category="bad_input"), "error",
               "fixture 'clock' not found", duration=0.0),
        Result(check("huge_key_count", category="performance", points=2.5), "crashed",
               "killed by SIGKILL: the submission used over 4 GiB of memory (the limit)"),
        Result(check("long_message", "visible", "edge_cases"), "failed",
               "\n".join(f"line {i}: <value & 'quote'> {'x' * 40}" for i in range(12))),
    ]
    provenance = {"commit": "0123456789abcdef", "checks_sha256": "f" * 64, "python": "3.11.7",
                  "packages": {"pytest": "8.3.0"}, "hypothesis_profile": "grading"}
    first = Grade("token_bucket", "submissions/alice.py", results, 5.5, "clean", provenance,
                  diagnoses=[{"bug": "float_refill", "summary": "Refill in floating point.",
                              "rule": "Rule 3"}])
    refused = Grade("token_bucket", "submissions/bob.py",
                    [Result(r.check, "failed", "not started: the stub is unmodified")
                     for r in results], 0.01, "", provenance,
                    reason="not started: the stub is unmodified", refused=True)
    return [first, refused]


@pytest.mark.parametrize("feedback", ["full", "names", "score"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_matches_its_golden_file(fmt: str, feedback: str) -> None:
    out = io.StringIO()
    report.render(_grading(), out, report.Style(fmt, feedback, verbose=False, color=False))
    suffix = {"text": "txt", "json": "jsonl", "gradescope": "jsonl", "junit": "xml",
              "csv": "csv"}[fmt]
    golden = GOLDEN / f"{fmt}-{feedback}.{suffix}"
    if os.environ.get("GOLDEN_UPDATE"):
        golden.write_text(out.getvalue(), encoding="utf-8")
    assert golden.is_file(), f"no golden file {golden.name}: run with GOLDEN_UPDATE=1"
    assert out.getvalue() == golden.read_text(encoding="utf-8"), \
        f"{fmt} at feedback={feedback} differs from {golden.name}"


def test_an_unknown_format_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match="'xml'"):
        report.render(_grading(), io.StringIO(), report.Style("xml"))
