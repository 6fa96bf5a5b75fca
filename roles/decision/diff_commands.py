"""Command rules compared: which commands a new list of rules allows (or asks for) that an
old one did not, each found command checked with the rules' own check.

What a rule allows is decided by ``roles.commands.command_rule_check``; a list's outcome for
one command is the outcome of the first rule that allows it (``"outcome"``: allow, the
default and anything unknown; ``ask``; ``deny``), and a role with no rules runs anything.
Order: allow > ask > deny. A new rule is covered when one old rule with an outcome at least
as strong provably includes it: same program and module, its subcommands among the old
ones, every option of it in the old rule with a value kind the old kind includes, its
positional arguments likewise (structured rules); or, for legacy glob patterns, the old
literal words a prefix of the new ones and the new pattern's language inside the old one's
(automata, ``diff_paths``). A rule not covered is searched for a command it allows that the
old rules do not (built from its own program, options and argument kinds); one not covered
and without such a command counts as a gain, conservatively.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roles.commands import CommandRule, command_rule_check
from roles.commands.workspace import KnownWorkspace
from roles.decision.diff_paths import language_gain

OUTCOME_RANK = {"deny": 0, "ask": 1, "allow": 2}
_NO_LINKS = KnownWorkspace()
# Commands that a role with no rules may run and a role with rules rarely allows.
_ANY_COMMAND = (["curl", "https://example.com"], ["rm", "-rf", "src"], ["sh", "-c", "true"])
_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class CommandGain:
    """A command the new rules allow (or ask for) that the old did not, or the rule that may."""

    what: str
    argv: tuple[str, ...] = ()  # the command, when one was found (then exact)
    old: str = "deny"
    new: str = "allow"

    @property
    def exact(self) -> bool:
        return bool(self.argv)


def rule_outcome(rule: CommandRule) -> str:
    """A rule's outcome: allow unless it says ask or deny."""
    if isinstance(rule, Mapping):
        value = str(rule.get("outcome") or "allow")
        return value if value in OUTCOME_RANK else "allow"
    return "allow"


def argv_outcome(
    argv: Sequence[str], rules: Sequence[CommandRule], index: RuleIndex | None = None
) -> str:
    """What ``rules`` answer for ``argv`` (no links in the workspace): the first rule that
    matches decides; no rules, allow. ``index``: the rules by program, when built already."""
    if not rules:
        return "allow" if command_rule_check(argv, [], _NO_LINKS).allowed else "deny"
    for rule in (index or RuleIndex.of(rules)).for_program(argv[0] if argv else ""):
        if command_rule_check(argv, [rule], _NO_LINKS).allowed:
            return rule_outcome(rule)
    return "deny"


@dataclass(frozen=True)
class RuleIndex:
    """A list of rules by the program they are for (in their order), so a command is
    checked only against the rules that can match it: a structured rule names its program,
    a legacy pattern its first word (one that starts with a wildcard is for any)."""

    by_program: Mapping[str, tuple[tuple[int, CommandRule], ...]]
    wild: tuple[tuple[int, CommandRule], ...]

    @classmethod
    def of(cls, rules: Sequence[CommandRule]) -> RuleIndex:
        by_program: dict[str, list[tuple[int, CommandRule]]] = {}
        wild: list[tuple[int, CommandRule]] = []
        for index, rule in enumerate(rules):
            program = _program(rule)
            if program is None:
                wild.append((index, rule))
            else:
                by_program.setdefault(program, []).append((index, rule))
        return cls({k: tuple(v) for k, v in by_program.items()}, tuple(wild))

    def for_program(self, program: str) -> list[CommandRule]:
        found = sorted([*self.by_program.get(program, ()), *self.wild], key=lambda x: x[0])
        return [rule for _, rule in found]


def _program(rule: CommandRule) -> str | None:
    if isinstance(rule, Mapping):
        return str(rule.get("program", ""))
    words = rule.split() if isinstance(rule, str) else []
    return None if not words or _GLOB.search(words[0]) else words[0]


def command_gains(old: Sequence[CommandRule], new: Sequence[CommandRule]) -> list[CommandGain]:
    """What ``new`` allows (or asks for) that ``old`` did not; [] when nothing."""
    if list(old) == list(new):
        return []
    if not new:
        for argv in _ANY_COMMAND:
            if argv_outcome(argv, old) != "allow":
                was = argv_outcome(argv, old)
                return [CommandGain("no command rules: any command may run", tuple(argv), was)]
        return [CommandGain("no command rules: any command may run")]
    if not old:
        return []  # anything ran before
    old_index, new_index = RuleIndex.of(old), RuleIndex.of(new)
    gains: list[CommandGain] = []
    for index, rule in enumerate(new):
        rank = OUTCOME_RANK[rule_outcome(rule)]
        program = _program(rule)
        candidates = old if program is None else old_index.for_program(program)
        if rank == 0:
            continue
        label = f"command_rules[{index}]"
        if rule in candidates or any(
            OUTCOME_RANK[rule_outcome(o)] >= rank and rule_included(rule, o) for o in candidates
        ):
            # As wide as an old rule, but the first rule that matches decides: moved above
            # a rule that asked or denied for the same commands, it lets them through.
            moved = _exact_gain(label, rule, (old, old_index), (new, new_index))
            if moved is not None:
                gains.append(moved)
            continue
        gains.append(_searched(label, rule, (old, old_index), (new, new_index)))
    kept: dict[Any, int] = {}  # the deny and ask rules of new, by what they match
    for rule in new:
        if (rank := OUTCOME_RANK[rule_outcome(rule)]) < 2:
            kept[_key(rule)] = min(rank, kept.get(_key(rule), 2))
    for index, rule in enumerate(old):  # a deny or ask rule gone may let more through
        rank = OUTCOME_RANK[rule_outcome(rule)]
        if rank < 2 and kept.get(_key(rule), 2) > rank:
            label = f"old command_rules[{index}]"
            gains.append(_searched(label, rule, (old, old_index), (new, new_index)))
    return gains


def _key(rule: CommandRule) -> Any:
    """What a rule matches, as a comparable value (not its examples or outcome)."""
    if isinstance(rule, Mapping):
        return tuple(
            sorted((k, _frozen(v)) for k, v in rule.items() if k not in ("examples", "outcome"))
        )
    return rule


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


def _searched(
    label: str,
    rule: CommandRule,
    old: tuple[Sequence[CommandRule], RuleIndex],
    new: tuple[Sequence[CommandRule], RuleIndex],
) -> CommandGain:
    found = _exact_gain(label, rule, old, new)
    conservative = f"{label} ({_text(rule)}): no old rule provably includes it (conservative)"
    return found or CommandGain(conservative)


def _exact_gain(
    label: str,
    rule: CommandRule,
    old: tuple[Sequence[CommandRule], RuleIndex],
    new: tuple[Sequence[CommandRule], RuleIndex],
) -> CommandGain | None:
    """A command of ``rule`` that the new rules answer more openly than the old, if any."""
    for argv in rule_commands(rule):
        was, now = argv_outcome(argv, *old), argv_outcome(argv, *new)
        if OUTCOME_RANK[now] > OUTCOME_RANK[was]:
            return CommandGain(f"{label} ({_text(rule)})", tuple(argv), was, now)
    return None


def _text(rule: CommandRule) -> str:
    if isinstance(rule, str):
        return rule
    words = [str(rule.get("program", "?"))]
    if rule.get("module"):
        words += ["-m", str(rule["module"])]
    if rule.get("outcome"):
        words.append(f"[{rule['outcome']}]")
    return " ".join(words)


# -- inclusion ----------------------------------------------------------------------------
def rule_included(new: CommandRule, old: CommandRule) -> bool:
    """Whether every command ``new`` allows, ``old`` allows too (provably; False when
    unsure)."""
    if isinstance(new, str) and isinstance(old, str):
        return _legacy_included(new, old)
    if isinstance(new, Mapping) and isinstance(old, Mapping):
        return _structured_included(new, old)
    return False


def _literal_words(pattern: str) -> list[str]:
    words = []
    for word in pattern.split():
        if _GLOB.search(word):
            break
        words.append(word)
    return words


def _legacy_included(new: str, old: str) -> bool:
    new_words, old_words = _literal_words(new), _literal_words(old)
    if new_words[: len(old_words)] != old_words:
        return False
    if _module(new_words) != _module(old_words):
        return False
    gained, _ = language_gain([new], [old], kind="fnmatch")
    return not gained


def _module(words: list[str]) -> str:
    return words[2] if len(words) >= 3 and words[1] == "-m" else ""


def _structured_included(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    if new.get("program") != old.get("program"):
        return False
    if str(new.get("module") or "") != str(old.get("module") or ""):
        return False
    new_subs = {str(s) for s in new.get("subcommands") or []}
    old_subs = {str(s) for s in old.get("subcommands") or []}
    if new_subs != old_subs and (not old_subs or not new_subs or not new_subs <= old_subs):
        return False
    new_options: Mapping[str, Any] = new.get("options") or {}
    old_options: Mapping[str, Any] = old.get("options") or {}
    for name, kind in new_options.items():
        if name not in old_options or not _kind_included(kind, old_options[name], option=True):
            return False
    for name, kind in old_options.items():  # an extra old "-kx" parses "-kx" another way
        if name in new_options or name.startswith("--") or len(name) <= 2:
            continue
        if new_options.get(name[:2]) is not None and kind is not None:
            return False
    return _kind_included(new.get("args", "none"), old.get("args", "none"), option=False)


def _kind_included(new: Any, old: Any, *, option: bool) -> bool:
    """Whether every value (or argument) kind ``new`` accepts, kind ``old`` accepts."""
    if new == old:
        return True
    if new is None or old is None:
        return False  # a flag and a valued option read the next word differently
    if not option and new == "none":
        return True
    if isinstance(new, list):
        if isinstance(old, list):
            return set(new) <= set(old)
        if old == "text":
            return all("\0" not in v for v in new)
        if old == "int":
            return all(re.fullmatch(r"\d{1,9}", v) for v in new)
        return False  # a path kind refuses links, which a literal value does not
    if old == "text":
        return new in ("int", "path", "paths")
    return False


# -- commands a rule allows ----------------------------------------------------------------
def rule_commands(rule: CommandRule) -> Iterator[list[str]]:
    """Commands ``rule`` may allow, one per feature (bare, each option, each argument kind):
    candidates, each then checked with the rules' own check."""
    if isinstance(rule, str):
        yield from _legacy_commands(rule)
        return
    if not isinstance(rule, Mapping):
        return
    base = [str(rule.get("program", ""))]
    if rule.get("module"):
        base += ["-m", str(rule["module"])]
    options: Mapping[str, Any] = rule.get("options") or {}
    for sub in [str(s) for s in rule.get("subcommands") or []] or [""]:
        head = base + sub.split()
        yield head
        for name, kind in options.items():
            for value in _samples(kind, option=True):
                yield head + ([name] if value is None else [name, value])
        for value in _samples(rule.get("args", "none"), option=False):
            if value is not None:
                yield [*head, value]


def _samples(kind: Any, *, option: bool) -> Sequence[str | None]:
    if kind is None:
        return [None] if option else []
    if isinstance(kind, list):
        return [str(v) for v in kind[:20]]
    return {
        "text": ["probe text", "/probe", "../probe"],
        "int": ["7"],
        "path": ["probe.txt"],
        "paths": ["tests/probe.py"],
    }.get(str(kind), [])


def _legacy_commands(pattern: str) -> Iterator[list[str]]:
    for star in ("", "x", "-x"):
        text = re.sub(r"\[!?([^\]]).*?\]", r"\1", pattern).replace("?", "x").replace("*", star)
        words = text.split()
        if words:
            yield words


def any_allowed(rules: Sequence[CommandRule]) -> list[str] | None:
    """A command ``rules`` allow (for showing what a permission changes for commands)."""
    if not rules:
        return ["make", "test"]
    for rule in rules:
        for argv in rule_commands(rule):
            if argv_outcome(argv, rules) == "allow":
                return argv
    return None
