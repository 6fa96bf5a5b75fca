"""Prompt composition for a role.

A role's prompt is ``system`` + ``roles/<key>`` + a constraints block generated from the
role's data, taken from the active prompt pack. Prompt text that instructs dangerous
actions (spec, Threat 3) is refused when saved or imported (``roles.validation``), and
again here when composed, in case it reached the database some other way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from acode.errors import AcodeError
from roles.commands import rule_label
from roles.registry import RoleDef, RoleRegistry
from roles.registry import registry as default_registry
from roles.validation import check_prompt_text


@dataclass(frozen=True)
class ComposedPrompt:
    """The prompt a role's job starts with, and how it was put together."""

    role: str
    pack: str
    text: str
    components: list[str]
    fell_back: bool
    notes: list[str] = field(default_factory=list)


def constraints_block(role: RoleDef) -> str:
    """The generated, enforced-limits section appended to every role prompt."""
    spec = role.spec
    lines = [f"## Role in force: {spec.name}", ""]
    lines.append(
        "acode enforces the limits below. A tool call outside them is refused, "
        "recorded in the audit log and returned to you as an error."
    )
    lines.append("")
    lines.append("Constraints:")
    lines += [f"- {c}" for c in spec.constraints] or ["- None beyond the tool list."]
    lines.append("")
    lines.append("Tools available: " + (", ".join(role.access.tools) or "none"))
    if role.access.withheld:
        lines.append(
            "Tools not available in this role: "
            + ", ".join(f"{w.name} ({w.reason})" for w in role.access.withheld)
        )
    if spec.write_paths:
        lines.append("You may write only paths matching: " + ", ".join(spec.write_paths))
    if spec.command_patterns:
        allowed = [rule_label(i, r).split(": ", 1)[1] for i, r in enumerate(spec.command_patterns)]
        lines.append("You may run only these commands: " + "; ".join(allowed))
    return "\n".join(lines)


def compose_prompt(
    role_name: str, *, pack: str | None = None, registry: RoleRegistry | None = None
) -> ComposedPrompt:
    """Compose ``system + roles/<key> + constraints`` from the active (or given) pack."""
    reg = registry or default_registry
    role = reg.get(role_name)
    pack_name = pack or settings.ACODE_PROMPT_PACK
    texts = reg.prompt_texts(pack_name)
    if texts is None:
        raise AcodeError(
            "ACODE-PRM-002",
            f"Unknown prompt pack {pack_name!r}.",
            {"pack": pack_name, "known_packs": reg.prompt_packs()},
        )
    parts: list[str] = []
    used: list[str] = []
    notes: list[str] = []
    fell_back = False
    system = texts.get("system")
    if system is None:
        notes.append(f"Pack {pack_name!r} has no 'system' prompt.")
    else:
        parts.append(system)
        used.append("system")
    key = role.prompt_component_key
    if key != "system":
        role_text = texts.get(key)
        if role_text is None:
            fell_back = True
            notes.append(f"{key!r} is missing from pack {pack_name!r}; fell back to 'system'.")
        else:
            parts.append(role_text)
            used.append(key)
    parts.append(constraints_block(role))
    used.append("constraints")
    for name, text in zip(used, parts, strict=True):
        check_prompt_text(name, text, where="composed prompt part")
    return ComposedPrompt(
        role=role.name,
        pack=pack_name,
        text="\n\n".join(p.strip() for p in parts) + "\n",
        components=used,
        fell_back=fell_back,
        notes=notes,
    )
