"""The OpenAPI schema says what the server checks, from the same declarations it checks with.

- :class:`AutoSchema`: a request body of an ``acode.inputs.Input`` serializer is
  ``additionalProperties: false`` (unknown fields are refused).
- :class:`TextFieldExtension`: a ``Text`` field that refuses blank text is ``not`` a
  string of invisible characters only.
- :func:`describe_inputs` (a postprocessing hook): every other text the API reads, in
  bodies, paths, query strings and headers, gets the patterns and bounds the server
  enforces before any view runs (``acode.middleware``): no NUL, a query value is not
  empty, headers at most 200 characters, a comma-separated list is ``explode: false``.

The errors side (statuses and codes of every operation) is ``acode.errors``.
"""

from __future__ import annotations

import copy
from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema

from acode.bodylimit import MAX_REQUEST_ID_CHARS
from acode.inputs import (
    JSON_VALUE,
    MAX_QUERY_CHARS,
    CommaSeparated,
    Input,
    Query,
    QueryBoolean,
)
from acode.text import NO_NUL_PATTERN, blank_text_pattern

NO_NUL_NOTE = "NUL characters and unpaired surrogates are refused everywhere (400 ACODE-INP-003)."
# A path segment: not empty, no slash, not "." or ".." (clients resolve those away).
PATH_SEGMENT_PATTERN = r"^(?!\.\.?$)[^/\u0000]+$"
PRINTABLE_ASCII_PATTERN = r"^[ -~]*$"
HEADER_PATTERNS = {"X-Request-ID": PRINTABLE_ASCII_PATTERN}


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's, plus: an ``Input`` body admits no other fields."""

    def _map_serializer(
        self, serializer: Any, direction: str, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer(serializer, direction, bypass_extensions)
        if isinstance(serializer, Input | Query) and type(serializer).__doc__ is None:
            schema.pop("description", None)  # not Input's or Query's own docstring
        if direction == "request" and isinstance(serializer, Input) and "properties" in schema:
            schema["additionalProperties"] = False
        return schema


class TextFieldExtension(OpenApiSerializerFieldExtension):
    target_class = "acode.inputs.Text"

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer_field(
            self.target, direction, bypass_extensions=True
        )
        if direction == "request" and self.target.visible:
            # Not blank: not only invisible characters. (A "has a visible character"
            # pattern says the same but makes long text slow to generate from it.)
            schema["not"] = {"pattern": blank_text_pattern()}
        if direction == "request" and self.target.pattern:
            schema["pattern"] = self.target.pattern
        return schema  # the NUL rule: describe_inputs


class CommaSeparatedExtension(OpenApiSerializerFieldExtension):
    target_class = CommaSeparated

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        return {
            "type": "array",
            "items": {"type": "string", "enum": list(self.target.choices)},
            "minItems": 1,
        }


class QueryBooleanExtension(OpenApiSerializerFieldExtension):
    target_class = QueryBoolean

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        return {"type": "boolean"}


def _types(schema: dict[str, Any]) -> set[str]:
    """The schema's types (OpenAPI 3.1: a nullable one lists "null" too)."""
    kind = schema.get("type")
    return set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()


def _is_free_text(schema: dict[str, Any]) -> bool:
    return "string" in _types(schema) and not (
        {"enum", "const", "format", "pattern"} & set(schema) or "$ref" in schema
    )


def _note(parameter: dict[str, Any], note: str) -> None:
    description = parameter.get("description", "")
    if note not in description:
        parameter["description"] = f"{description} {note}".strip()


def _describe_parameter(parameter: dict[str, Any]) -> None:
    schema = parameter.setdefault("schema", {})
    where = parameter.get("in")
    if where == "query":
        if "array" in _types(schema):
            parameter["style"], parameter["explode"] = "form", False
            _note(parameter, "Comma-separated.")
        if _is_free_text(schema):
            schema["pattern"] = NO_NUL_PATTERN
        if "string" in _types(schema):
            schema.setdefault("minLength", 1)
            if _is_free_text(schema) or "pattern" in schema:
                schema.setdefault("maxLength", MAX_QUERY_CHARS)
            _note(parameter, NO_NUL_NOTE)
    elif where == "path" and _is_free_text(schema):
        schema["pattern"] = PATH_SEGMENT_PATTERN
        _note(parameter, NO_NUL_NOTE)
    elif where == "header":
        schema.setdefault("maxLength", MAX_REQUEST_ID_CHARS)
        if parameter["name"] in HEADER_PATTERNS:
            schema["pattern"] = HEADER_PATTERNS[parameter["name"]]


def _request_components(result: dict[str, Any]) -> set[str]:
    """Names of the components request bodies use, directly or nested."""
    components = result.get("components", {}).get("schemas", {})
    found: set[str] = set()
    stack: list[Any] = [
        operation.get("requestBody", {})
        for operations in result.get("paths", {}).values()
        for operation in operations.values()
    ]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[-1]
                if name not in found:
                    found.add(name)
                    stack.append(components.get(name, {}))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _forbid_nul_in_body_text(node: Any) -> None:
    """Every free text of a request body schema (a property, an item) gets the NUL rule."""
    if isinstance(node, list):
        for item in node:
            _forbid_nul_in_body_text(item)
        return
    if not isinstance(node, dict):
        return
    if _is_free_text(node):
        node["pattern"] = NO_NUL_PATTERN
    for key, value in node.items():
        if key in ("properties", "patternProperties"):
            for prop in value.values():
                _forbid_nul_in_body_text(prop)
        elif key in ("items", "additionalProperties", "oneOf", "anyOf", "allOf"):
            _forbid_nul_in_body_text(value)


def _tidy_types(node: Any) -> None:
    """No type twice in a type list (drf-spectacular's OpenAPI 3.1 output adds "null" to
    a nullable field an extension described, which already has it)."""
    if isinstance(node, dict):
        kind = node.get("type")
        if isinstance(kind, list):
            node["type"] = list(dict.fromkeys(kind))
        for value in node.values():
            _tidy_types(value)
    elif isinstance(node, list):
        for item in node:
            _tidy_types(item)


def describe_inputs(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the input rules no declaration carries."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                _describe_parameter(parameter)
            body = operation.get("requestBody", {})
            for content in body.get("content", {}).values():
                _forbid_nul_in_body_text(content.get("schema"))
                if content.get("schema", {}).get("required"):  # a schema given as JSON Schema
                    body.setdefault("required", True)
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["JsonValue"] = copy.deepcopy(JSON_VALUE)
    _tidy_types(result)
    for name in _request_components(result):
        _forbid_nul_in_body_text(components.get(name))
    return result


__all__ = [
    "MAX_QUERY_CHARS",
    "AutoSchema",
    "CommaSeparatedExtension",
    "QueryBooleanExtension",
    "TextFieldExtension",
    "describe_inputs",
]
