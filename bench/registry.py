"""Role registry speed: lookups and effective tools, warm, against NFR-001 (1 ms).

Targets (issue 2): lookup under 5 µs, effective tools under 50 µs warm. A plain dict
lookup measured in the same run is the baseline the ratios are printed against.
"""

from __future__ import annotations

from _report import record
from _setup import django_setup, fmt_time, per_call, verdict

django_setup()

from roles.access import compute_access  # noqa: E402
from roles.registry import RoleRegistry, read_specs  # noqa: E402


def main() -> None:
    reg = RoleRegistry(max_age=3600)
    reg.sync()
    plain = {"coder": object(), "planner": object()}
    baseline = per_call(lambda: plain.get("coder"))
    results = [
        ("lookup by slug  registry.get('coder')", per_call(lambda: reg.get("coder")), 5e-6),
        ("lookup by name  registry.get('Coder')", per_call(lambda: reg.get("Coder")), 5e-6),
        (
            "effective tools registry.effective_tools('coder')",
            per_call(lambda: reg.effective_tools("coder")),
            50e-6,
        ),
        (
            "access check    registry.access('planner').allows",
            per_call(lambda: reg.access("planner").allows("write_file")),
            50e-6,
        ),
    ]
    id_specs, tools = read_specs()
    specs = {s.slug: s for _, s in id_specs}
    cold = per_call(lambda: compute_access("coder", specs, tools), seconds=0.3, min_calls=100)
    sync = per_call(reg.sync, seconds=0.3, min_calls=50)

    def reload() -> None:
        reg.invalidate()
        reg.sync()

    full = per_call(reload, seconds=0.5, min_calls=5)
    print(f"roles: {len(specs)}, tools: {len(tools)}")
    print(f"baseline        plain dict lookup                  {fmt_time(baseline)}")
    for label, value, target in results:
        print(
            f"{verdict(value, target)} {label:<48} {fmt_time(value)}  target {fmt_time(target).strip()}  ratio to dict {value / baseline:6.1f}x"
        )
        record(
            " ".join(label.split()),
            value * 1e6,
            "µs",
            target=target * 1e6,
            baseline=baseline * 1e6,
            note="baseline: plain dict lookup",
        )
    print(f"info cold compute_access('coder') (no cache)         {fmt_time(cold)}")
    print(f"info stamp check registry.sync() (one per request)   {fmt_time(sync)}")
    print(f"info full reload after a change                      {fmt_time(full)}")
    record("cold compute_access('coder') (no cache)", cold * 1e6, "µs")
    record("stamp check registry.sync() (one per request)", sync * 1e6, "µs")
    record("full reload after a change", full * 1e3, "ms")
    worst = max(v for _, v, _ in results)
    print(
        f"{verdict(worst, 1e-3)} NFR-001 role lookup under 1 ms: worst warm call {fmt_time(worst).strip()}"
    )
    record("NFR-001 role lookup, worst warm call", worst * 1e3, "ms", target=1.0)


if __name__ == "__main__":
    main()
