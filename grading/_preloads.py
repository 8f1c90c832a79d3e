"""What a fork server (`_boot.py --serve`) loads before it forks a child, and how.

`python -I _preloads.py --compile` imports all of it once, outside any sandbox, which writes its
bytecode; `python -P _preloads.py --warm HOME` builds hypothesis's Unicode tables under HOME.

This file is trusted: the grader lays it beside `_boot.py`, and it runs before any submission
is imported.
"""

import contextlib
import importlib
import sys

# What every child imports, whatever its exercise: pytest with the plugins it loads (its own, the
# installed ones it finds by entry point, and what the debugging plugin pulls in), hypothesis and
# the parts of it that load on first use. Loaded once by the fork server; a name that fails to
# import is skipped (the child imports it, or not).
_COMMON = ("pytest", "_pytest.config", "pytest_timeout", "_hypothesis_pytestplugin",
           "anyio.pytest_plugin", "platformdirs.pytest_plugin", "pdb", "faulthandler",
           "hypothesis", "hypothesis.strategies", "hypothesis.stateful",
           "hypothesis.internal.conjecture.optimiser", "hypothesis.strategies._internal.random",
           "hypothesis.strategies._internal.flatmapped", "asyncio", "decimal", "fractions",
           "gzip", "sqlite3", "statistics", "tracemalloc")
# What a child also imports when its exercise's files import the library on the left, the parts
# that load on first use included: schemathesis's OpenAPI layer alone takes a second on first use.
# A run that grades none of the exercises importing a library does not pay for loading it.
LIBRARIES: dict[str, tuple[str, ...]] = {
    "anyio": ("anyio", "anyio.abc", "anyio.from_thread", "anyio.lowlevel"),
    "trio": ("trio", "trio.testing"),
    "httpx": ("httpx", "httpcore._sync", "httpcore._async"),
    "fastapi": ("fastapi", "pydantic", "starlette.exceptions"),
    "uvicorn": ("uvicorn", "uvicorn.loops.asyncio", "uvicorn.lifespan.off",
                "uvicorn.protocols.http.h11_impl"),
    "schemathesis": ("schemathesis", "schemathesis.specs.openapi.schemas",
                     "schemathesis.python.asgi", "schemathesis.transport.asgi",
                     "schemathesis.python._constants.orchestrator",
                     "schemathesis.generation.dictionaries",
                     "schemathesis.generation.body_overrides", "pydantic.v1", "pyrate_limiter"),
}
UNICODE_CODECS = ("utf-8", "ascii")  # the codecs schemathesis asks hypothesis's text for
def unicode_tables(home: str) -> None:
    """Load (or build, and write under `home`) hypothesis's Unicode tables, kept in memory.

    A text strategy with a codec (schemathesis draws "utf-8" bodies and "ascii" headers) scans
    all of Unicode on first use unless the tables are on disk under hypothesis's home folder:
    about 0.9 s of job_api's first fuzz check in every run, since each run's folder is new. The
    grader builds them once (`--warm`), outside any sandbox, and copies them where the server
    reads them before any child exists; every fork then inherits them in memory.
    """
    import warnings

    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.internal import charmap

    set_hypothesis_home_dir(home)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "slow code in plugin": not a plugin here
            charmap.categories()
            for codec in UNICODE_CODECS:
                charmap.intervals_from_codec(codec)
    finally:
        set_hypothesis_home_dir(None)


def local_constants() -> None:
    """Let hypothesis look over every module loaded so far for its program's constants (which it
    mixes into what it draws), as it does on a child's first draw: each child then looks only at
    the modules it imported itself, not again at the server's thousand (a quarter of a small
    grading's child). The constants come out the same: what it finds is a union."""
    from hypothesis.internal.conjecture import providers

    providers._get_local_constants()


def preloads(libraries: frozenset[str] | None = None) -> tuple[str, ...]:
    """The modules the fork server loads for exercises importing `libraries` (None: all)."""
    names = [*_COMMON]
    for library, modules in LIBRARIES.items():
        if libraries is None or library in libraries:
            names.extend(modules)
    return tuple(names)


def load(names: tuple[str, ...]) -> None:
    """Import `names`, then pytest's own plugins, as `_pytest.config` lists them."""
    for name in names:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    config = sys.modules.get("_pytest.config")
    for name in getattr(config, "default_plugins", ()):
        with contextlib.suppress(Exception):
            importlib.import_module(f"_pytest.{name}")


def main() -> None:
    if sys.argv[1] == "--compile":  # import every preload once, writing its bytecode
        load(preloads())
    elif sys.argv[1] == "--warm":  # --warm HOME: build the Unicode tables there
        unicode_tables(sys.argv[2])


if __name__ == "__main__":
    main()
