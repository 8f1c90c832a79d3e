"""A cohort's data and its files: the `cohort.json` object built from the gradings, read back,
combined from shards, and written as `cohort.csv`, `cohort.json`, `details.jsonl` and
`cohort.html`. No process: `cohort` grades, this module only shapes and writes."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading import catalog, report
from grading.inputs import UsageError
from grading.results import Check, Grade, num
from grading.returned import Candidate

KIND = "grader-cohort"  # a cohort.json says it is one
VERSION = 1
FILES = ("cohort.csv", "cohort.json", "details.jsonl", "cohort.html")


def check_output(output: Path) -> None:
    """Refuse, before any grading, an output folder that cannot be made."""
    if output.exists() and not output.is_dir():
        raise UsageError(f"--output {output} is a file, not a folder")
    if not output.exists() and not output.resolve().parent.is_dir():
        raise UsageError(f"cannot write {output}: no such folder {output.resolve().parent}")


@dataclass(frozen=True)
class Plan:
    """What a cohort grades: its candidates and exercises, each one's file (or why none),
    the checks of each exercise, and the text of every file found."""

    found: list[Candidate]
    exercises: list[catalog.Exercise]
    files: dict[tuple[str, str], Path | str]  # (candidate, exercise) -> file or why none
    checks: dict[str, list[Check]]
    sources: dict[str, dict[str, str]]  # exercise -> candidate -> text


def assemble(plan: Plan, grades: dict[tuple[str, str], Grade]) -> dict[str, Any]:
    """The cohort's data (without its copies): exercises, one row per candidate, details."""
    exercises, checks, found, files = plan.exercises, plan.checks, plan.found, plan.files
    most = {e.name: sum(c.points for c in checks[e.name]) for e in exercises}
    rows = []
    details = []
    for candidate in found:
        entries: dict[str, dict[str, Any]] = {}
        for exercise in exercises:
            graded = grades.get((candidate.name, exercise.name))
            if graded is None:
                why = files[candidate.name, exercise.name]
                entries[exercise.name] = {"score": 0, "max_score": num(most[exercise.name]),
                                          "graded": False, "reason": str(why), "file": "",
                                          "diagnoses": []}
                continue
            entries[exercise.name] = {
                "score": num(graded.score), "max_score": num(graded.max_score),
                "graded": not graded.refused, "reason": graded.reason,
                "file": graded.submission, "diagnoses": [d["bug"] for d in graded.diagnoses]}
            details.append({"candidate": candidate.name, **report.as_dict(graded, "full")})
        rows.append(_row(candidate, entries))
    return {
        "kind": KIND, "version": VERSION, "shard": None,
        "exercises": [{"name": e.name, "title": e.title, "max_score": num(most[e.name]),
                       "checks": [{"id": c.id, "name": c.name, "visibility": c.visibility,
                                   "category": c.category, "points": num(c.points)}
                                  for c in checks[e.name]]}
                      for e in exercises],
        "candidates": rows, "details": details, "sources": plan.sources,
    }


def _row(candidate: Candidate, entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    score = sum(e["score"] for e in entries.values())
    most = sum(e["max_score"] for e in entries.values())
    return {"candidate": candidate.name, "source": candidate.source, "score": num(score),
            "max_score": num(most), "percent": _percent(score, most), "exercises": entries}


def _percent(score: float, most: float) -> float:
    return round(100 * score / most, 1) if most else 0.0


def copies(exercises: list[catalog.Exercise], sources: dict[str, dict[str, str]]
           ) -> dict[str, Any]:
    """The pairs flagged as copies, per exercise, and the threshold they passed."""
    from grading import similarity

    try:
        pairs = [pair.as_dict() for e in exercises
                 for pair in similarity.flagged(e, sources.get(e.name, {}))]
    except ImportError as exc:  # the grades are kept; the report says what was not done
        return {"threshold": similarity.THRESHOLD, "pairs": [],
                "skipped": f"copies not searched: {exc} (uv sync installs copydetect)"}
    return {"threshold": similarity.THRESHOLD, "pairs": pairs}


def write(data: dict[str, Any], output: Path) -> list[Path]:
    """The cohort's four files written into `output` (made if missing); their paths."""
    from grading import cohort_report

    paths = [output / name for name in FILES]
    csv_path, json_path, details_path, html_path = paths
    try:
        output.mkdir(exist_ok=True)
        with open(csv_path, "w", encoding="utf-8", newline="") as out:
            _csv(data, out)
        json_path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        details_path.write_text("".join(json.dumps(d) + "\n" for d in data["details"]),
                                encoding="utf-8")
        html_path.write_text(cohort_report.render(data), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror}") from None
    return paths


def _csv(data: dict[str, Any], out: Any) -> None:
    names = [e["name"] for e in data["exercises"]]
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["candidate", "source", "score", "max_score", "percent",
                     *(f"{n}_score" for n in names), "diagnoses", "similar", "not_graded"])
    flagged = data["copies"]["pairs"]
    for row in data["candidates"]:
        entries = row["exercises"]
        diagnoses = "; ".join(f"{n}: {bug}" for n in names for bug in entries[n]["diagnoses"])
        similar = "; ".join(
            f"{p['exercise']}: {p['b'] if p['a'] == row['candidate'] else p['a']} "
            f"{p['similarity']:.2f}"
            for p in flagged if row["candidate"] in (p["a"], p["b"]))
        missing = "; ".join(f"{n}: {entries[n]['reason']}" for n in names
                            if not entries[n]["graded"])
        writer.writerow([row["candidate"], row["source"], row["score"], row["max_score"],
                         f"{row['percent']:.1f}", *(entries[n]["score"] for n in names),
                         diagnoses, similar, missing])


def read(path: Path) -> dict[str, Any]:
    """A `cohort.json` read back, or a one-line `UsageError` naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path} is not a cohort.json ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UsageError(f"{path} is not a cohort.json (no \"kind\": \"{KIND}\"); give the "
                         "cohort.json a `grader.py cohort --shard K/N` run wrote")
    if data.get("version") != VERSION:
        raise UsageError(f"{path} is a cohort.json of version {data.get('version')!r}, "
                         f"not {VERSION}")
    return data


def combine(parts: list[dict[str, Any]], paths: list[Path]) -> dict[str, Any]:
    """One cohort from the shards' data: the same exercises and checks in each, every
    candidate once, every shard of the run present."""
    first = parts[0]
    for part, path in zip(parts[1:], paths[1:], strict=True):
        if part["exercises"] != first["exercises"]:
            raise UsageError(f"{path} graded other exercises or checks than {paths[0]}")
    _all_shards(parts, paths)
    seen: dict[str, Path] = {}
    for part, path in zip(parts, paths, strict=True):
        for row in part["candidates"]:
            if row["candidate"] in seen:
                raise UsageError(f"candidate {row['candidate']!r} is in both "
                                 f"{seen[row['candidate']]} and {path}")
            seen[row["candidate"]] = path
    order = [e["name"] for e in first["exercises"]]
    rows = sorted((r for p in parts for r in p["candidates"]), key=lambda r: r["candidate"])
    details = sorted((d for p in parts for d in p["details"]),
                     key=lambda d: (d["candidate"], order.index(d["exercise"])))
    sources = {name: dict(sorted(((c, t) for p in parts
                                  for c, t in p["sources"].get(name, {}).items())))
               for name in order}
    return {"kind": KIND, "version": VERSION, "shard": None, "exercises": first["exercises"],
            "candidates": rows, "details": details, "sources": sources}


def _all_shards(parts: list[dict[str, Any]], paths: list[Path]) -> None:
    given = [p.get("shard") for p in parts]
    if not any(given):
        return
    shards: list[dict[str, int]] = [s for s in given if s]
    if len(shards) < len(given):
        plain = paths[[bool(s) for s in given].index(False)]
        raise UsageError(f"{plain} is not a shard (no --shard); merge the shards of one run")
    count = shards[0]["count"]
    if any(s["count"] != count or s["cohort"] != shards[0]["cohort"] for s in shards):
        raise UsageError("the reports are shards of different runs (their N or cohort differ)")
    have = sorted(s["index"] for s in shards)
    missing = sorted(set(range(1, count + 1)) - set(have))
    if missing:
        raise UsageError(f"shard {', '.join(f'{k}/{count}' for k in missing)} missing: merge "
                         f"all {count} shards of the run")
    if len(have) != len(set(have)):
        raise UsageError(f"a shard given twice ({', '.join(f'{k}/{count}' for k in have)})")
