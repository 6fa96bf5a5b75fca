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
  answers). Malformed ids stay, and must get a JSON 404.
"""

from __future__ import annotations

import os
import uuid
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
