"""`python grader.py bundle NAME... --output DIR_OR_ZIP`: a take-home for candidates.

A bundle holds, per exercise, the statement, the stub, the visible tests (and hints and sample
data, if any); a README with the set-up commands; a `pyproject.toml` with only what those
exercises import. Never solutions, hidden tests, mutants or the grader.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
from pathlib import Path

from grading import catalog

_ALWAYS = ("pytest", "hypothesis", "pytest-timeout")


class BundleError(Exception):
    """The bundle cannot be written where asked."""


def _requirements(exercises: list[catalog.Exercise]) -> list[str]:
    """Our dependency specifiers for what the stubs and visible tests import."""
    pinned = catalog.dependencies()
    wanted = set(_ALWAYS) | catalog.imports_of(
        path for exercise in exercises for path in (exercise.stub, exercise.visible_tests))
    return sorted(pinned[name] for name in wanted if name in pinned)


def _pyproject(exercises: list[catalog.Exercise]) -> str:
    deps = "".join(f'    "{spec}",\n' for spec in _requirements(exercises))
    return f'''[project]
name = "take-home"
version = "1.0.0"
requires-python = ">=3.11"
dependencies = [
{deps}]

[tool.uv]
package = false

[tool.pytest]
strict = true
addopts = ["-p", "no:cacheprovider"]
markers = [
    "points(n): what the check is worth when graded",
    "category(name): what the check is about",
]
'''


def _readme(exercises: list[catalog.Exercise]) -> str:
    rows = "".join(f"| [`{e.name}`]({e.name}/README.md) | {e.title} | {e.difficulty} | "
                   f"{e.minutes or '?'} |\n" for e in exercises)
    first = exercises[0].name
    files = ", ".join(f"`{e.name}/{e.name}.py`" for e in exercises)
    return f"""# Take-home exercises

| exercise | title | difficulty | minutes |
|---|---|---|---|
{rows}
Each folder holds a statement (`README.md`), the file you complete (`NAME.py`), and visible
tests (`test_NAME.py`) that show the rules with worked examples and properties.

## Set up and run the tests

You need Python 3.11+ and [uv](https://docs.astral.sh/uv/) (`pip install uv` if it is missing).

```
uv run pytest              # every exercise's visible tests; the first run installs what they need
uv run pytest {first}      # one exercise
```

Every visible test fails until you implement the exercise. Your work is also graded with further
checks that are not included here: the statement says what they cover and how many points each
part is worth, so read its rules and "Questions to ask" closely.

## Submit

Send back {files}. Only these files are graded; keep the names and the public API as given.
"""


_GRADER = re.compile(r"`(?:uv run |python )grader\.py (\w+)[^`]*`")
_EXERCISE_PATH = re.compile(r"\bexercises/(\w+|NAME)\b")


def in_bundle(text: str) -> str:
    """`text` as a bundle says it: commands that run in the bundle, where the exercise folders
    sit at the top and there is no grader (the interviewer grades what comes back)."""
    def grader(match: re.Match[str]) -> str:
        said = f"the interviewer's grader (`grader.py {match[1]}`, not in this bundle)"
        starts = match.start() == 0 or text[match.start() - 1] == "\n"
        return said[0].upper() + said[1:] if starts else said

    text = _GRADER.sub(grader, text)
    return _EXERCISE_PATH.sub(r"\1", text)


def bundle(exercises: list[catalog.Exercise], output: Path) -> None:
    """Write the take-home for `exercises` to a folder, or to a zip when `output` ends in .zip."""
    if output.suffix == ".zip":
        with tempfile.TemporaryDirectory(prefix="bundle-") as tmp:
            root = Path(tmp) / output.stem
            _write(exercises, root)
            try:
                with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as archive:
                    for path in sorted(root.rglob("*")):
                        archive.write(path, path.relative_to(root.parent))
            except OSError as exc:
                raise BundleError(f"cannot write {output}: {exc.strerror}") from None
        return
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise BundleError(f"{output} exists and is not an empty folder")
    _write(exercises, output)


def _write(exercises: list[catalog.Exercise], root: Path) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / "README.md").write_text(_readme(exercises), encoding="utf-8")
        (root / "pyproject.toml").write_text(_pyproject(exercises), encoding="utf-8")
        conftest = (catalog.EXERCISES / "conftest.py").read_text(encoding="utf-8")
        (root / "conftest.py").write_text(in_bundle(conftest), encoding="utf-8")
        shutil.copyfile(catalog.GRADER / "contract.py", root / "kata_contract.py")
        for exercise in exercises:
            folder = root / exercise.name
            folder.mkdir()
            parts = [exercise.statement, exercise.stub, exercise.visible_tests,
                     *exercise.data_files]
            if exercise.hints.is_file():
                parts.append(exercise.hints)
            for part in parts:
                if part.suffix in (".md", ".py"):
                    text = part.read_text(encoding="utf-8")
                    (folder / part.name).write_text(in_bundle(text), encoding="utf-8")
                else:
                    shutil.copyfile(part, folder / part.name)
    except OSError as exc:
        raise BundleError(f"cannot write {root}: {exc.strerror}") from None


# Gradescope's contract (its autograder specification): the zip is unpacked into
# /autograder/source; setup.sh runs there once, as root, when the image is built (with network);
# run_autograder is copied to /autograder/run_autograder and run for each submission, whose files
# are in /autograder/submission; it must write /autograder/results/results.json. Both scripts
# (in gradescope/ beside this file) take the root from AUTOGRADER_ROOT, default /autograder, so
# the contract can be tried anywhere.
_SCRIPTS = Path(__file__).resolve().parent / "gradescope"


_GRADER_NEEDS = {"pytest", "hypothesis", "pytest-timeout", "psutil", "mypy"}


def _not_needed(exercise: catalog.Exercise) -> str:
    """`--no-install-package` flags for the project's dependencies neither the grader nor this
    exercise's files import (job_api's web stack, for interval_union)."""
    from grading import preload

    names = set(catalog.dependencies())
    wanted = _GRADER_NEEDS | preload.libraries_of([exercise])
    return " ".join(f"--no-install-package {name}" for name in sorted(names - wanted))


def gradescope(exercise: catalog.Exercise, output: Path, *, feedback: str = "full") -> None:
    """A Gradescope autograder zip, laid out as Gradescope unpacks it: `setup.sh`,
    `run_autograder` and the grader with this exercise's hidden checks (never the reference)
    all at the top of the zip, which becomes /autograder/source."""
    if output.suffix != ".zip":
        raise BundleError(f"a Gradescope autograder is a .zip, got {output}")
    root = catalog.ROOT
    files = [root / "grader.py", root / "pyproject.toml", root / "uv.lock",
             catalog.EXERCISES / "conftest.py", *exercise.hidden_files,
             *sorted((root / "grading").glob("*.py")),
             *[p for p in [root / "grading" / "signatures" / f"{exercise.name}.json"]
               if p.is_file()],  # diagnosis in the image: the signatures of its checks
             *sorted(p for p in exercise.folder.iterdir() if p.is_file())]
    try:
        with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as archive:
            for script in ("setup.sh", "run_autograder"):
                text = (_SCRIPTS / script).read_text(encoding="utf-8")
                info = zipfile.ZipInfo(script)
                info.external_attr = 0o755 << 16
                archive.writestr(info, text.replace("@NAME@", exercise.name)
                                 .replace("@FEEDBACK@", feedback)
                                 .replace("@NOT_NEEDED@", _not_needed(exercise)))
            for path in files:
                archive.write(path, str(path.relative_to(root)))
    except OSError as exc:
        raise BundleError(f"cannot write {output}: {exc.strerror}") from None
