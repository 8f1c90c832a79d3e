"""Hidden checks for hang_finder: file names, malformed dumps, bad arguments."""

from __future__ import annotations

import copy
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hang_finder import DumpError, find_hang, load_dump, main, scan
from hang_finder_helpers import dumps_of, job, parse, refusal

pytestmark = pytest.mark.category("bad_input")
_GOOD = job(2, 1, 1).docs[1]


@pytest.mark.points(2)
def test_the_rank_comes_from_the_last_number_in_the_file_name(tmp_path: Path) -> None:
    """The rank is the last number in the file's name, an extension's included; an explicit rank
    wins."""
    text = json.dumps(_GOOD)
    for name, want in [("nccl_trace_rank_17", 17), ("host-12_rank_3.json", 3),
                       ("job7_trace_0.json", 0), ("trace_4096.json", 4096),
                       ("trace-17.json", 17), ("rank17.json", 17), ("dump.rank5", 5),
                       ("trace_17.json.1", 1)]:
        (tmp_path / name).write_text(text, encoding="utf-8")
        got = load_dump(tmp_path / name).rank
        assert got == want, f"load_dump({name!r}).rank is {got}, expected {want}"
        assert load_dump(str(tmp_path / name), rank=9).rank == 9, "an explicit rank must win"
    with (tmp_path / "nccl_trace_rank_17").open(encoding="utf-8") as f:
        assert load_dump(f).rank == 17, "an open file's name gives the rank"


def test_no_rank_in_name_or_argument_raises_value_error() -> None:
    """A stream without a name and no rank argument raises ValueError."""
    with pytest.raises(ValueError):
        load_dump(io.StringIO(json.dumps(_GOOD)))
    with pytest.raises(ValueError):
        load_dump(io.StringIO(json.dumps(_GOOD)), rank=-1)


def test_a_negative_rank_raises_value_error_naming_the_file(tmp_path: Path) -> None:
    """load_dump(path, rank=-1) raises ValueError, and the message names the file."""
    path = tmp_path / "nccl_trace_rank_3.json"
    path.write_text(json.dumps(_GOOD), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(path.name)):
        load_dump(path, rank=-1)


def _broken() -> dict[str, str]:
    text = json.dumps(_GOOD)
    no_status = {k: v for k, v in _GOOD.items() if k != "pg_status"}
    bad_state = json.loads(text)
    bad_state["entries"][0]["state"] = "finished"
    no_seq = json.loads(text)
    del no_seq["entries"][0]["collective_seq_id"]
    bad_pg = json.loads(text)
    bad_pg["entries"][0]["pg_id"] = 42
    return {"truncated": text[: len(text) // 2], "empty": "", "not JSON": "rank 3 crashed\n",
            "a list": "[1, 2]", "no pg_status": json.dumps(no_status),
            "unknown state": json.dumps(bad_state), "no collective_seq_id": json.dumps(no_seq),
            "unknown pg_id": json.dumps(bad_pg)}


@pytest.mark.points(3)
@pytest.mark.parametrize("case", sorted(_broken()))
def test_a_malformed_dump_raises_dump_error_naming_the_file(case: str, tmp_path: Path) -> None:
    """A truncated, non-JSON or incomplete dump raises DumpError (a ValueError) naming the file."""
    path = tmp_path / "nccl_trace_rank_3.json"
    path.write_text(_broken()[case], encoding="utf-8")
    assert issubclass(DumpError, ValueError), "DumpError must subclass ValueError"
    with pytest.raises(DumpError, match=r"nccl_trace_rank_3\.json"):
        load_dump(path)


def test_a_dump_nested_too_deep_raises_dump_error_and_scan_lists_it(tmp_path: Path) -> None:
    """JSON nested deeper than the parser can follow raises DumpError naming the file, not
    RecursionError; scan lists such a file as unreadable."""
    path = tmp_path / "trace_0.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    got = refusal(path)
    assert got == "DumpError naming the file", f"a dump of 100,000 nested lists: {got}"
    report = scan(tmp_path)
    assert [name for name, _ in report.unreadable] == ["trace_0.json"], (
        f"scan of a folder holding only that file: unreadable is {report.unreadable}")
    # The same inside a group's ranks, which PyTorch writes as JSON text within the JSON.
    path.write_text(_with(("pg_config", "0", "ranks"), "[" * 100_000 + "]" * 100_000),
                    encoding="utf-8")
    got = refusal(path)
    assert got == "DumpError naming the file", (
        f"a dump whose pg_config ranks is the text of 100,000 nested lists: {got}")
    report = scan(tmp_path)
    assert [name for name, _ in report.unreadable] == ["trace_0.json"], (
        f"scan of a folder holding only that file: unreadable is {report.unreadable}")


def test_a_number_past_the_digit_limit_raises_dump_error(tmp_path: Path) -> None:
    """An integer of 5,000 digits (past what Python's json takes in) raises DumpError naming the
    file, not a plain ValueError."""
    path = tmp_path / "trace_0.json"
    path.write_text(json.dumps(_GOOD).replace('"record_id": 0', '"record_id": 1' + "0" * 4999, 1),
                    encoding="utf-8")
    got = refusal(path)
    assert got == "DumpError naming the file", f"a record_id of 5,000 digits: {got}"


def test_a_dump_that_is_not_utf8_raises_dump_error(tmp_path: Path) -> None:
    """A dump that is valid JSON in Latin-1 but not UTF-8 (a desc of "caf\\xe9") raises DumpError
    naming the file: no byte is replaced or guessed."""
    path = tmp_path / "trace_1.json"
    text = json.dumps(_GOOD, ensure_ascii=False).replace('"default_pg"', '"caf\u00e9"', 1)
    path.write_bytes(text.encode("latin-1"))
    got = refusal(path)
    assert got == "DumpError naming the file", f"a desc written in Latin-1 (b'caf\\xe9'): {got}"


def test_a_text_stream_that_is_not_utf8_raises_dump_error(tmp_path: Path) -> None:
    """An open UTF-8 text file whose bytes are not UTF-8 raises DumpError naming the file, not
    UnicodeDecodeError."""
    path = tmp_path / "trace_1.json"
    text = json.dumps(_GOOD, ensure_ascii=False).replace('"default_pg"', '"caf\u00e9"', 1)
    path.write_bytes(text.encode("latin-1"))
    with path.open(encoding="utf-8") as f:
        try:
            load_dump(f)
        except DumpError as err:
            message = str(err)
        except Exception as err:  # any other exception is the failure reported
            pytest.fail(f"load_dump(a UTF-8 text stream of Latin-1 bytes) raised "
                        f"{type(err).__name__}: {err}, expected DumpError")
        else:
            pytest.fail("load_dump(a UTF-8 text stream of Latin-1 bytes) returned a dump, "
                        "expected DumpError")
    assert path.name in message, (
        f"load_dump(open file) raised DumpError({message!r}): the message should name the file")


def test_a_binary_file_raises_dump_error(tmp_path: Path) -> None:
    """A file that is not text (a pickle dump, say) raises DumpError, not UnicodeDecodeError."""
    path = tmp_path / "trace_1"
    path.write_bytes(b"\x80\x04\x95\xff\xfe pickled \x00")
    with pytest.raises(DumpError, match="trace_1"):
        load_dump(path)


@pytest.mark.points(2)
def test_scan_reports_an_unreadable_file_and_counts_its_rank_as_no_dump(tmp_path: Path) -> None:
    """scan lists an unreadable file as (name, reason), never raises, and its rank has no dump."""
    for r, doc in job(4, 2, 2).docs.items():
        (tmp_path / f"trace_{r}.json").write_text(json.dumps(doc)[: 40 if r == 2 else None],
                                                  encoding="utf-8")
    (tmp_path / "trace_3.json").write_bytes(b"\x80\x04\x95 pickle")
    report = scan(tmp_path)
    names = sorted(name for name, _ in report.unreadable)
    assert names == ["trace_2.json", "trace_3.json"], f"unreadable: {report.unreadable}"
    assert all(why for _, why in report.unreadable), f"each needs a reason: {report.unreadable}"
    assert report.no_dump == (2, 3), f"no_dump is {report.no_dump}, expected (2, 3)"
    assert report.kind == "missing_rank", f"kind is {report.kind!r}, expected missing_rank"


def test_duplicate_ranks_and_bad_world_sizes_raise_value_error() -> None:
    """Two dumps of one rank, world_size < 1, or a rank >= world_size raise ValueError."""
    docs = job(2, 1, 1).docs
    for dumps, world in [([*dumps_of(docs), *dumps_of(docs, [1])], 2),
                         (list(dumps_of(docs)), 0), (list(dumps_of(docs)), 1)]:
        with pytest.raises(ValueError):
            find_hang(dumps, world)


@pytest.mark.points(2)
def test_the_command_line_says_what_is_wrong_with_exit_status_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing folder or a bad option: one line on stderr, exit status 2, no traceback."""
    for argv, names in [([str(tmp_path / "nowhere")], "nowhere"),
                        ([str(tmp_path), "--format", "yaml"], "yaml"), ([], ""),
                        ([str(tmp_path), "--world-size", "0"], "0"),
                        ([str(tmp_path), "--world-size", "-3"], "-3")]:
        code = main(argv)
        err = capsys.readouterr().err.strip()
        assert code == 2, f"main({argv}) returned {code}, expected 2"
        assert err and "Traceback" not in err, f"main({argv}) printed {err!r} on stderr"
        assert names in err, f"main({argv}): the line on stderr should name {names!r}: {err!r}"


@pytest.mark.points(2)
def test_bad_usage_writes_exactly_one_line_on_stderr(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad option or no folder at all: exactly one line on stderr (argparse's own usage line
    and error are two) and exit status 2."""
    for argv in ([str(tmp_path), "--format", "yaml"], [], [str(tmp_path), "--bogus"]):
        code = main(argv)
        lines = capsys.readouterr().err.strip().splitlines()
        assert (code, len(lines)) == (2, 1), (
            f"main({argv}) returned {code} and wrote {len(lines)} lines on stderr: {lines}; "
            f"expected 2 and one line naming what is wrong (rule 13)")


def test_a_name_holding_a_newline_still_gets_one_line_on_stderr(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A folder (or an option) whose name holds a newline: still exactly one line on stderr, and
    exit status 2."""
    for argv in ([str(tmp_path / "no\nsuch")], [str(tmp_path), "--bogus\noption"]):
        code = main(argv)
        lines = capsys.readouterr().err.strip().splitlines()
        assert (code, len(lines)) == (2, 1), (
            f"main({argv}) returned {code} and wrote {len(lines)} lines on stderr: {lines}; "
            f"expected 2 and one line (rule 13), the newline shown escaped, say")


def test_an_open_files_rank_comes_from_its_base_name(tmp_path: Path) -> None:
    """For an open file, as for a path, the rank comes from the file's base name: a number in a
    folder's name gives none."""
    folder = tmp_path / "run3"
    folder.mkdir()
    (folder / "trace.json").write_text(json.dumps(_GOOD), encoding="utf-8")
    (folder / "trace_5.json").write_text(json.dumps(_GOOD), encoding="utf-8")
    with (folder / "trace_5.json").open(encoding="utf-8") as f:
        got = load_dump(f).rank
    assert got == 5, f"load_dump(open('run3/trace_5.json')).rank is {got}, expected 5"
    for source in ("path", "open file"):
        try:
            if source == "path":
                rank: object = load_dump(folder / "trace.json").rank
            else:
                with (folder / "trace.json").open(encoding="utf-8") as f:
                    rank = load_dump(f).rank
        except ValueError:
            continue
        pytest.fail(f"load_dump of run3/trace.json as a {source} gave rank {rank}: the base "
                    f"name has no number, so a ValueError was expected (the folder's 3 gives "
                    f"no rank)")


def _with(path: tuple[Any, ...], value: Any) -> str:
    doc = copy.deepcopy(_GOOD)
    node: Any = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(doc)


def test_an_integer_field_takes_only_a_json_integer(tmp_path: Path) -> None:
    """An integer field given as a whole float (12.0), a boolean, text or NaN raises DumpError
    naming the file: no integer is read from another JSON type."""
    path = tmp_path / "nccl_trace_rank_1.json"
    fields = [("pg_status", "0", "last_enqueued_collective"),
              ("pg_status", "0", "last_completed_collective"),
              ("entries", 0, "record_id"), ("entries", 0, "pg_id"),
              ("entries", 0, "collective_seq_id"), ("entries", 0, "p2p_seq_id")]
    for field in fields:
        for wrong in (1.0, 0.0, True, "1", math.nan, math.inf):
            if field[-1] == "pg_id" and wrong == "1":
                continue  # the statement accepts either reading of a text pg_id
            path.write_text(_with(field, wrong), encoding="utf-8")
            got = refusal(path)
            assert got == "DumpError naming the file", (
                f"{field} = {wrong!r} (not a JSON integer): {got}")


def test_a_group_with_a_repeated_rank_raises_dump_error(tmp_path: Path) -> None:
    """A group whose ranks repeat one ("[1, 0, 1]") raises DumpError naming the file; ranks out of
    order ("[1, 0]") are sorted."""
    path = tmp_path / "nccl_trace_rank_1.json"
    for ranks in ("[1, 0, 1]", [0, 1, 1]):
        path.write_text(_with(("pg_config", "0", "ranks"), ranks), encoding="utf-8")
        with pytest.raises(DumpError, match=r"nccl_trace_rank_1\.json"):
            load_dump(path)
    path.write_text(_with(("pg_config", "0", "ranks"), "[1, 0]"), encoding="utf-8")
    got = load_dump(path).groups["0"].ranks
    assert got == (0, 1), f"ranks '[1, 0]' read as {got}, expected (0, 1)"


def test_scan_raises_when_two_readable_files_claim_one_rank(tmp_path: Path) -> None:
    """Two readable files of one rank make scan raise ValueError: the folder, not a file, is
    wrong."""
    docs = job(2, 1, 1).docs
    for name, r in (("trace_0.json", 0), ("trace_1.json", 1), ("host-b_rank_1.json", 1)):
        (tmp_path / name).write_text(json.dumps(docs[r]), encoding="utf-8")
    try:
        got: object = scan(tmp_path)
    except ValueError:
        return
    pytest.fail(f"trace_1.json and host-b_rank_1.json both hold rank 1: scan returned {got}, "
                f"expected ValueError")


def test_a_broken_file_without_a_rank_raises_value_error_naming_it(tmp_path: Path) -> None:
    """A broken file whose name has no number, and no rank given: a ValueError naming the file
    (DumpError or the missing rank, whichever is found first)."""
    for name, text in (("trace.json", "{"), ("rankless.json", ""), ("trace.json", "[1, 2]")):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError, match=re.escape(name)):
            load_dump(path)


def test_an_explicit_rank_0_wins_over_the_file_name(tmp_path: Path) -> None:
    """load_dump(path, rank=0) is rank 0 whatever number the file's name holds: a given rank,
    0 included, always wins (rule 1)."""
    path = tmp_path / "nccl_trace_rank_5"
    path.write_text(json.dumps(_GOOD), encoding="utf-8")
    got = load_dump(path, rank=0).rank
    assert got == 0, f"load_dump('nccl_trace_rank_5', rank=0).rank is {got}, expected 0"
    with path.open(encoding="utf-8") as f:
        got = load_dump(f, rank=0).rank
    assert got == 0, f"load_dump(open('nccl_trace_rank_5'), rank=0).rank is {got}, expected 0"


def test_scan_of_a_file_instead_of_a_folder_raises_value_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """scan of a path that is a file, not a folder, raises ValueError (not an OSError); main
    gives exit status 2 and one line on stderr."""
    path = tmp_path / "notes.txt"
    path.write_text("x", encoding="utf-8")
    try:
        got: object = scan(path)
    except ValueError:
        pass
    except OSError as err:
        pytest.fail(f"scan('notes.txt'), a file, raised {type(err).__name__}: {err}; expected "
                    f"ValueError (the folder is not a directory)")
    else:
        pytest.fail(f"scan('notes.txt'), a file, returned {got}; expected ValueError")
    try:
        code = main([str(path)])
    except OSError as err:
        pytest.fail(f"main(['notes.txt']), a file, raised {type(err).__name__}: {err}; expected "
                    f"exit status 2 and one line on stderr")
    lines = capsys.readouterr().err.strip().splitlines()
    assert (code, len(lines)) == (2, 1), (
        f"main(['notes.txt']), a file: returned {code} and wrote {lines} on stderr; expected 2 "
        f"and one line saying it is not a directory")


def test_a_second_dump_of_a_rank_that_lists_no_group_raises_value_error() -> None:
    """Two dumps of one rank raise ValueError even when one of them lists no group at all."""
    docs = job(2, 1, 1).docs
    empty: dict[str, Any] = {"version": "2.9", "pg_config": {}, "pg_status": {}, "entries": []}
    for order in ([(1, docs[1]), (1, empty), (0, docs[0])],
                  [(1, empty), (0, docs[0]), (1, docs[1])], [(0, empty), (0, empty)]):
        try:
            got: object = find_hang((parse(doc, r) for r, doc in order), 2)
        except ValueError:
            continue
        ranks = [r for r, _ in order]
        pytest.fail(f"dumps of ranks {ranks}, one of them listing no group: find_hang returned "
                    f"{got}; expected ValueError (two dumps claim one rank)")


def test_a_group_with_no_members_is_read_and_ignored(tmp_path: Path) -> None:
    """A group whose ranks are "[]" is a list of distinct ranks >= 0: load_dump reads it, and
    find_hang and scan ignore it (it lists no rank)."""
    doc = copy.deepcopy(_GOOD)
    doc["pg_config"]["9"] = {"name": "9", "desc": "empty", "ranks": "[]"}
    try:
        dump = parse(doc, 1)
    except ValueError as err:
        pytest.fail(f"a dump whose pg_config also holds a group with ranks '[]' was refused: "
                    f"{err}")
    assert dump.groups["9"].ranks == (), f"ranks '[]' read as {dump.groups['9'].ranks}"
    docs = job(2, 1, 1).docs
    docs[1] = doc
    try:
        got = find_hang(dumps_of(docs), 2)
    except ValueError as err:
        pytest.fail(f"find_hang over a healthy job whose rank 1 lists an empty group raised "
                    f"{err!r}; expected no_hang")
    assert got.kind == "no_hang", f"a healthy job beside an empty group: {got}"
    for r, d in docs.items():
        (tmp_path / f"nccl_trace_rank_{r}.json").write_text(json.dumps(d), encoding="utf-8")
    try:
        report = scan(tmp_path)
    except ValueError as err:
        pytest.fail(f"scan of a healthy job whose rank 1 lists an empty group raised {err!r}")
    assert (report.kind, report.unreadable) == ("no_hang", ()), (
        f"scan of a healthy job whose rank 1 lists an empty group: {report}; expected no_hang "
        f"and nothing unreadable")
