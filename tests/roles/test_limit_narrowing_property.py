"""Property: when the policy diff says a new MCP argument limit is at least as narrow as an
old one (``schema_narrower``), every argument the new limit lets through, the old one let
through too, as the decision's own validator (``limit_validator``) judges. A wrong "narrower"
is a widening nobody is told of; a wrong "not narrower" only a gain marked conservative."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from roles.decision.diff_limits import schema_narrower
from roles.decision.schemas import limit_validator, schema_problem

VALUES = [1, True, 1.0, 0, False, None, 2, "a", "b", "ab", "", "aaaa"]
leaves = st.one_of(
    st.fixed_dictionaries({"enum": st.lists(st.sampled_from(VALUES), min_size=1, max_size=3)}),
    st.fixed_dictionaries({"const": st.sampled_from(VALUES)}),
    st.fixed_dictionaries({"maxLength": st.integers(0, 3)}),
    st.fixed_dictionaries({"minimum": st.integers(0, 3)}),
    st.fixed_dictionaries({"maximum": st.integers(0, 3)}),
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean"])}),
    st.fixed_dictionaries({"pattern": st.sampled_from(["^a", "a", "^a$", "b"])}),
    st.sampled_from([{}, False, True]),
)


def objects(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    names = st.sampled_from(["a", "b", "c"])
    return st.fixed_dictionaries(
        {"properties": st.dictionaries(names, children, max_size=3)},
        optional={
            "additionalProperties": children,
            "unevaluatedProperties": st.sampled_from([False, True, {}, {"maxLength": 1}]),
            "patternProperties": st.just({"^b": {"maxLength": 1}}),
            "required": st.lists(names, unique=True, max_size=2),
            "maxProperties": st.integers(0, 2),
        },
    )


schemas = st.recursive(
    leaves,
    lambda c: st.one_of(
        objects(c),
        st.fixed_dictionaries({"items": c}),
        st.fixed_dictionaries({"allOf": st.lists(c, min_size=1, max_size=2)}),
        st.fixed_dictionaries({"not": c}),
    ),
    max_leaves=5,
)
arguments = st.recursive(
    st.sampled_from(VALUES),
    lambda c: st.one_of(
        st.lists(c, max_size=2), st.dictionaries(st.sampled_from(["a", "b", "c"]), c, max_size=3)
    ),
    max_leaves=4,
)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    """An old limit and a new one: independent, or the old one with one keyword changed (a
    property added, a value swapped), so that "narrower" is often claimed."""
    old = draw(schemas)
    if not isinstance(old, dict) or not draw(st.booleans()):
        return draw(schemas), old
    new = dict(old)
    key = draw(st.sampled_from([*sorted(new), "properties"]))
    if key == "properties":
        listed = dict(new.get("properties") or {})
        listed[draw(st.sampled_from(["a", "b", "c"]))] = draw(leaves)
        new["properties"] = listed
    else:
        new[key] = draw(leaves)
    return new, old


@settings(max_examples=800, deadline=None, suppress_health_check=list(HealthCheck))
@given(pair=pairs(), instances=st.lists(arguments, min_size=1, max_size=8))
@example(pair=({"enum": [1]}, {"enum": [True]}), instances=[1])  # true is not 1 in JSON
@example(
    pair=({"properties": {"a": {}, "b": {}}, "additionalProperties": False},
          {"properties": {"a": {}}, "additionalProperties": False}),
    instances=[{"b": 1}],
)  # a property listed now escapes additionalProperties  # fmt: skip
@example(
    pair=({"properties": {"a": {}, "b": {}}, "unevaluatedProperties": False},
          {"properties": {"a": {}}, "unevaluatedProperties": False}),
    instances=[{"b": 1}],
)  # fmt: skip
def test_a_limit_the_diff_calls_narrower_lets_through_nothing_the_old_one_refused(
    pair: tuple[Any, Any], instances: list[Any]
) -> None:
    new, old = pair
    for schema in (new, old):
        if not isinstance(schema, dict) or not schema or schema_problem(schema):
            return
    if not schema_narrower(new, old):
        return
    for instance in instances:
        if limit_validator(new).is_valid(instance):
            assert limit_validator(old).is_valid(instance), (new, old, instance)
