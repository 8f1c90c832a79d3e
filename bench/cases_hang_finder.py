"""Benchmark of hang_finder: scanning a folder of flight-recorder dumps against parsing them."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from bench.core import Context, Row, best_of, growth, ratio_note, solution

_FRAMES = [{"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py",
            "line": 2696}, {"name": "train_step", "filename": "train.py", "line": 118}]


def _dump(rank: int, world: int, entries: int, tp: int = 8) -> dict[str, Any]:
    """One rank of a healthy job: tp and dp groups of 8, `entries` entries in its buffer."""
    block = rank - rank % 64
    groups = {"1": list(range(rank - rank % tp, rank - rank % tp + tp)),
              "2": list(range(block + rank % tp, min(block + 64, world), tp))}
    seqs = {"1": 0, "2": 0}
    rows = []
    for i in range(entries):
        pg = "1" if i % 3 < 2 else "2"
        seqs[pg] += 1
        t = 1_724_779_239_936_775_119 + i * 1_000_000
        rows.append({
            "record_id": i, "pg_id": int(pg), "process_group": [pg, "tp" if pg == "1" else "dp"],
            "collective_seq_id": seqs[pg], "p2p_seq_id": 0, "op_id": i + 1,
            "profiling_name": "nccl:all_reduce", "time_created_ns": t,
            "input_sizes": [[4096, 8192]], "input_dtypes": ["BFloat16"],
            "output_sizes": [[4096, 8192]], "output_dtypes": ["BFloat16"], "state": "completed",
            "time_discovered_started_ns": None, "time_discovered_completed_ns": t + 39_036_605,
            "retired": True, "timeout_ms": 600000, "is_p2p": False, "frames": _FRAMES})
    return {"version": "2.9",
            "pg_config": {pg: {"name": pg, "desc": "tp" if pg == "1" else "dp",
                               "ranks": json.dumps(r)} for pg, r in groups.items()},
            "pg_status": {pg: {"last_enqueued_collective": s, "last_started_collective": -1,
                               "last_completed_collective": s} for pg, s in seqs.items()},
            "entries": rows}


def _write(folder: Path, world: int, entries: int) -> None:
    folder.mkdir()
    for r in range(world):
        text = json.dumps(_dump(r, world, entries))
        (folder / f"nccl_trace_rank_{r}.json").write_text(text, encoding="utf-8")


def hang_finder(ctx: Context, ranks: int = 64, entries: int = 2000) -> list[Row]:
    """`scan` of `ranks` dumps of `entries` entries each, against `json.load` of the same files;
    and the growth of `scan` time with 4x the ranks (a quarter of the entries, to stay quick).

    4,096 ranks x 2,000 entries (about 5 GB of JSON) is the production size; 64 x 2,000 is the
    same work per entry at a size a benchmark run can write and read three times.
    """
    ref = solution("hang_finder")
    with tempfile.TemporaryDirectory(prefix="bench-hang-") as tmp:
        ctx.progress(f"hang_finder: writing {ranks} dumps of {entries:,} entries")
        big = Path(tmp) / "big"
        _write(big, ranks, entries)
        files = sorted(big.iterdir())

        def parse_only() -> None:
            for path in files:
                with path.open(encoding="utf-8") as f:
                    json.load(f)

        ctx.progress("hang_finder: scan vs json.load")
        took, floor = best_of(3, lambda: ref.scan(big), parse_only)
        small_dir, large_dir = Path(tmp) / "small", Path(tmp) / "large"
        small, large = ranks // 2, ranks * 2
        _write(small_dir, small, entries // 4)
        _write(large_dir, large, entries // 4)
        ctx.progress(f"hang_finder: scan at {small} vs {large} ranks")
        t_small, t_large = best_of(3, lambda: ref.scan(small_dir), lambda: ref.scan(large_dir))
    return [
        Row("hang_finder", f"scan / json.load, {ranks} dumps x {entries:,} entries",
            took / floor, "x", "<= 2x", 2.0, ratio_note(took, floor, "scan", "json.load")),
        Row("hang_finder", f"scan time({large} ranks) / time({small}) per rank",
            growth([small, large], [t_small, t_large]), "x", "<= 1.3 (linear)", 1.3,
            ratio_note(t_large, t_small, f"{large} ranks", f"{small} ranks")),
    ]
