"""Containment: the OS library that keeps an agent's work inside its workspace.

What it holds: the command sandbox (bubblewrap, ``sandbox``; what a command sees,
``bwrap``) and its copy-on-write layer (``layer``), bounded child processes (``process``),
link-proof file access (``safefs``, ``nofollow``) and time-bounded search (``safegrep``),
server-side git (``safegit``), the content store (``content``), the secret-file index
(``secretfiles``), redaction (``redaction``), and the one way the server writes a workspace
(``writes``, ``workspace``), and MCP servers run in the same sandbox (``mcpclient``).

Its imports point only down: the standard library, ``roles.access`` (the write rule) and
``acode.metrics``; never the sessions app's models, services or agent loop (import-linter
checks this in ``make lint``). The rest of the project uses it through the names below,
not its modules (a contract checks that too), so what orchestration may rely on is this
list.
"""

from __future__ import annotations

from roles.access import CONTROL, FILE_NAME_PATTERN
from sessions_app.containment.applying import ApplyJournal, apply_resume, staging_leftovers
from sessions_app.containment.bwrap import GIT_VIEW_CONFIG, SYSTEM_DIRS, SandboxView
from sessions_app.containment.commandwrites import WriteTarget, command_writes
from sessions_app.containment.content import ContentStore
from sessions_app.containment.gitobjects import (
    CommitMismatch,
    TreeChange,
    commit_changes,
    tracked_paths,
)
from sessions_app.containment.layer import Layer, layer_create
from sessions_app.containment.layerscan import (
    LayerChange,
    LayerLimits,
    kernel_guards_overlay_xattrs,
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
    URL_MASK,
    redact_file,
    redact_text,
    redact_userinfo,
)
from sessions_app.containment.safefs import (
    DEFAULT_SKIP_DIRS,
    Refused,
    WorkspaceFS,
    read_bytes,
    split_path,
)
from sessions_app.containment.safegit import GitRefused, clone, init_repository, push, run_git
from sessions_app.containment.safegrep import PatternTimeout, search
from sessions_app.containment.sandbox import (
    BASE_ENV,
    SandboxUnavailable,
    run_sandboxed,
    sandbox_available,
    sandbox_required,
)
from sessions_app.containment.secretfiles import SecretIndex, present_secret_files
from sessions_app.containment.sessionlayer import session_layer_path
from sessions_app.containment.workspace import RuleRefused, check_argv, is_binary, workspace_files
from sessions_app.containment.writes import CommandWrites, RecordedWrite, WorkspaceWriter

__all__ = [
    "BASE_ENV",
    "CONTROL",
    "DEFAULT_SKIP_DIRS",
    "FILE_NAME_PATTERN",
    "GIT_VIEW_CONFIG",
    "SYSTEM_DIRS",
    "URL_MASK",
    "ApplyJournal",
    "CommandWrites",
    "CommitMismatch",
    "ContentStore",
    "GitRefused",
    "Layer",
    "LayerChange",
    "LayerLimits",
    "Limits",
    "McpConnection",
    "McpEndpoint",
    "McpFailure",
    "PatternTimeout",
    "RecordedWrite",
    "Refused",
    "RuleRefused",
    "SandboxUnavailable",
    "SandboxView",
    "SecretIndex",
    "ToolDefinition",
    "ToolResult",
    "TreeChange",
    "WorkspaceFS",
    "WorkspaceWriter",
    "WriteTarget",
    "apply_resume",
    "check_argv",
    "clone",
    "command_writes",
    "commit_changes",
    "init_repository",
    "is_binary",
    "kernel_guards_overlay_xattrs",
    "layer_create",
    "present_secret_files",
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
    "session_layer_path",
    "split_path",
    "staging_leftovers",
    "tracked_paths",
    "workspace_files",
]
