"""Copies, flagged: winnowed fingerprints (`copydetect`, the method MOSS uses) over every pair
of a cohort's submissions of one exercise, and each against the repository's reference.

The code is tokenized first, with Python's own tokenizer: every name that is not a keyword
becomes `V` (`self` and the builtins too: a copier may rename those), every string `S`, and
comments, docstrings and blank space go. Renaming every identifier and stripping the comments
changes nothing it compares. A file that does not tokenize is compared as it is. The stub's
fingerprints (signatures, data classes, docstrings: what every answer shares) are removed from
every file as boilerplate. A pair's similarity is the larger of the two shares of each file's
fingerprinted tokens found in the other; pairs at or above `THRESHOLD` are flagged, with the
fragments they share. docs/cohort.md has the measurements behind the threshold.
"""

from __future__ import annotations

import io
import keyword
import tokenize
from dataclasses import dataclass
from typing import Any

from grading import catalog

NOISE = 25  # characters of tokenized code per fingerprint: shorter matches are noise
GUARANTEE = 25  # a match this long is always found (winnowing window = GUARANTEE - NOISE + 1)
THRESHOLD = 0.85  # similarity at which a pair is flagged (docs/cohort.md: why)
FRAGMENTS = 3  # shared fragments shown per flagged pair
_FRAGMENT_CHARS = 600
REFERENCE = "reference"  # the name the reference goes by in a pair


@dataclass(frozen=True)
class Pair:
    """Two submissions of one exercise, how alike, and (when flagged) what they share."""

    exercise: str
    a: str
    b: str
    similarity: float
    fragments: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"exercise": self.exercise, "a": self.a, "b": self.b,
                "similarity": round(self.similarity, 3), "fragments": list(self.fragments)}


class _Fingerprints:
    """One file's winnowed fingerprints, the stub's removed, and where each character of the
    tokenized text came from in the file."""

    def __init__(self, text: str, boilerplate: frozenset[int] = frozenset()) -> None:
        from copydetect import CodeFingerprint
        from copydetect.utils import get_token_coverage

        self.raw = text
        normal, self.spans = _normalized(text)
        self.print = CodeFingerprint("submission.txt", NOISE, GUARANTEE - NOISE + 1,
                                     filter=False, fp=io.StringIO(normal))
        # The stub's fingerprints removed here rather than by copydetect's `boilerplate`, which
        # assumes the file's fingerprints unique and so drops a varying few when they repeat.
        if boilerplate:
            self.print.hashes = self.print.hashes - boilerplate
            self.print.hash_idx = {h: i for h, i in self.print.hash_idx.items()
                                   if h not in boilerplate}
            self.print.token_coverage = get_token_coverage(self.print.hash_idx, NOISE,
                                                           len(normal))

    def fragment(self, start: int, end: int) -> str:
        """The file's text behind tokenized characters [start, end)."""
        if not self.spans:
            return self.raw[start:end]
        last = len(self.spans) - 1
        return self.raw[self.spans[min(start, last)][0]:self.spans[min(end - 1, last)][1]]


def _normalized(text: str) -> tuple[str, list[tuple[int, int]]]:
    """`text` tokenized (see the module's docstring), and for each character of it the span
    of the file's text it stands for; no spans when `text` does not tokenize."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    previous = tokenize.NEWLINE
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind, word = token.type, token.string
            span = (starts[token.start[0] - 1] + token.start[1],
                    starts[token.end[0] - 1] + token.end[1])
            docstring = kind == tokenize.STRING and previous in _STATEMENT_START
            if kind not in _SKIPPED:
                previous = kind
            if kind in _SKIPPED or docstring:
                continue
            if kind == tokenize.NAME and not keyword.iskeyword(word):
                word = "V"
            elif kind in _STRINGS:
                word = "S"
            out.append(word)
            spans.extend([span] * len(word))
    except (tokenize.TokenError, SyntaxError, IndexError):
        return text, []
    return "".join(out), spans


_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENCODING, tokenize.ENDMARKER}
# Python 3.12 splits an f-string into tokens: its start stands for the string, the literal
# parts and its end go (the expressions inside are tokens of their own).
_STRINGS = {tokenize.STRING, getattr(tokenize, "FSTRING_START", tokenize.STRING)}
_SKIPPED |= {getattr(tokenize, name) for name in ("FSTRING_MIDDLE", "FSTRING_END")
             if hasattr(tokenize, name)}
_STATEMENT_START = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}


def _boilerplate(exercise: catalog.Exercise) -> frozenset[int]:
    stub = _Fingerprints(exercise.stub.read_text(encoding="utf-8"))
    return frozenset(stub.print.hashes)


def _compare(one: _Fingerprints, two: _Fingerprints) -> tuple[float, list[str]]:
    from copydetect import compare_files

    _, (first, second), (slices, _) = compare_files(one.print, two.print)
    fragments = [one.fragment(int(start), int(end)).strip()[:_FRAGMENT_CHARS]
                 for start, end in zip(*slices, strict=True)] if len(slices) else []
    fragments.sort(key=len, reverse=True)
    return float(max(first, second)), fragments


def scores(exercise: catalog.Exercise, sources: dict[str, str], *,
           reference: bool = True) -> list[Pair]:
    """Every pair of `sources` (name -> code), and each against the reference when
    `reference`, with its similarity, most alike first (fragments for every pair)."""
    boilerplate = _boilerplate(exercise)
    prints = {name: _Fingerprints(text, boilerplate) for name, text in sorted(sources.items())}
    names = list(prints)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    if reference:
        prints[REFERENCE] = _Fingerprints(exercise.solution.read_text(encoding="utf-8"),
                                          boilerplate)
        pairs += [(name, REFERENCE) for name in names]
    found = []
    for a, b in pairs:
        similarity, fragments = _compare(prints[a], prints[b])
        found.append(Pair(exercise.name, a, b, similarity, tuple(fragments[:FRAGMENTS])))
    return sorted(found, key=lambda p: (-p.similarity, p.a, p.b))


def flagged(exercise: catalog.Exercise, sources: dict[str, str],
            threshold: float = THRESHOLD) -> list[Pair]:
    """The pairs of `sources` (and each against the reference) at or above `threshold`."""
    return [p for p in scores(exercise, sources) if p.similarity >= threshold]
