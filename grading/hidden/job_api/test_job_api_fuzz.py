"""Hidden checks for job_api: schemathesis fuzzes each operation from the app's OpenAPI document.

The submission's own ASGI app is driven in process. Each response must pass schemathesis's
standard checks (no server error, a documented status code, a documented content type, a body
that matches its documented schema) and, when it is an error, be an RFC 9457 problem.

A request the harness cannot build or send, or one that reaches another route than the operation
under test (an empty or dot-segment path parameter, answered by FastAPI's slash redirect), is
skipped: it is never held against the submission.
"""

from __future__ import annotations

import re
from typing import Any

import job_api
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from job_api_helpers import JOB, OPERATIONS, Clock, drive, open_api
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

_CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
           response_schema_conformance]
_PROBLEM_FIELDS = {"type", "title", "status", "detail"}


class _Guard:
    """The submission's ASGI app, seen from outside: what it was asked, and what it raised.

    An exception the app lets escape is answered as a 500 here (a real server would do the
    same), so every exception that reaches the test comes from the harness, never the app.
    """

    def __init__(self, app: Any) -> None:
        self.app, self.path, self.raised = app, "", ""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.path, self.raised, started = scope["path"], "", False

        async def watch(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:  # the submission's crash: reported as its 500
            self.raised = f"{type(exc).__name__}: {exc}"[:200]
        if not started:
            text = f"the app raised {self.raised}" if self.raised else "the app sent no response"
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
            await send({"type": "http.response.body", "body": text.encode()})


def _operation(schema: Any, method: str, path: str) -> tuple[str, Any]:
    for template in schema.raw_schema.get("paths", {}):
        if re.sub(r"\{[^}]*\}", "{}", template) == path:
            try:
                return template, schema[template][method.upper()]
            except Exception as exc:  # absent, or a definition schemathesis cannot read
                raise AssertionError(
                    f"the OpenAPI document's {method.upper()} {template} cannot be fuzzed:"
                    f" {type(exc).__name__}: {exc}") from None
    raise AssertionError(f"the OpenAPI document has no {method.upper()} {path}")


def _cases(operation: Any, template: str, ids: list[Any]) -> st.SearchStrategy[Any]:
    """Schema-valid and schema-invalid requests; valid ones also aimed at jobs that exist."""
    strategies = [operation.as_strategy(GenerationMode.POSITIVE),
                  operation.as_strategy(GenerationMode.NEGATIVE)]
    names = re.findall(r"\{([^}]*)\}", template)
    if names:
        strategies.append(st.sampled_from(ids).flatmap(
            lambda i: operation.as_strategy(GenerationMode.POSITIVE,
                                            path_parameters=dict.fromkeys(names, i))))
    return st.one_of(strategies)


class _Request:
    """A generated case; its repr (in a falsifying example) is the request as one curl line."""

    def __init__(self, case: Any) -> None:
        self.case = case

    def __repr__(self) -> str:
        try:
            return " ".join(self.case.as_curl_command().split())
        except Exception:  # a request that cannot be written as curl cannot be sent either
            return f"{self.case.method} {self.case.path}"


def _report(request: _Request, response: Any, what: str) -> str:
    """One failure as a person reads it: the check, the status and body, the request as curl."""
    return f"{what}\n  answer: {response.status_code} {response.text[:300]}\n  request: {request!r}"


def _failures(group: FailureGroup) -> str:
    return "; ".join(f"{f.title}: {' '.join(str(f.message).split())}"[:300]
                     for f in group.exceptions)


def _not_a_problem(response: Any) -> str:
    """Why an error response is not an RFC 9457 problem, or "" when it is one."""
    ctype = response.headers.get("content-type", [""])[0]
    if not ctype.startswith("application/problem+json"):
        return f"an error answered as {ctype!r}, not application/problem+json"
    try:
        problem = response.json()
    except ValueError:
        problem = None
    if not isinstance(problem, dict) or not set(problem) >= _PROBLEM_FIELDS:
        return "an error whose body lacks type, title, status or detail"
    if problem["status"] != response.status_code:
        return f"a problem whose status {problem['status']!r} is not the HTTP status"
    return ""


@pytest.mark.category("bad_input")
@pytest.mark.points(2)
@pytest.mark.timeout(60)
@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_fuzzed_requests_get_no_5xx_and_match_the_schema(method: str, path: str) -> None:
    """Requests built from the OpenAPI document never get 5xx or an undocumented response."""
    guard = _Guard(job_api.create_app(clock=Clock(step=0.001)))
    with open_api(app=guard.app) as api:
        ids = [api.create(JOB | {"gpus": g})["id"] for g in (1, 2, 3)]
        drive(api, ids[1], ["running"])
    try:
        schema = schemathesis.openapi.from_asgi("/openapi.json", guard,
                                                config=schemathesis.Config(seed=0))
    except Exception as exc:
        raise AssertionError(f"GET /openapi.json gave no OpenAPI document: {exc}") from None
    template, operation = _operation(schema, method, path)
    route = re.compile(re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(template)))

    @settings(max_examples=25, suppress_health_check=list(HealthCheck))
    @given(_cases(operation, template, ids).map(_Request))
    def fuzz(request: _Request) -> None:
        case = request.case
        try:
            # No redirect is followed: a redirect is the answer under test, not its target.
            response = case.call(max_redirects=0)
        except Exception:
            return  # the harness could not build or send this request: not the submission's
        if not route.fullmatch(guard.path):
            return  # the request reached another route than the operation under test
        wrong = f"the app raised {guard.raised}" if guard.raised else ""
        checks = _CHECKS
        if isinstance(case.body, bytes):  # not JSON at all: 400 or 422, documented or not
            checks = [c for c in _CHECKS if c is not status_code_conformance]
            if not wrong and response.status_code not in (400, 413, 422):
                wrong = "a body that is not JSON got neither 400 nor 422"
        try:
            wrong or case.validate_response(response, checks=checks)
        except FailureGroup as group:
            wrong = _failures(group)
        if not wrong and response.status_code >= 400:
            wrong = _not_a_problem(response)
        if wrong:
            raise AssertionError(_report(request, response, wrong))

    fuzz()
