"""`python -m mutation [NAME...]`: mutmut over each reference against its visible and hidden checks.

For each exercise, a scratch folder `.grader/mutation/NAME/` holds the reference as `NAME.py`, the
visible tests and the hidden folder under `tests/`, a conftest (the grading hypothesis profile,
and the timing-based checks left out), and a `pyproject.toml` for mutmut. mutmut makes its
mutants there and runs the checks on each. Every survivor is then either listed as equivalent
in `mutation/equivalent.toml` (matched by its function and its changed lines, with a one-line
reason) or counted as a gap in the checks. The report goes to `mutation/report.md`.

Run it with the `mutation` dependency group: `uv run --group mutation python -m mutation`.
Exit status: 0 when every exercise kills at least 95% of its non-equivalent mutants, 1
otherwise, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grading import catalog
from grading.inputs import Parser, UsageError

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "equivalent.toml"
REPORT = HERE / "report.md"
SCRATCH = catalog.ROOT / ".grader" / "mutation"
TARGET = 0.95  # the share of non-equivalent mutants the checks must kill, per exercise

_KILLED = {1, 3}
_SURVIVED = {0}
_TIMEOUT = {24, 36, 152, 255, -24}
_NUMBER = re.compile(r"__mutmut_\d+$")

_CONFTEST = '''\
"""Written by `python -m mutation`: the grading profile, and the timing-based checks left out."""

import pytest

from hypothesis import settings

import kata_contract  # the grader's contract, laid beside this file

kata_contract.register_profile()
settings.load_profile(kata_contract.PROFILE)

TIMING = set({timing!r})


def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        category = item.get_closest_marker("category")
        timing = (category is not None and category.args[0] == "performance") or (
            item.originalname in TIMING if hasattr(item, "originalname") else False)
        (drop if timing else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
'''

_PYPROJECT = '''\
[tool.mutmut]
source_paths = ["{name}.py"]
also_copy = {also!r}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:schemathesis", "-q", "-x"]

[tool.pytest.ini_options]
markers = ["points(n): points", "category(name): category"]
timeout = 15  # seconds: a check takes at most a few; a mutant that hangs one is killed
'''


@dataclass
class Survivor:
    mutant: str
    function: str
    change: str
    reason: str = ""  # set when it is listed as equivalent


@dataclass
class Outcome:
    name: str
    total: int = 0
    killed: int = 0
    timeout: int = 0
    other: dict[str, int] = field(default_factory=dict)
    equivalent: list[Survivor] = field(default_factory=list)
    survived: list[Survivor] = field(default_factory=list)
    seconds: float = 0.0
    timing_checks: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        """Killed (or timed out) over the mutants that are not equivalent."""
        counted = self.total - len(self.equivalent)
        return (self.killed + self.timeout) / counted if counted else 1.0


def _config() -> dict[str, Any]:
    try:
        return tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{CONFIG.relative_to(catalog.ROOT)}: {exc}") from None


def run(exercise: catalog.Exercise, config: dict[str, Any], progress: bool) -> Outcome:
    """Lay out the scratch folder, run mutmut there, and classify every mutant."""
    settings = config.get(exercise.name, {})
    timing = list(settings.get("timing_checks", []))
    work = SCRATCH / exercise.name
    shutil.rmtree(work, ignore_errors=True)
    (work / "tests" / "hidden").mkdir(parents=True)
    shutil.copyfile(exercise.solution, work / f"{exercise.name}.py")
    shutil.copyfile(exercise.visible_tests, work / "tests" / exercise.visible_tests.name)
    for path in exercise.hidden_files:
        shutil.copyfile(path, work / "tests" / "hidden" / path.name)
    also = []
    for path in exercise.data_files:  # beside the module and beside the tests, as graded
        shutil.copyfile(path, work / path.name)
        shutil.copyfile(path, work / "tests" / path.name)
        also.append(path.name)
    shutil.copyfile(catalog.GRADER / "contract.py", work / "tests" / "kata_contract.py")
    (work / "tests" / "conftest.py").write_text(_CONFTEST.format(timing=sorted(timing)))
    (work / "pyproject.toml").write_text(_PYPROJECT.format(name=exercise.name, also=also))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS"))}
    env.update(PYTHONHASHSEED="0")
    mutmut = shutil.which("mutmut")
    if mutmut is None:
        raise UsageError("mutmut is not installed: run `uv run --group mutation python -m "
                         "mutation`")
    started = time.monotonic()
    done = subprocess.run([mutmut, "run", "--max-children", str(os.cpu_count() or 2)],
                          cwd=work, env=env, check=False,
                          stdout=None if progress else subprocess.DEVNULL,
                          stderr=subprocess.STDOUT if not progress else None)
    seconds = time.monotonic() - started
    meta = work / "mutants" / f"{exercise.name}.py.meta"
    if done.returncode != 0 or not meta.is_file():
        raise UsageError(f"mutmut failed on {exercise.name} (exit {done.returncode}); rerun "
                         f"it by hand in {work.relative_to(catalog.ROOT)} with `mutmut run`")
    codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    outcome = Outcome(exercise.name, total=len(codes), seconds=seconds, timing_checks=timing)
    listed = settings.get("equivalent", [])
    for mutant, code in sorted(codes.items(), key=lambda kv: _natural(kv[0])):
        if code in _KILLED:
            outcome.killed += 1
        elif code in _TIMEOUT:
            outcome.timeout += 1
        elif code in _SURVIVED:
            survivor = _survivor(work, mutant, mutmut, env)
            reason = _equivalent_reason(survivor, listed)
            if reason:
                survivor.reason = reason
                outcome.equivalent.append(survivor)
            else:
                outcome.survived.append(survivor)
        else:
            status = f"exit {code}"
            outcome.other[status] = outcome.other.get(status, 0) + 1
    return outcome


def _natural(key: str) -> tuple[str, int]:
    base, _, number = key.rpartition("_")
    return (base, int(number)) if number.isdigit() else (key, 0)


def _survivor(work: Path, mutant: str, mutmut: str, env: dict[str, str]) -> Survivor:
    shown = subprocess.run([mutmut, "show", mutant], cwd=work, env=env, capture_output=True,
                           text=True, check=False).stdout
    changed = [line for line in shown.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    function = _NUMBER.sub("", mutant.split(".", 1)[-1])
    return Survivor(mutant, function, "\n".join(changed))


def _equivalent_reason(survivor: Survivor, listed: list[dict[str, str]]) -> str:
    """The reason recorded for this survivor: same function, same changed lines (whitespace
    folded), whatever mutmut's number for it today."""
    mine = _fold(survivor.change)
    for entry in listed:
        if entry.get("function") == survivor.function and _fold(entry.get("change", "")) == mine:
            return entry.get("reason", "").strip() or "(no reason given)"
    return ""


def _fold(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.strip().splitlines())


# ---- the report ---------------------------------------------------------------------------------

def render(outcomes: list[Outcome], previous: str) -> str:
    """`mutation/report.md`, with this run's exercises replaced and the others kept."""
    sections = _sections(previous)
    for outcome in outcomes:
        sections[outcome.name] = _section(outcome)
    rows = [_row_of(text) for text in sections.values()]
    lines = [
        "# Mutation score",
        "",
        "Written by `uv run --group mutation python -m mutation` (mutmut 3 over each reference,",
        "against its visible and hidden checks, leaving out the timing-based ones). A survivor is",
        "either killed by a sharper check or listed in `mutation/equivalent.toml` with its reason.",
        "",
        "| exercise | mutants | killed | timed out | equivalent | survived | score | seconds |",
        "|---|---|---|---|---|---|---|---|",
        *sorted(r for r in rows if r),
        "",
    ]
    for name in sorted(sections):
        lines.append(sections[name].rstrip())
        lines.append("")
    return "\n".join(lines)


_ROW = re.compile(r"^<!-- row: (.*) -->$", re.MULTILINE)


def _row_of(section: str) -> str:
    match = _ROW.search(section)
    return match.group(1) if match else ""


def _sections(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for chunk in re.split(r"^(?=## )", text, flags=re.MULTILINE):
        if chunk.startswith("## "):
            found[chunk[3:].split()[0].strip("`")] = chunk
    return found


def _section(o: Outcome) -> str:
    row = (f"| {o.name} | {o.total} | {o.killed} | {o.timeout} | {len(o.equivalent)} | "
           f"{len(o.survived)} | {o.score:.1%} | {o.seconds:.0f} |")
    lines = [f"## `{o.name}`", "", f"<!-- row: {row} -->", ""]
    if o.timing_checks:
        lines.append(f"Left out as timing-based: {', '.join(f'`{c}`' for c in o.timing_checks)}"
                     " (and every performance check).")
        lines.append("")
    if o.other:
        lines.append("Other outcomes: " + ", ".join(f"{k}: {v}" for k, v in o.other.items()))
        lines.append("")
    for title, group in (("Survivors", o.survived), ("Equivalent", o.equivalent)):
        if not group:
            continue
        lines.append(f"### {title}")
        lines.append("")
        for s in group:
            lines.append(f"- `{s.mutant}`" + (f": {s.reason}" if s.reason else ""))
            lines.append("")
            lines.append("  ```diff")
            lines.extend(f"  {line}" for line in s.change.splitlines())
            lines.append("  ```")
        lines.append("")
    return "\n".join(lines)


def _survivor_stub(outcome: Outcome) -> str:
    """TOML a maintainer can paste into equivalent.toml for each survivor, reason to fill in."""
    parts = []
    for s in outcome.survived:
        parts.append(f"[[{outcome.name}.equivalent]]\nfunction = {json.dumps(s.function)}\n"
                     f"change = '''\n{s.change}\n'''\nreason = \"\"\n")
    return "\n".join(parts)


# ---- command line -------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="python -m mutation",
        description="Mutation-test each reference against its checks with mutmut; write "
                    "mutation/report.md.",
        epilog="examples:\n"
               "  uv run --group mutation python -m mutation                  every exercise\n"
               "  uv run --group mutation python -m mutation interval_union   one\n"
               "  uv run --group mutation python -m mutation billing --stubs  also print TOML\n"
               "                                           for each survivor, to list it as\n"
               "                                           equivalent once it is shown to be\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="exercises to run (default: all)")
    parser.add_argument("--stubs", action="store_true",
                        help="print an equivalent.toml entry for each survivor")
    parser.add_argument("--no-report", action="store_true",
                        help="do not rewrite mutation/report.md")
    parser.add_argument("--progress", action="store_true", help="show mutmut's own progress")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        names = args.names or [e.name for e in catalog.exercises()]
        exercises = []
        for name in names:
            try:
                exercises.append(catalog.find(name))
            except catalog.UnknownExercise as exc:
                raise UsageError(str(exc)) from None
        config = _config()
        outcomes = []
        for i, exercise in enumerate(exercises, 1):
            print(f"mutation: [{i}/{len(exercises)}] {exercise.name} ...", file=sys.stderr,
                  flush=True)
            outcome = run(exercise, config, args.progress)
            outcomes.append(outcome)
            print(f"mutation: {exercise.name}: {outcome.total} mutants, {outcome.killed} killed, "
                  f"{outcome.timeout} timed out, {len(outcome.equivalent)} equivalent, "
                  f"{len(outcome.survived)} survived: {outcome.score:.1%} in "
                  f"{outcome.seconds:.0f} s", file=sys.stderr, flush=True)
            if args.stubs and outcome.survived:
                print(_survivor_stub(outcome))
        if not args.no_report:
            previous = ""
            with contextlib.suppress(FileNotFoundError):
                previous = REPORT.read_text(encoding="utf-8")
            REPORT.write_text(render(outcomes, previous), encoding="utf-8")
        return 0 if all(o.score >= TARGET for o in outcomes) else 1
    except UsageError as exc:
        print(f"mutation: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mutation: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
