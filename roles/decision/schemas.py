"""JSON Schema as the tool decision runs it: never a fetch, never a slow pattern, paths as
paths, and types that mean what they say.

Two validators, one base:

- ``argument_validator``: a tool's own argument schema (built-in, or an MCP server's, which
  is data from outside): ``pattern`` and ``patternProperties`` run on RE2 (linear time), and
  a ``$ref`` resolves only inside the schema (a remote one is an error, never fetched).
- ``limit_validator``: a role's argument limit. On top of that, ``x-workspace-path`` (a list
  of write-path globs) says an argument is a workspace path: it must normalise as the file
  tools' paths do (relative, no ``..``, no ``.git``, no link on the way) and match a glob;
  numeric keywords refuse what is not a number, string keywords what is not a string (so a
  string never slips past ``maximum``).

``schema_problem`` says at save time why a limit cannot be used (not a JSON Schema, a pattern
RE2 cannot run, a reference outside the schema, a glob that is not one). ``non_finite``
finds NaN and Infinity, which JSON has not and no argument may carry.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Protocol

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError, ValidationError
from referencing import Registry
from referencing.exceptions import NoSuchResource

from acode.patterns import compile_re2, re2_problem
from acode.yamldoc import integral_numbers
from roles.decision.arguments import Refused, split_path
from roles.writes import glob_problem, path_allowed

__all__ = [
    "PATH_KEYWORD",
    "argument_validator",
    "limit_validator",
    "non_finite",
    "schema_problem",
    "workspace_links",
]

PATH_KEYWORD = "x-workspace-path"
NUMERIC_KEYWORDS = ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf")
STRING_KEYWORDS = ("maxLength", "minLength", "pattern")


class LinkFacts(Protocol):
    """Which leading part of a path is a symbolic link (``roles.commands.workspace``)."""

    def link_on_path(self, parts: Sequence[str]) -> str | None: ...


# The workspace a limit's paths are judged in, for the one decision that is running.
workspace_links: ContextVar[LinkFacts | None] = ContextVar("workspace_links", default=None)


def _no_retrieval(uri: str) -> Any:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


NO_REMOTE = Registry(retrieve=_no_retrieval)  # type: ignore[call-arg]


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        compiled = compile_re2(pattern)
    except ValueError as exc:
        yield ValidationError(str(exc))
        return
    if not compiled.search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        try:
            compiled = compile_re2(pattern)
        except ValueError as exc:
            yield ValidationError(str(exc))
            return
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _unique_items(
    validator: Any, unique: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """``uniqueItems`` in one pass (a canonical form of each item, hashed), where the
    library compares unhashable items pair by pair: a long array of objects would hold the
    decision for seconds."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[str] = set()
    for item in instance:
        key = json_key(item)
        if key in seen:
            yield ValidationError(f"{instance!r} has non-unique elements"[:300])
            return
        seen.add(key)


_ArgumentValidator = validators.extend(
    Draft202012Validator,
    {"pattern": _pattern, "patternProperties": _pattern_properties, "uniqueItems": _unique_items},
)


def json_key(value: Any) -> str:
    """A JSON value as text that is equal exactly when JSON Schema calls two values equal:
    ``1`` and ``1.0`` are, ``true`` and ``1`` are not (Python's ``==`` says they are)."""
    return json.dumps(integral_numbers(value), sort_keys=True, separators=(",", ":"), default=str)


def _workspace_path(
    validator: Any, globs: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not isinstance(instance, str):
        yield ValidationError(f"{instance!r} is not a workspace path (a string)")
        return
    try:
        parts = split_path(instance)
    except Refused as exc:
        yield ValidationError(f"{instance!r} is not a workspace path: {exc.reason}")
        return
    rel = "/".join(parts)
    facts = workspace_links.get()
    link = facts.link_on_path(parts) if facts is not None else None
    if link is not None:
        yield ValidationError(f"{instance!r} goes through the symbolic link {link!r}")
    elif not path_allowed(rel, list(globs)):
        yield ValidationError(f"{rel!r} is not in {', '.join(globs)}")


def _strict(keyword: str, kind: str) -> Any:
    base = Draft202012Validator.VALIDATORS[keyword]
    wanted = ("number",) if kind == "number" else ("string",)

    def check(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if not any(validator.is_type(instance, t) for t in wanted):
            yield ValidationError(f"{instance!r} is not a {kind} ({keyword} applies to {kind}s)")
            return
        yield from base(validator, value, instance, schema)

    return check


_LimitValidator = validators.extend(
    _ArgumentValidator,
    {
        PATH_KEYWORD: _workspace_path,
        **{k: _strict(k, "number") for k in NUMERIC_KEYWORDS},
        "maxLength": _strict("maxLength", "string"),
        "minLength": _strict("minLength", "string"),
        "pattern": lambda v, p, i, s: _strict_pattern(v, p, i, s),
    },
)


def _strict_pattern(
    validator: Any, pattern: str, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        yield ValidationError(f"{instance!r} is not a string (pattern applies to strings)")
        return
    yield from _pattern(validator, pattern, instance, schema)


def argument_validator(schema: Mapping[str, Any]) -> Any:
    """The validator of a tool's own argument schema (see the module)."""
    return _ArgumentValidator(dict(schema), registry=NO_REMOTE)


def limit_validator(schema: Mapping[str, Any]) -> Any:
    """The validator of a role's argument limit (see the module)."""
    return _LimitValidator(dict(schema), registry=NO_REMOTE)


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` cannot be a role's argument limit, or None."""
    if not isinstance(schema, Mapping) or not schema:
        return "a non-empty JSON Schema object is required"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"not a JSON Schema: {exc.message}"
    for where, key, value in _walk(schema, ""):
        problem = _keyword_problem(key, value)
        if problem:
            return f"{where or '/'}: {problem}"
    return None


def _keyword_problem(key: str, value: Any) -> str | None:
    if key == "pattern" and isinstance(value, str):
        return re2_problem(value)
    if key == "patternProperties" and isinstance(value, Mapping):
        return next((p for p in map(re2_problem, value) if p), None)
    if key in ("$ref", "$dynamicRef") and isinstance(value, str) and not value.startswith("#"):
        return f"{key} {value!r} points outside the schema (only #... references resolve)"
    if key == PATH_KEYWORD:
        if not isinstance(value, list) or not value or not all(isinstance(g, str) for g in value):
            return f'{PATH_KEYWORD} is a non-empty list of workspace globs, e.g. ["docs/**"]'
        return next((p for p in map(glob_problem, value) if p), None)
    return None


def _walk(node: Any, where: str) -> Iterator[tuple[str, str, Any]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield where, str(key), value
            yield from _walk(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _walk(item, f"{where}/{index}")


def non_finite(value: Any, where: str = "") -> str | None:
    """The path of the first NaN or Infinity in ``value`` (None when there is none)."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "arguments"
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = non_finite(item, f"{where}/{key}" if where else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = non_finite(item, f"{where}/{index}" if where else str(index))
            if found:
                return found
    return None
