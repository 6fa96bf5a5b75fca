"""Command rules: which programs a role may run, and with which subcommands, options and arguments.

A structured rule is plain data, stored with the role::

    {"program": "python", "module": "pytest",
     "subcommands": [],
     "options": {"-q": None, "-x": None, "-k": "text", "--maxfail": "int",
                 "--junitxml": "path"},
     "args": "paths"}

``program`` is ``argv[0]`` exactly (a bare name, looked up on the sandbox's ``PATH``);
``module`` (optional) requires ``argv[1:3] == ["-m", module]``; ``subcommands`` (optional)
lists what must come next (``"test"``, or several words: ``"mod tidy"``); ``options`` maps
each allowed option to the kind of value it takes: ``None`` (a flag), ``"text"``, ``"int"``,
``"path"`` (relative, inside the workspace, no ``..``, never through a symbolic link or into
``.git``) or a list of literal values; ``args`` says what positional arguments may be:
``"none"`` (the default), ``"paths"`` (paths as above, pytest node ids allowed), ``"text"``
or a list of literal values. Anything a rule does not list is refused: an unknown option,
a plugin option (``-p``) it does not name, an ``@file`` argument anywhere (argparse reads
more arguments from such a file).

``outcome`` (optional): ``"allow"`` (the default) or ``"ask"``: a call the rule allows
runs only once a person allowed to act on the session consents (``roles.decision``).

Legacy rules are glob strings matched against the joined argv (``"pytest *"``); their
leading literal words must be whole arguments. Whatever rule matched, an interpreter's
code-execution flags (``python -c``, ``-m`` other than the rule's own module, ``perl -e``,
``node --eval``, ``sh -c``...) are refused. A role with no rules may run any command: the
sandbox and the write check after the command contain it.
"""

from __future__ import annotations

from roles.commands.check import (
    CommandCheck,
    CommandRule,
    command_rule_check,
    path_problem,
    rule_asks,
    rule_label,
    rule_usage,
)
from roles.commands.schema import (
    ARG_KINDS,
    COMMAND_RULE_SCHEMA,
    OUTCOMES,
    VALUE_KINDS,
    command_rule_problems,
)

__all__ = [
    "ARG_KINDS",
    "COMMAND_RULE_SCHEMA",
    "OUTCOMES",
    "VALUE_KINDS",
    "CommandCheck",
    "CommandRule",
    "command_rule_check",
    "command_rule_problems",
    "path_problem",
    "rule_asks",
    "rule_label",
    "rule_usage",
]
