"""One benchmark report: bench scripts ``record`` their figures; ``python -m bench._report``
turns them into ``bench/RESULTS.md``.

``record`` appends one JSON line per figure to ``$ACODE_BENCH_RESULTS`` (nothing when it is
unset, so a script run by hand only prints). ``make bench`` sets it to a temporary file,
runs every script, then writes the report: a table per script (figure, value, unit,
baseline, ratio, target, met) under the machine it ran on and the date.

    python -m bench._report RESULTS_JSONL [--out bench/RESULTS.md] [--failed "a.py b.py"]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS_ENV = "ACODE_BENCH_RESULTS"


def record(
    name: str,
    value: float,
    unit: str,
    *,
    target: float | None = None,
    baseline: float | None = None,
    note: str = "",
    higher_is_better: bool = False,
) -> None:
    """Add one figure of the running script to the report (when ``$ACODE_BENCH_RESULTS`` is set).

    ``target`` is a ceiling, or a floor with ``higher_is_better`` (throughputs, scaling);
    ``baseline`` is the reference measured in the same run, in the same unit.
    """
    path = os.environ.get(RESULTS_ENV)
    if not path:
        return
    line = {
        "script": Path(sys.argv[0]).name,
        "name": name,
        "value": float(value),
        "unit": unit,
        "target": None if target is None else float(target),
        "baseline": None if baseline is None else float(baseline),
        "note": note,
        "higher_is_better": higher_is_better,
        "at": time.time(),
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def read_results(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for text in path.read_text(encoding="utf-8").splitlines():
        if text.strip():
            rows.append(json.loads(text))
    return rows


def number(value: float | None) -> str:
    if value is None:
        return "—"
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def met(row: dict[str, Any]) -> str:
    target = row.get("target")
    if target is None:
        return "—"
    ok = row["value"] >= target if row.get("higher_is_better") else row["value"] <= target
    return "met" if ok else "**not met**"


def ratio(row: dict[str, Any]) -> str:
    baseline = row.get("baseline")
    if not baseline:
        return "—"
    return f"{row['value'] / baseline:.2f}x"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except (OSError, ValueError):
        pass
    return "unknown"


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return f"{line.split('=', 1)[1].strip(chr(34))} ({platform.release()})"
    except OSError:
        pass
    return platform.platform()


def _database() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return f"SQLite {sqlite3.sqlite_version} (DATABASE_URL unset or SQLite)"
    try:
        import psycopg

        with psycopg.connect(
            url.replace("postgres://", "postgresql://", 1), connect_timeout=5
        ) as db:
            row = db.execute("SHOW server_version").fetchone()
        return f"PostgreSQL {row[0] if row else '?'}"
    except Exception as exc:  # the report is still worth writing without the version
        return f"PostgreSQL (version not read: {type(exc).__name__})"


def machine() -> list[tuple[str, str]]:
    return [
        ("Date", time.strftime("%Y-%m-%d %H:%M %Z")),
        ("CPU", _cpu_model()),
        ("Cores", str(os.cpu_count())),
        ("Memory", _memory()),
        ("OS", _os_name()),
        ("Python", platform.python_version()),
        ("Database", _database()),
        ("Redis", "REDIS_URL set" if os.environ.get("REDIS_URL") else "embedded / unset"),
    ]


def render(rows: Iterable[dict[str, Any]], failed: list[str]) -> str:
    by_script: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_script.setdefault(row["script"], []).append(row)
    out = [
        "# Benchmark results",
        "",
        "Written by `make bench` (`python -m bench._report`); every figure below was measured "
        "in that run, on this machine. Ratio is value / baseline (a reference measured in the "
        "same run). A target is a ceiling, except for throughputs and scaling figures, where "
        "it is a floor.",
        "",
        "| Machine | |",
        "| --- | --- |",
        *[f"| {key} | {value} |" for key, value in machine()],
        "",
    ]
    if failed:
        out += [f"**Failed scripts** (their figures may be missing): {', '.join(failed)}", ""]
    for script in sorted(by_script):
        figures = by_script[script]
        met_count = sum(1 for r in figures if met(r) == "met")
        with_target = sum(1 for r in figures if r.get("target") is not None)
        out += [
            f"## {script}",
            "",
            f"{met_count} of {with_target} targets met.",
            "",
            "| Figure | Value | Unit | Baseline | Ratio | Target | Met | Note |",
            "| --- | ---: | --- | ---: | ---: | ---: | --- | --- |",
        ]
        for r in figures:
            cells = [
                r["name"], number(r["value"]), r["unit"], number(r.get("baseline")), ratio(r),
                ("≥ " if r.get("higher_is_better") else "≤ ") + number(r["target"])
                if r.get("target") is not None else "—",
                met(r), r.get("note", ""),
            ]  # fmt: skip
            out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
        out.append("")
    if not by_script:
        out += ["No figures were recorded.", ""]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description="Write bench/RESULTS.md from recorded figures.")
    parser.add_argument("results", nargs="?", default=os.environ.get(RESULTS_ENV, ""))
    parser.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"))
    parser.add_argument("--failed", default="", help="Scripts that failed, space-separated.")
    args = parser.parse_args()
    if not args.results:
        parser.error(f"name the results file (or set {RESULTS_ENV})")
    rows = read_results(Path(args.results))
    Path(args.out).write_text(render(rows, args.failed.split()), encoding="utf-8")
    print(f"wrote {args.out}: {len(rows)} figures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
