"""A folder of returned take-homes, read: one candidate per folder or zip, and each
exercise's file found by the rule Gradescope's autograder uses (`inputs.returned_file`).

Zips are read, never trusted: a member whose path would land outside the candidate's folder
(absolute, `..`, a drive), a link, more than `MAX_MEMBERS` members or more than `MAX_BYTES`
unpacked (counted as the bytes come out, not as the header claims) refuses the whole zip, with
the reason in the candidate's row. Standard library only.
"""

from __future__ import annotations

import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from grading import catalog
from grading.inputs import returned_file

MAX_MEMBERS = 2000  # files in one candidate's zip
MAX_BYTES = 50 * 2**20  # unpacked bytes of one candidate's zip
_CHUNK = 2**16
_JUNK = ("__MACOSX", ".DS_Store")


@dataclass(frozen=True)
class Candidate:
    """One candidate's returned work: a folder to look in, or why there is none."""

    name: str
    source: str  # the folder or zip in RETURNED, by its name there
    folder: Path | None  # None: nothing could be read (`problem` says why)
    problem: str = ""

    def file_for(self, exercise: str) -> Path | str:
        """The file to grade as `exercise`, or why there is none. In `NAME/` when the
        candidate has such a folder, else anywhere in the candidate's folder."""
        if self.folder is None:
            return self.problem
        inner = self.folder / exercise
        where = inner if inner.is_dir() and not inner.is_symlink() else self.folder
        return returned_file(where, exercise)


class UnsafeZip(Exception):
    """A zip that is not unpacked: the message says which member or limit."""


def candidates(returned: Path, unpack_to: Path) -> list[Candidate]:
    """Every candidate in `returned`, sorted by name: each folder, and each `.zip` unpacked
    (safely) under `unpack_to`. Any other file is a candidate with a problem, so that nothing
    handed in goes unmentioned."""
    found: list[Candidate] = []
    taken: set[str] = set()
    for entry in sorted(returned.iterdir()):
        if entry.name.startswith(".") or entry.name in _JUNK:
            continue
        name = entry.stem if entry.suffix.lower() == ".zip" else entry.name
        if name in taken:
            name = entry.name
        taken.add(name)
        if entry.is_symlink():
            found.append(Candidate(name, entry.name, None, "a link: not followed"))
        elif entry.is_dir():
            found.append(Candidate(name, entry.name, entry))
        elif entry.suffix.lower() == ".zip":
            target = unpack_to / f"{len(found)}-{name}"
            try:
                unzip(entry, target)
            except UnsafeZip as exc:
                found.append(Candidate(name, entry.name, None, f"{entry.name}: {exc}"))
                continue
            found.append(Candidate(name, entry.name, _inner(target)))
        else:
            found.append(Candidate(name, entry.name, None,
                                   f"{entry.name} is not a folder or a .zip: not read"))
    return sorted(found, key=lambda c: c.name)


def _inner(folder: Path) -> Path:
    """An unpacked zip's folder, or the one folder it holds when it holds nothing else and
    is not named for an exercise (a zip of `alice/`)."""
    inside = [p for p in folder.iterdir()
              if not p.name.startswith(".") and p.name not in _JUNK]
    exercises = {e.name for e in catalog.exercises()}
    if (len(inside) == 1 and inside[0].is_dir() and not inside[0].is_symlink()
            and inside[0].name not in exercises):
        return inside[0]
    return folder


def unzip(archive: Path, target: Path) -> None:
    """Unpack `archive` into `target` (made new), or raise `UnsafeZip` and leave nothing of
    it unpacked that could be taken for a candidate's file."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = [m for m in zipped.infolist() if not m.is_dir()
                       and not m.filename.startswith(_JUNK)]
            if len(members) > MAX_MEMBERS:
                raise UnsafeZip(f"{len(members)} files, more than the {MAX_MEMBERS} read")
            for member in members:
                _check_member(member)
            target.mkdir(parents=True)
            left = MAX_BYTES
            for member in members:
                left = _extract(zipped, member, target, left)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        raise UnsafeZip(f"not a readable zip ({exc})") from None
    except NotImplementedError as exc:  # an unknown compression method
        raise UnsafeZip(f"cannot be read ({exc})") from None
    except RuntimeError as exc:  # an encrypted member
        raise UnsafeZip(f"cannot be read ({exc})") from None
    except OSError as exc:
        raise UnsafeZip(f"cannot be read ({exc.strerror or exc})") from None


def _check_member(member: zipfile.ZipInfo) -> None:
    name = member.filename
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise UnsafeZip(f"member {name!r} would be written outside the candidate's folder")
    if stat.S_ISLNK(member.external_attr >> 16):
        raise UnsafeZip(f"member {name!r} is a link")


def _extract(zipped: zipfile.ZipFile, member: zipfile.ZipInfo, target: Path, left: int) -> int:
    """One member written under `target`; the bytes still allowed after it."""
    out = target.joinpath(*PurePosixPath(member.filename.replace("\\", "/")).parts)
    if target.resolve() not in out.resolve().parents:
        raise UnsafeZip(f"member {member.filename!r} would be written outside the candidate's "
                        "folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipped.open(member) as source, open(out, "xb") as sink:
        while chunk := source.read(_CHUNK):
            left -= len(chunk)
            if left < 0:
                raise UnsafeZip(f"unpacks to more than {MAX_BYTES // 2**20} MiB")
            sink.write(chunk)
    return left


def named_exercises(found: list[Candidate]) -> list[catalog.Exercise]:
    """The exercises any candidate's files name (a `NAME.py` file or a `NAME/` folder), in
    the catalog's order."""
    names: set[str] = set()
    for candidate in found:
        if candidate.folder is None:
            continue
        for path in candidate.folder.rglob("*"):
            names.add(path.stem if path.suffix == ".py" else path.name)
    return [e for e in catalog.exercises() if e.name in names]
