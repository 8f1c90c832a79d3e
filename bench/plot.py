"""The benchmark's chart: one log-log panel of time against input size per `Panel`.

matplotlib is in the `bench` dependency group (`uv run --group bench python -m bench`), not in
the candidates' environment: `available()` says whether it is installed, and this module imports
it only inside `write_chart`. The figure is drawn on matplotlib's Agg canvas (no display, and no
pyplot state shared with anything else in the process).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from bench.core import Panel

if TYPE_CHECKING:
    from matplotlib.figure import Figure

INSTALL_HINT = "uv run --group bench python -m bench"

# Per role: the floor (grey, dashed), the reference (blue), the naive version(s) (red, orange).
_STYLES = (
    {"color": "0.45", "linestyle": "--", "marker": "s"},
    {"color": "tab:blue", "linestyle": "-", "marker": "o"},
    {"color": "tab:red", "linestyle": "-", "marker": "^"},
    {"color": "tab:orange", "linestyle": "-", "marker": "v"},
)


def available() -> bool:
    """Whether matplotlib is installed (the `bench` dependency group)."""
    return importlib.util.find_spec("matplotlib") is not None


def _size(n: float, _pos: object = None) -> str:
    """An input size as a tick label: 125k, 1M, 2,000."""
    if n >= 1e6 and n % 1e5 == 0:
        return f"{n / 1e6:g}M"
    if n >= 1e5 and n % 1e3 == 0:
        return f"{n / 1e3:g}k"
    return f"{n:,.0f}"


def chart(panels: list[Panel], caption: str = "") -> Figure:
    """`panels` side by side on one figure, on an Agg canvas, `caption` under them.

    Each panel plots seconds (log) against input size (log) for its series: the floor first,
    then the reference, then the naive version(s), with the panel's size unit on the x axis and
    the legend under it (the lines keep the whole plot area).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import (
        EngFormatter,
        FixedLocator,
        FuncFormatter,
        LogLocator,
        NullLocator,
    )

    fig = Figure(figsize=(6.4 * len(panels), 5.4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels, strict=True):
        for k, series in enumerate(panel.series):
            ax.plot(series.sizes, series.seconds, label=series.label,
                    **_STYLES[min(k, len(_STYLES) - 1)], linewidth=2, markersize=6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = sorted({n for series in panel.series for n in series.sizes})
        ax.xaxis.set_major_locator(FixedLocator(sizes))  # a decade or less: tick what was run
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(_size))
        times = [t for series in panel.series for t in series.seconds]
        if max(times) < 100 * min(times):  # under two decades: label 1, 2 and 5 of each
            ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(EngFormatter(unit="s"))  # 10 ms, 1 s
        ax.set_xlabel(f"input size ({panel.size_unit}, log scale)")
        ax.set_ylabel("time, best of runs (log scale)")
        ax.set_title(panel.title)
        ax.grid(True, which="major", color="0.88")
        ax.grid(True, which="minor", axis="y", color="0.95")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize="small",
                  frameon=False)
    if caption:
        fig.supxlabel(caption, fontsize="small", color="0.35")
    return fig


def write_chart(panels: list[Panel], path: Path, *, caption: str = "", dpi: int = 150) -> Path:
    """Draw `panels` (see `chart`) into the PNG at `path`, folders made as needed; returns it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    chart(panels, caption).savefig(path, dpi=dpi)
    return path
