"""`python grader.py hint NAME`: progressive hints, one more on each call.

Hints live in `exercises/NAME/hints.md`, one `## ` section each, from a nudge to a near-answer.
How many a candidate has seen is kept in `.grader/state.json`, so each call shows the next one
(and the last one again once all are shown, saying so); `--reset` starts again from the first.
"""

from __future__ import annotations

from typing import TextIO

from grading import catalog, state


def sections(text: str) -> list[str]:
    """The `## ` sections of a hints file, each with its heading."""
    parts: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            parts.append([line])
        elif parts:
            parts[-1].append(line)
    return ["\n".join(part).strip() for part in parts]


def hint(exercise: catalog.Exercise, out: TextIO, *, reset: bool = False) -> None:
    try:
        hints = sections(exercise.hints.read_text(encoding="utf-8"))
    except OSError:
        hints = []
    if not hints:
        out.write(f"{exercise.name} has no hints; its README's questions section is the best "
                  "place to start.\n")
        return
    seen = 0 if reset else state.hints_seen(exercise.name)
    index = min(seen, len(hints) - 1)
    out.write(f"hint {index + 1} of {len(hints)} for {exercise.name}\n\n{hints[index]}\n")
    if index + 1 < len(hints):
        out.write("\n(run the same command again for the next hint)\n")
    else:
        out.write(f"\n(that is the last hint; `grader.py hint {exercise.name} --reset` starts "
                  "again from the first)\n")
    state.record_hint(exercise.name, index + 1)
