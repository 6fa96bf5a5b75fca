"""Each pytest-xdist worker talks to its own Redis database.

Loaded with ``-p tests.xdist_isolation`` (pyproject's addopts), so it runs before
pytest-django reads the settings. Workers already get their own test database
(pytest-django suffixes its name) and temporary directory; Redis is what they would
share: Celery queues (one worker's test could take another's job), the worker registry,
the channel layer's groups and the rate-limit counters. Database n of the same server is
as good as a server of its own for all of them, and subprocesses the tests start inherit
the variable.

Sessions' files (checkouts, their git directories in server state, secret and search
indexes, layers) go under ``var/test-state/<process>/``, which the process's subprocesses
inherit and which is removed when the process ends: a whole run used to leave about 200 MB
in ``var/`` (one checkout, git directory and index per session a test made).

Nor does a test reach a model server it did not start: the default model endpoint
(``ACODE_LLM_BASE_URL``, 127.0.0.1:8011 under ``make run``) points at a port nothing
listens on, so a ``make run`` beside the suite is never asked (issue 34: the fuzz test
timed out on one). Tests that want a model start one (tests/fake_openai.py) or script it.
"""

from __future__ import annotations

import atexit
import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REDIS_DATABASES = 16  # redis-server's default


def _worker_redis_url(url: str, worker: str) -> str:
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    index = (base + int(worker.removeprefix("gw"))) % REDIS_DATABASES
    return urlunsplit(parts._replace(path=f"/{index}"))


# Port 9 (discard) is closed on any machine acode runs on: a call fails at once.
NO_MODEL_SERVER = "http://127.0.0.1:9/v1"
os.environ["ACODE_LLM_BASE_URL"] = NO_MODEL_SERVER
# The suite's scripted Coders write no tests: runs pass without passing tests unless a test
# asks for the default (medium and high) with settings.ACODE_RUN_REQUIRE_TESTS_TIERS, as
# tests/sessions_app/dashboard/test_run_tests_required.py does.
os.environ.setdefault("ACODE_RUN_REQUIRE_TESTS_TIERS", "")

# Beside the default roots (under var/, as make run has them), so what a command may see of
# them is what it would see there.
_var = Path(os.environ.get("ACODE_VAR_DIR", Path(__file__).resolve().parent.parent / "var"))
_state = _var / "test-state" / str(os.getpid())
STATE_ROOTS = {  # setting -> its folder
    "ACODE_WORKSPACES_ROOT": "workspaces",
    "ACODE_GIT_ROOT": "git",
    "ACODE_INDEX_ROOT": "index",
    "ACODE_LAYERS_ROOT": "layers",
}
for _name, _folder in STATE_ROOTS.items():
    os.environ[_name] = str(_state / _folder)
atexit.register(shutil.rmtree, _state, ignore_errors=True)

_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker.startswith("gw") and os.environ.get("REDIS_URL"):
    os.environ["REDIS_URL"] = _worker_redis_url(os.environ["REDIS_URL"], _worker)
