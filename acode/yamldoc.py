"""The one YAML loader for everything acode reads as YAML: role and workflow imports (API,
``manage.py``), the seed roles, the CLI's plan files; and the one way it writes YAML
(``dump_yaml``: exports, the CLI's prompt packs).

PyYAML's ``safe_load`` builds no arbitrary objects, but it still recurses once per level
of nesting (10,000 levels raise RecursionError), expands aliases by reference (a few
hundred bytes of nested aliases make a billion-node document that every later walk
over it expands), and makes dates, sets, byte strings and tuples that nothing here
expects. This loader keeps a document to ``MAX_BYTES``, ``MAX_DEPTH`` levels and
``MAX_NODES`` nodes with every alias counted as the nodes it stands for (recursive
aliases are refused), resolves only JSON's types (a date stays text; ``5.0`` is the
integer 5), and refuses NUL characters and unpaired surrogates, as JSON bodies do. Every failure is a
:class:`YamlDocumentError` carrying a documented code.

No Django imports: the CLI uses it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from acode.text import has_forbidden_characters

MAX_BYTES = 2 * 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 100_000


class YamlDocumentError(ValueError):
    """A YAML document that cannot be read: its ACODE code, a message and the problems."""

    def __init__(self, code: str, message: str, problems: list[str]) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.problems = problems


class _OverLimit(yaml.YAMLError):
    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that measures each node as it composes it: the nodes it holds and how
    many levels deep it goes, aliases counted as what they stand for."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._deepest = 0
        self._nodes = 0
        self._extent: dict[int, tuple[int, int]] = {}  # id(node) -> (nodes, levels)

    def _reach(self, nodes: int, depth: int) -> None:
        self._nodes += nodes
        self._deepest = max(self._deepest, depth)
        if depth > MAX_DEPTH:
            raise _OverLimit(f"nested more than {MAX_DEPTH} levels deep")
        if self._nodes > MAX_NODES:
            raise _OverLimit(f"more than {MAX_NODES} values once aliases are expanded")

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            node = super().compose_node(parent, index)
            # Not measured yet: the node is still being composed, the alias is inside it.
            if node is None or id(node) not in self._extent:
                raise _OverLimit("an alias refers to a node that contains it")
            nodes, levels = self._extent[id(node)]
            self._reach(nodes, self._depth + levels)
            return node
        before, outer_deepest = self._nodes, self._deepest
        self._depth += 1
        self._deepest = self._depth
        try:
            self._reach(1, self._depth)
            node = super().compose_node(parent, index)
            self._extent[id(node)] = (self._nodes - before, self._deepest - self._depth + 1)
        finally:
            self._depth -= 1
            self._deepest = max(outer_deepest, self._deepest)
        return node


def _refuse_tag(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(
        None, None, f"the tag {node.tag} is not supported: use JSON's types", node.start_mark
    )


# Only JSON's types: no implicit dates, and no explicit dates, sets, binary or pairs.
_BoundedLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if not tag.endswith(":timestamp")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag in ("timestamp", "binary", "set", "omap", "pairs"):
    _BoundedLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)


def _forbidden_location(data: Any) -> str | None:
    """Where the first NUL or unpaired surrogate is, as a /-path, or None."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            if has_forbidden_characters(value):
                return where or "/"
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and has_forbidden_characters(key):
                    return where or "/"
                stack.append((item, f"{where}/{key}"))
        elif isinstance(value, list):
            stack.extend((item, f"{where}/{i}") for i, item in enumerate(value))
    return None


def integral_numbers(data: Any) -> Any:
    """``data`` with every integral float (``5.0``) an int: JSON has one kind of number,
    and a schema's "integer" is any number without a fraction."""
    if isinstance(data, float) and data.is_integer():
        return int(data)
    if isinstance(data, list):
        return [integral_numbers(item) for item in data]
    if isinstance(data, dict):
        return {key: integral_numbers(value) for key, value in data.items()}
    return data


def _forbidden(character: Any) -> bool:
    return isinstance(character, int) and has_forbidden_characters(chr(character))


def load_yaml(text: str) -> Any:
    """One YAML document as JSON-like data (dicts, lists, text, numbers, booleans, null).

    Raises :class:`YamlDocumentError`: ACODE-IMP-002 over a limit, ACODE-INP-003 for NUL
    characters or unpaired surrogates, ACODE-IMP-001 for anything else that is not YAML.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        problem = f"{size} bytes, more than {MAX_BYTES}"
        raise YamlDocumentError("ACODE-IMP-002", f"The YAML document has {problem}.", [problem])
    loader: _BoundedLoader | None = None
    try:
        loader = _BoundedLoader(text)
        data = loader.get_single_data()
    except _OverLimit as exc:
        raise YamlDocumentError(
            "ACODE-IMP-002", f"The YAML document is {exc.problem}.", [exc.problem]
        ) from None
    except yaml.YAMLError as exc:
        if isinstance(exc, yaml.reader.ReaderError) and _forbidden(exc.character):
            raise YamlDocumentError(
                "ACODE-INP-003", "The YAML document holds a NUL or an unpaired surrogate.", []
            ) from None
        raise YamlDocumentError("ACODE-IMP-001", f"Not valid YAML: {exc}", [str(exc)]) from None
    except (ValueError, OverflowError) as exc:  # e.g. ``!!int abc``
        raise YamlDocumentError("ACODE-IMP-001", f"Not valid YAML: {exc}", [str(exc)]) from None
    finally:
        if loader is not None:
            loader.dispose()
    where = _forbidden_location(data)
    if where is not None:
        raise YamlDocumentError(
            "ACODE-INP-003",
            "The YAML document holds a NUL or an unpaired surrogate.",
            [f"at {where}"],
        )
    return integral_numbers(data)


def load_yaml_mapping(text: str) -> dict[str, Any]:
    """:func:`load_yaml` of a document that must be a mapping (ACODE-IMP-001 otherwise)."""
    data = load_yaml(text)
    if not isinstance(data, dict):
        raise YamlDocumentError(
            "ACODE-IMP-001", "The file must hold a mapping.", ["top level is not a mapping"]
        )
    return data


class _Dumper(yaml.SafeDumper):
    pass


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Block style keeps multi-line prompts readable and diff-friendly in git.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(data: Mapping[str, Any]) -> str:
    """The document as YAML: keys in the given order, multi-line text as literal blocks."""
    return yaml.dump(dict(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
