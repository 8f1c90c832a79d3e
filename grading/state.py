"""Last scores for this checkout, kept in `.grader/state.json` (ignored by git).

A whole grading of a candidate's file records its score and the file, wherever it lives (the
stub in `exercises/`, or any `--submission`); a partial run (`--check`, `--visible`), the
reference and the mutants do not.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from grading import catalog, files

if TYPE_CHECKING:
    from grading.results import Grade

# GRADER_STATE names another file (the test suite points it at a temporary one, so that grading
# its fixtures never changes what `list` shows you).
ENV = "GRADER_STATE"


def _path() -> Path:
    return Path(os.environ.get(ENV) or catalog.ROOT / ".grader" / "state.json")


def _load() -> dict[str, dict[str, object]]:
    try:
        data = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(data: dict[str, dict[str, object]]) -> None:
    with contextlib.suppress(OSError):  # a read-only checkout grades; it does not remember
        files.write_atomic(_path(), json.dumps(data, indent=1).encode())


def record(grade: Grade) -> None:
    data = _load()
    entry = data.setdefault(grade.exercise, {})
    entry.update(score=grade.score, max_score=grade.max_score, file=grade.submission,
                 when=time.strftime("%Y-%m-%d %H:%M"))
    _save(data)


def hints_seen(name: str) -> int:
    seen = _load().get(name, {}).get("hints", 0)
    return seen if isinstance(seen, int) else 0


def record_hint(name: str, seen: int) -> None:
    data = _load()
    data.setdefault(name, {})["hints"] = seen
    _save(data)


def last_scores() -> dict[str, str]:
    """Exercise name -> "E/P (when, file)" for every exercise graded before."""
    out = {}
    for name, entry in _load().items():
        if "score" not in entry:
            continue
        try:
            score, top = float(entry["score"]), float(entry["max_score"])  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError):
            continue
        where = f", {entry['file']}" if entry.get("file") else ""
        out[name] = f"{score:g}/{top:g} ({entry.get('when', '?')}{where})"
    return out
