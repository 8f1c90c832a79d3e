"""Hidden checks for hang_finder: every field of a dump, read exactly or refused naming the file."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hang_finder import Entry, GroupInfo, GroupStatus, find_hang, load_dump, scan
from hang_finder_helpers import Doc, document, entry, job, refusal

_GOOD = job(2, 1, 1).docs[1]
_ENTRY_FIELDS = {  # each Entry field, and a value of the wrong JSON type for it
    "record_id": "3", "pg_id": 0.0, "collective_seq_id": "1", "p2p_seq_id": "0",
    "profiling_name": 7, "input_sizes": "[[1024, 1024]]", "input_dtypes": "Float",
    "output_sizes": {"0": [1024]}, "output_dtypes": "Float", "state": 2, "is_p2p": 0,
}


def _edit(change: Callable[[Doc], None]) -> str:
    doc = copy.deepcopy(_GOOD)
    change(doc)
    return json.dumps(doc)


def _set(path: tuple[Any, ...], value: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        node: Any = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


def _drop(path: tuple[Any, ...]) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        node: Any = doc
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return change


def _cases() -> dict[str, str]:
    last = len(_GOOD["entries"]) - 1
    cases = {
        "no version": _edit(_drop(("version",))), "numeric version": _edit(_set(("version",), 2.9)),
        "no pg_config": _edit(_drop(("pg_config",))),
        "pg_config a list": _edit(_set(("pg_config",), [])),
        "pg_status a list": _edit(_set(("pg_status",), [])),
        "no entries": _edit(_drop(("entries",))),
        "entries an object": _edit(_set(("entries",), {})),
        "a group not an object": _edit(_set(("pg_config", "0"), "default_pg")),
        "a group null": _edit(_set(("pg_config", "0"), None)),
        "a group a number": _edit(_set(("pg_config", "0"), 0)),
        "a group a list": _edit(_set(("pg_config", "0"), ["0", "default_pg"])),
        "a group without name": _edit(_drop(("pg_config", "0", "name"))),
        "a group without desc": _edit(_drop(("pg_config", "0", "desc"))),
        "a numeric desc": _edit(_set(("pg_config", "0", "desc"), 0)),
        "a group without ranks": _edit(_drop(("pg_config", "0", "ranks"))),
        "ranks not JSON": _edit(_set(("pg_config", "0", "ranks"), "0, 1")),
        "ranks a number": _edit(_set(("pg_config", "0", "ranks"), 7)),
        "a negative rank": _edit(_set(("pg_config", "0", "ranks"), "[-1, 1]")),
        "a fractional rank": _edit(_set(("pg_config", "0", "ranks"), [0, 1.5])),
        "a boolean rank": _edit(_set(("pg_config", "0", "ranks"), "[0, true]")),
        "a status not an object": _edit(_set(("pg_status", "0"), 3)),
        "a status null": _edit(_set(("pg_status", "0"), None)),
        "a boolean status": _edit(_set(("pg_status", "0", "last_enqueued_collective"), True)),
        "a text status": _edit(_set(("pg_status", "0", "last_completed_collective"), "3")),
        "an entry not an object": _edit(_set(("entries", last), 5)),
        "an entry a list": _edit(_set(("entries", last), [1, 2])),
        "an entry null": _edit(_set(("entries", last), None)),
    }
    for key in ("last_enqueued_collective", "last_started_collective",
                "last_completed_collective"):
        cases[f"no {key}"] = _edit(_drop(("pg_status", "0", key)))
    for key, wrong in _ENTRY_FIELDS.items():
        cases[f"entry without {key}"] = _edit(_drop(("entries", last, key)))
        cases[f"entry with {key} {wrong!r}"] = _edit(_set(("entries", last, key), wrong))
        cases[f"entry with {key} null"] = _edit(_set(("entries", last, key), None))
    return cases


@pytest.mark.category("bad_input")
@pytest.mark.points(3)
def test_a_missing_or_mistyped_field_raises_dump_error_naming_the_file(tmp_path: Path) -> None:
    """A required field missing, null or of the wrong JSON type: DumpError naming the file."""
    path = tmp_path / "nccl_trace_rank_5.json"
    for case, text in _cases().items():
        path.write_text(text, encoding="utf-8")
        assert refusal(path) == "DumpError naming the file", f"{case}: {refusal(path)}"


def test_load_dump_reads_every_field() -> None:
    """load_dump keeps the version, each group (ranks sorted), each status and each entry."""
    doc = document({"0": ("default_pg", [0, 1]), "3": ("tp", [1, 0])},
                   {"0": (5, 4, 4), "3": (2, -1, 1)},
                   [entry(8, 3, 2, name="nccl:_allgather_base", sizes=[[2, 3], [4]],
                          dtype="BFloat16", state="scheduled", p2p_seq=6, desc="tp")])
    doc["pg_config"]["3"]["ranks"] = [1, 0]  # a plain list is accepted too
    dump = load_dump(io.StringIO(json.dumps(doc)), rank=1)
    assert (dump.rank, dump.version) == (1, "2.9"), f"rank, version: {dump.rank}, {dump.version}"
    want_groups = {"0": GroupInfo("0", "default_pg", (0, 1)), "3": GroupInfo("3", "tp", (0, 1))}
    assert dict(dump.groups) == want_groups, f"groups: {dump.groups}"
    want_status = {"0": GroupStatus(5, 4, 4), "3": GroupStatus(2, -1, 1)}
    assert dict(dump.status) == want_status, f"status: {dump.status}"
    want = Entry(8, "3", 2, 6, "nccl:_allgather_base", [[2, 3], [4]], ["BFloat16", "BFloat16"],
                 [[2, 3], [4]], ["BFloat16", "BFloat16"], "scheduled", False)
    assert dump.entries == (want,), f"entries: {dump.entries}"


@pytest.mark.category("bad_input")
def test_the_rank_comes_from_a_path_given_as_text(tmp_path: Path) -> None:
    """A path given as a str names the rank too; a name with no number raises ValueError."""
    (tmp_path / "host-3_rank_12.json").write_text(json.dumps(_GOOD), encoding="utf-8")
    got = load_dump(str(tmp_path / "host-3_rank_12.json")).rank
    assert got == 12, f"load_dump(str path of host-3_rank_12.json).rank is {got}, expected 12"
    (tmp_path / "trace.json").write_text(json.dumps(_GOOD), encoding="utf-8")
    with pytest.raises(ValueError):
        load_dump(tmp_path / "trace.json")


@pytest.mark.category("bad_input")
def test_scan_checks_world_size(tmp_path: Path) -> None:
    """scan raises ValueError for world_size < 1 or a file whose rank is >= world_size."""
    with pytest.raises(ValueError):
        scan(tmp_path, world_size=0)  # even with no file to read
    for r, doc in job(3, 1, 1).docs.items():
        (tmp_path / f"trace_{r}.json").write_text(json.dumps(doc), encoding="utf-8")
    for world in (0, 2):
        with pytest.raises(ValueError):
            scan(tmp_path, world_size=world)
    with pytest.raises(ValueError):
        find_hang([], 0)


@pytest.mark.category("bad_input")
def test_a_float_or_boolean_pg_id_is_refused_even_when_pg_config_spells_it(
        tmp_path: Path) -> None:
    """An entry's pg_id is a JSON integer: 1.0 or true is refused (DumpError naming the file)
    even when pg_config has a group keyed "1.0" or "True" that its text would match."""
    path = tmp_path / "nccl_trace_rank_1.json"
    for key, wrong in (("1.0", 1.0), ("True", True)):
        doc = document({key: ("tp", [0, 1])}, {key: (1, -1, 0)},
                       [entry(0, 1, 1, state="scheduled", desc="tp")])
        doc["entries"][0]["pg_id"] = wrong
        path.write_text(json.dumps(doc), encoding="utf-8")
        assert refusal(path) == "DumpError naming the file", (
            f"an entry whose pg_id is {json.dumps(wrong)}, pg_config keyed {key!r}: "
            f"{refusal(path)} (JSON types are exact: pg_id takes only a JSON integer)")
