"""Shared set-up for benchmark scripts: Django against the configured database, migrated."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "acode.settings")


def django_setup() -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", "--noinput", verbosity=0)


def per_call(fn: Callable[[], object], *, seconds: float = 0.5, min_calls: int = 1000) -> float:
    """Best-of-5 mean time of one call of ``fn``, in seconds."""
    calls = min_calls
    while True:  # size the batch so one batch takes about `seconds / 5`
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds / 5 or calls >= 50_000_000:
            break
        calls *= 4
    best = elapsed / calls
    for _ in range(4):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def fmt_time(seconds: float) -> str:
    if seconds < 1e-6:
        return f"{seconds * 1e9:8.1f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} µs"
    return f"{seconds * 1e3:8.2f} ms"


def verdict(value: float, target: float) -> str:
    return "OK  " if value <= target else "MISS"
