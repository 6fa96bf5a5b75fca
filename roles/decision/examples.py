"""A role's examples, checked with the tool decision: the calls it must allow or deny.

Examples are stored with the role (``examples``) and with its structured command rules
(each rule's ``examples``); their form is ``roles.commands.examples``. Each one is decided
by ``roles.decision.decide`` (what the executor asks before every call) against the role's
effective access, computed from the definitions being saved, its parents included, with the
host and workspace its context states. Saving a role checks its examples and those of the
roles below it (a parent's edit can take from a child); a failing one refuses the save.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roles.access import (
    RoleAccess,
    RoleCycleError,
    RoleSpec,
    ToolSpec,
    compute_access,
    parent_chain,
)
from roles.commands.workspace import KnownWorkspace
from roles.decision.core import Decision, PolicyRole, decide
from roles.decision.denial import Route
from roles.decision.facts import HostFacts
from roles.decision.limits import limits_of
from roles.writes import WritePolicy

EXAMPLE_FAILED = "ACODE-ROL-008"


@dataclass(frozen=True)
class RoleView:
    """A role definition with its effective access, as the decision reads it."""

    spec: RoleSpec
    access: RoleAccess
    # MCP argument limits are rows of their own, not part of a role's definition: tool ->
    # (role slug, JSON Schema fragment) of this role and each ancestor that narrows it.
    argument_limits: Mapping[str, tuple[tuple[str, Mapping[str, Any]], ...]] = field(
        default_factory=dict
    )
    # The registry's roles get their transitions' routes (``with_routes``); a role being
    # edited is judged alone: no transitions, so a denial suggests asking.
    tool_routes: Mapping[str, Route] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def write_policy(self) -> WritePolicy:
        """What this role may write (the one write-path rule, with its permissions)."""
        return WritePolicy(self.access.permissions, tuple(self.spec.write_paths), self.name)


@dataclass(frozen=True)
class Example:
    """One example as the decision takes it: where it is stored, the call, what it expects."""

    label: str  # where it is stored: examples[0], command_patterns[1].examples[0]
    name: str
    tool: str
    arguments: Any
    context: Mapping[str, Any]
    expect: str
    why: str
    rule: str = ""

    @property
    def call(self) -> str:
        shown = json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)
        return f"{self.tool} {shown[:200]}"


_WORDS = {"allow": "allowed", "ask": "asked (a person consents first)", "deny": "denied"}


@dataclass(frozen=True)
class ExampleResult:
    """An example and the decision it got; ``passed`` when that is what it expects."""

    role: str
    example: Example
    decision: Decision

    @property
    def outcome(self) -> str:
        return self.decision.outcome

    @property
    def passed(self) -> bool:
        rule_ok = not self.example.rule or self.decision.rule.startswith(self.example.rule)
        return self.outcome == self.example.expect and rule_ok

    def message(self) -> str:
        """The example, the decision and the rule that decided."""
        ex, decision = self.example, self.decision
        title = f"role {self.role}, {ex.label}" + (f" ({ex.name})" if ex.name else "")
        got, wanted = _WORDS.get(self.outcome, self.outcome), _WORDS.get(ex.expect, ex.expect)
        text = f"{title}: {ex.call} must be {wanted} ({ex.why}) but is {got} by rule "
        text += f"{decision.rule!r}"
        if ex.rule and ex.expect == self.outcome:
            text += f", not by a rule starting {ex.rule!r}"
        return text + (f": {decision.reason}" if decision.reason else "")

    def as_data(self) -> dict[str, Any]:
        return {
            "role": self.role, "example": self.example.label, "name": self.example.name,
            "call": self.example.call, "expect": self.example.expect, "why": self.example.why,
            "decision": self.outcome, "rule": self.decision.rule,
            "reason": self.decision.reason, "passed": self.passed,
        }  # fmt: skip


def role_examples(spec: RoleSpec) -> Iterator[Example]:
    """Every example of a role: its own, then its command rules', in stored order."""
    for index, item in enumerate(spec.examples):
        yield _example(f"examples[{index}]", item, item.get("tool", ""), item.get("arguments"))
    for r_index, rule in enumerate(spec.command_patterns):
        if not isinstance(rule, Mapping):
            continue
        for index, item in enumerate(rule.get("examples") or []):
            label = f"command_patterns[{r_index}].examples[{index}]"
            tool = item.get("tool") or "execute_command"
            yield _example(label, item, tool, {"argv": list(item.get("argv") or [])})


def _example(label: str, item: Mapping[str, Any], tool: str, arguments: Any) -> Example:
    return Example(
        label=label, name=str(item.get("name", "")), tool=str(tool),
        arguments={} if arguments is None else arguments, context=item.get("context") or {},
        expect=str(item.get("expect", "")), why=str(item.get("why", "")),
        rule=str(item.get("rule", "")),
    )  # fmt: skip


def example_decide(role: PolicyRole, example: Example) -> Decision:
    """The decision an example gets: ``decide`` with the host and workspace it states."""
    context = example.context
    sandbox = context.get("sandbox", "available")
    host = HostFacts(
        sandbox_required=sandbox != "off",
        sandbox_available=sandbox == "available",
        sandbox_reason="the example states that no sandbox can start",
        overlay=bool(context.get("layer", True)),
        overlay_reason="the example states that no copy-on-write layer can be mounted",
    )
    workspace = KnownWorkspace.of(context.get("links") or ())
    return decide(role, example.tool, example.arguments, host=host, workspace=workspace)


def role_examples_run(role: PolicyRole) -> list[ExampleResult]:
    """Every example of ``role``, decided."""
    return [
        ExampleResult(role.spec.slug, ex, example_decide(role, ex))
        for ex in role_examples(role.spec)
    ]


def examples_check(
    specs: Mapping[str, RoleSpec],
    tools: Sequence[ToolSpec],
    saved: Collection[str] | None = None,
    *,
    limits: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> list[ExampleResult]:
    """The examples of the ``saved`` roles and every role below them (all roles when
    ``saved`` is None), decided against ``specs`` (the definitions as they would be) and
    ``limits`` (each role's MCP argument limits, ``roles.mcp.tools.argument_limits``: a role
    is held to its ancestors' too, as the executor holds it)."""
    results: list[ExampleResult] = []
    for slug in specs:
        if saved is not None and not _affected(slug, specs, saved):
            continue
        try:
            access = compute_access(slug, specs, tools)
        except (RoleCycleError, KeyError):
            continue  # the parent chain's own check refuses this role
        results += role_examples_run(RoleView(specs[slug], access, limits_of(slug, specs, limits)))
    return results


def _affected(slug: str, specs: Mapping[str, RoleSpec], saved: Collection[str]) -> bool:
    if slug in saved:
        return True
    try:
        return any(parent in saved for parent in parent_chain(slug, specs))
    except (RoleCycleError, KeyError):
        return False


def failures_summary(results: Sequence[ExampleResult]) -> str:
    """The refusal's message: how many examples failed, then each (the first five)."""
    failed = [r for r in results if not r.passed]
    text = f"{len(failed)} policy example(s) fail: " + "; ".join(r.message() for r in failed[:5])
    return text if len(failed) <= 5 else text + f"; and {len(failed) - 5} more"
