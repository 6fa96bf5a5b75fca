"""Interpreters' code-execution flags (``python -c``, ``perl -e``, ``node --eval``,
``sh -c``...): whatever rule matched a command, these are refused."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import NamedTuple


class _Interpreter(NamedTuple):
    code_letters: frozenset[str]  # single-letter options that run code given as text
    value_letters: frozenset[str]  # single-letter options that take a value (skip it)
    module_letter: str  # python's -m: allowed only for the rule's own module
    code_long: frozenset[str]  # long options that run code


def _spec(code: str, values: str, module: str = "", long: tuple[str, ...] = ()) -> _Interpreter:
    return _Interpreter(frozenset(code), frozenset(values), module, frozenset(long))


NODE_CODE_OPTIONS = ("--eval", "--print", "--require", "--import", "--loader")
_INTERPRETERS: list[tuple[re.Pattern[str], _Interpreter]] = [
    (re.compile(r"(python|pypy)[0-9.]*"), _spec("c", "WXQ", "m")),
    (re.compile(r"perl[0-9.]*"), _spec("eEMm", "IlCdD0x")),
    (re.compile(r"ruby[0-9.]*|irb"), _spec("e", "IrCE")),
    (re.compile(r"node(js)?|deno|bun"), _spec("ep", "r", long=NODE_CODE_OPTIONS)),
    (re.compile(r"php[0-9.]*"), _spec("rRBEF", "cdz")),
    (re.compile(r"lua(jit)?[0-9.]*|Rscript|tclsh[0-9.]*"), _spec("e", "l")),
    (re.compile(r"(ba|da|z|k|mk|a|c|tc|fi)?sh|busybox"), _spec("c", "o")),
]


def interpreter_problem(argv: Sequence[str], module: str) -> str:
    """Why argv runs code given on the command line, or "" (only options before the script)."""
    program = os.path.basename(argv[0])
    spec = next((s for rx, s in _INTERPRETERS if rx.fullmatch(program)), None)
    if spec is None:
        return ""
    tokens = list(argv[1:])
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token == "--" or not token.startswith("-") or token == "-":
            return ""  # the script (or stdin): options end here
        if token.startswith("--"):
            if token.split("=", 1)[0] in spec.code_long:
                return f"{program} {token.split('=', 1)[0]} runs code given as text; refused"
            continue
        letters = token[1:]
        for j, letter in enumerate(letters):
            if letter in spec.code_letters:
                return f"{program} -{letter} runs code given as text; refused"
            if letter == spec.module_letter and spec.module_letter:
                name = letters[j + 1 :] or (tokens[i] if i < len(tokens) else "")
                if not module or name != module:
                    allowed = f"only -m {module}" if module else "no -m"
                    return f"{program} -m {name} runs a module the rule does not name ({allowed})"
                return ""
            if letter in spec.value_letters:
                if j == len(letters) - 1:
                    i += 1  # the value is the next token
                break
    return ""
