"""Returned take-homes made for the cohort tests and the bench: folders and zips, laid out as
the bundle asks or flatter, holding references, classic wrong answers and disguised copies."""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import tokenize
import zipfile
from pathlib import Path

from grading import catalog, mutants


def reference(name: str) -> str:
    return catalog.Exercise(name).solution.read_text(encoding="utf-8")


def mutant(name: str, bug: str) -> str:
    exercise = catalog.Exercise(name)
    return mutants.materialize(mutants.find(exercise, bug)).read_text(encoding="utf-8")


def disguise(text: str, runnable_as: str = "") -> str:
    """`text` with every identifier that is not a keyword or a builtin renamed (`self`
    too), and the comments and docstrings stripped: a copy dressed up as one's own.

    With `runnable_as` (an exercise), only the names the file binds and its stub does not
    use are renamed, so the copy still imports and runs (and earns the reference's score)."""
    out: list[tuple[int, str]] = []
    names: dict[str, str] = {}
    only = _renamable(text, runnable_as) if runnable_as else None
    if only is not None:
        names = {name: f"n{i}" for i, name in enumerate(sorted(only))}
    previous = tokenize.NEWLINE
    skip_newline = False
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        kind, word = token.type, token.string
        if kind == tokenize.COMMENT or (skip_newline and kind == tokenize.NEWLINE):
            skip_newline = False
            continue
        skip_newline = False
        if kind == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.INDENT,
                                                    tokenize.DEDENT):
            if not out:  # the module's docstring, gone with its line
                skip_newline = True
                continue
            word = "..."  # a docstring, gone (a class of nothing else stays valid)
            kind = tokenize.OP
        elif kind == tokenize.STRING and word[1:-1] in names and word[0] in "'\"":
            word = f"{word[0]}{names[word[1:-1]]}{word[0]}"  # a name in __slots__, say
        if kind == tokenize.STRING and word[:2].lower() in ("f'", 'f"', "rf", "fr"):
            word = re.sub(r"\{[^{}]*\}", lambda m: re.sub(
                r"\b[A-Za-z_]\w*\b", lambda w: names.get(w.group(), w.group()), m.group()),
                word)
        elif (kind == tokenize.NAME and not (keyword.iskeyword(word) or hasattr(builtins, word))
              and (only is None or word in only)):
            word = names.setdefault(word, f"n{len(names)}")
        out.append((kind, word))
        if kind not in (tokenize.NL, tokenize.COMMENT):
            previous = kind
    return tokenize.untokenize(out)


def _renamable(text: str, exercise: str) -> set[str]:
    """The names `text` binds (variables, parameters, functions, classes, attributes set on
    an object) that neither its imports nor the exercise's stub use."""
    tree = ast.parse(text)
    stub = catalog.Exercise(exercise).stub.read_text(encoding="utf-8")
    kept = {t.string for t in tokenize.generate_tokens(io.StringIO(stub).readline)
            if t.type == tokenize.NAME}
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            bound.add(node.attr)
        elif isinstance(node, ast.alias):
            kept.add((node.asname or node.name).split(".")[0])
            kept.add(node.name.split(".")[-1])
    return {n for n in bound - kept if not n.startswith("__")}


def folder(root: Path, candidate: str, files: dict[str, str]) -> Path:
    """A candidate's folder: relative path -> text."""
    for rel, text in files.items():
        path = root / candidate / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / candidate


def zipped(root: Path, candidate: str, files: dict[str, str]) -> Path:
    """A candidate's zip: relative path (inside the zip) -> text."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{candidate}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for rel, text in files.items():
            archive.writestr(rel, text)
    return path


def bundle_layout(answers: dict[str, str]) -> dict[str, str]:
    """exercise -> code, laid out as the bundle asks (NAME/NAME.py)."""
    return {f"{name}/{name}.py": text for name, text in answers.items()}


def flat_layout(answers: dict[str, str]) -> dict[str, str]:
    return {f"{name}.py": text for name, text in answers.items()}


def cohort(root: Path, size: int, exercises: tuple[str, ...]) -> Path:
    """`size` candidates, half in folders as the bundle asks and half zipped flat, each
    exercise's answer in turn the reference, a disguised copy of it, or one of its classic
    wrong answers: a cohort as a take-home brings back, made the same every time."""
    answers = {name: _answers(name) for name in exercises}
    for i in range(size):
        chosen = {name: texts[i % len(texts)] for name, texts in answers.items()}
        if i % 2:
            zipped(root, f"c{i:04d}", flat_layout(chosen))
        else:
            folder(root, f"c{i:04d}", bundle_layout(chosen))
    return root


def _answers(name: str) -> list[str]:
    exercise = catalog.Exercise(name)
    wrong = [mutants.materialize(m).read_text(encoding="utf-8") for m in mutants.of(exercise)]
    return [reference(name), disguise(reference(name), name), *wrong]
