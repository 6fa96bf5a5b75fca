"""Preview a change to a role: its recorded tool decisions decided again under the draft.

``role_replay`` builds the draft exactly as a save would (the stored content with the
partial data over it, through the same checks: ACODE-PRM-001, ACODE-ROL-004, 404s,
ACODE-ROL-001 for an unknown role or parent, ACODE-API-409) but writes nothing, not even
the record of refused text a save keeps; then replays the role's recorded decisions in the
window (``roles.history``, which the sessions app provides) with ``decide``, runs the
draft's examples (failing ones are reported, not refused), and says what the draft grants
that the stored role does not, and the other way round, with counterexamples
(``roles.decision.diff``): what no recorded call exercised too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from roles.access import RoleSpec, ToolSpec, compute_access, parent_chain
from roles.decision import ExampleResult, RoleView, examples_check
from roles.decision.diff import policy_diff
from roles.decision.limits import limits_of
from roles.decision.replay import ReplayTally, replay_decision
from roles.history import decision_history
from roles.mcp.tools import argument_limits
from roles.registry import read_specs, registry
from roles.services.policy import role_documents, tool_declarations
from roles.services.roles import _role_content, _role_content_check, _role_fit_check
from roles.validation import ROLE_SCALARS, role_spec

BAD_WINDOW = "ACODE-ROL-014"


def role_replay(
    *,
    slug: str,
    data: Mapping[str, Any],
    since: datetime | None = None,
    until: datetime | None = None,
    per_group: int = 5,
) -> dict[str, Any]:
    """The impact of ``data`` (a partial role, as PATCH /api/roles/<slug>/ takes) on the
    role's recorded decisions in ``[since, until)``: counts, groups by change, tool and
    rule with a few examples (audit row ids), reasons for what cannot be replayed, and the
    draft's example results. A window that ends before it starts is empty. Writes nothing."""
    draft = role_draft(slug=registry.get(slug).slug, data=data)
    tally = ReplayTally(per_group=per_group)
    for recorded in decision_history(role=draft.role.spec.slug, since=since, until=until):
        tally.add(replay_decision(draft.role, recorded))
    failing = [r.as_data() for r in draft.examples() if not r.passed]
    diffs = role_draft_diffs(draft)
    return {
        "role": draft.role.spec.slug,
        "since": since.isoformat() if since else None,
        "until": until.isoformat() if until else None,
        **tally.as_data(),
        "examples_failing": failing,
        "diff": diffs[0],
        "diff_below": diffs[1:],
    }


def role_draft_diffs(draft: RoleDraft) -> list[dict[str, Any]]:
    """What the draft grants and takes (``roles.decision.diff``): first for its role, then
    for each role below it whose document moves (a child is capped by its parent)."""
    slug = draft.role.spec.slug
    below = [s for s in draft.specs if s != slug and slug in parent_chain(s, draft.specs)]
    before = role_documents([slug, *below])
    after = role_documents([slug, *below], specs=draft.specs, tools=draft.tools)
    known = tool_declarations(draft.tools)
    diffs = []
    for name in [slug, *below]:
        found = policy_diff(before.get(name, {}), after[name], declarations=known)
        if name == slug or found.gains or found.narrowings:
            diffs.append(found.as_data())
    return diffs


@dataclass(frozen=True)
class RoleDraft:
    """A role as a save would leave it (``role``, as the decision reads it: its effective
    access and argument limits), beside every stored role (``specs``) and tool."""

    role: RoleView
    specs: Mapping[str, RoleSpec]
    tools: Sequence[ToolSpec]

    def examples(self) -> list[ExampleResult]:
        """Its examples and those of the roles below it, decided as a save decides them."""
        return examples_check(
            self.specs, self.tools, {self.role.spec.slug}, limits=argument_limits()
        )


def role_draft(*, slug: str, data: Mapping[str, Any]) -> RoleDraft:
    """The stored role ``slug`` with ``data`` over it, checked as a save checks it.
    Writes nothing."""
    id_specs, tools = read_specs()
    specs = {spec.slug: spec for _, spec in id_specs}
    content = _role_content(data, specs={s: v.content() for s, v in specs.items()}, slug=slug)
    _role_content_check(content, label=None)
    _role_fit_check(content, specs)
    after = {**specs, slug: _draft_spec(content)}
    access = compute_access(slug, after, tools)
    role = RoleView(after[slug], access, limits_of(slug, after, argument_limits()))
    return RoleDraft(role, after, tools)


def _draft_spec(content: Mapping[str, Any]) -> RoleSpec:
    """The checked content as a spec, its scalars (budgets) and protection included."""
    scalars = {
        k: content[k] for k, kind in ROLE_SCALARS.items() if isinstance(content.get(k), kind)
    }
    scalars["protected"] = bool(content.get("protected"))
    return replace(role_spec(content), **scalars)
