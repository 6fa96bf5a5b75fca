"""What a role change grants: one diff of two role versions, pure like the decision.

``policy_diff(old, new)`` takes two role documents (what a role version records,
``roles.access.role_snapshot``, optionally with ``mcp_servers``: the network grants of the
servers whose tools it gets, and ``entered_from``: the transition rules into it) and says,
for every dimension, what the new version allows that the old did not (``gains``) and the
other way round (``narrowings``). Each finding says whether it was decided exactly and
carries a counterexample: a call ``decide`` allows under the new version and denies under
the old (checked here, with both versions, before it is reported), a path a command's layer
may now change, a command the rules now allow, or the fact that moved. Where inclusion
cannot be decided (parts of JSON Schema, rules no single old rule includes and no command
was found for), a change not provably narrower is a gain marked "conservative".

Dimensions: effective permissions, effective tools, write globs (automata,
``diff_paths``), command rules (``diff_commands``), MCP argument limits (``diff_limits``),
the MCP servers' network grants, budgets, the plan and protection flags, the transition
rules into the role. The parent and allow-lists act through the effective dimensions (a
child is capped by its parent), so they are listed as changed fields only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from roles.access import DELEGATION_DEFAULTS
from roles.decision.diff_commands import any_allowed, command_gains
from roles.decision.diff_limits import (
    limit_key,
    permitted_arguments,
    schema_narrower,
    violating_arguments,
)
from roles.decision.diff_paths import language_gain
from roles.decision.diff_role import (
    ANALYSED,
    Counter,
    CounterPair,
    arguments_for,
    document_role,
    verified_call,
)
from roles.tools import ToolDeclaration, declared_tools
from roles.writes import CHANGE_PERMISSIONS, WritePolicy

BUDGETS = ("max_llm_calls", "max_tokens", "timeout_seconds", "max_sub_agents",
           "max_delegation_depth")  # fmt: skip
CALLS_CHECKED = 2  # command gains also shown (and checked) as a call, per diff
PERMISSION_EFFECTS = {
    "network": "its commands run with network access",
    "read_secrets": "it reads files that hold secrets (a .env, keys) instead of stand-ins",
    "create_files": "it (and its commands' layers) may create files",
    "write_files": "it (and its commands' layers) may modify files",
    "delete_files": "it (and its commands' layers) may delete files",
    "execute_commands": "it may run commands",
    "spawn": "it may hand sub-tasks to sub-agents (delegate)",
    "configure": "it may change agents' configuration",
    "propose_tasks": "it may propose backlog tasks (propose_backlog)",
}


@dataclass(frozen=True)
class Finding:
    """One thing a version allows that the other does not."""

    dimension: str
    what: str
    exact: bool = True
    counterexample: Mapping[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        """The finding in words, with its counterexample."""
        shown = example_text(self.counterexample)
        note = "" if self.exact else " (conservative)"
        return f"{self.what}{note}" + (f", e.g. {shown}" if shown else "")

    def as_data(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "what": self.what,
            "exact": self.exact,
            "counterexample": dict(self.counterexample),
            "text": self.text(),
        }


@dataclass(frozen=True)
class PolicyDiff:
    """Two versions of one role compared: what the new gains, what it loses, and the
    fields that changed without changing on their own what it may do."""

    role: str
    gains: tuple[Finding, ...] = ()
    narrowings: tuple[Finding, ...] = ()
    changed: tuple[str, ...] = ()

    @property
    def widens(self) -> bool:
        return bool(self.gains)

    def summary(self, most: int = 3) -> str:
        """The gains in words (the first ``most``)."""
        parts = [g.text() for g in self.gains[:most]]
        more = len(self.gains) - most
        return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")

    def as_data(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "widens": self.widens,
            "gains": [g.as_data() for g in self.gains],
            "narrowings": [n.as_data() for n in self.narrowings],
            "changed": list(self.changed),
        }


def policy_diff(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    declarations: Mapping[str, ToolDeclaration] | None = None,
) -> PolicyDiff:
    """``new`` against ``old`` (two documents of one role); see the module."""
    known = dict(declared_tools())
    known.update(declarations or {})
    pair = CounterPair(old, new, document_role(old, known), document_role(new, known), known)
    back = CounterPair(new, old, pair.new_role, pair.old_role, known)
    gains = [f for dimension in DIMENSIONS for f in dimension(pair)]
    narrowings = [_reversed(f) for dimension in DIMENSIONS for f in dimension(back)]
    changed = sorted(
        k for k in set(old) | set(new) if k not in ANALYSED and old.get(k) != new.get(k)
    )
    return PolicyDiff(str(new.get("slug") or old.get("slug") or ""), tuple(gains),
                      tuple(narrowings), tuple(changed))  # fmt: skip


def _reversed(finding: Finding) -> Finding:
    """A gain of old over new, told as what the new version no longer allows."""
    example = dict(finding.counterexample)
    if "old" in example and "new" in example:
        example["old"], example["new"] = example["new"], example["old"]
    what = finding.what
    what = "lose " + what[5:] if what.startswith("gain ") else "no longer " + what
    return replace(finding, what=what, counterexample=example)


# -- dimensions: each gives what ``pair.new`` allows that ``pair.old`` did not ------------
def _permissions(pair: CounterPair) -> list[Finding]:
    old = set(pair.old.get("effective_permissions") or ())
    found = []
    for permission in sorted(set(pair.new.get("effective_permissions") or ()) - old):
        example: Counter = {"kind": "effect", "effect": PERMISSION_EFFECTS.get(permission, "")}
        change = next((c for c, p in CHANGE_PERMISSIONS.items() if p == permission), "")
        if change:
            example = _change_example(pair, change) or example
        elif permission == "network":
            example = _network_example(pair) or example
        found.append(Finding("effective_permissions", f"gain permission {permission}", True,
                             example))  # fmt: skip
    return found


def _change_example(pair: CounterPair, change: str) -> Counter | None:
    globs = list(pair.new.get("write_paths") or ())
    path = (language_gain(globs, [])[1] if globs else None) or "probe.txt"
    new_policy, old_policy = pair.new_role.write_policy, pair.old_role.write_policy
    if (
        new_policy.check(path, change=change).allowed
        and not old_policy.check(path, change=change).allowed
    ):
        return {"kind": "change", "path": path, "change": change, "old": "deny", "new": "allow"}
    return None


def _network_example(pair: CounterPair) -> Counter | None:
    argv = any_allowed(list(pair.new.get("command_patterns") or ()))
    for tool in ("execute_command", "run_tests"):
        if argv is not None and pair.new_role.access.declaration(tool) is not None:
            example = verified_call(pair, tool, {"argv": argv}, facet="network")
            if example:
                return example
    return None


def _tools(pair: CounterPair) -> list[Finding]:
    old = set(pair.old.get("effective_tools") or ())
    found = []
    for tool in [t for t in pair.new.get("effective_tools") or () if t not in old]:
        declaration = pair.known.get(tool)
        example: Counter = {"kind": "tool", "tool": tool}
        if declaration is not None:
            arguments = arguments_for(pair, declaration)
            example = verified_call(pair, tool, arguments) or example
        found.append(Finding("effective_tools", f"gain tool {tool}", True, example))
    return found


def _write_paths(pair: CounterPair) -> list[Finding]:
    new_policy, old_policy = pair.new_role.write_policy, pair.old_role.write_policy
    common = [c for c, p in CHANGE_PERMISSIONS.items()
              if p in new_policy.permissions and p in old_policy.permissions]  # fmt: skip
    if not common:
        return []  # a write permission gained or lost is its own finding
    new_globs, old_globs = list(new_policy.write_paths), list(old_policy.write_paths)
    if not old_globs:
        return []  # anywhere before
    gained, path = language_gain(new_globs or ["**"], old_globs)
    if not gained:
        return []
    what = "write paths outside its old write globs"
    if path is None:
        return [Finding("write_paths", what, False)]
    allowed = _verified_change(new_policy, old_policy, path, common[0])
    example: Counter = {"kind": "change", "path": path, "change": common[0],
                        "old": "deny", "new": "allow"}  # fmt: skip
    return [Finding("write_paths", what, True, example if allowed else {"path": path})]


def _verified_change(new: WritePolicy, old: WritePolicy, path: str, change: str) -> bool:
    return new.check(path, change=change).allowed and not old.check(path, change=change).allowed


def _commands(pair: CounterPair) -> list[Finding]:
    """Commands the rules now allow; the first few also as a call ``decide`` takes (the
    others' commands are checked with the rules alone: a role with 200 new rules would
    otherwise decide 200 calls against 200 rules twice)."""
    found: list[Finding] = []
    rules = list(pair.new.get("command_patterns") or ())
    for gain in command_gains(list(pair.old.get("command_patterns") or ()), rules):
        example: Counter = {}
        if gain.argv:
            example = {"kind": "argv", "argv": list(gain.argv), "old": gain.old, "new": gain.new}
            runs = pair.new_role.access.declaration("execute_command") is not None
            if gain.new == "allow" and runs and len(found) < CALLS_CHECKED:
                call = verified_call(pair, "execute_command", {"argv": list(gain.argv)})
                example = call or example
        what = f"run commands it could not: {gain.what}"
        found.append(Finding("command_rules", what, gain.exact, example))
    return found


def _limits(pair: CounterPair) -> list[Finding]:
    new_tools = set(pair.new.get("effective_tools") or ())
    new_items = _limit_items(pair.new)
    found = []
    for tool, items in sorted(_limit_items(pair.old).items()):
        kept = {limit_key(o, s) for o, s in new_items.get(tool, [])}
        for owner, schema in items:
            if limit_key(owner, schema) in kept or any(
                schema_narrower(s, schema) for _, s in new_items.get(tool, [])
            ):
                continue
            what = f"{tool}: the limit set by {owner} is gone or not provably as narrow"
            if tool not in new_tools:  # unlimited from the day it gets the tool
                what += " (the role does not get the tool now)"
            others = [s for _, s in new_items.get(tool, [])]
            example = _limit_example(pair, tool, schema, others) if tool in new_tools else None
            found.append(Finding("argument_limits", what, bool(example), example or {}))
    return found


def _limit_items(document: Mapping[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    items: dict[str, list[tuple[str, Any]]] = {}
    for item in document.get("argument_limits") or ():
        items.setdefault(str(item.get("tool")), []).append(
            (str(item.get("role")), item.get("schema"))
        )
    return items


def _limit_example(pair: CounterPair, tool: str, schema: Any, others: list[Any]) -> Counter | None:
    declaration = pair.known.get(tool)
    if declaration is None or not isinstance(schema, Mapping):
        return None
    base = arguments_for(pair, declaration)
    for patch in [*violating_arguments(schema), *permitted_arguments(others)]:
        example = verified_call(pair, tool, {**base, **patch})
        if example:
            return example
    return None


def _budgets(pair: CounterPair) -> list[Finding]:
    found = []
    for name in BUDGETS:
        before = pair.old.get(name, DELEGATION_DEFAULTS.get(name))
        after = pair.new.get(name, DELEGATION_DEFAULTS.get(name))
        if isinstance(before, int) and isinstance(after, int) and after > before:
            example = {"kind": "budget", "field": name, "old": before, "new": after}
            found.append(
                Finding("budgets", f"have {name} raised from {before} to {after}", True, example)
            )
    return found


def _flags(pair: CounterPair) -> list[Finding]:
    found = []
    if pair.new.get("answer_sets_plan") and not pair.old.get("answer_sets_plan"):
        found.append(Finding("answer_sets_plan", "set the session's plan with its answer"))
    if pair.old.get("protected") and not pair.new.get("protected"):
        found.append(
            Finding("protected", "lose its protection (a change no longer needs a second admin)")
        )
    return found


def _servers(pair: CounterPair) -> list[Finding]:
    old: Mapping[str, Any] = pair.old.get("mcp_servers") or {}
    found = []
    for slug, grant in sorted((pair.new.get("mcp_servers") or {}).items()):
        before = old.get(slug)
        if before is None:
            what = f"use MCP server {slug}: {_reach(grant)}"
            found.append(Finding("mcp_servers", what, True, {"kind": "server", "server": slug}))
            continue
        for what in _grant_gains(slug, before, grant):
            found.append(Finding("mcp_servers", what, True, {"kind": "server", "server": slug}))
    return found


def _reach(grant: Mapping[str, Any]) -> str:
    where = grant.get("url") or " ".join(grant.get("command") or []) or "?"
    private = ", private networks allowed" if grant.get("allow_private_network") else ""
    secrets = grant.get("secrets") or []
    return f"{where}{private}" + (f", secrets {', '.join(secrets)}" if secrets else "")


def _grant_gains(slug: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    gains = []
    if after.get("network") and not before.get("network"):
        gains.append(f"use MCP server {slug} with network access")
    if after.get("allow_private_network") and not before.get("allow_private_network"):
        gains.append(f"use MCP server {slug} with private networks allowed")
    if (after.get("url") or "") != (before.get("url") or "") and after.get("url"):
        gains.append(f"use MCP server {slug} at {after['url']} (was {before.get('url') or 'none'})")
    if list(after.get("command") or []) != list(before.get("command") or []) and after.get(
        "command"
    ):
        gains.append(f"use MCP server {slug} running {' '.join(after['command'])}")
    secrets = sorted(set(after.get("secrets") or ()) - set(before.get("secrets") or ()))
    if secrets:
        gains.append(f"give MCP server {slug} the secrets {', '.join(secrets)}")
    return gains


def _entries(pair: CounterPair) -> list[Finding]:
    """Ways in: a rule from a role it had no rule from, or with a weaker precondition
    (``none`` is weaker than every other)."""

    def rules(document: Mapping[str, Any]) -> set[tuple[str, str]]:
        return {(str(r.get("from")), str(r.get("precondition") or "none"))
                for r in document.get("entered_from") or ()}  # fmt: skip

    before = rules(pair.old)
    found = []
    for source, condition in sorted(rules(pair.new) - before):
        if (source, "none") in before:
            continue
        example = {"kind": "transition", "from": source, "to": pair.new.get("slug"),
                   "precondition": condition}  # fmt: skip
        what = f"be entered from {source} ({condition}): sessions there may switch into it"
        found.append(Finding("entered_from", what, True, example))
    return found


DIMENSIONS: Sequence[Callable[[CounterPair], list[Finding]]] = (
    _permissions, _tools, _write_paths, _commands, _limits, _budgets, _flags, _servers, _entries,
)  # fmt: skip


def example_text(example: Mapping[str, Any]) -> str:
    """A counterexample in words."""
    kind = example.get("kind")
    if kind == "call":
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted((example.get("arguments") or {}).items()))
        return f"{example['tool']}({shown[:160]}) {example['old']} -> {example['new']}"
    if kind == "change":
        return f"{example['change']} {example['path']!r} {example['old']} -> {example['new']}"
    if kind == "argv":
        return f"{' '.join(example['argv'])[:160]!r} {example['old']} -> {example['new']}"
    if kind == "effect":
        return str(example.get("effect") or "")
    if kind == "transition":
        return f"{example['from']} -> {example['to']} ({example['precondition']})"
    return ""
