"""The JSON Schemas the API publishes for roles and role imports agree with the role checks:
whatever a schema allows, the checks accept (what is left is a 404 or a 409), and what the
server exports has the form it imports."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.strategies import SearchStrategy
from rest_framework.test import APIClient

from acode.errors import AcodeError
from acode.inputs import JSON_VALUE, json_schema_problems
from acode.yamldoc import integral_numbers
from roles.commands import COMMAND_RULE_SCHEMA, command_rule_problems
from roles.portability.definitions import export_definitions
from roles.portability.document import DOCUMENT_SCHEMA
from roles.services import role_write
from roles.validation import (
    ROLE_CONTENT_SCHEMA,
    ROLE_FIELDS,
    ROLE_PROPERTIES,
    role_format_problems,
    role_schema,
)
from roles.writes import glob_problem
from sessions_app.services.runs.portability import DOCUMENT_SCHEMA as WORKFLOWS_SCHEMA
from sessions_app.services.runs.portability import workflows_export

EXAMPLES = settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


def generated(schema: dict[str, Any]) -> SearchStrategy[Any]:
    """Values of ``schema`` as schemathesis generates request bodies from it."""
    body = {"required": True, "content": {"application/json": {"schema": schema}}}
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/x": {"post": {"requestBody": body, "responses": {"200": {"description": ""}}}}},
        # As the API publishes it: a free-form value (an example's arguments) refers to it.
        "components": {"schemas": {"JsonValue": JSON_VALUE}},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = schemathesis.openapi.from_dict(document)
    api.config.update(base_url="http://127.0.0.1:1")
    return api["/x"]["POST"].as_strategy().map(lambda case: case.body)


@EXAMPLES
@given(generated(COMMAND_RULE_SCHEMA))
def test_every_command_rule_the_schema_allows_is_usable(rule: Any) -> None:
    assert command_rule_problems(rule) == []


@EXAMPLES
@given(generated(ROLE_PROPERTIES["write_paths"]["items"]))
def test_every_write_path_the_schema_allows_is_usable(glob: str) -> None:
    assert glob_problem(glob) is None


@pytest.mark.parametrize(
    ("glob", "allowed"),
    [
        *[("docs/**", True), ("a..b/c", True), ("..x", True)],
        *[("../x", False), ("a/../b", False), ("/etc", False), ("~/x", False)],
        *[(" ", False), ("\x1c", False)],
    ],
)
def test_the_write_path_pattern_says_what_glob_problem_says(glob: str, allowed: bool) -> None:
    problems = json_schema_problems(ROLE_PROPERTIES["write_paths"], [glob])
    assert (problems == []) is allowed
    assert (glob_problem(glob) is None) is allowed


@pytest.mark.django_db
def test_what_the_server_exports_has_the_form_it_imports() -> None:
    assert json_schema_problems(DOCUMENT_SCHEMA, export_definitions()) == []
    assert json_schema_problems(WORKFLOWS_SCHEMA, workflows_export()) == []


@pytest.mark.django_db
def test_role_writes_say_which_kind_of_refusal(admin_user: Any) -> None:
    boss = APIClient()
    boss.force_authenticate(admin_user)

    def create(**data: Any) -> Any:
        return boss.post("/api/roles/", {"slug": "scribe", "name": "Scribe", **data}, format="json")

    malformed = [{"max_llm_calls": "5"}, {"colour": "red"}, {"salary": 1}, {"name": 7},
                 {"write_paths": 1.5}]  # fmt: skip
    for data in malformed:
        response = create(**data)
        assert (response.status_code, response.json()["code"]) == (400, "ACODE-ROL-004"), data
    unknown = create(permissions=["fly"])
    assert (unknown.status_code, unknown.json()["code"]) == (404, "ACODE-API-404")
    orphan = create(parent="ghost")
    assert (orphan.status_code, orphan.json()["code"]) == (404, "ACODE-ROL-001")
    assert create().status_code == 201
    assert boss.patch("/api/roles/planner/", {"parent": "scribe"}, format="json").status_code == 200
    cycle = boss.patch("/api/roles/scribe/", {"parent": "planner"}, format="json")
    assert (cycle.status_code, cycle.json()["code"]) == (409, "ACODE-API-409")
    renamed = boss.patch("/api/roles/scribe/", {"slug": "writer"}, format="json")
    assert (renamed.status_code, renamed.json()["code"]) == (400, "ACODE-ROL-004")


def test_the_role_content_schema_covers_every_field_of_a_role() -> None:
    assert set(ROLE_CONTENT_SCHEMA["properties"]) == set(ROLE_FIELDS)


@EXAMPLES
@given(generated(role_schema(required=("slug", "name", "prompt_key"))))
def test_every_role_the_published_schema_allows_passes_the_role_checks(role: Any) -> None:
    # As the API and the import hand it on: a whole number written 5.0 is read as 5.
    assert role_format_problems(integral_numbers(role)) == []


def test_role_content_of_the_wrong_form_is_refused_naming_each_field() -> None:
    problems = role_format_problems({"slug": "scribe", "name": "", "salary": 1, "parent": 3})
    assert set(problems) == {
        "role scribe: unknown fields salary",
        "role scribe: name is required",
        "role scribe: prompt_key is required",
        "role scribe: parent must be a role slug",
    }
    assert role_format_problems({"name": "No slug"}) == ["roles: every entry needs a slug"]


@pytest.mark.django_db
def test_a_role_write_of_the_wrong_form_names_the_field() -> None:
    with pytest.raises(AcodeError) as error:
        role_write(
            data={"capabilities": ["reads", 5, 6], "answer_sets_plan": "yes"},
            create=False,
            slug="coder",
            actor="test",
        )
    assert error.value.code == "ACODE-ROL-004"
    assert error.value.details["problems"] == [
        "role coder: answer_sets_plan must be true or false",
        "role coder: capabilities must be a list of strings",
    ]
