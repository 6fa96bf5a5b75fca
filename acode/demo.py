"""``make demo``: ``make run`` on ports of its own (8100, unless ``ACODE_PORT`` says
otherwise) and data of its own (``var/demo/``), with no model server: the run roles
answer from scripted endpoints (``sessions_app.management.demo``), set up after the migration; the
banner says whom to log in as and what to press.

The ports and the data directory are chosen before ``acode.devserver`` reads them, so a
``make run`` on the default ports keeps running beside the demo.
"""

from __future__ import annotations

import os
import subprocess
import sys

DEMO_PORT = "8100"
# Nothing listens here: the demo needs no model server, and starts none.
NO_MODEL_SERVER = "http://127.0.0.1:9/v1"


def demo_environment(environ: dict[str, str]) -> dict[str, str]:
    """The demo's settings over ``environ``: its port, data directory, no model server."""
    env = dict(environ)
    env.setdefault("ACODE_PORT", DEMO_PORT)
    env.setdefault("ACODE_VAR_DIR", os.path.abspath(os.path.join("var", "demo")))
    env.setdefault("ACODE_LLM_BASE_URL", NO_MODEL_SERVER)
    env.pop("DATABASE_URL", None)  # the demo's own SQLite file, never a deployment's database
    return env


def demo_setup_lines(env: dict[str, str], url: str) -> list[str]:
    """Run ``manage.py acode_demo`` and return what it says to do."""
    done = subprocess.run(
        [sys.executable, "manage.py", "acode_demo", "--url", url],
        env=env,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return [line for line in done.stdout.splitlines() if line.strip()]


def main() -> int:
    os.environ.update(demo_environment(dict(os.environ)))
    from acode import devserver  # reads the port now

    return devserver.main(setup=demo_setup_lines)


if __name__ == "__main__":
    raise SystemExit(main())
