"""What one job's loop works with, and how it stops."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from roles.registry import RoleDef
from sessions_app.agent.tools import ToolContext
from sessions_app.models import AgentSession, Job

EVENT_TEXT_CAP = 8000


class Stop(Exception):
    """Ends a job's loop with a final status, an ACODE code and a message."""

    def __init__(self, status: str, code: str, message: str, result: str = "") -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.result = result  # what the model answered, kept on the job even when it failed


@dataclass
class LoopState:
    """What one job's loop works with."""

    job: Job
    session: AgentSession
    role: RoleDef
    endpoints: list[Any]
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    tool_ctx: ToolContext
    deadline: float
    seen: Counter[str] = field(default_factory=Counter)
    sent: int = 0
    ordinal: int = 0  # earlier jobs of this role in the session (scripted replays)
    asked: list[str] = field(default_factory=list)  # questions put to a person (ask_human)
    answer_schema: dict[str, Any] | None = None  # the final answer's structure (a plan)
    unparseable: int = 0  # answers in a row that did not parse
