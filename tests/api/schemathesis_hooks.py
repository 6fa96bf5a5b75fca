"""Schemathesis hooks for ``tests/api/test_fuzz.py`` (loaded through ``SCHEMATHESIS_HOOKS``
by the ``st`` process it starts): how the fuzzer logs in, and the two things about a
request that a schema cannot say.

- Authentication: ``Authorization: Token <token>``, the token from the environment. A
  generated ``DELETE /api/auth/token/`` revokes it; the next request logs in again.
- ``Idempotency-Key``: the schema says what a key looks like, not that a new request needs
  a new key (a reused key is 422 ACODE-API-422, as documented). A generated key that is
  valid is replaced with a fresh one, so generated requests do not replay each other.
- Which session, job or run an id names: a generated UUID names none, so a valid one is
  pointed at the test's own (outside the stateful phase, whose ids come from the API's
  answers). Malformed ids stay, and must get a JSON 404. Likewise half the well-formed
  MCP server and tool names and draft ids name the world's own (``_point_at_world``).
"""

from __future__ import annotations

import os
import re
import uuid
import zlib
from typing import Any

import requests
import schemathesis

_state = {"token": os.environ.get("ACODE_FUZZ_TOKEN", "")}


@schemathesis.auth(refresh_interval=None)
class FuzzToken:
    def get(self, case: Any, ctx: Any) -> str:
        return _state["token"]

    def set(self, case: Any, data: str, ctx: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Token {data}"}


_IDS = {
    "sessions": os.environ.get("ACODE_FUZZ_SESSION", ""),
    "jobs": os.environ.get("ACODE_FUZZ_JOB", ""),
    "runs": os.environ.get("ACODE_FUZZ_RUN", ""),
}


# Named things of the world: an MCP server with a listed tool, and a draft of a protected
# role. A generated name that could be one is pointed at it half the time (by a hash of the
# name, so a seed still gives the same run), so the routes behind them are reached too.
_NAMED = {
    "slug": os.environ.get("ACODE_FUZZ_MCP_SERVER", ""),
    "tool": os.environ.get("ACODE_FUZZ_MCP_TOOL", ""),
}
_DRAFT = os.environ.get("ACODE_FUZZ_DRAFT", "")
_NAME = re.compile(r"^[-a-zA-Z0-9_]+$")


def _point_at_world(case: Any) -> None:
    params = case.path_parameters or {}
    for key, ours in _NAMED.items():
        given = params.get(key)
        if ours and isinstance(given, str) and _NAME.match(given) and _half(given):
            params[key] = ours
    number = params.get("id")
    drafts = case.path.startswith("/api/role-drafts/") and isinstance(number, int)
    if _DRAFT and drafts and int(number) >= 0 and _half(str(number)):
        params["id"] = int(_DRAFT)


def _half(text: str) -> bool:
    return zlib.crc32(text.encode()) % 2 == 1


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    key = (case.headers or {}).get("Idempotency-Key")
    if isinstance(key, str) and len(key) <= 200:
        case.headers["Idempotency-Key"] = uuid.uuid4().hex
    stateful = case.meta is not None and case.meta.phase.name == "stateful"
    given = (case.path_parameters or {}).get("id")
    kind = case.path.split("/")[2] if case.path.count("/") > 2 else ""
    if not stateful and _is_uuid(given) and _IDS.get(kind):
        case.path_parameters["id"] = _IDS[kind]
    if not stateful:
        _point_at_world(case)


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    if case.method == "DELETE" and case.path == "/api/auth/token/" and response.status_code == 204:
        login = requests.post(
            f"{os.environ['ACODE_FUZZ_URL']}/api/auth/token/",
            json={
                "username": os.environ["ACODE_FUZZ_USERNAME"],
                "password": os.environ["ACODE_FUZZ_PASSWORD"],
            },
            timeout=30,
        )
        login.raise_for_status()
        _state["token"] = login.json()["token"]
