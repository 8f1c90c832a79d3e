"""The cohort report: one self-contained HTML file (no script, no network) rendered from a
`cohort.json` object with Jinja2 (`templates/cohort.html.j2`, autoescaped: every name, message
and fragment in it comes from candidates' files).

Per exercise: a heatmap of checks x candidates, each check's pass rate, the known bugs
diagnosed and how many candidates each caught, the score distribution and the pairs flagged as
copies; per candidate: scores, diagnoses and the failed checks' feedback.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).resolve().parent / "templates"
BUCKETS = 10  # bars of the score distribution: 0-10 %, ..., 90-100 %
MISSING = "missing"  # a cell of a candidate whose file was not graded
_MESSAGE = 400  # characters of a failed check's message shown per candidate


def render(data: dict[str, Any]) -> str:
    """The report's HTML."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    names = [row["candidate"] for row in data["candidates"]]
    return env.get_template("cohort.html.j2").render(
        candidates=names, exercises=[_exercise(e, data, names) for e in data["exercises"]],
        people=[_person(row, data) for row in data["candidates"]],
        threshold=data["copies"]["threshold"], skipped=data["copies"].get("skipped", ""),
        shard=data.get("shard"))


def _details(data: dict[str, Any], exercise: str) -> dict[str, dict[str, Any]]:
    return {d["candidate"]: d for d in data["details"] if d["exercise"] == exercise}


def _exercise(meta: dict[str, Any], data: dict[str, Any], names: list[str]) -> dict[str, Any]:
    details = _details(data, meta["name"])
    rows = {row["candidate"]: row["exercises"][meta["name"]] for row in data["candidates"]}
    graded = [n for n in names if rows[n]["graded"]]
    checks = []
    for check in meta["checks"]:
        cells = []
        for name in names:
            status = MISSING
            if rows[name]["graded"] and name in details:
                status = next((c["status"] for c in details[name]["checks"]
                               if c["id"] == check["id"]), MISSING)
            cells.append({"candidate": name, "status": status})
        passed = sum(1 for c in cells if c["status"] == "passed")
        checks.append({**check, "cells": cells, "passed": passed, "of": len(graded),
                       "rate": round(100 * passed / len(graded)) if graded else 0})
    caught: Counter[str] = Counter()
    summaries: dict[str, str] = {}
    for name in graded:
        for known in details[name]["diagnosis"] if name in details else []:
            caught[known["bug"]] += 1
            summaries[known["bug"]] = known["summary"]
    bugs = [{"bug": bug, "summary": summaries[bug], "count": n, "of": len(graded)}
            for bug, n in sorted(caught.items(), key=lambda kv: (-kv[1], kv[0]))]
    return {"name": meta["name"], "title": meta["title"], "max_score": meta["max_score"],
            "checks": checks, "bugs": bugs, "graded": len(graded), "of": len(names),
            "distribution": _distribution([rows[n] for n in graded]),
            "copies": [p for p in data["copies"]["pairs"] if p["exercise"] == meta["name"]]}


def _distribution(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    counts = [0] * BUCKETS
    for entry in entries:
        share = entry["score"] / entry["max_score"] if entry["max_score"] else 0.0
        counts[min(int(share * BUCKETS), BUCKETS - 1)] += 1
    most = max(counts, default=0) or 1
    step = 100 // BUCKETS
    return [{"label": f"{i * step}-{(i + 1) * step} %", "count": n,
             "width": round(100 * n / most)} for i, n in enumerate(counts)]


def _person(row: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    parts = []
    for meta in data["exercises"]:
        entry = row["exercises"][meta["name"]]
        detail = _details(data, meta["name"]).get(row["candidate"])
        failed = [{"name": c["name"], "status": c["status"], "points": c["max_points"],
                   "message": c["message"][:_MESSAGE]}
                  for c in (detail["checks"] if detail and entry["graded"] else [])
                  if c["status"] != "passed"]
        parts.append({"exercise": meta["name"], **entry, "failed": failed,
                      "known": detail["diagnosis"] if detail else [],
                      "mypy": detail["mypy"] if detail else None})
    copies = [p for p in data["copies"]["pairs"] if row["candidate"] in (p["a"], p["b"])]
    return {**row, "parts": parts, "copies": copies}
