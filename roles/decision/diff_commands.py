"""Command rules compared: which commands a new list of rules allows (or asks for) that an
old one did not, each found command checked with the rules' own check.

What a rule allows is decided by ``roles.commands.command_rule_check``; a list's outcome for
one command is the outcome of the first rule that allows it (ask when the rule says
``"outcome": "ask"``, read as the check reads it, ``roles.commands.rule_asks``; otherwise
allow), deny when none does, and a role with no rules runs anything. Order: allow > ask >
deny. A new rule is covered when one old rule with an outcome at least as strong provably
includes it: same program and module, its subcommands among the old ones, every option of
it in the old rule with a value kind the old kind includes, its positional arguments
likewise (structured rules); or, for legacy glob patterns, the old literal words a prefix
of the new ones and the new pattern's language inside the old one's (automata,
``diff_paths``). The first match decides, so order counts too: each covered rule's commands
(every literal value included) are decided under both lists, and a wider rule moved above
an asking one lets through commands found among the one rule's or the other's. A rule not
covered is searched for a command it allows that the old rules do not (built from its own
program, options and argument kinds); one not covered and without such a command counts as
a gain, conservatively.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roles.commands import CommandRule, command_rule_check, rule_asks
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
    """A rule's outcome: ask when it says so, otherwise allow (as the check reads it)."""
    return "ask" if rule_asks(rule) else "allow"


def argv_outcome(
    argv: Sequence[str], rules: Sequence[CommandRule], index: RuleIndex | None = None
) -> str:
    """What ``rules`` answer for ``argv`` (no links in the workspace): the first rule that
    matches decides; no rules, allow. ``index``: the rules by program, when built already."""
    if not rules:
        return "allow" if command_rule_check(argv, [], _NO_LINKS).allowed else "deny"
    mine = (index or RuleIndex.of(rules)).for_program(argv[0] if argv else "")
    check = command_rule_check(argv, mine, _NO_LINKS) if mine else None
    return "deny" if check is None or not check.allowed else "ask" if check.ask else "allow"


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
        return [rule for _, rule in self.placed(program)]

    def placed(self, program: str) -> list[tuple[int, CommandRule]]:
        """The rules that may match a command of ``program``, each with its place."""
        return sorted([*self.by_program.get(program, ()), *self.wild], key=lambda x: x[0])


@dataclass(frozen=True)
class _Answers:
    """A list of rules and what it answered for each command asked so far (the rules of
    one program share most of their sample commands)."""

    rules: Sequence[CommandRule]
    index: RuleIndex
    known: dict[tuple[str, ...], str] = field(default_factory=dict)

    def outcome(self, argv: Sequence[str]) -> str:
        key = tuple(argv)
        if key not in self.known:
            self.known[key] = argv_outcome(argv, self.rules, self.index)
        return self.known[key]


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
    pair = _Answers(old, RuleIndex.of(old)), _Answers(new, RuleIndex.of(new))
    gains: list[CommandGain] = []
    order = _Order(new)
    for index, rule in enumerate(new):
        rank = OUTCOME_RANK[rule_outcome(rule)]
        program = _program(rule)
        placed = list(enumerate(old)) if program is None else pair[0].index.placed(program)
        cover = next((at for at, o in placed if o == rule or (
            OUTCOME_RANK[rule_outcome(o)] >= rank and rule_included(rule, o))), None)  # fmt: skip
        label = f"command_rules[{index}]"
        if cover is None:
            gains.append(_searched(label, rule, *pair))
        elif rank == 2 and (shadowed := order.shadowed(rule, index, placed, cover)) is not None:
            moved = _exact_gain(label, rule, *pair, also=shadowed)
            gains += [moved] if moved is not None else []
    asking = {_key(rule) for rule in new if rule_asks(rule)}  # by what they match
    for index, rule in enumerate(old):  # an asking rule gone may let more through
        if rule_asks(rule) and _key(rule) not in asking:
            gains.append(_searched(f"old command_rules[{index}]", rule, *pair))
    return gains


class _Order:
    """Where a covered allowing rule may gain by its place. The first match decides, so a
    command it allows could only have asked before by an old asking rule placed above the
    old rule that covers it, and only if the asking rule is now below it (or gone) and may
    match one same command. None when no such rule; otherwise those whose commands were
    not yet decided (each is decided once: its commands' outcomes do not depend on which
    rule moved)."""

    def __init__(self, new: Sequence[CommandRule]) -> None:
        self.asks_at: dict[Any, int] = {}  # an asking rule by what it matches: its place
        self.gone = len(new)  # the place of one not there
        for index, rule in enumerate(new):
            if rule_asks(rule):
                self.asks_at.setdefault(_key(rule), index)
        self.now_at: dict[int, int] = {}  # an old asking rule's place: its place in new
        self.decided: set[int] = set()  # old asking rules' places

    def shadowed(
        self, rule: CommandRule, index: int, placed: Sequence[tuple[int, CommandRule]], cover: int
    ) -> list[CommandRule] | None:
        """``rule`` at ``index`` in new, covered by the old rule at ``cover``; ``placed``: the
        old rules that may match its commands, with their places."""
        found = [(at, o) for at, o in placed if at < cover and rule_asks(o)
                 and _may_overlap(rule, o) and self._now_at(at, o) > index]  # fmt: skip
        if not found:
            return None
        fresh = [(at, o) for at, o in found if at not in self.decided]
        self.decided.update(at for at, _ in fresh)
        return [o for _, o in fresh]

    def _now_at(self, at: int, rule: CommandRule) -> int:
        if at not in self.now_at:
            self.now_at[at] = self.asks_at.get(_key(rule), self.gone)
        return self.now_at[at]


def _may_overlap(rule: CommandRule, asking: CommandRule) -> bool:
    """Whether one command may match both rules (False only when provably not: modules
    that differ, or subcommands of which none begins another)."""
    if not (isinstance(rule, Mapping) and isinstance(asking, Mapping)):
        return True
    if rule.get("program") != asking.get("program"):
        return False
    modules = str(rule.get("module") or ""), str(asking.get("module") or "")
    if all(modules) and modules[0] != modules[1]:
        return False
    mine = [str(s).split() for s in rule.get("subcommands") or []]
    theirs = [str(s).split() for s in asking.get("subcommands") or []]
    if not mine or not theirs:
        return True
    return any(a[: len(b)] == b or b[: len(a)] == a for a in mine for b in theirs)


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
    old: _Answers,
    new: _Answers,
) -> CommandGain:
    found = _exact_gain(label, rule, old, new)
    conservative = f"{label} ({_text(rule)}): no old rule provably includes it (conservative)"
    return found or CommandGain(conservative)


def _exact_gain(
    label: str,
    rule: CommandRule,
    old: _Answers,
    new: _Answers,
    also: Sequence[CommandRule] = (),
) -> CommandGain | None:
    """A command of ``rule`` (or of the rules ``also``) that the new rules answer more
    openly than the old, if any."""
    for argv in (argv for each in (rule, *also) for argv in rule_commands(each)):
        was, now = old.outcome(argv), new.outcome(argv)
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
    if isinstance(kind, list):  # every value: the one a moved rule shadows may be the last
        return [str(v) for v in kind]
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
