"""The policy diff of two role versions (``roles.decision.diff``): each gain found, decided
exactly where it can be, with a counterexample that is real (decided again here with
``decide``, the write policy or the command rules under each version, from the role specs
rather than the diff's own reading of them); narrowing is not a gain; what cannot be
decided is a gain marked conservative."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import pytest

from roles.access import RoleSpec, ToolSpec, compute_access, role_snapshot
from roles.commands.workspace import KnownWorkspace
from roles.decision import HostFacts, RoleView, decide
from roles.decision.diff import PolicyDiff, policy_diff
from roles.decision.diff_commands import argv_outcome
from roles.decision.limits import limits_of
from roles.tools import ToolDeclaration, declared_tools
from roles.writes import WritePolicy

ALL = ("read_files", "write_files", "create_files", "delete_files", "execute_commands",
       "network", "read_secrets")  # fmt: skip
TRACKER = ToolDeclaration(
    "mcp__tracker__issues", "List issues",
    MappingProxyType({"type": "object", "properties": {"project": {"type": "string"}}}),
    frozenset({"mcp-tracker"}), kind="mcp", mcp_server="tracker", mcp_tool="issues",
)  # fmt: skip
DECLARATIONS = {**declared_tools(), TRACKER.name: TRACKER}
TOOLS = [ToolSpec(d, d.description, True) for d in DECLARATIONS.values()]
PYTEST: dict[str, Any] = {"program": "python", "module": "pytest", "options": {"-q": None, "-k": "text"},
          "args": "paths"}  # fmt: skip


def spec(slug: str = "coder", permissions: Sequence[str] = ALL, **fields: Any) -> RoleSpec:
    base: dict[str, Any] = dict(
        slug=slug, name=slug.title(), description="", colour="", permissions=tuple(permissions),
        allowed_tools=(), capabilities=(), constraints=(), prompt_key="", context_strategy="adaptive",
        preferred_model="", fallback_model="", queue="agents", max_llm_calls=20, max_tokens=1000,
        timeout_seconds=600, parent=None, write_paths=("src/**",), command_patterns=(PYTEST,),
    )  # fmt: skip
    base.update(fields)
    return RoleSpec(**base)


def view(specs: Sequence[RoleSpec], slug: str, limits: Mapping[str, Any] | None = None) -> RoleView:
    by_slug = {s.slug: s for s in specs}
    own = limits_of(slug, by_slug, limits or {})
    return RoleView(by_slug[slug], compute_access(slug, by_slug, TOOLS), own)


def document(role: RoleView) -> dict[str, Any]:
    return role_snapshot(role.spec, role.access, role.argument_limits)


def diff(old: RoleView, new: RoleView) -> PolicyDiff:
    return policy_diff(document(old), document(new), declarations=DECLARATIONS)


def assert_real(result: PolicyDiff, old: RoleView, new: RoleView) -> None:
    """Every counterexample, decided again under each version, gets the decisions claimed."""
    for gain in result.gains:
        example = gain.counterexample
        kind = example.get("kind")
        if kind == "call":
            decided = [decide(r, example["tool"], example["arguments"], host=HostFacts(),
                              workspace=KnownWorkspace()) for r in (old, new)]  # fmt: skip
            if example["old"] == "deny":
                assert (decided[0].allowed, decided[1].allowed) == (False, True), gain
            else:  # the network facet: allowed both times, with network only now
                assert decided[0].allowed and decided[1].allowed
                assert (decided[0].normalised["network"], decided[1].normalised["network"]) == (
                    False, True)  # fmt: skip
        elif kind == "change":
            checks = [r.write_policy.check(example["path"], change=example["change"]).allowed
                      for r in (old, new)]  # fmt: skip
            assert checks == [False, True], gain
        elif kind == "argv":
            outcomes = [argv_outcome(example["argv"], r.spec.command_patterns) for r in (old, new)]
            assert outcomes == [example["old"], example["new"]], gain


def dimensions(result: PolicyDiff) -> list[str]:
    return [g.dimension for g in result.gains]


@pytest.mark.parametrize("code", ["network", "read_secrets", "create_files", "delete_files"])
def test_a_parent_given_what_the_child_holds_widens_the_child(code: str) -> None:
    held = ("read_files", "write_files", "execute_commands")
    parent_before, parent_after = spec("base", held), spec("base", (*held, code))
    child = spec(parent="base")
    old, new = view([parent_before, child], "coder"), view([parent_after, child], "coder")
    result = diff(old, new)
    assert result.gains[0].what == f"gain permission {code}" and result.gains[0].exact
    assert result.narrowings == ()
    assert_real(result, old, new)
    if code in ("create_files", "delete_files"):
        assert result.gains[0].counterexample["kind"] == "change"
    if code == "network":
        assert result.gains[0].counterexample["tool"] == "execute_command"


def test_propose_tasks_gained_is_a_grant_with_its_tool() -> None:
    old = view([spec("pm", ("read_files",), write_paths=())], "pm")
    new = view([spec("pm", ("read_files", "propose_tasks"), write_paths=())], "pm")
    result = diff(old, new)
    whats = [g.what for g in result.gains]
    assert whats == ["gain permission propose_tasks", "gain tool propose_backlog"], whats
    assert "propose backlog tasks" in result.gains[0].text()
    tool = result.gains[1].counterexample
    assert (tool["kind"], tool["tool"], tool["old"], tool["new"]) == (
        "call", "propose_backlog", "deny", "allow")  # fmt: skip
    assert_real(result, old, new)
    assert not diff(new, old).widens


def test_wider_write_globs_are_found_with_a_path_and_narrower_ones_are_not_gains() -> None:
    old = view([spec(write_paths=("src/**",))], "coder")
    new = view([spec(write_paths=("src/**", "docs/*.md"))], "coder")
    result = diff(old, new)
    assert dimensions(result) == ["write_paths"]
    assert result.gains[0].counterexample["path"] == "docs/0.md"
    assert_real(result, old, new)
    back = diff(new, old)
    assert not back.widens and [n.dimension for n in back.narrowings] == ["write_paths"]


@pytest.mark.parametrize(
    ("old_globs", "new_globs", "widens"),
    [
        (("**",), ("src/**", "*.md"), False),
        (("docs/*",), ("docs/*.md",), False),
        (("*.md",), ("**/*.md",), True),
        (("src/*.py",), ("src/**/*.py",), True),
        (("src/**",), ("src/[id].tsx",), False),
        (("src/**",), (), True),  # no globs: anywhere
        ((), ("src/**",), False),
    ],
)
def test_glob_inclusion_is_decided_exactly(
    old_globs: tuple[str, ...], new_globs: tuple[str, ...], widens: bool
) -> None:
    old = view([spec(write_paths=old_globs)], "coder")
    new = view([spec(write_paths=new_globs)], "coder")
    result = diff(old, new)
    assert result.widens is widens
    assert_real(result, old, new)
    if widens:
        path = result.gains[0].counterexample["path"]
        checks = [WritePolicy(frozenset(ALL), g).check(path, change="modified").allowed
                  for g in (old_globs, new_globs)]  # fmt: skip
        assert checks == [False, True]


def test_a_command_rule_option_added_is_a_gain_with_the_command_removed_a_narrowing() -> None:
    wider = {**PYTEST, "options": {**PYTEST["options"], "-x": None}}
    old, new = view([spec()], "coder"), view([spec(command_patterns=(wider,))], "coder")
    result = diff(old, new)
    assert dimensions(result) == ["command_rules"]
    assert result.gains[0].counterexample["arguments"] == {"argv": ["python", "-m", "pytest", "-x"]}
    assert_real(result, old, new)
    back = diff(new, old)
    assert not back.widens and [n.dimension for n in back.narrowings] == ["command_rules"]


@pytest.mark.parametrize(
    ("old_rules", "new_rules", "widens"),
    [
        (["pytest *"], ["pytest -q *"], False),
        (["pytest -q *"], ["pytest *"], True),
        (["make test"], ["make *"], True),
        (["python *"], ["python -m pytest *"], True),  # -m needs the rule to name it
        (["cat [a-s]*"], ["cat -n *"], True),  # a range: "-" is not among its characters
        (["cat [a-s]*"], ["cat b*"], False),
        ([PYTEST], [{**PYTEST, "args": "none"}], False),
        ([PYTEST], [{**PYTEST, "args": "text"}], True),
        ([PYTEST], [{**PYTEST, "options": {"-q": None, "-k": ["slow"]}}], False),
        ([PYTEST], [PYTEST, {"program": "ls", "args": "paths"}], True),
        ([PYTEST], [], True),  # no rules: any command
        ([], [PYTEST], False),
    ],
)
def test_command_rules_compared(old_rules: list[Any], new_rules: list[Any], widens: bool) -> None:
    old = view([spec(command_patterns=tuple(old_rules))], "coder")
    new = view([spec(command_patterns=tuple(new_rules))], "coder")
    result = diff(old, new)
    assert result.widens is widens, result.as_data()
    assert all(g.exact for g in result.gains)
    assert_real(result, old, new)


def test_allow_over_ask_over_deny() -> None:
    ask = {**PYTEST, "outcome": "ask"}
    assert diff(view([spec(command_patterns=(ask,))], "coder"), view([spec()], "coder")).widens
    narrowed = diff(view([spec()], "coder"), view([spec(command_patterns=(ask,))], "coder"))
    assert not narrowed.widens and narrowed.narrowings
    gain = diff(view([spec(command_patterns=(ask,))], "coder"), view([spec()], "coder")).gains[0]
    assert (gain.counterexample.get("old"), gain.counterexample.get("new")) in (
        ("ask", "allow"), ("deny", "allow"))  # fmt: skip
    unknown = {**PYTEST, "outcome": "later"}  # an outcome not known here: allow
    assert not diff(
        view([spec()], "coder"), view([spec(command_patterns=(unknown,))], "coder")
    ).widens


def _limited(schema: Mapping[str, Any]) -> RoleView:
    role = spec(permissions=(*ALL, "mcp-tracker"))
    return view([role], "coder", {"coder": {TRACKER.name: schema}})


def test_an_argument_limit_loosened_is_a_gain_with_the_argument_tightened_is_not() -> None:
    narrow = {"properties": {"project": {"enum": ["acode"]}}}
    wide = {"properties": {"project": {"enum": ["acode", "docs"]}}}
    result = diff(_limited(narrow), _limited(wide))
    assert dimensions(result) == ["argument_limits"] and result.gains[0].exact
    assert result.gains[0].counterexample["arguments"] == {"project": "docs"}
    assert_real(result, _limited(narrow), _limited(wide))
    tighter = {
        "properties": {"project": {"enum": ["acode"], "maxLength": 10}},
        "required": ["project"],
    }
    assert not diff(_limited(narrow), _limited(tighter)).widens
    removed = diff(_limited(narrow), view([spec(permissions=(*ALL, "mcp-tracker"))], "coder"))
    assert removed.widens and removed.gains[0].exact
    assert_real(removed, _limited(narrow), view([spec(permissions=(*ALL, "mcp-tracker"))], "coder"))


def test_what_json_schema_cannot_decide_counts_as_a_gain_marked_conservative() -> None:
    before = {"properties": {"project": {"anyOf": [{"const": "acode"}, {"const": "docs"}]}}}
    after = {"properties": {"project": {"anyOf": [{"const": "acode"}]}}}  # narrower, not proven
    result = diff(_limited(before), _limited(after))
    assert result.widens and not result.gains[0].exact
    assert "(conservative)" in result.gains[0].text()


def test_budgets_flags_and_plain_fields() -> None:
    old = view([spec(protected=True)], "coder")
    new = view([spec(max_llm_calls=50, answer_sets_plan=True, description="other")], "coder")
    result = diff(old, new)
    assert dimensions(result) == ["budgets", "answer_sets_plan", "protected"]
    assert result.changed == ("description",)


def test_server_grants_and_ways_in_are_compared() -> None:
    old = {"slug": "coder", "mcp_servers": {"tracker": {"url": "https://a.example/mcp"}},
           "entered_from": [{"from": "planner", "precondition": "plan_approved"}]}  # fmt: skip
    new = {"slug": "coder",
           "mcp_servers": {"tracker": {"url": "https://b.example/mcp", "allow_private_network": True,
                                       "secrets": ["TRACKER_TOKEN"]}},
           "entered_from": [{"from": "planner", "precondition": "none"}]}  # fmt: skip
    whats = [g.what for g in policy_diff(old, new).gains]
    assert whats == [
        "use MCP server tracker with private networks allowed",
        "use MCP server tracker at https://b.example/mcp (was https://a.example/mcp)",
        "give MCP server tracker the secrets TRACKER_TOKEN",
        "be entered from planner (none): sessions there may switch into it",
    ]
    back = [g.what for g in policy_diff(new, old).gains]  # another address: conservative
    assert back == ["use MCP server tracker at https://a.example/mcp (was https://b.example/mcp)"]


def test_same_version_no_findings() -> None:
    role = view([spec()], "coder")
    assert diff(role, role) == PolicyDiff("coder")
    assert diff(role, replace(role, spec=replace(role.spec, description="x"))).changed == (
        "description",)  # fmt: skip


def test_a_limit_pattern_is_compared_with_automata() -> None:
    loose = {"properties": {"project": {"pattern": "^acode-"}}}
    tight = {"properties": {"project": {"pattern": "^acode-[a-z]+$"}}}
    assert not diff(_limited(loose), _limited(tight)).widens  # provably narrower
    widened = diff(_limited(tight), _limited(loose))
    assert widened.widens and [g.dimension for g in widened.gains] == ["argument_limits"]
    assert_real(widened, _limited(tight), _limited(loose))


def test_reordering_command_rules_so_a_command_no_longer_asks_is_a_gain() -> None:
    """The first rule that matches decides, so an allowing rule moved above an asking one
    for the same command widens the role, with no rule added (found by the property test)."""
    ask = {**PYTEST, "outcome": "ask"}
    held = ("execute_commands", "read_files")
    old = view([spec(permissions=held, write_paths=(), command_patterns=(ask, PYTEST))], "coder")
    new = view([spec(permissions=held, write_paths=(), command_patterns=(PYTEST, ask))], "coder")
    call = {"argv": ["python", "-m", "pytest", "-q"]}
    host, workspace = HostFacts(), KnownWorkspace()
    assert not decide(old, "execute_command", call, host=host, workspace=workspace).allowed
    assert decide(new, "execute_command", call, host=host, workspace=workspace).allowed
    assert diff(old, new).widens
    assert diff(new, old).narrowings and not diff(new, old).widens


def test_a_wider_rule_moved_above_an_asking_one_is_a_gain() -> None:
    """A legacy pattern moved above a structured asking rule it includes."""
    held = ("execute_commands", "read_files")
    ask = {"program": "git", "subcommands": ["status"], "options": {"-s": None}, "outcome": "ask"}
    old = view([spec(permissions=held, write_paths=(), command_patterns=(ask, "git *"))], "coder")
    new = view([spec(permissions=held, write_paths=(), command_patterns=("git *", ask))], "coder")
    result = diff(old, new)
    assert result.widens, result.as_data()
    assert diff(new, old).narrowings and not diff(new, old).widens


def test_a_rule_moved_above_an_asking_one_is_a_gain_on_any_of_its_literal_values() -> None:
    """The asking rule's commands are sampled with every literal value: the one a wider rule
    now lets through first may be the last of a long list (the first 20 were, before)."""
    held = ("execute_commands", "read_files")
    ask = {"program": "cat", "args": [f"f{i}.txt" for i in range(25)], "outcome": "ask"}
    other = {"program": "make", "subcommands": ["test"]}  # places in the list differ by program
    old = view([spec(permissions=held, write_paths=(),
                     command_patterns=(other, other, ask, "cat f24*"))], "coder")  # fmt: skip
    new = view([spec(permissions=held, write_paths=(),
                     command_patterns=("cat f24*", other, ask))], "coder")  # fmt: skip
    call = {"argv": ["cat", "f24.txt"]}
    host, workspace = HostFacts(), KnownWorkspace()
    assert not decide(old, "execute_command", call, host=host, workspace=workspace).allowed
    assert decide(new, "execute_command", call, host=host, workspace=workspace).allowed
    result = diff(old, new)
    assert result.widens and all(g.exact for g in result.gains), result.as_data()
    assert_real(result, old, new)
    examples = [g.counterexample.get("argv") or g.counterexample["arguments"]["argv"]
                for g in result.gains]  # fmt: skip
    assert examples == [["cat", "f24.txt"]]
    assert diff(new, old).narrowings and not diff(new, old).widens


@pytest.mark.parametrize(
    "ask, wide, argv",
    [
        ({"program": "cat", "args": ["secrets.env"], "outcome": "ask"}, "cat *",
         ["cat", "secrets.env"]),
        ({"program": "cat", "args": ["secrets.env"], "outcome": "ask"},
         {"program": "cat", "args": "paths"}, ["cat", "secrets.env"]),
        ({"program": "make", "subcommands": ["deploy"], "outcome": "ask"}, "make *",
         ["make", "deploy"]),
    ],
    ids=["legacy-over-literal", "structured-over-literal", "legacy-over-subcommand"],
)  # fmt: skip
def test_a_rule_moved_above_a_narrower_one_is_a_gain_on_the_narrower_ones_commands(
    ask: Any, wide: Any, argv: list[str]
) -> None:
    """A wider rule moved above an asking one: the gain is found among the asking rule's
    own commands when the wider rule's samples (a probe word for an argument) miss them."""
    held = ("execute_commands", "read_files")
    old = view([spec(permissions=held, write_paths=(), command_patterns=(ask, wide))], "coder")
    new = view([spec(permissions=held, write_paths=(), command_patterns=(wide, ask))], "coder")
    host, workspace = HostFacts(), KnownWorkspace()
    call = {"argv": argv}
    assert not decide(old, "execute_command", call, host=host, workspace=workspace).allowed
    assert decide(new, "execute_command", call, host=host, workspace=workspace).allowed
    result = diff(old, new)
    assert result.widens, result.as_data()
    assert all(g.exact for g in result.gains), result.as_data()
    assert_real(result, old, new)
    assert diff(new, old).narrowings and not diff(new, old).widens
