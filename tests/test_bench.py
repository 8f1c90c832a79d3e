"""The benchmark program's own behaviour: usage errors, the table, the plot (no timing here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import plot
from bench.__main__ import _plot, main, table
from bench.core import Context, Panel, Row, Series

needs_matplotlib = pytest.mark.skipif(
    not plot.available(),
    reason="matplotlib is in the `bench` dependency group: uv run --group bench pytest")


def _panel() -> Panel:
    return Panel("title", (Series("floor", [1_000, 2_000, 4_000], [1e-3, 2e-3, 4e-3]),
                           Series("reference", [1_000, 2_000, 4_000], [2e-3, 4e-3, 8e-3]),
                           Series("naive", [1_000, 2_000], [0.05, 0.2])), "intervals")


def test_an_unknown_name_exits_2_naming_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["interval_unoin"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "interval_union" in err


def test_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    assert "uv run --group bench python -m bench interval_union" in capsys.readouterr().out


def test_each_row_shows_its_figure_target_and_verdict() -> None:
    rows = [Row("billing", "bill / loop", 2.5, "x", "<= 2x", 2.0, "bill 1 s / loop 0.4 s"),
            Row("job_api", "POST", 4.0, "x", "report")]
    lines = table(rows).splitlines()
    assert "2.50x" in lines[2] and "<= 2x" in lines[2] and "MISSED" in lines[2]
    assert "report" in lines[3]


@needs_matplotlib
def test_the_chart_has_log_axes_units_and_a_legend_on_every_panel() -> None:
    fig = plot.chart([_panel(), _panel()])
    assert type(fig.canvas).__name__ == "FigureCanvasAgg"
    assert len(fig.axes) == 2
    for ax in fig.axes:
        fig.canvas.draw()  # tick labels are made when drawn
        assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
        assert "intervals" in ax.get_xlabel() and ax.get_title() == "title"
        assert any(label.get_text().endswith("ms") for label in ax.yaxis.get_ticklabels())
        legend = ax.get_legend()
        assert legend is not None
        assert [t.get_text() for t in legend.get_texts()] == ["floor", "reference", "naive"]


@needs_matplotlib
def test_the_chart_is_written_as_a_png(tmp_path: Path) -> None:
    path = plot.write_chart([_panel()], tmp_path / "out" / "chart.png", dpi=40)
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


@needs_matplotlib
def test_the_run_says_where_the_plot_went(tmp_path: Path) -> None:
    ctx = Context(progress=lambda _: None, panels=[_panel()])
    assert _plot(ctx, tmp_path / "bench.png") == f"plot: {tmp_path / 'bench.png'}"
    assert (tmp_path / "bench.png").is_file()


def test_without_matplotlib_the_run_says_how_to_get_the_plot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plot, "available", lambda: False)
    line = _plot(Context(progress=lambda _: None, panels=[_panel()]), tmp_path / "bench.png")
    assert line is not None and "\n" not in line
    assert "uv run --group bench python -m bench" in line
    assert not (tmp_path / "bench.png").exists()


def test_a_run_without_panels_draws_nothing(tmp_path: Path) -> None:
    assert _plot(Context(progress=lambda _: None), tmp_path / "bench.png") is None
    assert not tmp_path.joinpath("bench.png").exists()
