"""The reference spec's user verification steps (task 009.a, roles), as checks against a
running server through its REST API: each returns why it passed or raises ``Failed``.

Steps 4 and 10 need a model answering (a workflow, the same request in three roles); they
are listed and skipped. The steps that need a session share one, made for the run (titled
``acode verify``, not made current), which steps 3, 6 and 9 move through
Default → Planner → Coder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from acode.cli.client import ApiClient
from acode.cli.errors import ApiError

CORE_ROLES = ("Default", "Planner", "Coder", "Reviewer")
READ_ONLY_ROLES = ("Planner", "Reviewer")
WRITE_TOOLS = ("write_file", "create_file", "delete_file", "execute_command")
SPEC_DENIAL = "[ERROR] Tool 'write_file' is not available in current role: Planner"
NEEDS_MODEL = "needs a model answering (run it with `acode agent`)"


class Failed(Exception):
    """A step's check did not hold; the message says which."""


@dataclass
class Run:
    """What the steps share: the client and the session made for them."""

    client: ApiClient
    session_id: str = ""
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)  # by name, lower-cased

    def role(self, name: str) -> dict[str, Any]:
        if name.lower() not in self.roles:
            self.roles[name.lower()] = self.client.get(f"/api/roles/{name}/")
        return self.roles[name.lower()]

    def session(self) -> str:
        if not self.session_id:
            stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            made = self.client.post("/api/sessions/", {"title": f"acode verify ({stamp})"})
            self.session_id = str(made["id"])
        return self.session_id

    def current_role(self) -> str:
        return str(self.client.get(f"/api/sessions/{self.session()}/")["current_role"]["name"])

    def transition(self, to: str, reason: str) -> dict[str, Any]:
        body = {"to_role": to, "reason": reason}
        return dict(self.client.post(f"/api/sessions/{self.session()}/transition/", body))


def expect(condition: bool, failure: str) -> None:
    if not condition:
        raise Failed(failure)


def list_roles(run: Run) -> str:
    listed = {role["name"]: role for role in run.client.get("/api/roles/")}
    missing = [name for name in CORE_ROLES if name not in listed]
    expect(not missing, f"missing roles: {', '.join(missing)}")
    for name in CORE_ROLES:
        expect(bool(listed[name]["description"]), f"{name} has no description")
    for name in READ_ONLY_ROLES:
        granted = set(listed[name]["tools"]) & set(WRITE_TOOLS)
        expect(not granted, f"{name} has {', '.join(sorted(granted))}")
    return f"{', '.join(CORE_ROLES)} listed ({len(listed)} roles); Planner and Reviewer read-only"


def show_role(run: Run) -> str:
    planner = run.role("Planner")
    constraints = " ".join(planner["constraints"]).lower()
    for needed in ("cannot modify files", "cannot execute commands"):
        expect(needed in constraints, f"Planner's constraints do not say {needed!r}")
    expect(planner["context_strategy"] == "broad", "Planner's context strategy is not broad")
    expect("planner" in planner["prompt_component"], "Planner's prompt is not roles/planner")
    return "Planner shows its tools, constraints, prompt roles/planner and broad context"


def current_and_history(run: Run) -> str:
    expect(run.current_role() == "Default", "a new session does not start in Default")
    run.transition("Planner", "Starting feature implementation")
    expect(run.current_role() == "Planner", "the session is not in Planner after the change")
    history = run.client.get(f"/api/sessions/{run.session()}/history/")
    reasons = [row["reason"] for row in history]
    expect("Starting feature implementation" in reasons, "the history lacks the transition")
    return f"Default → Planner recorded with its reason ({len(history)} history entries)"


def tool_filtering(run: Run) -> str:
    planner = run.role("Planner")
    expect("write_file" not in planner["tools"], "Planner has write_file")
    body = {"tool": "write_file", "arguments": {"path": "test.txt", "content": "hello"}}
    denied = run.client.post("/api/roles/Planner/check/", body)
    expect(not denied["allowed"], "Planner may write test.txt")
    expect(denied["reason"].startswith(SPEC_DENIAL), "the denial's first line is not the spec's")
    expect("Constraint: Cannot modify files" in denied["reason"], "the constraint is not named")
    expect(denied["suggestion"].startswith("Transition to Coder role"), "no transition suggested")
    allowed = run.client.post("/api/roles/Coder/check/", body)
    expect(allowed["allowed"], f"Coder may not write test.txt: {allowed['reason']}")
    return f"Planner refused write_file in the spec's words ({denied['suggestion']}); Coder may"


def invalid_transition(run: Run) -> str:
    if run.current_role() != "Planner":
        run.transition("Planner", "Starting planning")
    try:
        run.transition("Reviewer", "Skipping implementation")
    except ApiError as refused:
        expect(refused.code == "ACODE-ROL-002", f"refused with {refused.code}, not ACODE-ROL-002")
    else:
        raise Failed("Planner → Reviewer was allowed")
    expect(run.current_role() == "Planner", "the refused transition changed the role")
    run.client.put(f"/api/sessions/{run.session()}/plan/", {"steps": ["Verify the roles"]})
    run.transition("Coder", "Plan complete, starting implementation")
    expect(run.current_role() == "Coder", "Planner → Coder with a plan did not happen")
    return "Planner → Reviewer refused (ACODE-ROL-002); Planner → Coder with a plan succeeded"


def prompts_loaded(run: Run) -> str:
    packs = run.client.get("/api/prompt-packs/")
    active = [pack for pack in packs if pack.get("active")] or packs[:1]
    expect(bool(active), "the server has no prompt pack")
    pack = run.client.get(f"/api/prompt-packs/{active[0]['name']}/")
    keys = {component["key"] for component in pack["components"]}
    missing = [key for key in ("system", "roles/planner", "roles/coder", "roles/reviewer")
               if key not in keys]  # fmt: skip
    expect(not missing, f"pack {pack['name']} lacks {', '.join(missing)}")
    prompt = run.client.get("/api/roles/Planner/prompt/")
    text = str(prompt.get("text") or prompt.get("prompt") or "")
    expect("planner" in text.lower(), "the Planner prompt does not speak of planning")
    return f"pack {pack['name']} has {len(keys)} prompts; Planner's prompt composes"


def context_strategies(run: Run) -> str:
    seen = {}
    for role in ("Planner", "Coder", "Reviewer"):
        context = run.client.get(f"/api/sessions/{run.session()}/context/", {"role": role})
        seen[role] = str(context.get("requested_strategy") or context.get("strategy"))
    expected = {"Planner": "broad", "Coder": "focused", "Reviewer": "change_focused"}
    wrong = [f"{role} {seen[role]}" for role, want in expected.items() if seen[role] != want]
    expect(not wrong, f"unexpected strategies: {', '.join(wrong)}")
    return "Planner broad, Coder focused, Reviewer change_focused"


def audit_trail(run: Run) -> str:
    params = {"event_type": "RoleTransition", "session": run.session()}
    events = run.client.get("/api/audit/", params)["results"]
    reasons = [str(event.get("details", {}).get("reason", "")) for event in events]
    expect(len(events) >= 2, f"{len(events)} transition(s) audited, expected Planner and Coder")
    expect(all(reasons), "a transition's audit row has no reason")
    expect(all(event.get("actor") for event in events), "a transition's audit row has no user")
    return f"{len(events)} transitions audited with reason, session and user"


@dataclass(frozen=True)
class Step:
    number: int
    title: str
    check: Callable[[Run], str] | None  # None: needs a model


ROLES_STEPS = (
    Step(1, "List all roles with details", list_roles),
    Step(2, "Show specific role details", show_role),
    Step(3, "Current role and transition history", current_and_history),
    Step(4, "Complete workflow with role transitions", None),
    Step(5, "Role constraint enforcement (tool filtering)", tool_filtering),
    Step(6, "Invalid role transition is blocked", invalid_transition),
    Step(7, "Role prompts are loaded", prompts_loaded),
    Step(8, "Context strategy differences between roles", context_strategies),
    Step(9, "Role audit trail", audit_trail),
    Step(10, "Role behaviour differences with the same request", None),
)
# Feature name → (what it is, its steps); the names the CLI accepts.
FEATURES: dict[str, tuple[str, tuple[Step, ...]]] = {
    "roles": ("Planner/Coder/Reviewer roles (spec task 009.a)", ROLES_STEPS),
}
