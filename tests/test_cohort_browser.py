"""The cohort report opened in a real browser: headless Chromium through Playwright.

Run with the `browser` group: `uv run --group browser pytest tests/test_cohort_browser.py`.
Playwright's own browser download is not used: it drives the system's Chromium (Debian's
`chromium` package, `CHROMIUM` names another). Without Playwright or Chromium, these skip
with the reason.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grading import catalog, cohort_files
from grading.contract import FinalStatus, Visibility
from grading.results import Check, Grade, Result
from grading.returned import Candidate
from tests import cohort_helpers as h
from tests.helpers import run_grader

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright is in the `browser` group: "
                                  "uv run --group browser pytest tests/test_cohort_browser.py")
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).is_file():
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CHROMIUM)",
                allow_module_level=True)

EXERCISE = catalog.Exercise("interval_union")
PEOPLE = ("ann", "ben", "o'<i>neil</i>", "zoe")
# Each check's status for each candidate (zoe handed in no file for it).
STATUSES: dict[str, tuple[FinalStatus | None, ...]] = {
    "visible::test_one": ("passed", "passed", "failed", None),
    "hidden::test_two": ("passed", "failed", "timeout", None),
    "hidden::test_three": ("passed", "failed", "crashed", None),
}
BUG = {"bug": "double_count", "summary": "a GPU's overlapping intervals count twice",
       "rule": "2"}


def _synthetic() -> dict[str, Any]:
    """A cohort's data made by hand: every status, a known bug two of three fell into."""
    where: dict[str, Visibility] = {"visible": "visible", "hidden": "hidden"}
    checks = [Check(cid, f"check {cid.split('_')[-1]}", where[cid.split("::")[0]], "correctness",
                    1.0, 10.0) for cid in STATUSES]
    found = [Candidate(name, name, Path("/nowhere")) for name in PEOPLE]
    grades = {}
    for i, name in enumerate(PEOPLE[:3]):
        results = [Result(c, status=STATUSES[c.id][i] or "failed", message=f"why {c.id}")
                   for c in checks]
        grade = Grade(EXERCISE.name, f"{name}/interval_union.py", results, 1.0)
        grade.diagnoses = [BUG] if name in ("ben", "o'<i>neil</i>") else []
        grades[name, EXERCISE.name] = grade
    files: dict[tuple[str, str], Path | str] = {
        (n, EXERCISE.name): Path("/nowhere") for n in PEOPLE[:3]}
    files["zoe", EXERCISE.name] = "Nothing was graded: expected interval_union.py"
    plan = cohort_files.Plan(found, [EXERCISE], files, {EXERCISE.name: checks}, {})
    data = cohort_files.assemble(plan, grades)
    data["copies"] = {"threshold": 0.85, "pairs": [
        {"exercise": EXERCISE.name, "a": "ann", "b": "reference", "similarity": 0.97,
         "fragments": ["for start, end in <sorted(intervals)>:"]}]}
    return data


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


class _Opened:
    def __init__(self, browser: Any, path: Path) -> None:
        self.errors: list[str] = []
        self.fetched: list[str] = []
        self.page = browser.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error"
                     else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.fetched.append(r.url))
        self.page.goto(path.as_uri())


@pytest.fixture(scope="module")
def opened(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> _Opened:
    out = tmp_path_factory.mktemp("report")
    cohort_files.write(_synthetic(), out)
    return _Opened(browser, out / "cohort.html")


def test_the_heatmap_has_a_cell_per_check_and_candidate_with_its_status(
        opened: _Opened) -> None:
    section = opened.page.locator("section.exercise[data-exercise='interval_union']")
    assert section.locator("td.cell").count() == len(STATUSES) * len(PEOPLE)
    for check, statuses in STATUSES.items():
        row = section.locator(f"tr[data-check='{check}'] td.cell")
        shown = [row.nth(i).get_attribute("data-status") for i in range(len(PEOPLE))]
        assert shown == [s or "missing" for s in statuses], (check, shown)


def test_each_check_shows_its_pass_rate_over_the_graded_candidates(opened: _Opened) -> None:
    rates = opened.page.locator("section.exercise tr[data-check] td.pass-rate")
    assert rates.all_inner_texts() == ["2/3 (67 %)", "1/3 (33 %)", "1/3 (33 %)"]


def test_the_known_bug_says_how_many_candidates_fell_into_it(opened: _Opened) -> None:
    bug = opened.page.locator("li[data-bug='double_count']")
    assert bug.inner_text().startswith("2 of 3 fell into a GPU's overlapping intervals")


def test_the_score_distribution_counts_every_graded_candidate(opened: _Opened) -> None:
    counts = opened.page.locator("table.distribution td.rate").all_inner_texts()
    assert sum(int(c) for c in counts) == 3 and counts[-1] == "1" and counts[0] == "1"


def test_a_flagged_pair_shows_its_shared_fragment_as_text(opened: _Opened) -> None:
    copy = opened.page.locator("section.exercise details.copy[data-a='ann']")
    assert "0.97" in copy.locator("summary").inner_text()
    copy.locator("summary").click()  # folded until asked for
    assert copy.locator("pre").is_visible()
    assert copy.locator("pre").inner_text() == "for start, end in <sorted(intervals)>:"


def test_names_from_candidates_are_text_never_markup(opened: _Opened) -> None:
    row = opened.page.locator("#scores tr[data-candidate] td a").all_inner_texts()
    assert "o'<i>neil</i>" in row
    assert opened.page.locator("#scores i").count() == 0


def test_a_candidate_without_a_file_says_why(opened: _Opened) -> None:
    zoe = opened.page.locator("section.person[data-candidate='zoe']")
    assert "expected interval_union.py" in zoe.inner_text()


def test_the_report_logs_no_error_and_fetches_nothing(opened: _Opened) -> None:
    assert opened.errors == []
    assert all(url.startswith("file://") for url in opened.fetched), opened.fetched


@pytest.mark.slow
def test_a_real_cohort_report_opens_with_a_cell_per_check_and_candidate(
        browser: Any, tmp_path: Path) -> None:
    refs = {"interval_union": h.reference("interval_union")}
    h.folder(tmp_path / "returned", "amy", h.bundle_layout(refs))
    h.zipped(tmp_path / "returned", "bo", h.flat_layout(
        {"interval_union": h.mutant("interval_union", "double_count")}))
    done = run_grader(["cohort", str(tmp_path / "returned"), "--output", str(tmp_path / "out"),
                       "--no-mypy", "--check", "test_example_*"], timeout=600)
    assert done.code == 0, done.stderr
    page = _Opened(browser, tmp_path / "out" / "cohort.html")
    cells = page.page.locator("td.cell")
    assert cells.count() == 3 * 2
    assert page.page.locator("td.cell[data-candidate='bo'][data-status='failed']").count() == 1
    assert page.errors == []
