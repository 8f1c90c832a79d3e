"""An idempotent job-submission API: FastAPI over SQLite from the standard library.

`create_app(database, clock=...)` builds the app; `app` is one built on `:memory:` so that
`uvicorn job_api:app` serves it. Errors are `application/problem+json` (RFC 9457).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Header, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["app", "create_app"]

_State = Literal["queued", "running", "cancelling", "succeeded", "failed", "cancelled"]
_Target = Literal["running", "succeeded", "failed", "cancelled"]
_JobId = Annotated[int, Path(ge=1, le=2**63 - 1)]  # SQLite's INTEGER range: no overflow 500s

_KEY_TTL = 24 * 3600.0
_MAX_KEY = 255
_MAX_BODY = 64 * 1024
_P = "/problems/"  # problem `type` URIs are relative references under this prefix
# The state machine: every allowed (from, to); terminal states have no entry.
_ALLOWED: dict[str, tuple[str, ...]] = {
    "queued": ("running", "cancelled"),
    "running": ("succeeded", "failed", "cancelling"),
    "cancelling": ("cancelled", "succeeded", "failed"),
}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, command TEXT NOT NULL,
    gpus INTEGER NOT NULL, state TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_newest ON jobs (created_at, id);
CREATE INDEX IF NOT EXISTS jobs_state_newest ON jobs (state, created_at, id);
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, status INTEGER NOT NULL,
    body TEXT NOT NULL, location TEXT NOT NULL, stored_at REAL NOT NULL);
"""


def _unicode(text: str) -> str:
    """`text` if it is Unicode text; a lone surrogate (JSON's `"\\udfff"`) is a ValueError."""
    text.encode()  # UnicodeEncodeError is a ValueError: a 422 here, not a 500 when stored
    return text


_Text = Annotated[str, AfterValidator(_unicode)]


class _JobIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    name: _Text = Field(min_length=1, max_length=200)
    command: list[_Text] = Field(min_length=1)
    gpus: int = Field(ge=1, le=64)


class _Job(BaseModel):
    id: int
    name: str
    command: list[str]
    gpus: int
    state: _State
    created_at: float
    updated_at: float


class _Page(BaseModel):
    items: list[_Job]
    next_cursor: str | None


class _TransitionIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    to: _Target


class _Problem(BaseModel):
    type: str
    title: str
    status: int
    detail: str


class _ProblemError(Exception):
    """Raised by a handler; rendered as an `application/problem+json` response."""

    def __init__(self, status: int, kind: str, title: str, detail: str, **headers: str) -> None:
        super().__init__(detail)
        self.status, self.kind, self.title, self.detail = status, kind, title, detail
        self.headers = headers


def _problem(status: int, kind: str, title: str, detail: str, headers: Any = None) -> JSONResponse:
    body = {"type": _P + kind, "title": title, "status": status, "detail": detail}
    return JSONResponse(body, status, headers, media_type="application/problem+json")


_PROBLEM_SCHEMA = _Problem.model_json_schema()


def _doc(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the problem responses an operation can give."""
    content = {"application/problem+json": {"schema": _PROBLEM_SCHEMA}}
    return {c: {"content": content, "description": "Problem"} for c in codes}


class _BodyLimit:
    """ASGI middleware: a request body over `_MAX_BODY` bytes is answered 413 unread."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        chunks: list[bytes] = []
        size, more = 0, True
        while more and size <= _MAX_BODY:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
        if size > _MAX_BODY:
            detail = f"request body must be at most {_MAX_BODY} bytes"
            response = _problem(413, "too-large", "Payload too large", detail)
            return await response(scope, receive, send)
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


class _Store:
    """The jobs, the idempotency records and the cursor secret, in one SQLite database."""

    def __init__(self, database: str) -> None:
        # Invariants:
        # - every use of `_db` holds `_lock`: one connection, shared by FastAPI's worker threads;
        # - a job and the idempotency record that created it commit in one transaction, so a key
        #   is absent or maps to a complete stored response, never to a request in flight;
        # - a request that fails rolls back: it leaves no job and no key behind;
        # - `secret` never changes once written, so cursors outlive a restart.
        self._db = sqlite3.connect(database, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        self._db.executescript(_SCHEMA)
        with self.transaction() as db:
            secret = secrets.token_bytes(32)
            db.execute("INSERT OR IGNORE INTO meta VALUES ('secret', ?)", (secret,))
            self.secret: bytes = db.execute("SELECT value FROM meta").fetchone()[0]

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")


def _canonical(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal documents give equal strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    if _b64(raw) != text:  # reject non-canonical spellings of the same bytes
        raise ValueError("non-canonical base64")
    return raw


def _sign(secret: bytes, payload: bytes) -> bytes:
    return hmac.new(secret, payload, hashlib.sha256).digest()[:16]


def _encode_cursor(secret: bytes, created_at: float, job_id: int) -> str:
    """A signed keyset position: the page after it starts strictly after (created_at, id)."""
    payload = _canonical([created_at, job_id]).encode()
    return f"{_b64(payload)}.{_b64(_sign(secret, payload))}"


def _decode_cursor(secret: bytes, cursor: str) -> tuple[float, int]:
    try:
        head, _, tail = cursor.partition(".")
        payload = _unb64(head)
        if hmac.compare_digest(_unb64(tail), _sign(secret, payload)):
            created_at, job_id = json.loads(payload)
            if isinstance(created_at, int | float) and isinstance(job_id, int):
                return float(created_at), job_id
    except ValueError:  # binascii.Error and json.JSONDecodeError are ValueErrors
        pass
    raise _ProblemError(400, "bad-cursor", "Invalid cursor", "cursor is not one this API issued")


def _job(row: sqlite3.Row) -> dict[str, Any]:
    job = dict(row)
    job["command"] = json.loads(job["command"])
    return job


def _fetch(db: sqlite3.Connection, job_id: int) -> dict[str, Any]:
    row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
    if row is None:
        raise _ProblemError(404, "not-found", "No such job", f"job {job_id} does not exist")
    return _job(row)


def _move(db: sqlite3.Connection, job: dict[str, Any], to: str, now: float) -> dict[str, Any]:
    assert to in _ALLOWED.get(job["state"], ()), (job["state"], to)
    db.execute("UPDATE jobs SET state = ?, updated_at = ? WHERE id = ?", (to, now, job["id"]))
    return job | {"state": to, "updated_at": now}


def _submit(db: sqlite3.Connection, key: str, spec: _JobIn, now: float) -> Response:
    fingerprint = hashlib.sha256(_canonical(spec.model_dump()).encode()).hexdigest()
    row = db.execute("SELECT * FROM idempotency WHERE key = ?", (key,)).fetchone()
    if row is not None and now - row["stored_at"] >= _KEY_TTL:
        db.execute("DELETE FROM idempotency WHERE key = ?", (key,))
        row = None
    if row is not None:
        if row["fingerprint"] != fingerprint:
            detail = "Idempotency-Key was already used with a different request body"
            raise _ProblemError(422, "idempotency-key-reused", "Key reused", detail)
        headers = {"Location": row["location"], "Idempotent-Replayed": "true"}
        return Response(row["body"], row["status"], headers, "application/json")
    job_id = db.execute(
        "INSERT INTO jobs (name, command, gpus, state, created_at, updated_at)"
        " VALUES (?, ?, ?, 'queued', ?, ?)",
        (spec.name, json.dumps(spec.command), spec.gpus, now, now),
    ).lastrowid
    body, location = json.dumps(_fetch(db, job_id or 0)), f"/jobs/{job_id}"
    # The record is written in the job's transaction: both exist, or neither does.
    db.execute(
        "INSERT INTO idempotency VALUES (?, ?, 201, ?, ?, ?)",
        (key, fingerprint, body, location, now),
    )
    return Response(body, 201, {"Location": location}, "application/json")


def _page(db: sqlite3.Connection, secret: bytes, limit: int, cursor: str | None,
          state: str | None) -> dict[str, Any]:
    where, args = ["1"], list[Any]()
    if state is not None:
        where.append("state = ?")
        args.append(state)
    sql = "SELECT * FROM jobs WHERE {} ORDER BY created_at DESC, id DESC LIMIT ?"
    if cursor is None:
        rows = db.execute(sql.format(" AND ".join(where)), [*args, limit + 1]).fetchall()
    else:
        # Two bounded index searches: the rest of the cursor's timestamp, then older ones. The
        # row value `(created_at, id) < (?, ?)` narrows the index on created_at alone (SQLite
        # 3.40), so a deep page walks every job sharing one timestamp (a bulk submission).
        created_at, job_id = _decode_cursor(secret, cursor)
        same = " AND ".join([*where, "created_at = ?", "id < ?"])
        rows = db.execute(sql.format(same), [*args, created_at, job_id, limit + 1]).fetchall()
        if len(rows) <= limit:
            older = " AND ".join([*where, "created_at < ?"])
            rows += db.execute(sql.format(older), [*args, created_at, limit + 1 - len(rows)])
    items = [_job(r) for r in rows[:limit]]
    # The extra row decides next_cursor: null exactly when nothing follows.
    last = items[-1] if len(rows) > limit else None
    next_cursor = last and _encode_cursor(secret, last["created_at"], last["id"])
    return {"items": items, "next_cursor": next_cursor}


def _cancel(db: sqlite3.Connection, job_id: int, now: float) -> dict[str, Any]:
    job = _fetch(db, job_id)
    if job["state"] in ("succeeded", "failed"):
        detail = f"job {job_id} already {job['state']}; it cannot be cancelled"
        raise _ProblemError(409, "conflict", "Job finished", detail)
    if job["state"] == "queued":
        return _move(db, job, "cancelled", now)
    if job["state"] == "running":
        return _move(db, job, "cancelling", now)
    return job  # cancelling or cancelled: already on its way, nothing changes


def _transition(db: sqlite3.Connection, job_id: int, to: str, now: float) -> dict[str, Any]:
    job = _fetch(db, job_id)
    allowed = _ALLOWED.get(job["state"], ())
    if to not in allowed:
        detail = (f"job {job_id} cannot go from {job['state']} to {to};"
                  f" allowed: {', '.join(allowed) or 'none, the state is terminal'}")
        raise _ProblemError(409, "conflict", "Transition not allowed", detail)
    return _move(db, job, to, now)


def _add_problem_handlers(app: FastAPI) -> None:
    """Every error leaves as application/problem+json; a crash is a 500 that stored nothing."""

    @app.exception_handler(_ProblemError)
    async def _on_problem(request: Request, exc: _ProblemError) -> JSONResponse:
        return _problem(exc.status, exc.kind, exc.title, exc.detail, exc.headers or None)

    @app.exception_handler(RequestValidationError)
    async def _on_invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        return _problem(422, "validation", "Invalid request", "; ".join(errors))

    @app.exception_handler(HTTPException)
    async def _on_http(request: Request, exc: HTTPException) -> JSONResponse:
        return _problem(exc.status_code, "http", str(exc.detail), str(exc.detail), exc.headers)

    @app.exception_handler(Exception)
    async def _on_crash(request: Request, exc: Exception) -> JSONResponse:
        return _problem(500, "internal", "Internal error", "the request failed; nothing was stored")


def create_app(database: str = ":memory:", *, clock: Callable[[], float] = time.time) -> FastAPI:
    """Build the jobs API on the SQLite `database` (a path, or `:memory:`).

    `clock()` gives seconds since the epoch: it stamps `created_at` / `updated_at` and ages
    idempotency keys (kept 24 hours). A file database survives restarts: jobs, keys and the
    cursor-signing secret are all in it. Handlers are plain functions: FastAPI runs them on
    worker threads, so every read-decide-write happens inside one store transaction.
    """
    store = _Store(database)
    app = FastAPI(title="Jobs", version="1.0.0")
    app.add_middleware(_BodyLimit)
    _add_problem_handlers(app)

    @app.post("/jobs", status_code=201, response_model=_Job, responses=_doc(400, 409, 413, 422))
    def submit(spec: _JobIn, idempotency_key: Annotated[str | None, Header()] = None) -> Response:
        """Submit a job; a retry with the same Idempotency-Key replays the first answer."""
        key = (idempotency_key or "").strip(" \t")  # as an HTTP server strips it: "  " is empty
        if not 1 <= len(key) <= _MAX_KEY:
            detail = f"header Idempotency-Key must be 1..{_MAX_KEY} characters, got {len(key)}"
            raise _ProblemError(400, "idempotency-key", "Bad Idempotency-Key", detail)
        now = clock()  # stamped on arrival, before any state is touched
        with store.transaction() as db:
            return _submit(db, key, spec, now)

    @app.get("/jobs/{job_id}", response_model=_Job, responses=_doc(404, 422))
    def get_job(job_id: _JobId) -> dict[str, Any]:
        """One job."""
        with store.transaction() as db:
            return _fetch(db, job_id)

    @app.get("/jobs", response_model=_Page, responses=_doc(400, 422))
    def list_jobs(
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
        cursor: str | None = None,
        state: _State | None = None,
    ) -> dict[str, Any]:
        """Jobs newest first, by keyset: (created_at, id) descending, strictly after the cursor."""
        with store.transaction() as db:
            return _page(db, store.secret, limit, cursor, state)

    @app.post("/jobs/{job_id}/cancel", status_code=202, response_model=_Job,
              responses=_doc(404, 409, 422))
    def cancel(job_id: _JobId) -> dict[str, Any]:
        """Request cancellation: queued stops now, running stops later; repeats are no-ops."""
        now = clock()
        with store.transaction() as db:
            return _cancel(db, job_id, now)

    @app.post("/jobs/{job_id}/transitions", response_model=_Job,
              responses=_doc(400, 404, 409, 413, 422))  # 400: a body that is not UTF-8
    def transition(job_id: _JobId, move: _TransitionIn) -> dict[str, Any]:
        """The worker reports progress; only the state machine's edges are accepted."""
        now = clock()
        with store.transaction() as db:
            return _transition(db, job_id, move.to, now)

    return app


app = create_app()
