"""What every API input must be: JSON bodies the parser can trust, text with visible content.

The request body's size and the header lengths are checked earlier, before anything parses
the request (``acode.middleware``). Here: JSON bodies refuse NUL characters and unpaired
surrogates anywhere (keys too) and more than ``MAX_JSON_DEPTH`` levels of nesting, and
``Text`` fields count invisible characters (zero-width spaces, BOM, ...) as blank.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import QueryDict
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import best_match
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail
from rest_framework.fields import empty
from rest_framework.parsers import JSONParser

from acode.errors import AcodeError
from acode.text import (
    FORBIDDEN_CHARACTERS,
    NO_NUL_PATTERN,
    NOT_WHITESPACE_PATTERN,
    has_forbidden_characters,
    is_blank,
    is_invisible,
    trim_invisible,
)

__all__ = [
    "FORBIDDEN_CHARACTERS",
    "JSON_VALUE",
    "JSON_VALUE_REF",
    "MAX_JSON_DEPTH",
    "MAX_QUERY_CHARS",
    "NOT_WHITESPACE",
    "NO_NUL",
    "CommaSeparated",
    "Input",
    "PageQuery",
    "Query",
    "QueryBoolean",
    "StrictJSONParser",
    "Text",
    "check_json_value",
    "has_forbidden_characters",
    "is_blank",
    "is_invisible",
    "json_schema_errors",
    "json_schema_problems",
    "json_type_problem",
    "query_of",
    "trim_invisible",
]

MAX_JSON_DEPTH = 32
# The longest query value the API reads (acode.middleware refuses longer ones): a request
# line must stay inside what daphne and uvicorn accept (16 KB), escapes and all.
MAX_QUERY_CHARS = 1000


class Text(serializers.CharField):
    """Text input with a required length limit, counted on the text as sent. Trimming
    removes invisible characters as well as whitespace, so text of zero-width spaces alone
    is blank. (DRF's CharField already refuses NUL characters and surrogates.)

    ``visible=True`` with ``allow_blank=True``: blank text passes this field so that a
    service can refuse it with a code of its own, but the schema still asks for a visible
    character (``acode.schema``).

    ``pattern``: a rule a service enforces with an error code of its own, stated in the
    schema (the field itself does not check it, so the service's code is what comes back).
    """

    def __init__(
        self, *, max_length: int, visible: bool = False, pattern: str = "", **kwargs: Any
    ) -> None:
        super().__init__(max_length=max_length, **kwargs)
        self.visible = visible or not self.allow_blank
        self.pattern = pattern

    def run_validation(self, data: Any = empty) -> Any:
        if isinstance(data, str) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if self.trim_whitespace:
            value = trim_invisible(value)
        # Blank is judged on the visible text, trimmed or not, as the schema says.
        if not self.allow_blank and not trim_invisible(value):
            self.fail("blank")
        return value


# -- request bodies and query strings, exactly as the schema says -------------------------
_JSON_TYPES: list[tuple[type[serializers.Field], tuple[type, ...], str]] = [
    (serializers.BooleanField, (bool,), "true or false"),
    (serializers.IntegerField, (int,), "an integer"),
    (serializers.FloatField, (int, float), "a number"),
    (serializers.CharField, (str,), "a string"),
    (serializers.DateTimeField, (str,), "a string"),
    (serializers.UUIDField, (str,), "a string"),
    (serializers.ListField, (list,), "a list"),
    (serializers.ListSerializer, (list,), "a list"),
    (serializers.DictField, (dict,), "an object"),
]


def json_type_problem(field: serializers.Field, value: Any) -> str | None:
    """Why ``value`` (parsed JSON) is not of the type ``field`` declares, or None. DRF
    would turn 5 into "5" and "yes" into True; the schema says neither is allowed."""
    if value is None:
        return None  # DRF decides about null (allow_null)
    if isinstance(field, serializers.ChoiceField):
        wanted: tuple[type, ...] = (str,) if all(isinstance(c, str) for c in field.choices) else ()
        name = "a string"
    else:
        found = [(types, name) for kind, types, name in _JSON_TYPES if isinstance(field, kind)]
        wanted, name = found[0] if found else ((), "")
    if wanted == (int,) and isinstance(value, float) and value.is_integer():
        return None  # 5.0 is an integer too (JSON has one kind of number)
    if wanted and (
        not isinstance(value, wanted) or (bool not in wanted and isinstance(value, bool))
    ):
        return f"Must be {name}."
    child = getattr(field, "child", None)
    if (
        isinstance(value, list)
        and child is not None
        and not isinstance(child, serializers.Serializer)
    ):
        for item in value:
            if problem := json_type_problem(child, item):
                return f"Every item: {problem[0].lower()}{problem[1:]}"
    if (
        isinstance(value, dict)
        and child is not None
        and not isinstance(child, serializers.Serializer)
    ):
        for item in value.values():
            if problem := json_type_problem(child, item):
                return f"Every value: {problem[0].lower()}{problem[1:]}"
    return None


def _error(message: str, code: str) -> list[ErrorDetail]:
    return [ErrorDetail(message, code=code)]


class Input(serializers.Serializer):
    """A JSON request body: exactly the declared fields, each of its declared JSON type.
    Unknown fields are refused (the schema says ``additionalProperties: false``), and so is
    a number where text is expected. Nested serializers derive from it too."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            errors: dict[str, list[ErrorDetail]] = {
                str(name): _error("Unknown field.", "unknown_field")
                for name in data
                if name not in self.fields or self.fields[name].read_only
            }
            for name, field in self.fields.items():
                if name in data and (problem := json_type_problem(field, data[name])):
                    errors[name] = _error(problem, "invalid")
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class Query(serializers.Serializer):
    """Query parameters, checked as strictly as a body: a parameter is given at most once,
    and one that is given needs a valid value (empty is not one: DRF would read ``?after=``
    as absent). Parameters it does not declare are ignored."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, QueryDict):
            names = [str(name) for name in self.fields]
            repeated = {
                name: _error("Give this parameter at most once.", "repeated")
                for name in names
                if len(data.getlist(name)) > 1
            }
            if repeated:
                raise serializers.ValidationError(repeated)
            data = {name: data[name] for name in names if name in data}
        return super().to_internal_value(data)


class PageQuery(Query):
    """``limit`` and ``offset`` of a list answered in pages (DRF's LimitOffsetPagination
    reads them; here a bad one is a 400 instead of the default)."""

    limit = serializers.IntegerField(
        min_value=1, max_value=500, required=False, help_text="Page size (default 50, at most 500)"
    )
    offset = serializers.IntegerField(
        min_value=0, max_value=2**31 - 1, required=False, help_text="How many to skip"
    )


def query_of(query: type[Query], request: Any) -> dict[str, Any]:
    """The request's query parameters checked by ``query`` (400 with the problems)."""
    checked = query(data=request.query_params)
    checked.is_valid(raise_exception=True)
    return dict(checked.validated_data)


def body_of(body: type[serializers.Serializer], request: Any) -> dict[str, Any]:
    """The request's body checked by ``body`` (400 with the problems)."""
    checked = body(data=request.data)
    checked.is_valid(raise_exception=True)
    return dict(checked.validated_data)


class CommaSeparated(serializers.Field):
    """A query parameter holding a comma-separated list of choices (``?status=a,b``); the
    schema shows an array with ``style: form, explode: false``."""

    def __init__(self, *, choices: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.choices = list(choices)

    def to_internal_value(self, data: Any) -> list[str]:
        if not isinstance(data, str):
            self.fail("invalid")
        items = data.split(",")
        unknown = [item for item in items if item not in self.choices]
        if unknown:
            raise serializers.ValidationError(
                f"Unknown value {', '.join(map(repr, unknown))}; each one of "
                f"{', '.join(self.choices)}, separated by commas."
            )
        return items

    def to_representation(self, value: Any) -> str:
        return ",".join(value)


class QueryBoolean(serializers.Field):
    """``true`` or ``false``, as the schema's boolean is written in a query string."""

    def to_internal_value(self, data: Any) -> bool:
        if data not in ("true", "false"):
            raise serializers.ValidationError("Must be true or false.")
        return bool(data == "true")

    def to_representation(self, value: Any) -> bool:
        return bool(value)


# -- JSON Schema, for inputs described by one (role definitions, import documents) -------
# Text with no NUL; text with a character that is not whitespace (what ``str.strip()``
# leaves something of), and no NUL.
NO_NUL = NO_NUL_PATTERN
NOT_WHITESPACE = NOT_WHITESPACE_PATTERN
# Any JSON value without a NUL in its text (a tool's argument schema, say): the API schema
# has it as the component "JsonValue".
JSON_VALUE_REF = {"$ref": "#/components/schemas/JsonValue"}
JSON_VALUE: dict[str, Any] = {
    "description": "Any JSON value (at most 32 levels deep); no text in it holds a NUL.",
    "anyOf": [
        {"type": ["null", "boolean", "number"]},
        {"type": "string", "pattern": NO_NUL},
        {"type": "array", "items": JSON_VALUE_REF},
        {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": JSON_VALUE_REF,
        },
    ],
}
_MAX_PROBLEMS = 20


def json_schema_errors(schema: Mapping[str, Any], data: Any) -> list[ValidationError]:
    """What the JSON Schema ``schema`` refuses in ``data``, in the order of the document
    (the schema may refer to the component "JsonValue")."""
    root = {**schema, "components": {"schemas": {"JsonValue": JSON_VALUE}}}
    errors = Draft202012Validator(root).iter_errors(data)
    return sorted(errors, key=lambda e: [str(p) for p in e.absolute_path])


def _schema_message(error: ValidationError) -> str:
    message = error.message
    if error.validator in ("const", "enum"):
        message += f", got {error.instance!r}"
    elif error.validator in ("anyOf", "oneOf") and error.context:
        # "not valid under any of the given schemas" says nothing of why: name the
        # closest alternative's reason.
        reason = best_match(error.context)
        if reason is not None:
            message += f" ({reason.message})"
    return message if len(message) <= 300 else message[:297] + "..."


def json_schema_problems(schema: Mapping[str, Any], data: Any) -> list[str]:
    """What in ``data`` the JSON Schema ``schema`` refuses, one line per problem (at most
    20), each naming where: the same schema the API publishes, so the two cannot differ."""
    problems = []
    for error in json_schema_errors(schema, data)[:_MAX_PROBLEMS]:
        where = "/".join(str(p) for p in error.absolute_path) or "(the document)"
        problems.append(f"{where}: {_schema_message(error)}")
    return problems


def json_schema_check(schema: Mapping[str, Any], data: Any, *, code: str, refusal: str) -> None:
    """Refuse ``data`` the JSON Schema ``schema`` does not allow: ``code`` with ``refusal``
    and its first five problems in the message, every problem in the details."""
    problems = json_schema_problems(schema, data)
    if problems:
        raise AcodeError(code, f"{refusal}: " + "; ".join(problems[:5]), {"problems": problems})


def _refuse(code: str, message: str, where: str) -> AcodeError:
    return AcodeError(code, message, {"location": where or "(the body itself)"})


def check_json_value(data: Any) -> None:
    """Refuse forbidden characters in any string or key, and nesting deeper than the limit.

    Iterative, so a deep document cannot exhaust the stack here either."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, str):
            if has_forbidden_characters(value):
                raise _refuse(
                    "ACODE-INP-003", "The JSON body holds a NUL or an unpaired surrogate.", where
                )
            continue
        if not isinstance(value, dict | list):
            continue
        if depth >= MAX_JSON_DEPTH:
            raise _refuse(
                "ACODE-INP-004", f"The JSON body is nested deeper than {MAX_JSON_DEPTH}.", where
            )
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(key, str) and has_forbidden_characters(key):
                raise _refuse(
                    "ACODE-INP-003", "A JSON key holds a NUL or an unpaired surrogate.", where
                )
            stack.append((item, f"{where}/{key}", depth + 1))


class StrictJSONParser(JSONParser):
    """DRF's JSON parser, plus ``check_json_value`` on what it parsed."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise _refuse(
                "ACODE-INP-004", f"The JSON body is nested deeper than {MAX_JSON_DEPTH}.", ""
            ) from None
        check_json_value(data)
        return data
