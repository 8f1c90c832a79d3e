"""The cohort bench case: run only when named (it grades 200 submissions), sized on demand."""

from __future__ import annotations

import pytest

from bench.__main__ import _check_names, build_parser, main


def test_the_default_bench_run_leaves_the_cohort_out() -> None:
    assert "cohort" not in _check_names([])
    assert "grader" in _check_names([])


def test_the_cohort_case_runs_when_named() -> None:
    assert _check_names(["cohort"]) == ["cohort"]


@pytest.mark.parametrize(("argv", "size"), [([], 50), (["--cohort-size", "8"], 8)])
def test_the_cohort_size_defaults_to_fifty(argv: list[str], size: int) -> None:
    assert build_parser().parse_args(["cohort", *argv]).cohort_size == size


def test_a_cohort_size_below_one_is_one_line_of_usage(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cohort", "--cohort-size", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'0'" in err, err
