"""The tools acode has, declared once, in code.

A declaration owns everything that decides a call: the tool's name, the JSON Schema its
arguments must fit, the permissions a role must hold to get it, and what it does with the
workspace (reads a path, makes one kind of change at a path, runs a command). Database
rows (``roles.models.Tool``) only enable, describe and order declared tools for admins:
nothing stored can widen a declaration. ``sessions_app.agent.tools`` binds every declared
name to its implementation and refuses to start when the two sets differ.

A tool whose definition is data (an MCP server's tool, issue 24) joins the same way: a
declaration built from its approved definition (``mcp.<server>.<tool>``, the schema it
published, permissions per server and tool), with ``kind`` naming the one generic
implementation that calls it. ``declared_tools`` is where such declarations would be added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from acode.backlog_form import DOCUMENT_SCHEMA, unbounded

PathUse = Literal["", "file", "directory"]
Change = Literal["", "created", "modified", "deleted"]


@dataclass(frozen=True, eq=False)
class ToolDeclaration:
    """What a tool is and needs; the one source of its schema and permissions.

    ``path``: how its ``path`` argument is read ("file"; "directory", where the workspace
    root is allowed; "" for no path). ``writes``: the change it makes at that path, which
    the write-path rule (``roles.writes.WritePolicy``) decides. ``command``: its ``argv``
    is a command, checked against the role's command rules and run in the sandbox;
    ``default_argv`` is run when none is given. ``kind``: which implementation runs it
    ("builtin": the one bound to its name).
    """

    name: str
    description: str
    argument_schema: Mapping[str, Any]
    permissions: frozenset[str]
    path: PathUse = ""
    writes: Change = ""
    command: bool = False
    default_argv: tuple[str, ...] = ()
    kind: str = "builtin"
    pinned_hash: str = ""  # an MCP tool's approved definition hash (roles.mcp.tools)
    mcp_server: str = ""  # an MCP tool's server slug and its own name there: what is called,
    mcp_tool: str = ""  # never read back out of the registry name

    @property
    def required_permissions(self) -> tuple[str, ...]:
        return tuple(sorted(self.permissions))


def _object(properties: dict[str, Any], *required: str) -> Mapping[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return MappingProxyType(schema)


_PATH = {"type": "string", "description": "Path relative to the workspace"}
_READ = frozenset({"read_files"})

# No length bounds in these schemas: llama.cpp turns a bounded string into a grammar nested
# once per character, which it then fails to parse (constrained tool calls, the embedded
# model). The search service bounds them (services.search_index).
_GLOBS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "Only files matching one of these globs, relative to the workspace "
    "(e.g. src/**/*.py)",
}


def _limit(maximum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": maximum, "description": "Most results"}


BUILTIN_TOOLS: tuple[ToolDeclaration, ...] = (
    ToolDeclaration(
        "analyze_diff",
        "Show the pending changes of the session as unified diffs",
        _object(
            {"path": {"type": "string", "description": "Limit the diff to this workspace path"}}
        ),
        _READ,
        path="file",
    ),
    ToolDeclaration(
        "ask_human",
        "Ask a person a question when the task cannot go on without their decision; the run "
        "pauses until they answer",
        _object(
            {
                "question": {
                    "type": "string",
                    "description": "What you need to know, in one or two sentences",
                }
            },
            "question",
        ),
        frozenset({"ask_human"}),
    ),
    ToolDeclaration(
        "create_file",
        "Create a new file with the given content",
        _object({"path": _PATH, "content": {"type": "string"}}, "path", "content"),
        frozenset({"create_files"}),
        path="file",
        writes="created",
    ),
    ToolDeclaration(
        "collect",
        "Wait for the sub-tasks you delegated and get their results (all of them, or the "
        "jobs named)",
        _object(
            {
                "jobs": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Job ids delegate returned; default every one not collected",
                },
                "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 3600},
            }
        ),
        frozenset({"spawn"}),
    ),
    ToolDeclaration(
        "delegate",
        "Hand a sub-task to a sub-agent in your role or a narrower one; it runs as a job of "
        "its own, with a budget carved out of yours (collect its result with collect)",
        _object(
            {
                "role": {"type": "string", "description": "The sub-agent's role (slug)"},
                "task": {"type": "string", "description": "What the sub-agent is to do"},
                "llm_calls": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 1000,
                    "description": "Its model-call budget; default a share of what you have left",
                },
            },
            "role",
            "task",
        ),
        frozenset({"spawn"}),
    ),
    ToolDeclaration(
        "delete_file",
        "Delete a file",
        _object({"path": _PATH}, "path"),
        frozenset({"delete_files", "read_files"}),
        path="file",
        writes="deleted",
    ),
    ToolDeclaration(
        "execute_command",
        "Run a command given as an argument list, without a shell",
        _object(
            {
                "argv": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "description": "Program and arguments",
                },
                "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 600},
            },
            "argv",
        ),
        frozenset({"execute_commands"}),
        command=True,
    ),
    ToolDeclaration(
        "find_references",
        "Find where a symbol (function, class, method, variable) is defined and used, from a "
        "code-aware parse of the workspace",
        _object(
            {
                "symbol": {"type": "string", "minLength": 1, "maxLength": 200},
                "paths": _GLOBS,
                "limit": _limit(500),
            },
            "symbol",
        ),
        _READ,
    ),
    ToolDeclaration(
        "grep_search",
        "Search workspace files for a regular expression",
        _object(
            {
                "pattern": {"type": "string"},
                "path": {
                    "type": "string",
                    "description": "Directory or file to search, relative to the workspace",
                },
                "max_results": {"type": "integer", "minimum": 1, "maximum": 500},
            },
            "pattern",
        ),
        _READ,
        path="directory",
    ),
    ToolDeclaration(
        "list_directory",
        "List the entries of a workspace directory",
        _object(
            {
                "path": {
                    "type": "string",
                    "description": "Directory relative to the workspace; default the root",
                }
            }
        ),
        _READ,
        path="directory",
    ),
    ToolDeclaration(
        "propose_backlog",
        "Propose epics and tasks for the backlog of the project you plan for: each task "
        "with a key, a title, a description, acceptance criteria, a priority (high, medium, "
        "low) and the keys of the tasks it depends on. A person accepts them (or the "
        "project lets them through); keys must be new in the project",
        MappingProxyType(unbounded(DOCUMENT_SCHEMA)),
        frozenset({"propose_tasks"}),
    ),
    ToolDeclaration(
        "read_file",
        "Read the contents of a workspace file",
        _object({"path": _PATH}, "path"),
        _READ,
        path="file",
    ),
    ToolDeclaration(
        "run_tests",
        "Run the project's test command",
        _object(
            {
                "argv": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Test command; default pytest -q",
                }
            }
        ),
        frozenset({"execute_commands"}),
        command=True,
        default_argv=("python", "-m", "pytest", "-q"),
    ),
    ToolDeclaration(
        "search_code",
        "Find the definitions of a symbol by name (functions, classes, methods), from a "
        "code-aware parse of the workspace",
        _object(
            {
                "name": {"type": "string", "minLength": 1, "maxLength": 200},
                "paths": _GLOBS,
                "limit": _limit(200),
            },
            "name",
        ),
        _READ,
    ),
    ToolDeclaration(
        "semantic_search",
        "Search the workspace by meaning (e.g. 'where are retries handled?'): ranked file "
        "ranges with short excerpts, each saying why it matched",
        _object(
            {
                "query": {"type": "string"},
                "paths": _GLOBS,
                "limit": _limit(50),
            },
            "query",
        ),
        _READ,
    ),
    ToolDeclaration(
        "submit_review",
        "Approve the pending changes or request revisions, with comments",
        _object(
            {
                "verdict": {"type": "string", "enum": ["approve", "request_changes"]},
                "summary": {"type": "string"},
                "comments": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string"},
                            "line": {"type": "integer"},
                            "body": {"type": "string"},
                        },
                        "required": ["body"],
                    },
                },
            },
            "verdict",
            "summary",
        ),
        frozenset({"approve_changes"}),
    ),
    ToolDeclaration(
        "write_file",
        "Replace the contents of an existing file",
        _object({"path": _PATH, "content": {"type": "string"}}, "path", "content"),
        frozenset({"read_files", "write_files"}),
        path="file",
        writes="modified",
    ),
)


@dataclass(frozen=True)
class ToolGroup:
    """A named set of tools a role's allow-list can name instead of each tool (seed 004's
    tool groups). Its members are declared here, in code, like the tools themselves: a
    role's data names a group, never what is in it."""

    name: str
    description: str
    members: tuple[str, ...] = ()  # built-in tools
    mcp: bool = False  # every MCP server's tool (each still needs its server permission)


TOOL_GROUPS: tuple[ToolGroup, ...] = (
    ToolGroup(
        "file_tools",
        "Read and search the workspace",
        (
            "analyze_diff",
            "find_references",
            "grep_search",
            "list_directory",
            "read_file",
            "search_code",
            "semantic_search",
        ),
    ),
    ToolGroup(
        "write_tools",
        "Create, change and delete files",
        ("create_file", "delete_file", "write_file"),
    ),
    ToolGroup(
        "command_tools", "Run commands and the test command", ("execute_command", "run_tests")
    ),
    ToolGroup("spawn_tools", "Delegate sub-tasks and collect them", ("collect", "delegate")),
    ToolGroup(
        "workflow_tools",
        "Reach people and the run: ask a question, give a review verdict, propose backlog tasks",
        ("ask_human", "propose_backlog", "submit_review"),
    ),
    ToolGroup("mcp_tools", "Every approved tool of the MCP servers", mcp=True),
)
TOOL_GROUP_NAMES: tuple[str, ...] = tuple(group.name for group in TOOL_GROUPS)


def tool_group_of(declaration: ToolDeclaration) -> str:
    """The group a declared tool belongs to ("" for none)."""
    for group in TOOL_GROUPS:
        if (group.mcp and declaration.kind == "mcp") or declaration.name in group.members:
            return group.name
    return ""


def declared_tools() -> Mapping[str, ToolDeclaration]:
    """Every tool acode can run, by name (built-in tools; MCP tools will join here)."""
    return _BUILTIN


_BUILTIN: Mapping[str, ToolDeclaration] = MappingProxyType({t.name: t for t in BUILTIN_TOOLS})
