"""Role-shaped context: what the model sees of the workspace, rebuilt for every job.

Strategies (spec "Context Management by Role"): ``broad`` (structure, key files, files
ranked by relevance to the task), ``focused`` (files the task or plan step names, and
their tests), ``change_focused`` (pending diffs, changed files, related tests, the
original request) and ``adaptive`` (picks one). ``.gitignore``d, binary and vendored
files are left out. A project's ``.acode/config.yml`` (``project_config``) sets the
budget (``max_tokens``), paths never included (``exclude_patterns``) and paths included
first (``focus_patterns``). A role that writes also sees the signatures of the interfaces
its files import and a short style example; a role that reviews, the project's lint and
style rules (``context_extras``), each within a share of the budget. Every text passes the
one channel (``containment.channel``): what comes from
the workspace (files, diffs, its structure) as untrusted data, the request as text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roles.access import ToolSpec
from sessions_app.agent.context_extras import (
    lint_rules,
    neighbour_of,
    related_files,
    signatures,
    style_example,
)
from sessions_app.agent.project_config import ContextSettings
from sessions_app.agent.selection import (
    KEY_FILES,
    candidate_files,
    named_files,
    rank_by_relevance,
    read_workspace_text,
    request_terms,
    structure_outline,
    tests_for,
)
from sessions_app.containment import is_secret_file, model_data, model_text, redact_file

BUDGETS = {"broad": 16_000, "focused": 6_000, "change_focused": 8_000}
ADAPTIVE_BROAD_BUDGET = 8_000
EXCERPT_LINES = 60
# Shares of the budget kept for what a writing or reviewing role gains beyond files.
WRITER_SHARE = 0.25
REVIEWER_SHARE = 0.25


def estimate_tokens(text: str) -> int:
    """A model-independent estimate (about four characters a token)."""
    return max(1, len(text) // 4)


@dataclass
class FileShare:
    path: str
    tokens: int
    mode: str  # full | excerpt | focus | diff | structure | request | signatures | style | rules
    share: float = 0.0


@dataclass
class ContextBundle:
    """The context text sent to the model and what it is made of."""

    role: str
    strategy: str
    requested_strategy: str
    budget: int
    text: str = ""
    token_count: int = 0
    files: list[FileShare] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "strategy": self.strategy,
            "requested_strategy": self.requested_strategy,
            "budget": self.budget,
            "token_count": self.token_count,
            "files": [
                {"path": f.path, "tokens": f.tokens, "mode": f.mode, "share": round(f.share, 4)}
                for f in self.files
            ],
            "notes": self.notes,
        }


class _Builder:
    def __init__(self, bundle: ContextBundle) -> None:
        self.bundle = bundle
        self.parts: list[str] = []
        self.used = 0
        self.reserved = 0
        self.seen: set[str] = set()

    def room(self) -> int:
        return self.bundle.budget - self.used - self.reserved

    def add(self, title: str, body: str, *, path: str, mode: str, force: bool = False) -> bool:
        section = f"## {title}\n{body.rstrip()}\n"
        tokens = estimate_tokens(section)
        if not force and tokens > self.room():
            return False
        self.parts.append(section)
        self.used += tokens
        self.seen.add(path)
        self.bundle.files.append(FileShare(path, tokens, mode))
        return True

    def add_file(self, root: Path, rel: str, *, mode: str = "full") -> bool:
        if rel in self.seen:
            return False
        text = read_workspace_text(root, rel)
        if text is None:
            return False
        text = redact_file(rel, text)
        body = model_data(text, source=f"workspace file {rel}")
        if self.add(f"File: {rel} ({mode})", body, path=rel, mode=mode):
            return True
        lines = text.splitlines()
        if len(lines) > EXCERPT_LINES:
            excerpt = (
                "\n".join(lines[:EXCERPT_LINES]) + f"\n… ({len(lines) - EXCERPT_LINES} more lines)"
            )
            body = model_data(excerpt, source=f"workspace file {rel} (excerpt)")
            return self.add(f"File: {rel} (excerpt)", body, path=rel, mode="excerpt")
        return False

    def finish(self) -> ContextBundle:
        b = self.bundle
        header = f"# Context for role {b.role} (strategy: {b.strategy})\n"
        b.text = header + "\n".join(self.parts)
        b.token_count = estimate_tokens(b.text)
        total = sum(f.tokens for f in b.files) or 1
        for f in b.files:
            f.share = f.tokens / total
        return b


def _choose_strategy(
    strategy: str, pending: dict[str, str], files: list[str], wanted: str, notes: list[str]
) -> str:
    if strategy != "adaptive":
        return strategy
    if pending:
        chosen = "change_focused"
    elif named_files(files, wanted):
        chosen = "focused"
    else:
        chosen = "broad"
    notes.append(f"adaptive strategy chose {chosen}")
    return chosen


def build_context(
    *,
    workspace: Path,
    role_name: str,
    strategy: str,
    request: str,
    task: str = "",
    plan: list[dict[str, Any]] | None = None,
    pending: dict[str, str] | None = None,
    budget_cap: int | None = None,
    git_dir: Path | None = None,
    project: ContextSettings | None = None,
    writes: bool = False,
    reviews: bool = False,
) -> ContextBundle:
    """Assemble context for one job in one role, within the strategy's token budget.

    ``budget_cap`` keeps the context inside what the model can take (its context window);
    ``git_dir`` is the session's git directory (for ``.gitignore``-aware file listing);
    ``project`` the project config's context settings; ``writes`` and ``reviews`` what the
    role may do (a writer gains signatures and a style example, a reviewer lint rules).
    """
    pending = pending or {}
    project = project or ContextSettings()
    notes: list[str] = []
    files = _candidates(workspace, git_dir, project, notes)
    step_text = " ".join(
        s.get("title", "") + " " + " ".join(s.get("files", []))
        for s in plan or []
        if s.get("status") in ("pending", "in_progress")
    )[:2000]
    visible = {p: d for p, d in pending.items() if not project.excluded(p)}
    if len(visible) < len(pending):
        notes.append(
            f"{len(pending) - len(visible)} pending changes excluded by the project config"
        )
    chosen = _choose_strategy(strategy, visible, files, f"{request} {step_text}", notes)
    budget = _budget(strategy, chosen, project, budget_cap, notes)
    builder = _Builder(ContextBundle(role_name, chosen, strategy, budget, notes=notes))
    request_text = model_text(
        request if not task or task == request else f"{request}\n\nSession task: {task}"
    )
    builder.add("Request", request_text, path="(request)", mode="request", force=True)
    share = (WRITER_SHARE if writes else 0.0) + (REVIEWER_SHARE if reviews else 0.0)
    builder.reserved = int(budget * share)
    _add_focus(builder, workspace, files, project)
    if chosen == "broad":
        _fill_broad(builder, workspace, files, f"{request} {task}")
    elif chosen == "focused":
        _fill_focused(builder, workspace, files, f"{request} {step_text}")
    else:
        _fill_changes(builder, workspace, files, visible)
    builder.reserved = 0
    if writes:
        targets = named_files(files, f"{request} {step_text}") + sorted(visible)
        _add_interfaces(builder, workspace, files, targets)
    if reviews:
        _add_lint_rules(builder, workspace, files)
    return builder.finish()


def _add_focus(
    builder: _Builder, workspace: Path, files: list[str], project: ContextSettings
) -> None:
    """The files the project's focus patterns name, before the strategy's own picks."""
    focus = [f for f in files if project.focused(f)]
    for f in focus:
        builder.add_file(workspace, f, mode="focus")
    if focus:
        builder.bundle.notes.append(f"{len(focus)} files matched the project's focus patterns")


def role_gains(tools: Iterable[ToolSpec]) -> tuple[bool, bool]:
    """(writes, reviews) for ``build_context``: a role holding a tool that writes gains the
    interfaces and a style example, one holding ``submit_review`` the lint rules."""
    specs = list(tools)
    writes = any(spec.declaration.writes for spec in specs)
    return writes, any(spec.name == "submit_review" for spec in specs)


def _candidates(
    workspace: Path, git_dir: Path | None, project: ContextSettings, notes: list[str]
) -> list[str]:
    """The files a strategy may pick, without those the project config excludes."""
    files = candidate_files(workspace, git_dir)
    if not project.exclude_patterns:
        return files
    kept = [f for f in files if not project.excluded(f)]
    notes.append(f"{len(files) - len(kept)} files excluded by the project config")
    return kept


def _budget(
    strategy: str,
    chosen: str,
    project: ContextSettings,
    budget_cap: int | None,
    notes: list[str],
) -> int:
    """The strategy's budget, or the project's ``max_tokens``; the model's window caps both."""
    adaptive_broad = strategy == "adaptive" and chosen == "broad"
    budget = ADAPTIVE_BROAD_BUDGET if adaptive_broad else BUDGETS[chosen]
    if project.max_tokens is not None:
        budget = project.max_tokens
        notes.append(f"budget {budget} tokens set by the project config")
    if budget_cap is not None and budget_cap < budget:
        notes.append(f"budget capped at {budget_cap} tokens by the model's context window")
        budget = budget_cap
    return budget


def _add_interfaces(
    builder: _Builder, workspace: Path, files: list[str], targets: list[str]
) -> None:
    """Signatures of what the targets import, then a style example from a neighbour."""
    related = related_files(workspace, files, targets)
    for rel in related:
        text = read_workspace_text(workspace, rel)
        view = signatures(redact_file(rel, text), rel) if text else None
        if view and rel not in builder.seen:
            body = model_data(view, source=f"signatures of workspace file {rel}")
            builder.add(f"Interface: {rel} (signatures)", body, path=rel, mode="signatures")
    neighbour = neighbour_of(files, targets, {*targets, *related})
    text = read_workspace_text(workspace, neighbour) if neighbour else None
    example = style_example(redact_file(neighbour, text), neighbour) if neighbour and text else None
    if neighbour and example:
        body = model_data(example, source=f"a style example from workspace file {neighbour}")
        builder.add(f"Style example: {neighbour}", body, path=f"{neighbour} (style)", mode="style")


def _add_lint_rules(builder: _Builder, workspace: Path, files: list[str]) -> None:
    """The project's lint and style rules, each file whole or not at all."""
    for rel, text in lint_rules(workspace, files):
        body = model_data(redact_file(rel, text), source=f"lint and style rules in {rel}")
        if not builder.add(f"Style rules: {rel}", body, path=f"{rel} (rules)", mode="rules"):
            builder.bundle.notes.append(f"style rules in {rel} left out: over the budget")


def _fill_broad(builder: _Builder, workspace: Path, files: list[str], wanted: str) -> None:
    outline = model_data(structure_outline(files), source="the workspace's file names")
    builder.add("Project structure", outline, path="(structure)", mode="structure", force=True)
    for key in KEY_FILES:
        if key in files:
            builder.add_file(workspace, key)
    for f in rank_by_relevance(workspace, files, request_terms(wanted)):
        if builder.room() < 50:
            break
        builder.add_file(workspace, f)


def _fill_focused(builder: _Builder, workspace: Path, files: list[str], wanted: str) -> None:
    named = named_files(files, wanted)
    if not named:
        builder.bundle.notes.append(
            "the request names no workspace file; nothing focused to include"
        )
    for f in named + tests_for(files, named):
        builder.add_file(workspace, f)


def _fill_changes(
    builder: _Builder, workspace: Path, files: list[str], pending: dict[str, str]
) -> None:
    if not pending:
        builder.bundle.notes.append("no pending changes")
    for path, diff in sorted(pending.items()):
        shown = f"[REDACTED: {path} holds secrets]" if is_secret_file(path) else diff
        body = model_data(shown, source=f"the pending change to {path}")
        builder.add(f"Diff: {path}", body, path=path, mode="diff", force=True)
    for path in sorted(pending):
        if path in files:
            builder.seen.discard(path)
            builder.add_file(workspace, path)
    for f in tests_for(files, pending):
        builder.add_file(workspace, f)
