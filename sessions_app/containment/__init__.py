"""Containment: the OS library that keeps an agent's work inside its workspace.

What it holds: the one view of a workspace every process acode starts gets (``view``: its
mounts, hidden files, git view and environment; ``bwrap`` turns it into bubblewrap's
options, ``gitview`` builds the git it shows), the command sandbox (``sandbox``) and its
copy-on-write layer (``layer``), bounded child processes (``process``), link-proof file
access (``safefs``, ``nofollow``) and linear-time search (``safegrep``), server-side git
(``safegit``), the content store (``content``), what is a secret (``secretscan``) and the
per-workspace index of hidden files (``secretfiles``), redaction (``redaction``), the one
channel every text to a model passes (``channel``), the one
way the server writes a workspace (``writes``, ``workspace``), and MCP servers run in the
same sandbox (``mcpclient`` speaks to one, ``mcpserver`` starts it).

Its imports point only down: the standard library, ``roles.access`` (the write rule) and
``acode.metrics``; never the sessions app's models, services or agent loop (import-linter
checks this in ``make lint``). The rest of the project uses it through the names below,
not its modules (a contract checks that too), so what orchestration may rely on is this
list.
"""

from __future__ import annotations

from roles.access import CONTROL, FILE_NAME_PATTERN
from sessions_app.containment.bwrap import GIT_VIEW_CONFIG, SYSTEM_DIRS, SandboxView
from sessions_app.containment.channel import messages_seal, model_data, model_text
from sessions_app.containment.content import ContentStore
from sessions_app.containment.gitview import GitSource
from sessions_app.containment.layer import (
    Layer,
    LayerChange,
    copy_changes,
    layer_changes,
    layer_create,
)
from sessions_app.containment.mcpclient import (
    McpConnection,
    McpEndpoint,
    McpFailure,
    ToolDefinition,
    ToolResult,
)
from sessions_app.containment.process import Limits
from sessions_app.containment.redaction import (
    REDACTED,
    URL_MASK,
    configure_redaction,
    encodings,
    is_secret_file,
    known_secret_values,
    redact_file,
    redact_text,
    redact_userinfo,
    secret_rules,
)
from sessions_app.containment.safefs import (
    DEFAULT_SKIP_DIRS,
    Refused,
    WorkspaceFS,
    read_bytes,
    split_path,
)
from sessions_app.containment.safegit import GitRefused, clone, init_repository, push, run_git
from sessions_app.containment.safegrep import search
from sessions_app.containment.sandbox import (
    SandboxUnavailable,
    run_sandboxed,
    sandbox_available,
    sandbox_required,
)
from sessions_app.containment.secretfiles import Hidden, SecretIndex, workspace_key
from sessions_app.containment.secretscan import SecretRules
from sessions_app.containment.view import (
    BASE_ENV,
    WorkspaceSight,
    process_view,
    workspace_sight,
)
from sessions_app.containment.workspace import RuleRefused, check_argv, is_binary, workspace_files
from sessions_app.containment.writes import (
    CommandWrites,
    RecordedWrite,
    WorkspaceWriter,
    layer_apply,
)

__all__ = [
    "BASE_ENV",
    "CONTROL",
    "DEFAULT_SKIP_DIRS",
    "FILE_NAME_PATTERN",
    "GIT_VIEW_CONFIG",
    "REDACTED",
    "SYSTEM_DIRS",
    "URL_MASK",
    "CommandWrites",
    "ContentStore",
    "GitRefused",
    "GitSource",
    "Hidden",
    "Layer",
    "LayerChange",
    "Limits",
    "McpConnection",
    "McpEndpoint",
    "McpFailure",
    "RecordedWrite",
    "Refused",
    "RuleRefused",
    "SandboxUnavailable",
    "SandboxView",
    "SecretIndex",
    "SecretRules",
    "ToolDefinition",
    "ToolResult",
    "WorkspaceFS",
    "WorkspaceSight",
    "WorkspaceWriter",
    "check_argv",
    "clone",
    "configure_redaction",
    "copy_changes",
    "encodings",
    "init_repository",
    "is_binary",
    "is_secret_file",
    "known_secret_values",
    "layer_apply",
    "layer_changes",
    "layer_create",
    "messages_seal",
    "model_data",
    "model_text",
    "process_view",
    "push",
    "read_bytes",
    "redact_file",
    "redact_text",
    "redact_userinfo",
    "run_git",
    "run_sandboxed",
    "sandbox_available",
    "sandbox_required",
    "search",
    "secret_rules",
    "split_path",
    "workspace_files",
    "workspace_key",
    "workspace_sight",
]
