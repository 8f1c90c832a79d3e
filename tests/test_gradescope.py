"""The Gradescope autograder under Gradescope's own contract.

The zip is unpacked into `<root>/autograder/source`; `setup.sh` runs there with a fresh HOME
and uv cache; `run_autograder` is copied to `<root>/autograder/run_autograder` and run from `/`
for each submission, placed in `<root>/autograder/submission/`; the result is read from
`<root>/autograder/results/results.json`. The scripts take `<root>/autograder` from
AUTOGRADER_ROOT, which is /autograder on Gradescope.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from grading import catalog
from grading.provenance import checks_digest
from tests.helpers import ROOT, mutant_file, run_grader

pytestmark = pytest.mark.skipif(shutil.which("uv") is None, reason="the autograder needs uv")

_REFERENCE = (ROOT / "solutions" / "token_bucket.py").read_text(encoding="utf-8")
_STUB = (ROOT / "exercises" / "token_bucket" / "token_bucket.py").read_text(encoding="utf-8")

# name -> (files submitted, what results.json must show)
_CASES: dict[str, tuple[dict[str, str], Callable[[dict[str, Any]], None]]] = {}


def _case(name: str, files: dict[str, str]) -> Callable[[Callable[[dict[str, Any]], None]],
                                                         Callable[[dict[str, Any]], None]]:
    def register(check: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        _CASES[name] = (files, check)
        return check
    return register


@_case("stub", {"token_bucket.py": _STUB})
def _stub(result: dict[str, Any]) -> None:
    assert result["score"] == 0 and len(result["tests"]) > 30, result["output"]
    assert result["output"].startswith("Graded token_bucket.py."), result["output"]


@_case("correct", {"token_bucket.py": _REFERENCE, "notes.txt": "my notes"})
def _correct(result: dict[str, Any]) -> None:
    assert result["tests"] and result["score"] == sum(t["max_score"] for t in result["tests"])


@_case("syntax_error", {"token_bucket.py": "def broken(:\n"})
def _syntax_error(result: dict[str, Any]) -> None:
    assert result["score"] == 0 and result["tests"], result["output"]
    assert any("syntax error at line 1" in t["output"] for t in result["tests"]), \
        result["tests"][0]


# A hang at import spins both children until the wall limit ends the run: a short one here
# (each second of it costs two cores' worth of the suite's time).
_WALL_OF = {"hang": 4}


_HANG = _STUB.replace("__all__ = ", "while True:\n    pass\n__all__ = ")


@_case("hang", {"token_bucket.py": _HANG})
def _hang(result: dict[str, Any]) -> None:
    assert result["score"] == 0 and result["tests"], result["output"]


@_case("no_python", {"README.txt": "I could not finish."})
def _no_python(result: dict[str, Any]) -> None:
    assert result["score"] == 0 and result["tests"] == []
    assert "token_bucket.py" in result["output"] and "README.txt" in result["output"]


@_case("two_wrong_names", {"tokenbucket.py": _REFERENCE, "main.py": "print('hi')\n"})
def _two_wrong_names(result: dict[str, Any]) -> None:
    assert result["score"] == 0 and result["tests"] == []
    assert "main.py" in result["output"] and "tokenbucket.py" in result["output"]


@_case("one_other_name", {"src/solution.py": _REFERENCE})
def _one_other_name(result: dict[str, Any]) -> None:
    assert result["tests"] and result["score"] == sum(t["max_score"] for t in result["tests"])
    assert result["output"].startswith("Graded src/solution.py."), result["output"]


_KNOWN_BUG = mutant_file(catalog.MUTANTS / "token_bucket" / "refusal_consumes.diff")


@_case("known_bug", {"token_bucket.py": _KNOWN_BUG.read_text(encoding="utf-8")})
def _known_bug(result: dict[str, Any]) -> None:
    """The image carries the signatures: diagnosis works there as on the command line, and the
    checks' digest is the repository's."""
    assert "This looks like a known bug" in result["output"], result["output"]
    grader = result["extra_data"]["grader"]
    assert grader["checks_sha256"] == checks_digest(catalog.Exercise("token_bucket")), grader


@pytest.fixture(scope="module")
def autograder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The zip unpacked as Gradescope unpacks it, and `setup.sh` run there once."""
    base = tmp_path_factory.mktemp("gradescope")
    archive = base / "autograder.zip"
    done = run_grader(["bundle", "token_bucket", "--gradescope", "--output", str(archive)])
    assert done.code == 0, done.stderr
    source = base / "autograder" / "source"
    source.mkdir(parents=True)
    with zipfile.ZipFile(archive) as zipped:
        names = zipped.namelist()
        assert {"setup.sh", "run_autograder", "grader.py", "pyproject.toml"} <= set(names)
        assert not any(n.startswith(("solutions/", "tests/", "source/")) or n.endswith(".diff")
                       for n in names), names
        zipped.extractall(source)
    for script in ("setup.sh", "run_autograder"):
        (source / script).chmod(0o755)  # zipfile does not restore modes; Gradescope does
    home = base / "home"
    home.mkdir()
    setup = subprocess.run(["bash", "setup.sh"], cwd=source, env=_env(base / "autograder", home),
                           capture_output=True, text=True, timeout=600, check=False)
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    shutil.copyfile(source / "run_autograder", base / "autograder" / "run_autograder")
    return base


def _env(root: Path, home: Path, wall: float = 20) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("UV_", "VIRTUAL_ENV", "PYTHON", "GRADER_"))}
    env.update(HOME=str(home), UV_CACHE_DIR=str(home / "uv-cache"), AUTOGRADER_ROOT=str(root),
               AUTOGRADER_WALL_LIMIT=f"{wall:g}")
    return env


def _run(base: Path, name: str) -> dict[str, Any]:
    """One submission, in an /autograder of its own that shares the built source."""
    files, _ = _CASES[name]
    root = base / name / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "source").symlink_to(base / "autograder" / "source")
    shutil.copyfile(base / "autograder" / "run_autograder", root / "run_autograder")
    for rel, text in files.items():
        (root / "submission" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / rel).write_text(text, encoding="utf-8")
    done = subprocess.run(["bash", str(root / "run_autograder")], cwd="/",
                          env=_env(root, base / "home", _WALL_OF.get(name, 20)),
                          capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    path = root / "results" / "results.json"
    assert path.is_file(), f"{name}: no results.json; stderr: {done.stderr[-2000:]}"
    result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return result


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_submission_gets_a_valid_results_json(autograder: Path) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(_CASES, pool.map(lambda n: _run(autograder, n), _CASES), strict=True))
    for name, (_, check) in _CASES.items():
        result = results[name]
        assert isinstance(result["score"], int | float) and isinstance(result["output"], str)
        check(result)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_broken_setup_still_writes_a_results_json(tmp_path: Path, autograder: Path) -> None:
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "token_bucket.py").write_text(_REFERENCE, encoding="utf-8")
    shutil.copyfile(autograder / "autograder" / "run_autograder", root / "run_autograder")
    # No source folder: setup never ran here.
    done = subprocess.run(["bash", str(root / "run_autograder")], cwd="/",
                          env=_env(root, tmp_path), capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0
    result = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert result["score"] == 0 and "instructor" in result["output"], result
