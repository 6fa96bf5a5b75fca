"""Policy examples on every save, and on demand: the calls a role must allow or deny.

``role_examples_enforce`` runs inside a role write's transaction, after the write and
before versions are recorded: it decides the examples of the saved roles (and of every role
below them) with the tool decision against the definitions as written, and refuses the
whole write (ACODE-ROL-008, naming each failing example, its decision and the rule that
decided) when one fails, so nothing is kept. ``policy_examples_run`` decides the examples
of the stored roles or of a roles document without writing anything (``acode_policy_test``,
``acode role test``, POST /api/roles/test/).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from acode.errors import AcodeError
from roles.access import RoleSpec, ToolSpec
from roles.decision import EXAMPLE_FAILED, ExampleResult, examples_check, failures_summary
from roles.mcp.tools import argument_limits
from roles.registry import read_specs, tool_specs
from roles.validation import role_spec


def examples_refusal(results: Sequence[ExampleResult]) -> AcodeError | None:
    """ACODE-ROL-008 naming every failing example, or None when all pass."""
    failed = [r for r in results if not r.passed]
    if not failed:
        return None
    return AcodeError(
        EXAMPLE_FAILED,
        f"Role not saved, {failures_summary(results)}.",
        {"failures": [r.as_data() for r in failed]},
    )


def role_examples_enforce(*, saved: Collection[str]) -> None:
    """Refuse the write in progress when an example of a saved role (or one below) fails."""
    id_specs, tools = read_specs()
    specs = {s.slug: s for _, s in id_specs}
    refusal = examples_refusal(examples_check(specs, tools, saved, limits=argument_limits()))
    if refusal is not None:
        raise refusal


def catalog_examples_check(
    *, tools: Sequence[ToolSpec] | None = None, renamed: Mapping[str, str] | None = None
) -> list[ExampleResult]:
    """The examples of every role after a change to what all roles are made of: a tool row
    (``tools``, the tools as they would be) or a permission's code (``renamed``, old to new).

    ACODE-ROL-008 when a call an example says must be denied would be allowed: the change
    widens a role beyond its promise. Examples that now fail the other way (a tool switched
    off, a permission withdrawn) are returned, not refused: narrowing access, in an
    emergency too, is never blocked; the caller shows them as a warning."""
    id_specs, stored = read_specs()
    specs = {s.slug: _renamed(s, renamed or {}) for _, s in id_specs}
    results = examples_check(specs, stored if tools is None else tools, limits=argument_limits())
    widened = [r for r in results if r.example.expect == "deny" and r.decision.allowed]
    if widened:
        raise AcodeError(
            EXAMPLE_FAILED,
            f"Not saved: it would let a role do what its example forbids; "
            f"{failures_summary(widened)}.",
            {"failures": [r.as_data() for r in widened]},
        )
    return [r for r in results if not r.passed]


def _renamed(spec: RoleSpec, renamed: Mapping[str, str]) -> RoleSpec:
    if not renamed or not set(spec.permissions) & set(renamed):
        return spec
    codes = tuple(sorted({renamed.get(code, code) for code in spec.permissions}))
    return dataclasses.replace(spec, permissions=codes)


def policy_examples_run(document: Mapping[str, Any] | None = None) -> list[ExampleResult]:
    """Decide the examples of every stored role, or of every role a document defines (its
    roles over the stored ones, its tool rows over the stored ones). Writes nothing."""
    id_specs, tools = read_specs()
    specs: dict[str, RoleSpec] = {spec.slug: spec for _, spec in id_specs}
    if document is None:
        return examples_check(specs, tools, limits=argument_limits())
    roles = [r for r in document.get("roles") or [] if isinstance(r, Mapping)]
    saved = {str(r.get("slug")) for r in roles}
    specs.update({str(r.get("slug")): role_spec(r) for r in roles})
    return examples_check(specs, _document_tools(document, tools), saved, limits=argument_limits())


def _document_tools(document: Mapping[str, Any], stored: Sequence[ToolSpec]) -> list[ToolSpec]:
    """The tools as a document would leave them: its rows enable (or not) declared tools."""
    rows = {str(t.get("name")): t for t in document.get("tools") or [] if isinstance(t, Mapping)}
    if not rows:
        return list(stored)
    by_name = {t.name: t for t in tool_specs()}
    out = []
    for name, spec in by_name.items():
        row = rows.get(name)
        if row is None:
            out.append(spec)
            continue
        out.append(ToolSpec(spec.declaration, str(row.get("description") or spec.description),
                            bool(row.get("enabled", True)), int(row.get("position", 0))))  # fmt: skip
    return out
