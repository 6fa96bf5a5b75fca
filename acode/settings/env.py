"""Typed readers for environment variables that fail loudly with the variable's name."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_N = TypeVar("_N", int, float)


def env_str(name: str, default: str) -> str:
    """Return the variable, or ``default`` when it is unset."""
    return os.environ.get(name, default)


def env_optional(name: str) -> str | None:
    """Return the variable, or None when it is unset or blank."""
    value = os.environ.get(name, "").strip()
    return value or None


def env_bool(name: str, default: bool) -> bool:
    """Parse a boolean such as ``1``, ``true``, ``no``."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false, yes/no), got {raw!r}")


def _env_number(name: str, default: _N, parse: Callable[[str], _N], what: str) -> _N:
    """``parse`` of the variable, or ``default`` when it is unset or blank."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return parse(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be {what}, got {raw!r}") from exc


def env_int(name: str, default: int) -> int:
    """Parse an integer."""
    return _env_number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    """Parse a float."""
    return _env_number(name, default, float, "a number")


def env_list(name: str, default: list[str]) -> list[str]:
    """Parse a comma-separated list, dropping blanks."""
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_required(name: str, why: str) -> str:
    """Return the variable; refuse to start, naming it and saying why, when it is unset."""
    value = env_optional(name)
    if value is None:
        raise ImproperlyConfigured(f"{name} must be set: {why}")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """Return the variable when it is one of ``choices`` (case-insensitive)."""
    value = os.environ.get(name, default).strip().lower() or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def env_rate(name: str, default: str) -> str:
    """Parse a rate such as ``10/min`` or ``100/hour`` into ``N/s|m|h|d``."""
    raw = os.environ.get(name, default).strip()
    count, _, period = raw.partition("/")
    unit = period.strip()[:1].lower()
    if not count.strip().isdigit() or int(count) < 1 or unit not in {"s", "m", "h", "d"}:
        raise ImproperlyConfigured(
            f"{name} must be a rate such as 10/min (per second, min, hour or day), got {raw!r}"
        )
    return f"{int(count)}/{unit}"
