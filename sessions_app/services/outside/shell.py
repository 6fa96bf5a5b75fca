"""A shell line as the simple commands it runs, or why acode cannot tell.

An outside agent's ``Bash`` call is a line for a shell, not an argument list. acode decides
each simple command of it (``a && b | c; d``) as the command it is, and every file a
redirection writes or reads as the write or read it is. What a shell would expand before
running anything (``$VAR``, ``$(...)``, backquotes, ``<(...)``), subshells, groups and
here-documents make the commands unknowable from the text: such a line is refused, never
guessed at.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

MAX_LINE = 20_000
_CONTROL = {";", "&&", "||", "|", "&", "|&", ";;", ";&"}
_WRITES = {">", ">>", ">|", "&>", "&>>"}
_READS = {"<"}
_REFUSED_TOKENS = {"(", ")", "<<", "<<<", "<<-", "<>", "<&", "{", "}"}


class Unparsable(Exception):
    """A line whose commands acode cannot know from its text."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class ShellLine:
    """The simple commands of a line (each an argv), and the files it redirects to."""

    commands: list[list[str]] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)


def _unquoted(line: str) -> str:
    """``line`` with unquoted newlines as ``;``; refuses expansions outside single quotes."""
    out: list[str] = []
    quote = ""
    escaped = False
    for char in line:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
            elif quote == '"' and char in "$`":
                raise Unparsable(f"it expands {char!r} inside double quotes")
        elif char in "'\"":
            quote = char
        elif char in "$`":
            raise Unparsable(f"it expands {char!r} (a variable or a command's output)")
        elif char == "\n":
            char = ";"
        out.append(char)
    if quote:
        raise Unparsable("a quote is not closed")
    return "".join(out)


def shell_line(line: str) -> ShellLine:
    """The simple commands and redirections of ``line``; ``Unparsable`` says why not."""
    if not line.strip():
        raise Unparsable("the line is empty")
    if len(line) > MAX_LINE:
        raise Unparsable(f"the line is longer than {MAX_LINE} characters")
    if "\x00" in line:
        raise Unparsable("the line holds a NUL character")
    lexer = shlex.shlex(_unquoted(line), posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise Unparsable(str(exc)) from None
    parsed = ShellLine()
    current: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in _CONTROL:
            if current:
                parsed.commands.append(current)
            current = []
        elif token in _REFUSED_TOKENS or (
            token[:1] in "<>(&|;" and token not in _WRITES | _READS | {">&"}
        ):
            raise Unparsable(f"it uses {token!r} (a subshell, group or here-document)")
        elif token in _WRITES | _READS | {">&"}:
            if current and current[-1].isdigit():
                current.pop()  # "2>" names a descriptor, not an argument
            if index + 1 >= len(tokens):
                raise Unparsable(f"{token!r} has no target")
            index += 1
            target = tokens[index]
            if token == ">&":
                if not target.isdigit() and target != "-":
                    parsed.writes.append(target)
            elif token in _READS:
                parsed.reads.append(target)
            else:
                parsed.writes.append(target)
        else:
            current.append(token)
        index += 1
    if current:
        parsed.commands.append(current)
    if not parsed.commands and not parsed.writes:
        raise Unparsable("it runs no command")
    return parsed
