"""The benchmark program's own behaviour: usage errors, the table, the PNG (no timing here)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from bench.__main__ import main, table
from bench.core import Panel, Row, Series
from bench.png import write_chart


def test_an_unknown_name_exits_2_naming_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["interval_unoin"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "interval_union" in err


def test_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    assert "uv run python -m bench interval_union" in capsys.readouterr().out


def test_each_row_shows_its_figure_target_and_verdict() -> None:
    rows = [Row("billing", "bill / loop", 2.5, "x", "<= 2x", 2.0, "bill 1 s / loop 0.4 s"),
            Row("job_api", "POST", 4.0, "x", "report")]
    lines = table(rows).splitlines()
    assert "2.50x" in lines[2] and "<= 2x" in lines[2] and "MISSED" in lines[2]
    assert "report" in lines[3]


def test_the_chart_is_a_valid_png(tmp_path: Path) -> None:
    series = (Series("base", [1, 2, 4], [1.0, 2.0, 4.0]), Series("ref", [1, 2, 4], [2.0, 4, 8]),
              Series("naive", [1, 2], [50.0, 200.0]))
    path = write_chart([Panel("title", series)], tmp_path / "out" / "chart.png")
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", data[16:24])
    (size,) = struct.unpack(">I", data[33:37])
    assert data[37:41] == b"IDAT"
    rows = zlib.decompress(data[41:41 + size])
    assert len(rows) == height * (1 + 3 * width)
