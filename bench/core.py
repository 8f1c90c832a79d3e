"""What every benchmark shares: a result row, interleaved best-of timing, peak memory, loading.

Every figure is a ratio to a baseline measured in the same run (or a growth rate), and every
time is the best of several repetitions with the candidates interleaved, so a burst of load on
a shared machine hits the measured code and its baseline alike.
"""

from __future__ import annotations

import gc
import importlib.util
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from grading import catalog, mutants

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"


@dataclass(frozen=True)
class Row:
    """One measured figure beside its target.

    `limit` is the largest value that meets the target; None for a figure that is only
    reported. `note` says what the ratio is made of (absolute times, for the reader only).
    """

    exercise: str
    measure: str
    value: float
    unit: str
    target: str
    limit: float | None = None
    note: str = ""

    @property
    def met(self) -> bool | None:
        return None if self.limit is None else self.value <= self.limit

    @property
    def verdict(self) -> str:
        return {None: "report", True: "met", False: "MISSED"}[self.met]


@dataclass
class Series:
    """One line of the plot: the best time in seconds at each input size."""

    label: str
    sizes: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Panel:
    """One chart of the plot (`bench.plot`): time vs input size, both on log scales.

    `series` holds the floor first, then the reference, then the naive version(s); `size_unit`
    names what the input size counts (the x axis's unit).
    """

    title: str
    series: tuple[Series, ...]
    size_unit: str = "items"


def best_of(repeat: int, *fns: Callable[[], object]) -> list[float]:
    """The best wall time of each fn over `repeat` rounds, the fns interleaved in each round.

    The cyclic garbage collector is paused while a fn runs (as `timeit` does) and run between
    fns, so one fn's garbage is not collected on another's clock.
    """
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            gc.collect()
            gc.disable()
            try:
                start = time.perf_counter()
                fn()
                best[i] = min(best[i], time.perf_counter() - start)
            finally:
                gc.enable()
    return best


def per_call(fn: Callable[[], object], calls: int) -> Callable[[], object]:
    """A fn that calls `fn` `calls` times (the loop costs the same for every candidate)."""

    def loop() -> None:
        for _ in range(calls):
            fn()

    return loop


def peak_memory(fn: Callable[[], object]) -> int:
    """Peak bytes allocated by Python while `fn` runs (tracemalloc), beyond what was live."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def _load(name: str, path: Path, as_name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(as_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {name} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[as_name] = module  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(module)
    return module


def solution(name: str) -> ModuleType:
    """The reference solution `solutions/NAME.py`, imported under its module name `NAME`."""
    if name in sys.modules and getattr(sys.modules[name], "__file__", "") == str(
        SOLUTIONS / f"{name}.py"
    ):
        return sys.modules[name]
    return _load(name, SOLUTIONS / f"{name}.py", name)


def mutant(name: str, bug: str) -> ModuleType:
    """The classic wrong answer `tests/mutants/NAME/BUG.diff`, applied to the reference (the
    plot's naive version)."""
    path = mutants.materialize(mutants.find(catalog.Exercise(name), bug))
    return _load(name, path, f"_naive_{name}_{bug}")


def ratio_note(top: float, bottom: float, top_name: str, bottom_name: str) -> str:
    """`a 1.23 s / b 0.45 s`: the absolute times a ratio was made of."""
    return f"{top_name} {_human(top)} / {bottom_name} {_human(bottom)}"


def _human(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.2f} µs"


def human_bytes(size: float) -> str:
    return f"{size / 1e6:.2f} MB" if size >= 1e5 else f"{size / 1e3:.1f} kB"


def growth(sizes: Sequence[int], seconds: Sequence[float]) -> float:
    """time(largest) / time(smallest) divided by the size ratio: 1.0 is linear."""
    return (seconds[-1] / seconds[0]) / (sizes[-1] / sizes[0])


Progress = Callable[[str], None]


@dataclass
class Context:
    """What a benchmark reports to besides its rows: the progress line and the plot."""

    progress: Progress
    panels: list[Panel] = field(default_factory=list)
