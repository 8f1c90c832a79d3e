"""The contract between the grader (the parent) and the pytest plugin in a grading child.

Everything both sides must agree on is defined here once: the names of the files and folders in
a child's work directory, the configuration the parent writes to the child's stdin, the events
the plugin writes to the channel (one JSON object a line, each a `TypedDict` below), the
statuses and categories a check can have, the pytest command line and the hypothesis profile a
grading runs under.

Standard library only: the grader lays this file into the read-only `lib/` of the folder of runs
as `MODULE.py`, beside the plugin, which loads it from there; the exercises' `conftest.py` and
the mutation runner load the profile from here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypedDict, get_args

# ---- the work directory of one child ------------------------------------------------------
PREFIX = "_kata_"  # what the child-side modules' names start with in lib/
PLUGIN_MODULE = f"{PREFIX}grading_plugin"  # the plugin's name in lib/ (`-p PLUGIN_MODULE`)
MODULE = f"{PREFIX}contract"  # this file's name in lib/: the plugin loads it by this name


def lib_module(stem: str) -> str:
    """The name in lib/ of the child-side module `grading/STEM.py`."""
    return PLUGIN_MODULE if stem == "plugin" else f"{PREFIX}{stem}"
HIDDEN_DIR = "hidden"  # the hidden checks' folder, beside the submission and the visible tests
COMPILED = ".kata-tests.marshal"  # the test modules as the grader compiled them


def submission_file(exercise: str) -> str:
    """The submission's name in the work directory: what the tests import."""
    return f"{exercise}.py"


def visible_tests_file(exercise: str) -> str:
    return f"test_{exercise}.py"


# ---- statuses and categories ----------------------------------------------------------------
# The status types are the one definition: `mypy --strict` (strict equality) rejects a
# comparison with, or an assignment of, any other string.
Status = Literal["passed", "failed", "error", "timeout"]  # what a child reports
FinalStatus = Literal[Status, "crashed"]  # "crashed": no child could report the check
REPORTED: tuple[Status, ...] = get_args(Status)
FINAL: tuple[FinalStatus, ...] = (*REPORTED, "crashed")
CATEGORIES = ("correctness", "edge_cases", "bad_input", "concurrency", "performance")
Visibility = Literal["visible", "hidden"]  # where a check comes from: the start of its id
VISIBLE: Visibility = "visible"
HIDDEN: Visibility = "hidden"
VISIBILITIES: tuple[Visibility, ...] = (VISIBLE, HIDDEN)
CHECK_LIMIT = 10.0  # seconds a check may run when neither the config nor a marker says


# ---- the configuration: the parent writes it to the child's stdin as one JSON object ----------
class Config(TypedDict, total=False):
    mode: Literal["collect", "run"]
    token: str  # every record the child writes carries it; others are ignored
    channel: str  # the file the child appends records to
    timeout: float  # a check's limit where neither `limits` nor a marker sets one
    submission: str  # the submission's path in the work directory
    only: list[str]  # "run": the ids of the checks to run (all when absent)
    limits: dict[str, float]  # "run": each check's limit in seconds, by id


# ---- the events: the child appends one JSON object a line to the channel ---------------------
CHECK, COLLECTED, COLLECT_ERROR = "check", "collected", "collect_error"
START, FIGURE, RESULT, DONE = "start", "figure", "result", "done"
EVENTS = (CHECK, COLLECTED, COLLECT_ERROR, START, FIGURE, RESULT, DONE)


class CheckRecord(TypedDict):
    """collect mode: one check, as the trusted stub's run collects it."""

    ev: Literal["check"]
    id: str  # `visible::test_x` or `hidden::test_x[param]`
    name: str  # what the candidate reads
    visibility: Visibility
    category: str  # one of CATEGORIES
    points: float
    timeout: float
    file: str  # relative to the work directory


class CollectedRecord(TypedDict):
    ev: Literal["collected"]
    ids: list[str]  # the checks about to run


class CollectErrorRecord(TypedDict):
    ev: Literal["collect_error"]
    message: str  # pytest's report of a test file that could not be imported


class StartRecord(TypedDict):
    ev: Literal["start"]
    id: str


class FigureRecord(TypedDict):
    """A check measured something (see `kata_measure`): shown by `grading.margins` only."""

    ev: Literal["figure"]
    id: str
    label: str
    figure: float
    limit: float


class ResultRecord(TypedDict):
    ev: Literal["result"]
    id: str
    status: Status
    message: str
    falsifying: str  # hypothesis's falsifying example, "" when none
    duration: float  # seconds


class DoneRecord(TypedDict):
    ev: Literal["done"]


Record = (CheckRecord | CollectedRecord | CollectErrorRecord | StartRecord | FigureRecord
          | ResultRecord | DoneRecord)


# ---- how pytest is started in a child ---------------------------------------------------------
def pytest_args(ini: Path, work: Path, files: list[str], *, collect: bool) -> list[str]:
    """The arguments after `python -m pytest` in a child working in `work`.

    --tb=line: a failed check's message is the plugin's own, never pytest's traceback, whose
    source lookups scan every module the fork server loaded on every failing run; what a
    collection error says (its `E` lines) is the same."""
    args = ["-c", str(ini), "--rootdir", str(work), "-p", PLUGIN_MODULE,
            "-p", "no:cacheprovider", "-p", "no:schemathesis", "-q", "--no-header", "-rN",
            "--tb=line", *files]
    return [*args, "--collect-only"] if collect else args


def pytest_ini(timeout: float) -> str:
    """The pytest configuration of a grading whose checks default to `timeout` seconds."""
    return (f"[pytest]\ntimeout = {timeout:g}\ntimeout_method = signal\n"
            "python_files = test_*.py\n")


# ---- the hypothesis profile every grading runs under --------------------------------------------
PROFILE = "grading"


def profile() -> dict[str, Any]:
    """The settings of the `grading` profile: derandomized, no example database, no deadline.
    A failing check reports its first minimal example (the `explain` phase is left out: it
    costs many seconds), and one bug, not several."""
    from hypothesis import HealthCheck, Phase

    return {"derandomize": True, "database": None, "deadline": None, "print_blob": False,
            "suppress_health_check": [HealthCheck.too_slow],
            "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
            "report_multiple_bugs": False}


def register_profile() -> None:
    """Register the `grading` profile with hypothesis (without loading it)."""
    from hypothesis import settings

    settings.register_profile(PROFILE, **profile())
