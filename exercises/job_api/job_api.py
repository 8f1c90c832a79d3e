"""An idempotent job-submission API: FastAPI over SQLite from the standard library.

`create_app(database, clock=...)` builds the app; `app` is one built on `:memory:` so that
`uvicorn job_api:app` serves it. Errors are `application/problem+json` (RFC 9457): a JSON
object with `type`, `title`, `status` and `detail`.

Every endpoint below exists and answers 501 until you implement it. The request models are
the contract of the README; keep them (or an equivalent) so the OpenAPI document stays right.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Header, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

__all__ = ["app", "create_app"]

_State = Literal["queued", "running", "cancelling", "succeeded", "failed", "cancelled"]
_Target = Literal["running", "succeeded", "failed", "cancelled"]
_JobId = Annotated[int, Path(ge=1, le=2**63 - 1)]


def _unicode(text: str) -> str:
    """`text` if it is Unicode text; a lone surrogate (JSON's `"\\udfff"`) is a ValueError (422)."""
    text.encode()  # UnicodeEncodeError is a ValueError: pydantic reports it as invalid input
    return text


_Text = Annotated[str, AfterValidator(_unicode)]


class _JobIn(BaseModel):
    """POST /jobs body: strict types (no coercion of "4" or true), no unknown fields."""

    model_config = ConfigDict(strict=True, extra="forbid")
    name: _Text = Field(min_length=1, max_length=200)
    command: list[_Text] = Field(min_length=1)
    gpus: int = Field(ge=1, le=64)


class _Job(BaseModel):
    """A job as every endpoint returns it."""

    id: int
    name: str
    command: list[str]
    gpus: int
    state: _State
    created_at: float
    updated_at: float


class _Page(BaseModel):
    """GET /jobs: newest first; `next_cursor` is null exactly when nothing follows."""

    items: list[_Job]
    next_cursor: str | None


class _TransitionIn(BaseModel):
    """POST /jobs/{id}/transitions body: the state the worker reports."""

    model_config = ConfigDict(strict=True, extra="forbid")
    to: _Target


def create_app(database: str = ":memory:", *, clock: Callable[[], float] = time.time) -> FastAPI:
    """Build the jobs API on the SQLite `database` (a file path, or `:memory:`).

    `clock()` gives seconds since the epoch: it stamps `created_at` / `updated_at` and ages
    idempotency keys (kept 24 hours). A file database survives restarts: a new app on the same
    file serves the same jobs, replays the same keys and accepts cursors issued before.

    Endpoints (see the README for every rule):
      POST /jobs                    201 + Location; header Idempotency-Key required
      GET  /jobs/{id}               200, the job
      GET  /jobs?limit=&cursor=&state=   200, {"items": [...], "next_cursor": str | null}
      POST /jobs/{id}/cancel        202, the job
      POST /jobs/{id}/transitions   200, the job; body {"to": state}
    """
    app = FastAPI(title="Jobs", version="1.0.0")

    @app.exception_handler(NotImplementedError)
    async def _not_implemented(request: Request, exc: NotImplementedError) -> JSONResponse:
        body = {"type": "/problems/not-implemented", "title": "Not implemented",
                "status": 501, "detail": str(exc)}
        return JSONResponse(body, 501, media_type="application/problem+json")

    @app.post("/jobs", status_code=201, response_model=_Job)
    def submit(spec: _JobIn, idempotency_key: Annotated[str | None, Header()] = None) -> Any:
        """Submit a job; a retry with the same Idempotency-Key replays the first answer."""
        raise NotImplementedError("POST /jobs")

    @app.get("/jobs/{job_id}", response_model=_Job)
    def get_job(job_id: _JobId) -> Any:
        """One job, or 404."""
        raise NotImplementedError("GET /jobs/{id}")

    @app.get("/jobs", response_model=_Page)
    def list_jobs(
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
        cursor: str | None = None,
        state: _State | None = None,
    ) -> Any:
        """Jobs newest first, a page at a time; the cursor is opaque and tamper-proof."""
        raise NotImplementedError("GET /jobs")

    @app.post("/jobs/{job_id}/cancel", status_code=202, response_model=_Job)
    def cancel(job_id: _JobId) -> Any:
        """Request cancellation: 202; queued stops now, running stops later."""
        raise NotImplementedError("POST /jobs/{id}/cancel")

    @app.post("/jobs/{job_id}/transitions", response_model=_Job)
    def transition(job_id: _JobId, move: _TransitionIn) -> Any:
        """The worker reports progress; only the state machine's edges are accepted."""
        raise NotImplementedError("POST /jobs/{id}/transitions")

    return app


app = create_app()
