"""What moved between two gradings of a submission: since the last save (`--watch`), or since
a report saved earlier (`--compare OLD.json`). Standard library only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from grading.inputs import UsageError
from grading.results import Grade, num


def _moved(was: dict[str, str], now: dict[str, str]) -> list[tuple[str, str, str]]:
    """(check id, status before, status now) of each check whose status moved; "absent" for a
    check one side does not have."""
    return [(cid, was.get(cid, "absent"), now.get(cid, "absent"))
            for cid in sorted(was.keys() | now.keys()) if was.get(cid) != now.get(cid)]


def _statuses(grade: Grade) -> dict[str, str]:
    return {r.check.id: r.status for r in grade.results}


def since_last(before: Grade | None, after: Grade) -> list[str]:
    """What a regrade changed: checks newly passing or newly failing, and the score."""
    if before is None:
        return []
    order = {r.check.id: (i, r.check.name) for i, r in enumerate(after.results)}
    moved = sorted(((cid, then, now) for cid, then, now in _moved(_statuses(before),
                                                                   _statuses(after))
                    if cid in order and then != "absent" and "passed" in (then, now)),
                   key=lambda m: order[m[0]][0])
    names = {cid: name for cid, (_, name) in order.items()}
    lines = [f"since the last run: score {num(before.score)} -> {num(after.score)}"]
    lines += [f"  now passing: {names[cid]}" for cid, _, now in moved if now == "passed"]
    lines += [f"  now failing: {names[cid]}" for cid, then, _ in moved if then == "passed"]
    if not moved:
        lines.append("  no check changed")
    return lines


def read_saved(old: Path) -> list[dict[str, Any]]:
    """The gradings saved in `old` (`--format json`), read before any grading starts."""
    try:
        lines = old.read_text(encoding="utf-8").splitlines()
        before = [json.loads(line) for line in lines if line.strip()]
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {old} as the grader's --format json output: {exc}") \
            from None
    if not all(isinstance(b, dict) for b in before):
        raise UsageError(f"cannot read {old} as the grader's --format json output: "
                         "a line is not a JSON object")
    return before


def since_saved(grades: list[Grade], old: Path, before: list[dict[str, Any]],
                out: TextIO) -> None:
    """Each check whose outcome moved since the gradings saved in `old`, written to `out`."""
    for grade in grades:
        match = next((b for b in before if b.get("exercise") == grade.exercise
                      and (len(before) == 1 or b.get("submission") == grade.submission)), None)
        if match is None:
            out.write(f"compare: {old} has no grade of {grade.exercise} {grade.submission}\n")
            continue
        was = {c["id"]: c["status"] for c in match.get("checks", [])}
        moved = _moved(was, _statuses(grade))
        then = match.get("grader") or {}
        same = then.get("checks_sha256") == grade.provenance.get("checks_sha256")
        checks = "the same checks" if same else "the checks, the reference or the grader changed"
        out.write(f"compare {grade.exercise} {grade.submission}: score {match.get('score')} -> "
                  f"{num(grade.score)}; {len(moved)} check(s) moved; "
                  f"{checks} "
                  f"(commit {then.get('commit', '?')} -> {grade.provenance.get('commit')})\n")
        for cid, was_status, now_status in moved:
            out.write(f"  {cid}: {was_status} -> {now_status}\n")
