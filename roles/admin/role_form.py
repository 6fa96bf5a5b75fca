"""The role admin's form: what an admin edits, checked as every role write checks it (field
problems, the custom-agent lock, dangerous prompt text, names, parents, model names, the
role's examples) before the save goes to ``role_save``."""

from __future__ import annotations

from typing import Any

from django import forms

from roles.admin.fields import CommandRulesField, LinesField
from roles.decision import examples_check
from roles.mcp.tools import argument_limits
from roles.models import DEFAULT_ROLE_SLUG, ModelEndpoint, Role
from roles.registry import read_specs
from roles.services import examples_refusal, prompt_rejection_record
from roles.tools import TOOL_GROUPS
from roles.validation import (
    CUSTOM_LOCKED_CODE,
    custom_lock_problems,
    model_name_problems,
    role_field_problems,
    role_name_problems,
    role_parent_problems,
    role_spec,
    role_text_findings,
)

# A role's model endpoints and budgets: fields of the form, one section of the admin page.
MODELS_AND_BUDGETS = (
    "preferred_model",
    "fallback_model",
    "reassign_models",
    "reasoning_effort",
    "queue",
    "max_llm_calls",
    "max_tokens",
    "timeout_seconds",
    "max_sub_agents",
    "max_delegation_depth",
)


# What a role may do: fields of the form, one section of the admin page.
WHAT_IT_MAY_DO = (
    "permissions",
    "allowed_tools",
    "allowed_tool_groups",
    "write_paths",
    "command_patterns",
    "examples",
)


# What the custom-agent lock reads of a form (roles.validation.custom_lock_problems).
LOCKED_FIELDS = ("slug", "permissions", "max_llm_calls", "timeout_seconds")


class RoleAdminForm(forms.ModelForm):
    actor = "admin"  # replaced per request by RoleAdmin.get_form
    capabilities = LinesField(required=False, help_text="One per line, in order.")
    constraints = LinesField(
        required=False, help_text="One per line, in order; shown to the model first."
    )
    write_paths = LinesField(
        required=False,
        help_text="Globs relative to the workspace, one per line (e.g. docs/**). Empty: anywhere.",
    )
    reassign_models = LinesField(
        required=False,
        help_text="Model endpoints, one per line, in order: a run moves a plan step this role "
        "could not finish (blocked after its attempts) to the next one. Empty: a person "
        "decides. Not the fallback model, which is tried when the model does not answer.",
    )
    allowed_tool_groups = forms.TypedMultipleChoiceField(
        required=False,
        choices=[
            (g.name, f"{g.name}: {g.description} ({', '.join(g.members) or 'MCP tools'})")
            for g in TOOL_GROUPS
        ],
        widget=forms.CheckboxSelectMultiple,
        help_text="Groups the allow-list lets through whole, with the allowed tools above "
        "(tools added to a group later included). Neither set: every tool the permissions "
        "unlock.",
    )
    command_patterns = CommandRulesField(
        required=False,
        help_text='Command rules, one per line: a JSON object such as {"program": "python", '
        '"module": "pytest", "options": {"-q": null, "-k": "text"}, "args": "paths"}, or a '
        "legacy glob (pytest *). Anything no rule lists is refused. Empty: any command "
        '(still sandboxed). A structured rule may carry its own "examples".',
    )
    examples = forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80}),
        help_text="Calls this role must allow or deny, checked when it is saved: a JSON list "
        'such as [{"tool": "write_file", "arguments": {"path": "src/app.py", "content": "x"}, '
        '"expect": "deny", "why": "reviewers never write"}]. Optional: "name", "rule" (what '
        'the deciding rule starts with), "context" ({"sandbox": "available|unavailable|off", '
        '"layer": true, "links": ["path"]}).',
    )

    class Meta:
        model = Role
        fields = (
            "name",
            "slug",
            "description",
            "colour",
            "parent",
            *WHAT_IT_MAY_DO,
            "capabilities",
            "constraints",
            "prompt_key",
            "context_strategy",
            *MODELS_AND_BUDGETS,
            "answer_sets_plan",
            "protected",
        )

    def clean_slug(self) -> str:
        slug = str(self.cleaned_data["slug"])
        if (
            self.instance.pk
            and self.instance.slug == DEFAULT_ROLE_SLUG
            and slug != DEFAULT_ROLE_SLUG
        ):
            raise forms.ValidationError("ACODE-ROL-005: the Default role's slug cannot change.")
        if self.instance.pk and self.instance.protected and slug != self.instance.slug:
            raise forms.ValidationError("ACODE-ROL-004: a protected role's slug cannot change.")
        return slug

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for problem in role_field_problems(data):
            self.add_error(None, f"ACODE-ROL-004: {problem}")
        locked = {key: data.get(key) for key in LOCKED_FIELDS}
        for problem in custom_lock_problems(locked, was_custom=self.instance.custom):
            self.add_error(None, f"{CUSTOM_LOCKED_CODE}: {problem}")
        findings = role_text_findings(data)
        if findings:
            prompt_rejection_record(
                where=f"admin role {data.get('slug')}", actor=self.actor, findings=findings
            )
        for finding in findings:
            self.add_error(
                None,
                f"ACODE-PRM-001: dangerous text in {finding['where']} ({finding['rule']}): {finding['match']!r}",
            )
        specs = {spec.slug: spec for _, spec in read_specs()[0]}
        edited = role_spec({"slug": self.instance.slug or "", "name": data.get("name")})
        others = {slug: spec for slug, spec in specs.items() if slug != edited.slug}
        for problem in role_name_problems({**others, edited.slug: edited}):
            self.add_error("name", f"ACODE-ROL-004: {problem}")
        parent = data.get("parent")
        if parent is not None and self.instance.pk:
            for problem in role_parent_problems(
                slug=self.instance.slug, parent_slug=parent.slug, specs=specs
            ):
                self.add_error("parent", f"ACODE-ROL-004: {problem}")
        known = set(ModelEndpoint.objects.values_list("name", flat=True))
        for field in ("preferred_model", "fallback_model", "reassign_models"):
            named = {"slug": self.instance.slug, field: data.get(field)}
            for problem in model_name_problems(named, known):
                self.add_error(field, f"ACODE-API-404: {problem}")
        if not self.errors:
            self._examples_check(data)
        return data

    def clean_examples(self) -> list[Any]:
        value = self.cleaned_data.get("examples")
        if value is None:
            return []
        if not isinstance(value, list):
            raise forms.ValidationError("ACODE-ROL-004: examples must be a JSON list")
        return value

    def _examples_check(self, data: dict[str, Any]) -> None:
        """The role's examples (and its children's) decided against the form's definition as
        every save decides them (``role_examples_enforce``): a failing one is a form error."""
        id_specs, tools = read_specs()
        specs = {spec.slug: spec for _, spec in id_specs if spec.slug != self.instance.slug}
        parent = data.get("parent")
        slug = str(data.get("slug") or self.instance.slug)
        specs[slug] = role_spec({
            "slug": slug, "name": data.get("name"), "parent": parent.slug if parent else None,
            "permissions": [p.code for p in data.get("permissions") or []],
            "allowed_tools": [t.name for t in data.get("allowed_tools") or []],
            "allowed_tool_groups": data.get("allowed_tool_groups") or [],
            "write_paths": data.get("write_paths") or [],
            "command_patterns": data.get("command_patterns") or [],
            "examples": data.get("examples") or [],
        })  # fmt: skip
        refusal = examples_refusal(examples_check(specs, tools, {slug}, limits=argument_limits()))
        if refusal is not None:
            self.add_error(None, f"{refusal.code}: {refusal.message}")
