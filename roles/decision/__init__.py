"""The tool decision, as one pure function of its inputs, and the examples checked with it.

``decide`` (``core``) answers "may this role make this call" from the role's definition,
the call, the host's sandbox (``facts``) and the workspace's links
(``roles.commands.workspace``); ``arguments`` holds the path and argv rules it applies (and
containment re-uses); ``examples`` checks a role's examples with it; ``diff`` compares two
versions of a role, each gain with a counterexample decided with it. Nothing here reads the
database or the file system, so the executor, a role save and a replay agree.
"""

from __future__ import annotations

from roles.decision.arguments import Refused, RuleRefused, check_argv, normalised_path, split_path
from roles.decision.core import (
    BAD_ARGUMENTS,
    CONSENT_NEEDED,
    DENIED,
    Decision,
    PolicyRole,
    decide,
    deny,
)
from roles.decision.examples import (
    EXAMPLE_FAILED,
    Example,
    ExampleResult,
    RoleView,
    examples_check,
    failures_summary,
    role_examples_run,
)
from roles.decision.facts import (
    LAYER_UNAVAILABLE,
    SANDBOX_UNAVAILABLE,
    HostFacts,
    HostSource,
    sandbox_problem,
)

__all__ = [
    "BAD_ARGUMENTS",
    "CONSENT_NEEDED",
    "DENIED",
    "EXAMPLE_FAILED",
    "LAYER_UNAVAILABLE",
    "SANDBOX_UNAVAILABLE",
    "Decision",
    "Example",
    "ExampleResult",
    "HostFacts",
    "HostSource",
    "PolicyRole",
    "Refused",
    "RoleView",
    "RuleRefused",
    "check_argv",
    "decide",
    "deny",
    "examples_check",
    "failures_summary",
    "normalised_path",
    "role_examples_run",
    "sandbox_problem",
    "split_path",
]
