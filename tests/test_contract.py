"""The parent/child contract: every event the plugin can write is read back as the grader
means it, what the contract does not allow is the grader's error (never a failed check), and
the grader's parent process needs nothing but the standard library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grading import child, contract
from grading.channel import ChannelReader, ChildReport, ProtocolError
from grading.limits import Limits
from grading.results import Check, Result
from tests.helpers import ROOT, run_grader

_CHECK = Check("hidden::test_x", "The x rule.", "hidden", "correctness", 2.0, 10.0)

# One record of each event, as the plugin writes it (its `token` added by the writer).
_RECORDS: list[contract.Record] = [
    {"ev": "check", "id": _CHECK.id, "name": _CHECK.name, "visibility": "hidden",
     "category": "correctness", "points": 2.0, "timeout": 10.0, "file": "hidden/test_x.py"},
    {"ev": "collect_error", "message": "E   SyntaxError: invalid syntax\nmore"},
    {"ev": "collected", "ids": [_CHECK.id]},
    {"ev": "start", "id": _CHECK.id},
    {"ev": "figure", "id": _CHECK.id, "label": "growth", "figure": 3.5, "limit": 64.0},
    {"ev": "result", "id": _CHECK.id, "status": "failed", "message": "assert 1 == 2",
     "falsifying": "Falsifying example: x=1", "duration": 0.25},
    {"ev": "done"},
]


def test_every_event_is_covered_by_the_records_and_read_by_the_report() -> None:
    assert {r["ev"] for r in _RECORDS} == set(contract.EVENTS)
    for ev in contract.EVENTS:
        assert callable(getattr(ChildReport, f"on_{ev}", None)), f"nothing reads {ev!r}"


def test_what_the_plugin_writes_is_read_back_by_the_child_report(tmp_path: Path) -> None:
    """The plugin's own writer, in a process of its own, through the channel to ChildReport."""
    lib, _ = child.library(Limits())
    channel = tmp_path / "channel.jsonl"
    channel.touch()
    script = textwrap.dedent(f"""
        import json, sys
        import {contract.PLUGIN_MODULE} as plugin
        for record in json.loads(sys.argv[1]):
            plugin._emit(record)
    """)
    config = {"token": "t0k3n", "channel": str(channel)}
    env = {**os.environ, "PYTHONPATH": str(lib)}
    done = subprocess.run([sys.executable, "-c", script, json.dumps(_RECORDS)], env=env,
                          input=json.dumps(config).encode(), capture_output=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()
    forged = {"ev": "result", "id": _CHECK.id, "status": "passed", "token": "forged"}
    with open(channel, "a", encoding="utf-8") as f:  # what another writer might leave
        f.write(json.dumps(forged) + "\nnot json\n")
    with open(channel, "rb") as f:
        reader = ChannelReader(os.dup(f.fileno()), "t0k3n")
        records = reader.records()
        reader.close()
    assert [r["ev"] for r in records] == [r["ev"] for r in _RECORDS], records
    result = Result(_CHECK)
    report = ChildReport({_CHECK.id: result})
    for record in records:
        report.apply(record)
    assert report.checks[0]["points"] == 2.0
    assert report.collect_errors == ["SyntaxError: invalid syntax"]
    assert report.collected == [_CHECK.id]
    assert report.done and report.current is None
    assert (result.status, result.message, result.falsifying, result.duration) == \
        ("failed", "assert 1 == 2", "Falsifying example: x=1", 0.25)
    assert result.figures == [{"label": "growth", "figure": 3.5, "limit": 64.0}]


@pytest.mark.parametrize("record", [
    {"ev": "result", "id": _CHECK.id, "status": "skipped", "message": ""},
    {"ev": "result", "id": _CHECK.id, "message": ""},
    {"ev": "progress", "id": _CHECK.id},
    {"ev": "check", "id": _CHECK.id, "name": "n", "visibility": "secret", "category": "correctness",
     "points": 1.0, "timeout": 10.0, "file": "test_x.py"},
])
def test_what_the_contract_does_not_allow_is_a_protocol_error(record: dict[str, object]) -> None:
    result = Result(_CHECK)
    with pytest.raises(ProtocolError):
        ChildReport({_CHECK.id: result}).apply(record)
    assert result.status == "pending", "a broken record must not decide a check"


def test_the_plugin_loads_the_contract_by_the_name_the_contract_gives_itself() -> None:
    """The one contract name the plugin must know before it has the contract, checked here."""
    plugin = (ROOT / "grading" / "plugin.py").read_text(encoding="utf-8")
    assert f'_beside("{contract.MODULE}")' in plugin
    assert contract.lib_module("plugin") == contract.PLUGIN_MODULE
    assert contract.lib_module("contract") == contract.MODULE


def test_a_protocol_error_marks_the_grade_not_graded(tmp_path: Path) -> None:
    """A record the contract does not allow (here forged by the submission, which reads the run's
    token from the plugin in its own process) makes the grade "not graded", never a traceback."""
    forger = tmp_path / "token_bucket.py"
    forger.write_text((ROOT / "solutions" / "token_bucket.py").read_text(encoding="utf-8")
                      + "\nimport sys\n"
                      f"_plugin = sys.modules.get({contract.PLUGIN_MODULE!r})\n"
                      "if _plugin is not None:\n"
                      "    _plugin._emit({'ev': 'result', 'id': 'x', 'status': 'bogus'})\n",
                      encoding="utf-8")
    done = run_grader(["token_bucket", "--no-mypy", "--format", "json", "--submission",
                       str(forger), "--check", "test_a_new_bucket_is_full"])
    assert done.code == 1, done.stderr
    (grade,) = done.json_lines()
    assert str(grade["reason"]).startswith("grader error, not graded:"), grade["reason"]
    assert "'bogus'" in str(grade["reason"]), grade["reason"]


def test_the_graders_parent_process_needs_only_the_standard_library() -> None:
    """Every grader module but the plugin imports with pytest, hypothesis and psutil blocked,
    so `python grader.py` can say what is missing instead of failing with an import error."""
    script = textwrap.dedent("""
        import importlib, importlib.abc, pathlib, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"pytest", "_pytest", "hypothesis", "psutil"}:
                    raise ImportError(f"imported {name}")
        sys.meta_path.insert(0, Block())
        for path in sorted(pathlib.Path("grading").glob("*.py")):
            if path.stem not in ("plugin", "guard"):  # the child's side, with pytest
                importlib.import_module(f"grading.{path.stem}")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
