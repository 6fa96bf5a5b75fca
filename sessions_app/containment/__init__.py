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
same sandbox (``mcpserver`` starts one; ``sessions_app.agent.mcp`` speaks to it).

Its imports point only down: the standard library, ``roles.access`` (the write rule) and
``acode.metrics``; never the sessions app's models, services or agent loop (import-linter
checks this in ``make lint``). The rest of the project uses it through the names below,
not its modules (a contract checks that too), so what orchestration may rely on is this
list.
"""

from __future__ import annotations

from roles.writes import CONTROL, FILE_NAME_PATTERN
from sessions_app.containment.applying import ApplyJournal
from sessions_app.containment.applymoves import apply_resume, staging_leftovers
from sessions_app.containment.bwrap import GIT_VIEW_CONFIG, SYSTEM_DIRS, SandboxView
from sessions_app.containment.channel import messages_seal, model_data, model_text
from sessions_app.containment.commandwrites import WriteTarget, command_writes
from sessions_app.containment.content import ContentStore
from sessions_app.containment.gitmerge import (
    MergeOutcome,
    branch_files,
    branch_head,
    merge_branch,
)
from sessions_app.containment.gitobjects import (
    CommitMismatch,
    TreeChange,
    commit_changes,
    tracked_paths,
)
from sessions_app.containment.gitview import GitSource
from sessions_app.containment.layer import Layer, layer_create
from sessions_app.containment.layerscan import (
    LayerChange,
    LayerLimits,
    kernel_guards_overlay_xattrs,
)
from sessions_app.containment.mcpserver import (
    MCP_UNAVAILABLE,
    McpEndpoint,
    McpFailure,
    sandboxed_stdio,
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
from sessions_app.containment.secretfiles import Hidden, SecretIndex
from sessions_app.containment.secretscan import SecretRules
from sessions_app.containment.secretstore import index_remove, workspace_key
from sessions_app.containment.sessionlayer import session_layer_path
from sessions_app.containment.view import (
    BASE_ENV,
    WorkspaceSight,
    process_view,
    workspace_sight,
)
from sessions_app.containment.workspace import RuleRefused, check_argv, is_binary, workspace_files
from sessions_app.containment.writes import CommandWrites, RecordedWrite, WorkspaceWriter

__all__ = [
    "BASE_ENV",
    "CONTROL",
    "DEFAULT_SKIP_DIRS",
    "FILE_NAME_PATTERN",
    "GIT_VIEW_CONFIG",
    "MCP_UNAVAILABLE",
    "REDACTED",
    "SYSTEM_DIRS",
    "URL_MASK",
    "ApplyJournal",
    "CommandWrites",
    "CommitMismatch",
    "ContentStore",
    "GitRefused",
    "GitSource",
    "Hidden",
    "Layer",
    "LayerChange",
    "LayerLimits",
    "Limits",
    "McpEndpoint",
    "McpFailure",
    "MergeOutcome",
    "RecordedWrite",
    "Refused",
    "RuleRefused",
    "SandboxUnavailable",
    "SandboxView",
    "SecretIndex",
    "SecretRules",
    "TreeChange",
    "WorkspaceFS",
    "WorkspaceSight",
    "WorkspaceWriter",
    "WriteTarget",
    "apply_resume",
    "branch_files",
    "branch_head",
    "check_argv",
    "clone",
    "command_writes",
    "commit_changes",
    "configure_redaction",
    "encodings",
    "index_remove",
    "init_repository",
    "is_binary",
    "is_secret_file",
    "kernel_guards_overlay_xattrs",
    "known_secret_values",
    "layer_create",
    "merge_branch",
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
    "sandboxed_stdio",
    "search",
    "secret_rules",
    "session_layer_path",
    "split_path",
    "staging_leftovers",
    "tracked_paths",
    "workspace_files",
    "workspace_key",
    "workspace_sight",
]
