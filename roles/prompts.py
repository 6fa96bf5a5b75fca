"""Prompt composition for a role, in layers.

A role's prompt is composed from the active prompt pack in this order (spec
"Role-Specific Prompts"): ``system``, ``roles/<key>``, one ``languages/<name>`` per
language, one ``frameworks/<name>`` per framework, then a constraints block generated from
the role's data. Packs are data (``PromptComponent`` rows, admin-editable); a language or
framework the pack has no layer for is noted and left out. Each pack layer has a token
budget (``LAYER_BUDGETS``): a layer over it is cut at a line and the cut is said, in the
prompt and in the notes. The constraints block is never cut: it is what acode enforces.

Prompt text that instructs dangerous actions (spec, Threat 3) is refused when saved or
imported (``roles.validation``), and again here when composed, in case it reached the
database some other way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from django.conf import settings

from roles.commands import rule_label
from roles.registry import RoleDef, RoleRegistry
from roles.registry import registry as default_registry
from roles.validation import check_prompt_text

# Tokens each layer of a pack may take; the constraints block is never cut.
LAYER_BUDGETS = {"system": 1_200, "role": 800, "language": 400, "framework": 400}
LAYER_ORDER = ("system", "role", "language", "framework", "constraints")


def estimate_tokens(text: str) -> int:
    """A model-independent estimate (about four characters a token), as the context uses."""
    return max(1, len(text) // 4)


@dataclass(frozen=True)
class PromptPart:
    """One layer of a composed prompt: its key, where it came from and its size."""

    layer: str  # system | role | language | framework | constraints
    key: str
    origin: str  # where the text came from: the pack, or generated
    tokens: int
    budget: int | None
    cut: bool = False


@dataclass(frozen=True)
class ComposedPrompt:
    """The prompt a role's job starts with, and how it was put together."""

    role: str
    pack: str
    text: str
    components: list[str]
    fell_back: bool
    notes: list[str] = field(default_factory=list)
    parts: list[PromptPart] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    frameworks: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


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


def fit_layer(text: str, budget: int) -> tuple[str, bool]:
    """``text`` within ``budget`` tokens: whole, or cut at a line with the cut said."""
    text = text.strip()
    if estimate_tokens(text) <= budget:
        return text, False
    marker = f"\n[… layer cut to its budget of {budget} tokens]"
    room = budget * 4 - len(marker)
    kept = text[: max(room, 0)].rsplit("\n", 1)[0] if "\n" in text[:room] else text[:room]
    return kept.rstrip() + marker, True


@dataclass
class _Layers:
    pack: str
    texts: Mapping[str, str]
    bodies: list[str] = field(default_factory=list)
    parts: list[PromptPart] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, layer: str, key: str) -> bool:
        text = self.texts.get(key)
        if text is None:
            return False
        check_prompt_text(key, text, where="composed prompt part")
        budget = LAYER_BUDGETS[layer]
        body, cut = fit_layer(text, budget)
        if cut:
            self.notes.append(f"{key!r} is over its {budget}-token budget; cut.")
        self.bodies.append(body)
        self.parts.append(
            PromptPart(layer, key, f"pack {self.pack}", estimate_tokens(body), budget, cut)
        )
        return True


def compose_prompt(
    role_name: str,
    *,
    pack: str | None = None,
    registry: RoleRegistry | None = None,
    languages: Sequence[str] = (),
    frameworks: Sequence[str] = (),
) -> ComposedPrompt:
    """Compose system, role, language and framework layers and the constraints block from
    the active (or given) pack, each pack layer within its budget."""
    reg = registry or default_registry
    role = reg.get(role_name)
    pack_name = pack or settings.ACODE_PROMPT_PACK
    texts = reg.prompt_texts(pack_name)
    layers = _Layers(pack_name, texts)
    fell_back = False
    if not layers.add("system", "system"):
        layers.notes.append(f"Pack {pack_name!r} has no 'system' prompt.")
    key = role.prompt_component_key
    if key != "system" and not layers.add("role", key):
        fell_back = True
        layers.notes.append(f"{key!r} is missing from pack {pack_name!r}; fell back to 'system'.")
    langs = list(dict.fromkeys(n.lower() for n in languages))
    frames = list(dict.fromkeys(n.lower() for n in frameworks))
    for layer, names in (("language", langs), ("framework", frames)):
        for name in names:
            if not layers.add(layer, f"{layer}s/{name}"):
                layers.notes.append(f"Pack {pack_name!r} has no {layer} layer for {name!r}.")
    constraints = constraints_block(role)
    check_prompt_text("constraints", constraints, where="composed prompt part")
    layers.bodies.append(constraints)
    layers.parts.append(
        PromptPart(
            "constraints",
            "constraints",
            "generated from the role",
            estimate_tokens(constraints),
            None,
        )
    )
    return ComposedPrompt(
        role=role.name,
        pack=pack_name,
        text="\n\n".join(layers.bodies) + "\n",
        components=[p.key for p in layers.parts],
        fell_back=fell_back,
        notes=layers.notes,
        parts=layers.parts,
        languages=langs,
        frameworks=frames,
    )
