"""MCP argument limits compared: JSON Schema fragments, where inclusion is decided only for
the keywords whose meaning is a plain bound, and conservatively for everything else.

A limit the new version no longer holds (removed, or changed) is a gain unless one of the
new limits on the same tool is provably at least as narrow (``schema_narrower``): it has
every keyword of the old fragment with a value at least as strict (``enum``/``const``
among the old values, ``maxLength``/``maximum``/``maxItems`` no larger, ``min*`` no
smaller, ``required`` a superset, each old property's schema narrower, a ``pattern`` whose
matches the old one's include, decided with automata; the same ``type``/``format``; values
equal as JSON, where ``true`` is not ``1``; a property listed only in the new one narrower
than the old ``additionalProperties``), and what it adds is a keyword that only ever narrows.
Anything else (``anyOf``, ``$ref``, a changed ``pattern``...) is not provably narrower, so
it counts as a gain and says "conservative".
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from roles.decision.diff_paths import search_pattern_included
from roles.decision.schemas import json_key

_UPPER = ("maxLength", "maximum", "exclusiveMaximum", "maxItems", "maxProperties")
_LOWER = ("minLength", "minimum", "exclusiveMinimum", "minItems", "minProperties")
# Keywords whose addition to a schema object can only take instances away.
_NARROWING = frozenset(
    {"type", "enum", "const", "pattern", "multipleOf", "required", "uniqueItems", "not",
     "allOf", "propertyNames", "dependentRequired", "format", "description", "title",
     *_UPPER, *_LOWER}
)  # fmt: skip


def schema_narrower(new: Any, old: Any) -> bool:
    """Whether every instance ``new`` accepts, ``old`` accepts (provably; False if unsure)."""
    if _same(new, old) or old is True or old == {}:
        return True
    if new is False:
        return True
    if not isinstance(new, Mapping) or not isinstance(old, Mapping):
        return False
    for key, value in old.items():
        if key not in new or not _keyword_narrower(key, new[key], value):
            return False
    return all(key in old or key in _NARROWING for key in new) and _listed_narrower(new, old)


def _listed_narrower(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """A property ``new`` lists and ``old`` does not escapes ``new``'s
    ``additionalProperties`` but not ``old``'s: its schema must be narrower than that (and
    one that old's ``patternProperties`` or ``unevaluatedProperties`` may judge is not
    provably narrower)."""
    listed, before = new.get("properties"), old.get("properties")
    if not isinstance(listed, Mapping) or not isinstance(before, Mapping):
        return True
    extra = [name for name in listed if name not in before]
    if not extra:
        return True
    judges = [old[k] for k in ("patternProperties", "unevaluatedProperties") if k in old]
    if any(not (judge is True or _same(judge, {})) for judge in judges):
        return False
    rest = old.get("additionalProperties", True)
    return all(schema_narrower(listed[name], rest) for name in extra)


def _same(a: Any, b: Any) -> bool:
    """JSON Schema's equality (``json_key``): Python's ``==`` would read ``enum: [1]`` as
    ``enum: [true]``."""
    return json_key(a) == json_key(b)


def _keyword_narrower(key: str, new: Any, old: Any) -> bool:
    if _same(new, old):
        return True
    if key == "enum" and isinstance(new, list) and isinstance(old, list):
        return {json_key(v) for v in new} <= {json_key(v) for v in old}
    if key in _UPPER:
        return _number(new) is not None and _number(old) is not None and new <= old
    if key in _LOWER:
        return _number(new) is not None and _number(old) is not None and new >= old
    if key == "pattern" and isinstance(new, str) and isinstance(old, str):
        return search_pattern_included(new, old)
    if key == "required" and isinstance(new, list) and isinstance(old, list):
        return set(old) <= set(new)
    if key == "properties" and isinstance(new, Mapping) and isinstance(old, Mapping):
        return all(name in new and schema_narrower(new[name], s) for name, s in old.items())
    if key == "additionalProperties":
        return new is False or schema_narrower(new, old)
    if key == "items":
        return schema_narrower(new, old)
    if key == "not":  # refusing more
        return schema_narrower(old, new)
    return False


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def limit_key(owner: str, schema: Any) -> str:
    """One limit (the role that set it and its fragment) as comparable text."""
    return owner + " " + json.dumps(schema, sort_keys=True, separators=(",", ":"), default=str)


def violating_arguments(schema: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Arguments ``schema`` (a limit) refuses, one per bound it sets on a property: the
    candidates a gain's counterexample is looked for among."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    for name, sub in properties.items():
        if not isinstance(sub, Mapping):
            continue
        for value in _violations(sub):
            yield {name: value}


def permitted_arguments(schemas: list[Any]) -> Iterator[dict[str, Any]]:
    """Arguments the limits ``schemas`` name as allowed (their ``enum`` and ``const``
    values): candidates too, as a widened list names the new value."""
    for schema in schemas:
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        for name, sub in (properties or {}).items():
            if isinstance(sub, Mapping):
                values = list(sub.get("enum") or []) + ([sub["const"]] if "const" in sub else [])
                for value in values[:20]:
                    yield {name: value}


def _violations(sub: Mapping[str, Any]) -> Iterator[Any]:
    if "const" in sub:
        yield _other(sub["const"])
    if isinstance(sub.get("enum"), list) and sub["enum"]:
        yield _other(sub["enum"][0], avoid=sub["enum"])
    if isinstance(sub.get("maxLength"), int):
        yield "x" * (sub["maxLength"] + 1)
    if _number(sub.get("maximum")) is not None:
        yield sub["maximum"] + 1
    if _number(sub.get("minimum")) is not None:
        yield sub["minimum"] - 1
    if "pattern" in sub:
        yield "/etc/passwd"
        yield "https://example.com/"
    if isinstance(sub.get("maxItems"), int):
        yield ["x"] * (sub["maxItems"] + 1)


def _other(value: Any, avoid: list[Any] | None = None) -> Any:
    avoid = avoid or [value]
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return max(v for v in avoid if isinstance(v, (int, float))) + 1
    if isinstance(value, str):
        candidate = value + "-other"
        while candidate in avoid:
            candidate += "x"
        return candidate
    return None
