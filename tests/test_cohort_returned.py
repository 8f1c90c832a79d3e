"""Returned take-homes read safely, each exercise's file found by the shared rule, and shards
that split a cohort exactly."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grading import inputs, returned
from grading.cohort import shard_of
from grading.inputs import returned_file
from grading.returned import Candidate, UnsafeZip, unzip
from tests import cohort_helpers as h


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("member", ["../evil.py", "/etc/evil.py", "a/../../evil.py",
                                    "C:/evil.py", "a\\..\\..\\evil.py"])
def test_a_member_outside_the_folder_refuses_the_zip(tmp_path: Path, member: str) -> None:
    archive = _zip(tmp_path / "x.zip", {"ok.py": b"x = 1\n", member: b"x = 2\n"})
    with pytest.raises(UnsafeZip, match="outside the candidate's folder"):
        unzip(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not list(tmp_path.rglob("evil.py"))


def test_a_link_in_a_zip_refuses_it(tmp_path: Path) -> None:
    archive = tmp_path / "x.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        link = zipfile.ZipInfo("interval_union.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zipped.writestr(link, "/etc/passwd")
    with pytest.raises(UnsafeZip, match="is a link"):
        unzip(archive, tmp_path / "out")


def test_a_zip_unpacking_past_the_limit_is_refused_as_the_bytes_come_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(returned, "MAX_BYTES", 1000)
    archive = _zip(tmp_path / "x.zip", {"a.py": b"0" * 600, "b.py": b"0" * 600})
    with pytest.raises(UnsafeZip, match="unpacks to more than"):
        unzip(archive, tmp_path / "out")


def test_a_zip_of_too_many_files_is_refused(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(returned, "MAX_MEMBERS", 3)
    archive = _zip(tmp_path / "x.zip", {f"f{i}.py": b"" for i in range(4)})
    with pytest.raises(UnsafeZip, match="4 files, more than the 3"):
        unzip(archive, tmp_path / "out")


def test_a_file_that_is_not_a_zip_is_refused_as_unreadable(tmp_path: Path) -> None:
    (tmp_path / "x.zip").write_bytes(b"def f(): pass\n")
    with pytest.raises(UnsafeZip, match="not a readable zip"):
        unzip(tmp_path / "x.zip", tmp_path / "out")


def test_a_bad_zip_is_a_candidate_with_the_reason_not_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "zed.zip").write_bytes(b"garbage")
    h.folder(tmp_path / "in", "amy", {"interval_union.py": "x = 1\n"})
    found = returned.candidates(tmp_path / "in", tmp_path / "tmp")
    assert [(c.name, c.folder is None) for c in found] == [("amy", False), ("zed", True)]
    assert "not a readable zip" in str(found[1].file_for("interval_union"))


@pytest.mark.parametrize(("files", "chosen"), [
    ({"token_bucket.py": "", "sub/token_bucket.py": "", "x.py": ""}, "token_bucket.py"),
    ({"sub/token_bucket.py": "", "x.py": ""}, "sub/token_bucket.py"),
    ({"answer.py": "", "notes.md": ""}, "answer.py"),
])
def test_the_returned_file_rule_prefers_the_exact_name(tmp_path: Path, files: dict[str, str],
                                                       chosen: str) -> None:
    h.folder(tmp_path, "c", files)
    assert returned_file(tmp_path / "c", "token_bucket") == tmp_path / "c" / chosen


def test_the_returned_file_rule_names_what_it_found_when_nothing_fits(tmp_path: Path) -> None:
    h.folder(tmp_path, "c", {"a.py": "", "b.py": "", "sub/token_bucket.py": "",
                             "other/token_bucket.py": ""})
    said = returned_file(tmp_path / "c", "token_bucket")
    assert isinstance(said, str)
    assert "expected token_bucket.py" in said and "a.py, b.py, other/token_bucket.py" in said


@given(st.sets(st.text("abcdefgh", min_size=1, max_size=4), max_size=30),
       st.integers(1, 7))
def test_shards_are_disjoint_cover_the_cohort_and_differ_by_at_most_one(
        names: set[str], count: int) -> None:
    found = [Candidate(n, n, None, "x") for n in names]
    shards = [shard_of(found, k, count) for k in range(1, count + 1)]
    flat = [c.name for shard in shards for c in shard]
    assert sorted(flat) == sorted(names)
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1


def test_run_autograder_asks_the_same_rule_on_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h.folder(tmp_path, "s", {"sub/token_bucket.py": "", "x.py": ""})
    assert inputs.main(["token_bucket", str(tmp_path / "s")]) == 0
    assert capsys.readouterr().out == "sub/token_bucket.py\n"
    h.folder(tmp_path, "t", {"a.py": "", "b.py": ""})
    assert inputs.main(["token_bucket", str(tmp_path / "t")]) == 1
    said = capsys.readouterr()
    assert said.out == "" and "found: a.py, b.py" in said.err


def test_run_autograder_calls_the_shared_rule_not_a_copy_of_it() -> None:
    script = (Path(inputs.__file__).parent / "gradescope" / "run_autograder").read_text()
    assert "python -m grading.inputs @NAME@" in script
    assert "find . -type f" not in script
