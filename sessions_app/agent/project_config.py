"""A repository's own settings for acode: ``.acode/config.yml``.

Read through the one view (``containment.read_bytes``: no link followed, never ``.git``),
loaded by the one YAML loader and validated by the published JSON Schema
(``schema/acode-config.schema.json``, the file the README points to). What it names that
the server lacks (a prompt pack, a model endpoint, a role) is checked here too, so a bad
config is one clear error, ACODE-CFG-001 or ACODE-CFG-002, before a job asks a model
anything. Precedence (README, Project config): built-in defaults < this file < admin
settings; the functions that apply it say which admin setting wins.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings

from acode.errors import AcodeError
from acode.inputs import json_schema_problems
from acode.yamldoc import YamlDocumentError, load_yaml
from roles.globs import glob_matches
from roles.registry import registry
from roles.selectors import endpoint_names
from sessions_app.containment import Refused, read_bytes

CONFIG_PATH = ".acode/config.yml"
SCHEMA_FILE = Path(__file__).resolve().parent / "schema" / "acode-config.schema.json"
MAX_CONFIG_BYTES = 64 * 1024


@cache
def config_schema() -> dict[str, Any]:
    """The published JSON Schema of ``.acode/config.yml``."""
    schema: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())
    return schema


@dataclass(frozen=True)
class ContextSettings:
    """The project's say in what a context holds (None: the strategy's own budget)."""

    max_tokens: int | None = None
    exclude_patterns: tuple[str, ...] = ()
    focus_patterns: tuple[str, ...] = ()

    def excluded(self, path: str) -> bool:
        return any(glob_matches(g, path) for g in self.exclude_patterns)

    def focused(self, path: str) -> bool:
        return any(glob_matches(g, path) for g in self.focus_patterns)


@dataclass(frozen=True)
class ProjectConfig:
    """``.acode/config.yml`` as validated; ``found`` is False when the repository has none."""

    found: bool = False
    pack: str | None = None
    languages: tuple[str, ...] | None = None
    frameworks: tuple[str, ...] | None = None
    role_models: dict[str, str] = field(default_factory=dict)
    context: ContextSettings = field(default_factory=ContextSettings)


def _invalid(message: str, problems: list[str]) -> AcodeError:
    return AcodeError(
        "ACODE-CFG-001",
        f"{CONFIG_PATH}: {message}",
        {"file": CONFIG_PATH, "problems": problems},
    )


def project_config_load(workspace: Path) -> ProjectConfig:
    """The workspace's ``.acode/config.yml``, or the defaults when it has none.

    Raises ACODE-CFG-001 (not YAML, or refused by the schema: each problem named) and
    ACODE-CFG-002 (it names a pack, model endpoint or role the server lacks)."""
    try:
        raw = read_bytes(workspace, CONFIG_PATH, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return ProjectConfig()
    except NotADirectoryError:
        return ProjectConfig()
    except (Refused, OSError) as exc:
        raise _invalid(f"cannot be read ({exc}).", [str(exc)]) from None
    try:
        data = load_yaml(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _invalid("is not UTF-8 text.", ["not UTF-8"]) from None
    except YamlDocumentError as exc:
        raise _invalid(exc.message, exc.problems) from None
    if data is None:
        data = {}
    problems = json_schema_problems(config_schema(), data)
    if problems:
        raise _invalid("does not follow the schema: " + "; ".join(problems), problems)
    config = _config_from(data)
    _check_names(config)
    return config


def _config_from(data: dict[str, Any]) -> ProjectConfig:
    context = data.get("context") or {}
    languages, frameworks = data.get("languages"), data.get("frameworks")
    return ProjectConfig(
        found=True,
        pack=data.get("pack"),
        languages=tuple(languages) if languages is not None else None,
        frameworks=tuple(frameworks) if frameworks is not None else None,
        role_models=dict(data.get("role_models") or {}),
        context=ContextSettings(
            max_tokens=context.get("max_tokens"),
            exclude_patterns=tuple(context.get("exclude_patterns") or ()),
            focus_patterns=tuple(context.get("focus_patterns") or ()),
        ),
    )


def _check_names(config: ProjectConfig) -> None:
    problems: list[str] = []
    if config.pack is not None and config.pack not in registry.prompt_packs():
        problems.append(
            f"pack: no prompt pack {config.pack!r} (known: {', '.join(registry.prompt_packs())})"
        )
    roles = {r.slug for r in registry.list_roles()}
    endpoints = set(endpoint_names())
    for role, model in sorted(config.role_models.items()):
        if role not in roles:
            problems.append(f"role_models/{role}: no role {role!r}")
        if model not in endpoints:
            problems.append(f"role_models/{role}: no enabled model endpoint {model!r}")
    if problems:
        raise AcodeError(
            "ACODE-CFG-002",
            f"{CONFIG_PATH} names what this server lacks: " + "; ".join(problems),
            {"file": CONFIG_PATH, "problems": problems},
        )


def effective_pack(config: ProjectConfig) -> str:
    """The pack a job composes from: an admin's ACODE_PROMPT_PACK (set in the server's
    environment) wins, then the project's ``pack``, then the built-in default."""
    if os.environ.get("ACODE_PROMPT_PACK") or not config.pack:
        return str(settings.ACODE_PROMPT_PACK)
    return config.pack


def effective_model(config: ProjectConfig, *, role_slug: str, role_model: str) -> str:
    """The model a role routes to before a person's override: the role's own model (set
    by an admin) wins, then the project's ``role_models``, then the default endpoint."""
    return role_model or config.role_models.get(role_slug, "")
