"""Hidden checks for job_api: malformed requests get 4xx problems, documented."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from job_api_helpers import (
    JOB,
    expect_problem,
    open_api,
    unknown_id,
)


@pytest.mark.category("bad_input")
@pytest.mark.points(2)
@pytest.mark.parametrize("headers", [{}, {"Idempotency-Key": ""}, {"Idempotency-Key": " \t "},
                                     {"Idempotency-Key": "k" * 256}])
def test_missing_empty_or_long_idempotency_key_is_400(headers: dict[str, str]) -> None:
    """Idempotency-Key missing, empty (or only whitespace) or over 255 characters is 400."""
    with open_api() as api:
        api.create()
        expect_problem(api.call("POST", "/jobs", json=JOB, headers=headers), 400)
        r = api.submit(key="k" * 255)
        assert r.status_code == 201, f"a 255-character key answered {r.status_code}"
        assert len(api.call("GET", "/jobs").json()["items"]) == 2


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("gpus", ["4", True, 4.0])
def test_gpus_is_not_coerced_from_a_string_bool_or_float(gpus: Any) -> None:
    """Types are strict: "4", true or 4.0 for gpus is a 422 problem, not coerced."""
    with open_api() as api:
        api.create()
        expect_problem(api.submit(JOB | {"gpus": gpus}), 422)
        assert len(api.call("GET", "/jobs").json()["items"]) == 1, f"gpus={gpus!r} made a job"


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("change", [
    {"gpus": 0}, {"gpus": 65}, {"gpus": None}, {"name": ""}, {"name": "n" * 201}, {"name": 5},
    {"command": []}, {"command": "ls"}, {"command": ["ls", 1]}, {"priority": 1},
])
def test_invalid_or_unknown_fields_are_422(change: dict[str, Any]) -> None:
    """Wrong types, out-of-range values and unknown fields are 422 problems."""
    with open_api() as api:
        api.create()
        expect_problem(api.submit(JOB | change), 422)
        assert len(api.call("GET", "/jobs").json()["items"]) == 1, f"{change} created a job"


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("content", [
    b"{", b"[]", b"null", b'{"name": "x"}', b"\xff\xfe",
    b"[" * 5000 + b"]" * 5000,  # nested deeper than the JSON parser recurses
    b'{"name": "x", "command": ["ls"], "gpus": ' + b"7" * 5000 + b"}",  # over 4,300 digits
], ids=["open", "array", "null", "partial", "not-utf-8", "deep", "huge-int"])
def test_malformed_json_is_a_4xx_problem(content: bytes) -> None:
    """Malformed or incomplete JSON is a 4xx problem, never a 5xx."""
    with open_api() as api:
        api.create()
        headers = {"Idempotency-Key": "k", "Content-Type": "application/json"}
        expect_problem(api.call("POST", "/jobs", content=content, headers=headers), 400, 422)


@pytest.mark.category("bad_input")
def test_body_over_64_kib_is_413() -> None:
    """A request body over 64 KiB is 413."""
    with open_api() as api:
        api.create()
        big = JOB | {"command": ["x" * 1000] * 70}
        expect_problem(api.submit(big), 413)
        ok = JOB | {"command": ["x" * 1000] * 60}
        assert api.submit(ok).status_code == 201, "a 61 KB body was refused"


def _body_of(size: int) -> bytes:
    """A valid job as JSON of exactly `size` bytes."""
    body = json.dumps(JOB | {"command": ["x"]}).encode()
    return json.dumps(JOB | {"command": ["x" * (1 + size - len(body))]}).encode()


@pytest.mark.category("edge_cases")
def test_body_of_exactly_64_kib_is_accepted() -> None:
    """A body of exactly 65,536 bytes is accepted; 65,537 bytes is 413."""
    headers = {"Content-Type": "application/json"}
    with open_api() as api:
        exact = api.call("POST", "/jobs", content=_body_of(65536),
                         headers=headers | {"Idempotency-Key": "exact"})
        assert exact.status_code == 201, (
            f"a body of exactly 65,536 bytes answered {exact.status_code} {exact.text[:200]}")
        over = api.call("POST", "/jobs", content=_body_of(65537),
                        headers=headers | {"Idempotency-Key": "over"})
        expect_problem(over, 413)


@pytest.mark.category("bad_input")
def test_body_over_64_kib_without_content_length_is_413() -> None:
    """A body over 64 KiB sent in chunks, with no Content-Length, is 413 and creates nothing."""

    async def chunks() -> AsyncIterator[bytes]:
        body = _body_of(70_000)
        for start in range(0, len(body), 8192):
            yield body[start:start + 8192]

    with open_api() as api:
        r = api.call("POST", "/jobs", content=chunks(),
                     headers={"Content-Type": "application/json", "Idempotency-Key": "k"})
        expect_problem(r, 413)
        assert api.call("GET", "/jobs").json()["items"] == [], "a 70 KB body created a job"


@pytest.mark.category("bad_input")
def test_get_with_a_big_body_is_413_or_ignored() -> None:
    """A GET with a body over 64 KiB is 413, or answered as if it had no body (either is fine)."""
    with open_api() as api:
        api.create()
        r = api.call("GET", "/jobs", content=b"x" * 70_000)
        if r.status_code != 200:
            expect_problem(r, 413)
        else:
            assert len(r.json()["items"]) == 1, f"GET /jobs with a body answered {r.text[:200]}"


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"limit": "ten"},
                                    {"state": "sleeping"}])
def test_bad_list_parameters_are_422(params: dict[str, Any]) -> None:
    """limit outside 1..100 or an unknown state filter is 422."""
    with open_api() as api:
        api.create()
        expect_problem(api.call("GET", "/jobs", params=params), 422)


@pytest.mark.category("bad_input")
def test_unknown_state_name_in_a_transition_is_422() -> None:
    """A transition to an unknown state name is 422; queued or cancelling as a target is 4xx."""
    with open_api() as api:
        job = api.create()
        url = f"/jobs/{job['id']}/transitions"
        expect_problem(api.call("POST", url, json={"to": "paused"}), 422)
        expect_problem(api.call("POST", url, json={"to": "queued"}), 409, 422)
        expect_problem(api.call("POST", url, json={}), 422)


@pytest.mark.category("bad_input")
def test_unknown_job_is_404() -> None:
    """GET, cancel and transitions on an unknown id are 404."""
    with open_api() as api:
        missing = unknown_id(api.create()["id"])
        expect_problem(api.call("GET", f"/jobs/{missing}"), 404)
        expect_problem(api.call("POST", f"/jobs/{missing}/cancel"), 404)
        moved = api.call("POST", f"/jobs/{missing}/transitions", json={"to": "running"})
        expect_problem(moved, 404)


_PROBLEMS = {("post", "/jobs"): (400, 422), ("get", "/jobs"): (400, 422),
             ("get", "/jobs/{}"): (404,), ("post", "/jobs/{}/cancel"): (404, 409),
             ("post", "/jobs/{}/transitions"): (404, 409, 422)}


def _operation(doc: dict[str, Any], method: str, path: str) -> tuple[str, dict[str, Any]]:
    for template, ops in doc["paths"].items():
        if re.sub(r"\{[^}]*\}", "{}", template) == path and method in ops:
            return template, ops[method]
    raise AssertionError(f"the OpenAPI document has no {method.upper()} {path}")


@pytest.mark.category("bad_input")
@pytest.mark.parametrize(("method", "path"), list(_PROBLEMS))
def test_problem_responses_are_documented(method: str, path: str) -> None:
    """Each operation documents its problem responses as application/problem+json."""
    with open_api() as api:
        api.create()
        _, op = _operation(api.call("GET", "/openapi.json").json(), method, path)
        for code in _PROBLEMS[(method, path)]:
            content = op.get("responses", {}).get(str(code), {}).get("content", {})
            assert "application/problem+json" in content, (
                f"{method.upper()} {path} does not document {code} as application/problem+json")


@pytest.mark.category("bad_input")
@pytest.mark.parametrize(("method", "url"), [("GET", "/nowhere"), ("DELETE", "/jobs"),
                                             ("PUT", "/jobs/1/cancel")])
def test_unknown_routes_and_methods_are_problems(method: str, url: str) -> None:
    """An unknown path (404) or method (405) is a problem too, like every error."""
    with open_api() as api:
        api.create()
        expect_problem(api.call(method, url), 404, 405)


@pytest.mark.category("bad_input")
def test_a_non_ascii_key_is_measured_in_characters_or_refused() -> None:
    """A non-ASCII Idempotency-Key is counted in characters (one per octet) or always refused."""
    with open_api() as api:
        statuses = {}
        for n in (1, 128, 255):  # 'é' sent as one Latin-1 octet, as HTTP carries it
            r = api.call("POST", "/jobs", json=JOB, headers={"Idempotency-Key": b"\xe9" * n})
            statuses[n] = r.status_code
        assert set(statuses.values()) in ({201}, {400}), (
            f"keys of 1, 128 and 255 non-ASCII characters answered {statuses}: a key is 400 only "
            "over 255 characters (1 to 255 are all accepted), or non-ASCII keys are all refused")
        r = api.call("POST", "/jobs", json=JOB, headers={"Idempotency-Key": b"\xe9" * 256})
        expect_problem(r, 400)


@pytest.mark.category("bad_input")
def test_an_id_out_of_range_is_a_4xx_problem_never_a_5xx() -> None:
    """A job id that is zero, negative or beyond SQLite's integers is a 4xx problem, never 5xx."""
    with open_api() as api:
        api.create()
        for job_id in ("0", "-1", str(2**63), "9" * 20, "-" + "9" * 20):
            for method, url, kw in (("GET", f"/jobs/{job_id}", {}),
                                    ("POST", f"/jobs/{job_id}/cancel", {}),
                                    ("POST", f"/jobs/{job_id}/transitions",
                                     {"json": {"to": "running"}})):
                r = api.call(method, url, **kw)
                assert r.status_code < 500, (
                    f"{method} {url} answered {r.status_code} {r.text[:200]}; expected a 4xx "
                    "problem (404, or 422 for an id outside the range the API accepts): an id "
                    "past 2**63 - 1 overflows SQLite's INTEGER, so bound it or catch that")
                expect_problem(r, 400, 404, 422)


@pytest.mark.category("bad_input")
def test_a_key_may_hold_any_printable_characters() -> None:
    """A key with spaces inside, slashes or other printable punctuation is accepted."""
    with open_api() as api:
        for i, key in enumerate(("order 7", "2024/01/01@retry", "a+b=c~!", "job#9|x$y%z")):
            r = api.submit(JOB | {"gpus": i + 1}, key=key)
            assert r.status_code == 201, (
                f"POST /jobs with Idempotency-Key {key!r} answered {r.status_code} "
                f"{r.text[:200]}; expected 201: a key is 400 only when missing, empty or over "
                "255 characters")
            again = api.submit(JOB | {"gpus": i + 1}, key=key)
            assert again.status_code == 201 and again.json() == r.json(), (
                f"the retry with Idempotency-Key {key!r} answered {again.status_code} "
                f"{again.text[:200]}; expected the replay of the first answer")


@pytest.mark.category("bad_input")
def test_two_non_ascii_keys_are_two_keys_or_both_refused() -> None:
    """Two different non-ASCII keys are two keys (two jobs), or both refused with 400."""
    with open_api() as api:
        first = api.call("POST", "/jobs", json=JOB, headers={"Idempotency-Key": b"\xe9t\xe9"})
        second = api.call("POST", "/jobs", json=JOB | {"gpus": 2},
                          headers={"Idempotency-Key": b"\xe8t\xe8"})
        if first.status_code == 400:  # the reading where every non-ASCII key is refused
            expect_problem(second, 400)
            return
        assert first.status_code == 201, f"the key b'\\xe9t\\xe9' answered {first.status_code}"
        assert second.status_code == 201 and second.json()["id"] != first.json()["id"], (
            f"the key b'\\xe9t\\xe9' made a job, then the key b'\\xe8t\\xe8' with another body "
            f"answered {second.status_code} {second.text[:200]}; expected 201, a new job: the "
            "keys differ, so nothing may turn both into one (decoding them as UTF-8 with "
            "errors='replace' makes both '\\ufffdt\\ufffd')")



_LONE_SURROGATES = [b'{"name": "a", "command": ["\\udfff"], "gpus": 1}',
                    b'{"name": "a", "command": ["python", "x\\ud83d"], "gpus": 1}',
                    b'{"name": "a\\ud800b", "command": ["x"], "gpus": 1}']


@pytest.mark.category("bad_input")
def test_a_lone_surrogate_in_a_string_is_a_4xx_problem() -> None:
    """A string holding a lone surrogate escape ("\\udfff") is a 400 or 422 problem, never 5xx."""
    with open_api() as api:
        api.create()
        for i, body in enumerate(_LONE_SURROGATES):
            r = api.call("POST", "/jobs", content=body,
                         headers={"Idempotency-Key": f"k{i}", "Content-Type": "application/json"})
            assert r.status_code in (400, 422), (
                f"POST /jobs with the body {body.decode()} answered {r.status_code} "
                f"{r.text[:200]}; expected 400 or 422: a lone surrogate is not Unicode text (it "
                "cannot be stored or sent as UTF-8), so refuse it when validating the body")
            expect_problem(r, 400, 422)
            assert len(api.call("GET", "/jobs").json()["items"]) == 1, f"{body!r} made a job"


@pytest.mark.category("bad_input")
def test_unknown_fields_or_wrong_types_in_a_transition_are_422() -> None:
    """A transition body with an unknown field or a `to` that is not a string is 422."""
    with open_api() as api:
        job = api.create()
        url = f"/jobs/{job['id']}/transitions"
        for body in ({"to": "running", "reason": "worker-7"}, {"to": ["running"]}, {"to": 1}):
            r = api.call("POST", url, json=body)
            assert r.status_code == 422, (
                f"POST {url} with {body} answered {r.status_code} {r.text[:200]}; expected 422: "
                "unknown fields and wrong types are refused on every route, not only POST /jobs")
            expect_problem(r, 422)
            assert api.call("GET", f"/jobs/{job['id']}").json() == job, f"{body} moved the job"


@pytest.mark.category("bad_input")
def test_a_transition_with_a_body_over_64_kib_is_413() -> None:
    """A body over 64 KiB is 413 on /transitions too, with or without a Content-Length."""
    body = b'{"to": "running"' + b" " * 70_000 + b"}"

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 8192):
            yield body[start:start + 8192]

    with open_api() as api:
        job = api.create()
        url = f"/jobs/{job['id']}/transitions"
        for how, content in (("with a Content-Length", body), ("in chunks", chunks())):
            r = api.call("POST", url, content=content, headers={"Content-Type": "application/json"})
            assert r.status_code == 413, (
                f"POST {url} with a {len(body):,}-byte body sent {how} answered {r.status_code} "
                f"{r.text[:200]}; expected 413: the 64 KiB limit holds for every request body")
            expect_problem(r, 413)
            assert api.call("GET", f"/jobs/{job['id']}").json() == job, "a 70 KB body moved the job"


@pytest.mark.category("bad_input")
def test_a_key_of_non_breaking_spaces_is_a_key_like_any_other() -> None:
    """A key of only non-breaking spaces is a key like any other, not an empty one.

    Only space and tab are whitespace around a key; refusing every non-ASCII key stays allowed.
    """
    with open_api() as api:
        statuses = {}
        for i, key in enumerate((b"\xe9", b"\xa0", b"\x85", b"\xa0\xa0")):  # Latin-1 octets
            r = api.call("POST", "/jobs", json=JOB | {"gpus": i + 1},
                         headers={"Idempotency-Key": key})
            statuses[repr(key.decode("latin-1"))] = r.status_code
        assert set(statuses.values()) in ({201}, {400}), (
            f"POST /jobs with these one-octet-per-character keys answered {statuses}; expected "
            "201 for each (only space and tab count as whitespace around a key, and str.strip() "
            "strips more), or 400 for each where every non-ASCII key is refused")
