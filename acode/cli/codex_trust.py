"""Trusting the hooks ``acode agents connect codex`` wrote, as Codex's ``/hooks`` view does.

Codex runs a user's command hooks only once trusted, and skips untrusted ones without a
word; the trust is a ``[hooks.state.'<key>'] trusted_hash = "<hash>"`` table in its
``config.toml``, the hash being Codex's own of the hook's definition. The key and the hash
are read from Codex itself (``codex app-server``, JSON-RPC on stdio: ``initialize`` then
``hooks/list``), for acode's hooks only (their command runs the acode shim), and the
trust is checked by listing again.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

MARKER = "hookshim.py"


def _listed(codex: str, home: Path, cwd: Path, seconds: float = 20.0) -> list[dict[str, Any]]:
    """Every hook Codex knows for ``cwd`` (its ``hooks/list``)."""
    env = {**os.environ, "CODEX_HOME": str(home)}
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"clientInfo": {"name": "acode", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]  # fmt: skip
    child = subprocess.Popen(
        [codex, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=env, cwd=cwd, text=True,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        child.stdin.write(json.dumps(requests[0]) + "\n")
        child.stdin.flush()
        deadline = time.monotonic() + seconds
        sent = False
        while time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            if message.get("id") == 1 and not sent:
                for request in requests[1:]:
                    child.stdin.write(json.dumps(request) + "\n")
                child.stdin.flush()
                sent = True
            elif message.get("id") == 2:
                data = (message.get("result") or {}).get("data") or []
                return [hook for entry in data for hook in entry.get("hooks") or []]
        raise RuntimeError("Codex's app-server did not list its hooks")
    finally:
        child.kill()
        child.wait()


def codex_hooks_trust(codex: str, home: Path, cwd: Path) -> int:
    """Trust acode's hooks in ``home``'s config.toml; how many are trusted now."""
    ours = [h for h in _listed(codex, home, cwd) if MARKER in str(h.get("command", ""))]
    config = home / "config.toml"
    text = config.read_text() if config.exists() else ""
    added = []
    for hook in ours:
        key, digest = str(hook.get("key", "")), str(hook.get("currentHash", ""))
        if hook.get("trustStatus") in ("trusted", "managed") or not key or not digest:
            continue
        if "'" in key or "\n" in key:
            raise RuntimeError(f"Codex's hook key {key!r} cannot be written as a TOML key")
        added.append(f"\n[hooks.state.'{key}']\ntrusted_hash = {json.dumps(digest)}\n")
    if added:
        config.write_text(
            text + ("\n" if text and not text.endswith("\n") else "") + "".join(added)
        )
    trusted = [
        h for h in _listed(codex, home, cwd)
        if MARKER in str(h.get("command", "")) and h.get("trustStatus") in ("trusted", "managed")
    ]  # fmt: skip
    return len(trusted)
