"""Where the CLI finds its server, token and current session.

Precedence, highest first: command-line option, environment (``ACODE_URL``,
``ACODE_TOKEN``, ``ACODE_SESSION``), the config file, the built-in default. The config
file keeps one entry per server URL, so a token or current session for one server is
never sent to another. It lives in the user's config directory (``ACODE_CONFIG_DIR``
overrides it, which the tests use) and is written with mode 0600 because it holds tokens.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from acode.cli.errors import UsageError

DEFAULT_URL = "http://127.0.0.1:8000"
CONFIG_FILE = "config.json"


def config_dir() -> Path:
    """The directory holding the CLI's config file."""
    override = os.environ.get("ACODE_CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_config_dir("acode", appauthor=False))


def config_path() -> Path:
    """The CLI's config file."""
    return config_dir() / CONFIG_FILE


def normalise_url(url: str) -> str:
    """A server URL in the form used as a config key: no trailing slash, scheme present."""
    url = url.strip().rstrip("/")
    if not url:
        raise UsageError("The server URL is empty.", suggestion=f"Use e.g. {DEFAULT_URL}.")
    if "://" not in url:
        url = "http://" + url
    return url


@dataclass
class ServerEntry:
    """What the CLI remembers about one server."""

    token: str = ""
    username: str = ""
    session: str = ""

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v}


@dataclass
class Config:
    """The config file's content."""

    url: str = ""
    servers: dict[str, ServerEntry] = field(default_factory=dict)

    def server(self, url: str) -> ServerEntry:
        """The entry for ``url``, created (unsaved) if missing."""
        return self.servers.setdefault(normalise_url(url), ServerEntry())

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "servers": {u: e.as_dict() for u, e in sorted(self.servers.items()) if e.as_dict()},
        }


def load_config() -> Config:
    """Read the config file; a missing file is an empty config."""
    path = config_path()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Config()
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"Cannot read the config file {path}: {exc}",
            suggestion="Fix or delete the file, then run `acode login` again.",
        ) from exc
    servers = raw.get("servers") if isinstance(raw, dict) else None
    return Config(
        url=str(raw.get("url") or "") if isinstance(raw, dict) else "",
        servers={
            str(url): ServerEntry(
                token=str(entry.get("token") or ""),
                username=str(entry.get("username") or ""),
                session=str(entry.get("session") or ""),
            )
            for url, entry in (servers or {}).items()
            if isinstance(entry, dict)
        },
    )


def save_config(config: Config) -> Path:
    """Write the config file atomically, readable by the user only (it holds tokens)."""
    directory = config_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / CONFIG_FILE
    # mkstemp creates the file with mode 0600, so the token is never world-readable,
    # not even for the moment between writing and renaming.
    fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(config.as_dict(), handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@dataclass(frozen=True)
class Settings:
    """The effective server, token and session for one CLI invocation."""

    url: str
    token: str
    token_source: str  # "ACODE_TOKEN", "config" or "" (none)
    url_source: str  # "--url", "ACODE_URL", "config" or "default"
    session: str
    session_source: str  # "--session", "ACODE_SESSION", "config" or ""


def resolve_settings(
    config: Config, *, url_option: str | None = None, session_option: str | None = None
) -> Settings:
    """Combine options, environment and config file into the effective settings."""
    url, url_source = _first_set(
        (url_option, "--url"),
        (_env("ACODE_URL"), "ACODE_URL"),
        (config.url, "config"),
        otherwise=(DEFAULT_URL, "default"),
    )
    url = normalise_url(url)
    entry = config.servers.get(url, ServerEntry())
    token, token_source = _first_set((_env("ACODE_TOKEN"), "ACODE_TOKEN"), (entry.token, "config"))
    session, session_source = _first_set(
        (session_option, "--session"),
        (_env("ACODE_SESSION"), "ACODE_SESSION"),
        (entry.session, "config"),
    )
    return Settings(url, token, token_source, url_source, session, session_source)


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def _first_set(
    *candidates: tuple[str | None, str], otherwise: tuple[str, str] = ("", "")
) -> tuple[str, str]:
    """The first value that is set, with where it came from: the order is the precedence."""
    for value, source in candidates:
        if value:
            return value, source
    return otherwise
