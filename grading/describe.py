"""How the grading child says what failed: one line per exception, with the submission's own
line, and long texts cut in the middle.

Part of the grading child (laid into `lib/` beside the plugin). Standard library only.
"""

from __future__ import annotations

import os
import re
from types import TracebackType

TIMEOUT = re.compile(r"Timeout \(>[0-9.]+s\) from pytest-timeout")  # pytest-timeout's words
_MESSAGE_CHARS = 2000


def describe(exc: BaseException, submission: str) -> str:
    """What failed, for a person: the exception's type and message, and the submission's own
    line where it was raised (or, for a timeout, where it was stuck). An exception group is
    reported as its leaf exceptions, one line each, however deeply they are nested."""
    leaves = _leaves(exc)
    if len(leaves) == 1 and leaves[0] is exc:
        where = _where(exc.__traceback__, submission)
        if where:
            verb = "stuck at" if TIMEOUT.search(str(exc)) else "at"
            return f"{_one_line(exc)}\n  {verb} {where}"
        return _one_line(exc) + "".join(f"\n  from {line}" for line in _origins(exc, submission))
    lines = [f"{type(exc).__name__} with {len(leaves)} leaf "
             f"exception{'s' if len(leaves) > 1 else ''}:"]
    raised_at = _where(exc.__traceback__, submission)  # for a leaf made but never raised on its own
    for leaf in leaves:
        where = _where(leaf.__traceback__, submission) or raised_at
        lines.append(f"  {_one_line(leaf)}" + (f" (at {where})" if where else ""))
    return "\n".join(lines)


def _origins(exc: BaseException, submission: str) -> list[str]:
    """The submission's exceptions that a check's own failure was raised while handling (a
    check that catches the submission's error and fails with its own words), with their lines."""
    seen: set[int] = set()
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        found = [f"{_one_line(leaf)} (at {where})" for leaf in _leaves(cause)
                 if (where := _where(leaf.__traceback__, submission))]
        if found:
            return found
        cause = cause.__cause__ or cause.__context__
    return []


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _where(tb: TracebackType | None, submission: str) -> str:
    """`NAME.py:LINE in FUNCTION` for the deepest frame of the submission in `tb`, or ""."""
    if not submission:
        return ""
    target, found = os.path.realpath(submission), ""
    while tb is not None:
        code = tb.tb_frame.f_code
        if os.path.realpath(code.co_filename) == target:
            found = f"{os.path.basename(submission)}:{tb.tb_lineno} in {code.co_name}"
        tb = tb.tb_next
    return found


def falsifying(notes: str) -> str:
    """Hypothesis's notes: the falsifying (or failing explicit) example and its explanation."""
    return cut(notes.strip())


# pytest's advice about its own flags (`-v`, `-vv`), which the grader does not take.
_ADVICE = re.compile(r"(?i)^\s*(use -v+ to get more diff|.*, use -v+ to show|full diff:)\s*$")


def cut(text: str) -> str:
    """`text` without pytest's flag advice, cut in the middle when long (a message's first
    lines say what failed; its last often say why)."""
    text = "\n".join(line for line in text.splitlines() if not _ADVICE.match(line))
    if len(text) <= _MESSAGE_CHARS:
        return text
    head, tail = _MESSAGE_CHARS * 2 // 3, _MESSAGE_CHARS // 3
    return f"{text[:head]} ... ({len(text) - head - tail} characters) ... {text[-tail:]}"
