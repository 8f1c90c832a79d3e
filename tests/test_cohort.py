"""`grader.py cohort` and `grader.py merge`, driven through the real command line on a small
cohort (folders and zips mixed, two exercises, two checks each to stay fast)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from grading import similarity
from tests import cohort_helpers as h
from tests.helpers import run_grader

EXERCISES = ("interval_union", "versioned_kv")
# One check each that the classic wrong answer below fails, and one it passes.
CHECKS = ("test_a_gpu_counts_once_however_its_intervals_overlap",
          "test_example_1_merge_joins_touching_and_drops_empty_intervals",
          "test_deleted_key_raises_key_error", "test_a_kept_tombstone_stays_in_history")
PEOPLE = ["alice", "bob", "carol", "dave", "erin", "notes.txt"]


def _returned(root: Path) -> Path:
    refs = {name: h.reference(name) for name in EXERCISES}
    h.folder(root, "alice", h.bundle_layout(refs))  # as the bundle asks
    h.zipped(root, "bob", h.flat_layout({  # flatter, zipped: two classic wrong answers
        "interval_union": h.mutant("interval_union", "double_count"),
        "versioned_kv": h.mutant("versioned_kv", "tombstone_ignored")}))
    h.folder(root, "carol", {  # a disguised copy, under another name, of one exercise only
        "interval_union/answer.py": h.disguise(refs["interval_union"], "interval_union")})
    h.zipped(root, "dave", {"../evil.py": "print('escaped')\n"})  # a path traversal
    h.zipped(root, "erin", {f"erin/{name}/{name}.py": text  # a zip of the candidate's folder
                            for name, text in refs.items()})
    (root / "notes.txt").write_text("not a take-home\n", encoding="utf-8")
    return root


def _cohort(returned: Path, output: Path, *more: str) -> dict[str, Any]:
    done = run_grader(["cohort", str(returned), "--output", str(output), "--no-mypy",
                       *(arg for c in CHECKS for arg in ("--check", c)), *more], timeout=600)
    assert done.code == 0, done.stderr
    data: dict[str, Any] = json.loads((output / "cohort.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def returned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _returned(tmp_path_factory.mktemp("cohort") / "returned")


@pytest.fixture(scope="module")
def report(returned: Path) -> Path:
    out = returned.parent / "report"
    _cohort(returned, out, "--jobs", "2")
    return out


def _data(report: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((report / "cohort.json").read_text(encoding="utf-8"))
    return data


def _rows(report: Path) -> dict[str, dict[str, str]]:
    with open(report / "cohort.csv", encoding="utf-8", newline="") as f:
        return {row["candidate"]: row for row in csv.DictReader(f)}


@pytest.mark.slow
def test_a_cohort_writes_one_csv_row_per_candidate_and_every_file(report: Path) -> None:
    rows = _rows(report)
    assert list(rows) == PEOPLE
    assert {p.name for p in report.iterdir()} == {"cohort.csv", "cohort.json",
                                                  "details.jsonl", "cohort.html"}
    alice = rows["alice"]
    assert alice["score"] == alice["max_score"] and alice["percent"] == "100.0", alice
    assert alice["interval_union_score"] == "4" and alice["versioned_kv_score"] == "3", alice


@pytest.mark.slow
def test_a_zipped_wrong_answer_loses_the_points_of_the_check_it_fails(report: Path) -> None:
    bob = _rows(report)["bob"]
    assert (bob["interval_union_score"], bob["versioned_kv_score"]) == ("1", "1"), bob
    assert bob["not_graded"] == "", bob


@pytest.mark.slow
def test_a_zip_of_the_candidates_folder_is_graded_like_a_folder(report: Path) -> None:
    assert _rows(report)["erin"]["score"] == _rows(report)["alice"]["score"]


@pytest.mark.slow
def test_a_file_under_another_name_in_the_exercise_folder_is_graded(report: Path) -> None:
    carol = _data(report)["candidates"][PEOPLE.index("carol")]["exercises"]
    assert carol["interval_union"]["graded"] and carol["interval_union"]["score"] == 4, carol
    assert carol["interval_union"]["file"] == "carol/interval_union/answer.py", carol
    assert not carol["versioned_kv"]["graded"] and carol["versioned_kv"]["reason"], carol


@pytest.mark.slow
def test_a_zip_reaching_outside_its_folder_is_refused_naming_the_member(
        report: Path, returned: Path) -> None:
    dave = _rows(report)["dave"]
    assert "'../evil.py'" in dave["not_graded"], dave
    assert dave["score"] == "0"
    assert not list(returned.parent.rglob("evil.py"))


@pytest.mark.slow
def test_a_stray_file_is_a_row_saying_it_was_not_read(report: Path) -> None:
    assert "not a folder or a .zip" in _rows(report)["notes.txt"]["not_graded"]


@pytest.mark.slow
def test_a_disguised_copy_of_the_reference_is_flagged_with_what_it_shares(
        report: Path) -> None:
    pairs = _data(report)["copies"]["pairs"]
    carol = [p for p in pairs if {p["a"], p["b"]} == {"carol", similarity.REFERENCE}]
    assert carol and carol[0]["similarity"] >= similarity.THRESHOLD, pairs
    assert carol[0]["fragments"] and all(f.strip() for f in carol[0]["fragments"])
    assert "reference" in _rows(report)["carol"]["similar"]


@pytest.mark.slow
def test_details_hold_each_grading_in_the_json_format(report: Path) -> None:
    lines = (report / "details.jsonl").read_text(encoding="utf-8").splitlines()
    details = [json.loads(line) for line in lines]
    graded = {(d["candidate"], d["exercise"]) for d in details}
    assert ("bob", "interval_union") in graded and ("dave", "interval_union") not in graded
    bob = next(d for d in details if (d["candidate"], d["exercise"]) == ("bob", "versioned_kv"))
    statuses = {c["id"].split("::")[1]: c["status"] for c in bob["checks"]}
    assert statuses == {"test_deleted_key_raises_key_error": "failed",
                        "test_a_kept_tombstone_stays_in_history": "passed"}, statuses
    assert bob["submission"] == "bob.zip/versioned_kv.py"


def _steady(value: Any) -> Any:
    """`value` without what differs between two runs of the same grading: durations."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k != "duration"}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_merged_shards_equal_one_unsharded_run(report: Path, returned: Path) -> None:
    shards = [returned.parent / f"shard-{k}" for k in (1, 2, 3)]
    parts = [_cohort(returned, shard, "--shard", f"{k}/3")
             for k, shard in enumerate(shards, start=1)]
    assert sorted(r["candidate"] for p in parts for r in p["candidates"]) == PEOPLE
    merged = returned.parent / "merged"
    done = run_grader(["merge", *(str(s / "cohort.json") for s in reversed(shards)),
                       "--output", str(merged)], timeout=300)
    assert done.code == 0, done.stderr
    assert _steady(_data(merged)) == _steady(_data(report))
    assert (merged / "cohort.csv").read_text() == (report / "cohort.csv").read_text()


@pytest.mark.slow
def test_merge_refuses_an_incomplete_set_of_shards(report: Path, returned: Path) -> None:
    shard = returned.parent / "shard-alone"
    _cohort(returned, shard, "--shard", "1/2", "--exercises", "interval_union")
    done = run_grader(["merge", str(shard / "cohort.json"), "--output",
                       str(returned.parent / "nope")])
    assert done.code == 2 and "shard 2/2 missing" in done.stderr, done.stderr
    assert not (returned.parent / "nope").exists()


@pytest.mark.parametrize(("args", "said"), [
    (["cohort", "/no/such/returned", "--output", "out"], "no such folder: /no/such/returned"),
    (["cohort", ".", "--output", "out", "--shard", "3/2"], "'3/2'"),
    (["cohort", ".", "--output", "out", "--shard", "x"], "'x'"),
    (["cohort", ".", "--output", "out", "--exercises", "nope"], "nope"),
    (["merge", "pyproject.toml", "--output", "out"], "pyproject.toml is not a cohort.json"),
    (["merge", "no-such.json", "--output", "out"], "cannot read no-such.json"),
])
def test_bad_usage_is_one_line_naming_the_bad_value(args: list[str], said: str) -> None:
    done = run_grader(args, timeout=120)
    assert done.code == 2, done.stderr
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_folder_naming_no_exercise_asks_for_exercises(tmp_path: Path) -> None:
    h.folder(tmp_path / "returned", "alice", {"notes.md": "hello\n"})
    done = run_grader(["cohort", str(tmp_path / "returned"), "--output", str(tmp_path / "o")])
    assert done.code == 2 and "--exercises" in done.stderr, done.stderr


def test_an_empty_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "returned").mkdir()
    done = run_grader(["cohort", str(tmp_path / "returned"), "--output", str(tmp_path / "o")])
    assert done.code == 2 and "a folder or a .zip per candidate" in done.stderr, done.stderr


def test_cohort_help_shows_examples() -> None:
    done = run_grader(["cohort", "--help"])
    assert done.code == 0 and "--shard K/N" in done.stdout and "examples:" in done.stdout
