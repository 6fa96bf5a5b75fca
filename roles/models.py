"""What a role is and may do: permissions, tools, roles, transition rules, prompt packs."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

DEFAULT_ROLE_SLUG = "default"


class ContextStrategy(models.TextChoices):
    ADAPTIVE = "adaptive", "Adaptive"
    BROAD = "broad", "Broad"
    FOCUSED = "focused", "Focused"
    CHANGE_FOCUSED = "change_focused", "Change-focused"


class Precondition(models.TextChoices):
    NONE = "none", "none"
    PLAN_EXISTS = "plan_exists", "the session has a plan"
    CHANGES_EXIST = "changes_exist", "the session has pending changes"


class Permission(models.Model):
    """A capability a role may hold, such as ``write_files``; tools require permissions."""

    code = models.SlugField(max_length=64, unique=True)
    description = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return self.code


class Tool(models.Model):
    """An admin's switch for a declared tool: enabled, described and ordered.

    What the tool takes and needs (argument schema, permissions, whether it writes) is
    declared in code (``roles.tools``); a row cannot change it. A declared tool without a
    row is not offered.
    """

    name = models.SlugField(max_length=64, unique=True)
    description = models.CharField(
        max_length=255, blank=True, help_text="Shown to the model; empty: the tool's own."
    )
    enabled = models.BooleanField(default=True)
    position = models.PositiveIntegerField(
        default=0, help_text="Order in lists and in what the model is offered."
    )

    class Meta:
        ordering = ["position", "name"]

    def __str__(self) -> str:
        return self.name


class ReasoningEffort(models.TextChoices):
    """A role's expected depth of reasoning (seed 002's ``reasoningEffort``)."""

    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


_colour = RegexValidator(r"^#[0-9a-fA-F]{6}$", "Use a hex colour such as #2563eb.")


# A custom agent's fixed limits a job (seed 004, not overridable): the role writes refuse
# more (roles.validation.custom_lock_problems), and the registry reads no more (job_budget).
CUSTOM_MAX_LLM_CALLS = 50
CUSTOM_MAX_SECONDS = 30 * 60


class Role(models.Model):
    """A role is data: its permissions, limits, prompt and routing are edited in admin."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    colour = models.CharField(max_length=7, default="#64748b", validators=[_colour])
    permissions = models.ManyToManyField(Permission, related_name="roles", blank=True)
    allowed_tools = models.ManyToManyField(
        Tool,
        related_name="allowing_roles",
        blank=True,
        help_text="Optional allow-list, with the tool groups below. Both empty: every tool "
        "the permissions unlock.",
    )
    allowed_tool_groups = models.JSONField(
        default=list,
        blank=True,
        help_text="Tool groups (roles.tools.TOOL_GROUPS) the allow-list lets through whole, "
        "the tools added to a group later included.",
    )
    capabilities = models.JSONField(default=list, blank=True)
    constraints = models.JSONField(default=list, blank=True)
    prompt_key = models.CharField(
        max_length=100, help_text="Prompt component is roles/<key>; 'system' means none."
    )
    context_strategy = models.CharField(
        max_length=20, choices=ContextStrategy.choices, default=ContextStrategy.ADAPTIVE
    )
    preferred_model = models.CharField(max_length=200, blank=True)
    fallback_model = models.CharField(max_length=200, blank=True)
    reassign_models = models.JSONField(
        default=list,
        blank=True,
        help_text="Model endpoints, in order, a run moves this role's work to when a plan "
        "step is blocked after its attempts (and where a review looks for a model other "
        "than the author's). Not the fallback, which is tried when the model does not answer.",
    )
    reasoning_effort = models.CharField(
        max_length=10,
        choices=ReasoningEffort.choices,
        blank=True,
        help_text="How hard the model should think, sent as the OpenAI-compatible request's "
        "reasoning_effort to servers that take it; empty: not sent (the server's default).",
    )
    queue = models.CharField(max_length=100, default="agents")
    max_llm_calls = models.PositiveIntegerField(default=20)
    max_tokens = models.PositiveIntegerField(default=50_000)
    timeout_seconds = models.PositiveIntegerField(default=600)
    max_sub_agents = models.PositiveSmallIntegerField(
        default=4, help_text="How many sub-agents one job in this role may start (needs spawn)."
    )
    max_delegation_depth = models.PositiveSmallIntegerField(
        default=2, help_text="How many levels of sub-agents may go below a job in this role."
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    write_paths = models.JSONField(
        default=list, blank=True, help_text="Globs relative to the workspace; empty: anywhere."
    )
    command_patterns = models.JSONField(
        default=list, blank=True, help_text="Command globs such as 'pytest *'; empty: any."
    )
    answer_sets_plan = models.BooleanField(
        default=False, help_text="A job's final answer in this role becomes the session plan."
    )
    examples = models.JSONField(
        default=list,
        blank=True,
        help_text="Calls the role must allow or deny, checked on every save "
        "(roles.commands.examples).",
    )
    protected = models.BooleanField(
        default=False,
        help_text="Changes (unprotecting included) become drafts another admin publishes.",
    )
    custom = models.BooleanField(
        default=False,
        editable=False,
        help_text="A custom agent (made by a user): never holds write, execute or network "
        "permissions, and stays custom.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name

    def job_budget(self) -> tuple[int, int]:
        """The model calls and seconds a job may use: a custom agent's within its limits."""
        if not self.custom:
            return self.max_llm_calls, self.timeout_seconds
        return min(self.max_llm_calls, CUSTOM_MAX_LLM_CALLS), min(
            self.timeout_seconds, CUSTOM_MAX_SECONDS
        )


class RoleVersion(models.Model):
    """An immutable snapshot of a role as saved; sessions and jobs pin to one."""

    role = models.ForeignKey(Role, null=True, on_delete=models.SET_NULL, related_name="versions")
    role_slug = models.SlugField(max_length=64)
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    snapshot = models.JSONField()
    actor = models.CharField(max_length=150)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["role_slug", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["role_slug", "number"], name="unique_role_version")
        ]

    def __str__(self) -> str:
        return f"{self.role_slug} v{self.number} ({self.content_hash[:12]})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not kwargs.get("force_insert"):
            raise ValueError("Role versions are immutable.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("Role versions are immutable.")


class TransitionRule(models.Model):
    """An allowed change of role, with the precondition the session must meet."""

    from_role = models.ForeignKey(Role, on_delete=models.CASCADE, related_name="rules_out")
    to_role = models.ForeignKey(Role, on_delete=models.CASCADE, related_name="rules_in")
    precondition = models.CharField(
        max_length=20, choices=Precondition.choices, default=Precondition.NONE
    )
    explanation = models.CharField(
        max_length=255, blank=True, help_text="Said when the precondition is not met."
    )

    class Meta:
        ordering = ["from_role_id", "to_role_id"]
        constraints = [
            models.UniqueConstraint(fields=["from_role", "to_role"], name="unique_transition_rule")
        ]

    def __str__(self) -> str:
        return f"{self.from_role} → {self.to_role}"


class PromptPack(models.Model):
    """A named set of prompt components; the active one (setting ACODE_PROMPT_PACK) is used."""

    name = models.SlugField(max_length=100, unique=True)
    version = models.CharField(max_length=40, default="1.0.0")
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class PromptComponent(models.Model):
    """One prompt text in a pack, keyed like ``system`` or ``roles/planner``."""

    pack = models.ForeignKey(PromptPack, on_delete=models.CASCADE, related_name="components")
    key = models.CharField(max_length=200)
    content = models.TextField()

    class Meta:
        ordering = ["pack_id", "key"]
        constraints = [
            models.UniqueConstraint(fields=["pack", "key"], name="unique_prompt_component")
        ]

    def __str__(self) -> str:
        return f"{self.pack.name}:{self.key}"


class EndpointKind(models.TextChoices):
    OPENAI = "openai", "OpenAI-compatible server"
    SCRIPTED = "scripted", "Scripted (replays recorded responses; tests and demos)"


class SchemaFormat(models.TextChoices):
    JSON_OBJECT = "json_object", "json_object with schema (llama.cpp, llama-cpp-python)"
    JSON_SCHEMA = "json_schema", "json_schema (OpenAI, vLLM, Ollama)"


class ModelEndpoint(models.Model):
    """A model a role can route to: an OpenAI-compatible server, or a scripted replay."""

    name = models.SlugField(
        max_length=100, unique=True, help_text="What roles name as their model."
    )
    kind = models.CharField(
        max_length=20, choices=EndpointKind.choices, default=EndpointKind.OPENAI
    )
    base_url = models.CharField(
        max_length=500, blank=True, help_text="Empty: the ACODE_LLM_BASE_URL setting."
    )
    model = models.CharField(
        max_length=200,
        blank=True,
        help_text="OpenAI-compatible kind: the model name sent to the server.",
    )
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of the environment variable holding the API key.",
    )
    context_window = models.PositiveIntegerField(default=8192)
    supports_json_schema = models.BooleanField(
        default=False, help_text="Constrain tool-call output with a JSON schema (response_format)."
    )
    schema_format = models.CharField(
        max_length=20,
        choices=SchemaFormat.choices,
        default=SchemaFormat.JSON_OBJECT,
        help_text="How the server takes the schema, when answers are constrained.",
    )
    script = models.JSONField(
        default=list, blank=True, help_text="Scripted kind only: the responses to replay, in order."
    )
    # What a million tokens cost (in whatever currency the admin uses): the usage page's
    # cost column; empty: no cost is shown for this endpoint's calls.
    input_price = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="Price per million input (prompt) tokens; empty: no cost shown.",
    )
    output_price = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="Price per million output (completion) tokens; empty: no cost shown.",
    )
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_scripted(self) -> bool:
        return self.kind == EndpointKind.SCRIPTED


class RegistryStamp(models.Model):
    """One row whose counter moves on every change to role data; registries compare it."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    token = models.CharField(max_length=32, default="")

    def __str__(self) -> str:
        return f"registry stamp {self.token}"


# MCP servers and their pinned tool definitions (issue 24) live in their own module.
# Drafts of protected roles (issue 25) live in their own module too, and who made or
# promoted an account (issue 37: a draft's author's own accounts do not publish it).
from roles.account_models import AccountGrant, AccountGrantKind  # noqa: E402, F401
from roles.agent_models import CustomAgent  # noqa: E402, F401
from roles.draft_models import RoleDraft, RoleDraftStatus  # noqa: E402, F401
from roles.mcp.models import (  # noqa: E402, F401
    McpArgumentLimit,
    McpServer,
    McpServerStatus,
    McpToolDefinition,
    McpToolState,
    McpTransport,
)
