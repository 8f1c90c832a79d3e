"""Benchmarks of the online exercises: token_bucket, micro_batcher, job_api."""

from __future__ import annotations

import json
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict, Field

from bench.core import Context, Row, best_of, human_bytes, peak_memory, ratio_note, solution

# ---- token_bucket -------------------------------------------------------------------------------


def token_bucket(ctx: Context, calls: int = 200_000,
                 keys: tuple[int, int] = (10_000, 1_000_000)) -> list[Row]:
    ref = solution("token_bucket")
    ctx.progress(f"token_bucket: {calls:,} uncontended try_acquire calls")
    acquire = ref.TokenBucket(capacity=1e12, rate=1e12).try_acquire
    lock, monotonic = threading.Lock(), time.monotonic

    def bucket() -> None:
        for _ in range(calls):
            acquire()

    def lock_and_clock() -> None:
        for _ in range(calls):
            with lock:
                monotonic()

    took, base = best_of(5, bucket, lock_and_clock)
    rows = [Row("token_bucket", "try_acquire / (with lock: + time.monotonic())", took / base, "x",
                "<= 3x", 3.0, ratio_note(took / calls, base / calls, "call", "lock+clock"))]

    ctx.progress(f"token_bucket: KeyedLimiter under {keys[1]:,} new keys")
    names = [f"tenant-{i}" for i in range(keys[1])]

    def stream(count: int, held: list[int]) -> Callable[[], object]:
        # Each key is used once; a fake clock moves 1 s per call, so a bucket (capacity 1,
        # 1 token/s) is full again by the next call and may be forgotten.
        def run() -> None:
            now = [0.0]

            def clock() -> float:
                now[0] += 1.0
                return now[0]

            limiter = ref.KeyedLimiter(capacity=1, rate=1, clock=clock)
            acquire = limiter.try_acquire
            for i in range(count):
                acquire(names[i])
                if i % 1000 == 0:
                    held.append(len(limiter))
            held.append(len(limiter))
        return run

    # tracemalloc slows every allocation ~3x: bytes are traced up to keys[0] * 10 new keys,
    # and the buckets held are counted (every 1,000 calls) over all keys[1] of them.
    held: list[int] = []
    small = peak_memory(stream(keys[0], []))
    large = peak_memory(stream(keys[0] * 10, []))
    stream(keys[1], held)()
    rows += [
        Row("token_bucket", f"KeyedLimiter peak memory, {keys[0] * 10:,} / {keys[0]:,} new keys",
            large / small, "x", "<= 1.2 (flat)", 1.2,
            f"{human_bytes(large)} / {human_bytes(small)}"),
        Row("token_bucket", f"KeyedLimiter buckets held, most over {keys[1]:,} new keys",
            max(held), "", "<= 2 (flat)", 2.0, "each bucket is full again when the next key comes"),
    ]
    return rows


# ---- micro_batcher ------------------------------------------------------------------------------


async def _noop(items: list[int]) -> list[int]:
    return items


def _run(fn: Callable[[], Awaitable[None]]) -> Callable[[], object]:
    return lambda: anyio.run(fn)


def micro_batcher(ctx: Context, items: int = 100_000, batch: int = 100) -> list[Row]:
    ref = solution("micro_batcher")
    ctx.progress(f"micro_batcher: {items:,} items in batches of {batch}")
    per_caller = items // batch  # `batch` callers, each submitting one item at a time

    async def through_batcher() -> None:
        async def caller(batcher: Any) -> None:
            for i in range(per_caller):
                await batcher.submit(i)

        batcher = ref.MicroBatcher(_noop, max_batch_size=batch, max_wait=0.05)
        async with batcher, anyio.create_task_group() as tg:
            for _ in range(batch):
                tg.start_soon(caller, batcher)

    async def direct() -> None:
        for _ in range(per_caller):
            await _noop(list(range(batch)))

    async def checkpoints() -> None:
        for _ in range(items):
            await anyio.lowlevel.checkpoint()

    took, base, point = best_of(2, _run(through_batcher), _run(direct), _run(checkpoints))
    overhead, checkpoint = (took - base) / items, point / items
    return [
        Row("micro_batcher", f"{items:,} items: batcher / direct process calls", took / base, "x",
            "report", None, ratio_note(took, base, "batcher", "direct")),
        Row("micro_batcher", "per-item overhead / one anyio checkpoint", overhead / checkpoint,
            "x", "<= 5x", 5.0, ratio_note(overhead, checkpoint, "overhead", "checkpoint")),
    ]


# ---- job_api ------------------------------------------------------------------------------------


def _seeded(path: Path, jobs: int, module: Any) -> Any:
    """An app over a file database holding `jobs` jobs, seeded in bulk through its own schema.

    Submitting 100k jobs through the API would cost minutes; the rows are what a POST writes.
    """
    module.create_app(str(path))  # creates the schema and the cursor secret
    db = sqlite3.connect(path)
    command = json.dumps(["python", "train.py", "--epochs", "3"])
    rows = ((f"job-{i}", command, 1 + i % 8, "queued", 1.7e9 + i, 1.7e9 + i) for i in range(jobs))
    with db:
        db.executemany("INSERT INTO jobs (name, command, gpus, state, created_at, updated_at)"
                       " VALUES (?, ?, ?, ?, ?, ?)", rows)
    db.close()
    return module.create_app(str(path))


class _JobIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    command: list[str] = Field(min_length=1)
    gpus: int = Field(ge=1, le=64)


def _bare_app() -> FastAPI:
    """The floor for a POST: the same body model, validated and echoed, nothing stored."""
    app = FastAPI()

    @app.post("/jobs", status_code=201)
    def submit(spec: _JobIn) -> dict[str, Any]:
        return {"id": 1, **spec.model_dump(), "state": "queued"}

    return app


def _page_latency(client: TestClient, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        first = client.get("/jobs", params={"limit": 20})
        second = client.get("/jobs", params={"limit": 20, "cursor": first.json()["next_cursor"]})
        out.append(time.perf_counter() - start)
        assert second.status_code == 200, second.text
    return out


def job_api(ctx: Context, many: int = 100_000, few: int = 1_000, posts: int = 300) -> list[Row]:
    ref = solution("job_api")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        ctx.progress(f"job_api: seeding {few:,} and {many:,} jobs")
        apps = [_seeded(Path(tmp) / f"jobs-{n}.db", n, ref) for n in (few, many)]
        with TestClient(apps[0]) as small, TestClient(apps[1]) as large:
            ctx.progress("job_api: list-page latency")
            small_t: list[float] = []
            large_t: list[float] = []
            for _ in range(10):  # interleaved rounds: load hits both alike
                small_t += _page_latency(small, 10)
                large_t += _page_latency(large, 10)
            lo, hi = min(small_t), min(large_t)
            rows.append(Row("job_api", f"two list pages at {many:,} / {few:,} jobs", hi / lo, "x",
                            "<= 1.5x", 1.5, ratio_note(hi, lo, "many", "few")
                            + f" (medians {statistics.median(large_t) * 1e3:.1f} /"
                            f" {statistics.median(small_t) * 1e3:.1f} ms)"))

        ctx.progress(f"job_api: {posts} POSTs vs a bare FastAPI endpoint")
        body = {"name": "llama-ft", "command": ["python", "train.py"], "gpus": 8}
        counter = iter(range(10**9))
        # In memory, as the hidden checks run it: a file database would time the disk's fsync.
        with TestClient(ref.create_app()) as api, \
                TestClient(_bare_app()) as bare:

            def post(client: TestClient) -> Callable[[], object]:
                def run() -> None:
                    for _ in range(posts):
                        key = {"Idempotency-Key": f"k-{next(counter)}"}
                        assert client.post("/jobs", json=body, headers=key).status_code == 201
                return run

            took, base = best_of(3, post(api), post(bare))
        rows.append(Row("job_api", "POST time: job API / bare FastAPI endpoint", took / base, "x",
                        "report", None,
                        f"{posts / took:,.0f} / {posts / base:,.0f} requests/s (API / bare)"))
    return rows
