"""Tool calls a small local model can make: with answers constrained by a JSON schema, the
schema is the union of the role's tools (each with its own arguments and required fields)
and the final answer; the Planner's answer is a plan. Seen from the server's side, over
HTTP, with a scripted OpenAI-compatible server at the LLM boundary."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from roles.models import EndpointKind, ModelEndpoint
from roles.registry import registry
from roles.services import role_write
from sessions_app.models import JobStatus
from tests.fake_openai import fake_openai
from tests.sessions_app.jobkit import run, scripted_model, session_in

pytestmark = pytest.mark.django_db


def route(role: str, base_url: str, **fields: Any) -> None:
    endpoint = ModelEndpoint.objects.create(
        name=f"fake-{role}",
        kind=EndpointKind.OPENAI,
        base_url=base_url,
        model="fake",
        **{"supports_json_schema": True, **fields},
    )
    role_write(data={"preferred_model": endpoint.name}, create=False, slug=role, actor="test")


def action(**fields: Any) -> str:
    return json.dumps(fields)


def schema_of(body: dict[str, Any]) -> dict[str, Any]:
    fmt = body["response_format"]
    return dict(fmt["schema"] if fmt["type"] == "json_object" else fmt["json_schema"]["schema"])


def test_coder_answers_are_constrained_to_its_tools_with_their_own_arguments(
    user: Any, tmp_path: Path
) -> None:
    (tmp_path / "calc.py").write_text("def sub(a, b):\n    return a - b\n")
    answers = [
        action(
            action="call_tool",
            tool="write_file",
            arguments={"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"},
        ),
        action(action="final_answer", answer="Added add(a, b)."),
    ]
    with fake_openai(answers) as server:
        route("coder", server.base_url)
        job = run(session_in("coder", user, workspace=tmp_path), "Add add(a, b)", user)
    assert job.status == JobStatus.SUCCEEDED, job.error_message
    assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    schema = schema_of(server.requests[0])
    tools = {spec.name for spec in registry.effective_tools("coder")}
    offered = [c["properties"]["tool"]["const"] for c in schema["anyOf"][:-1]]
    assert sorted(offered) == sorted(tools)
    assert schema["anyOf"][-1]["properties"]["action"] == {"const": "final_answer"}
    validator = Draft202012Validator(schema)
    for refused in (
        {"action": "call_tool", "tool": "write_file", "arguments": {}},
        {"action": "call_tool", "tool": "write_file", "arguments": {"path": "", "content": "x"}},
        {
            "action": "call_tool",
            "tool": "create_file",
            "arguments": {"path": "a b?", "content": ""},
        },
        {"action": "call_tool", "tool": "read_file", "arguments": {"path": "a", "extra": 1}},
        {"action": "call_tool", "tool": "submit_review", "arguments": {}},
        {"action": "final_answer", "answer": ""},
    ):
        assert not validator.is_valid(refused), refused
    for accepted in (
        {
            "action": "call_tool",
            "tool": "write_file",
            "arguments": {"path": "a.py", "content": "\n"},
        },
        {"action": "call_tool", "tool": "list_directory", "arguments": {}},
        {"action": "call_tool", "tool": "execute_command", "arguments": {"argv": ["ls"]}},
        {"action": "final_answer", "answer": "done"},
    ):
        assert validator.is_valid(accepted), accepted
    # The protocol is told in the one system message (templates keep only the first).
    messages = server.requests[0]["messages"]
    assert [m["role"] for m in messages].count("system") == 1
    assert '"action": "call_tool"' in messages[0]["content"]


def test_planner_answer_is_constrained_to_a_plan_and_becomes_the_plan(user: Any) -> None:
    plan = {
        "steps": [
            {"title": "Add add(a, b)", "files": ["calc.py"]},
            {"title": "Test it", "files": []},
        ]
    }
    with fake_openai([action(action="final_answer", answer=plan)]) as server:
        route("planner", server.base_url)
        session = session_in("planner", user, plan=False)
        job = run(session, "Add add(a, b) to calc.py", user)
    assert job.status == JobStatus.SUCCEEDED, job.error_message
    session.refresh_from_db()
    assert [(s["title"], s["files"]) for s in session.plan] == [
        ("Add add(a, b)", ["calc.py"]),
        ("Test it", []),
    ]
    final = schema_of(server.requests[0])["anyOf"][-1]["properties"]["answer"]
    validator = Draft202012Validator(final)
    assert validator.is_valid(plan)
    assert not validator.is_valid("1. Add it")
    assert not validator.is_valid({"steps": []})
    assert not validator.is_valid({"steps": [{"title": ""}]})


def test_openai_style_servers_get_the_schema_as_json_schema(user: Any) -> None:
    with fake_openai([action(action="final_answer", answer="Nothing to do.")]) as server:
        route("explorer", server.base_url, schema_format="json_schema")
        job = run(session_in("explorer", user), "Look around", user)
    assert job.status == JobStatus.SUCCEEDED
    fmt = server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and "anyOf" in fmt["json_schema"]["schema"]


def test_without_the_constraint_the_native_tools_api_is_used(user: Any) -> None:
    with fake_openai(["Nothing to do."]) as server:
        route("explorer", server.base_url, supports_json_schema=False)
        run(session_in("explorer", user), "Look around", user)
    body = server.requests[0]
    assert "response_format" not in body
    assert {t["function"]["name"] for t in body["tools"]} == {
        spec.name for spec in registry.effective_tools("explorer")
    }


@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed"
)
def test_llama_cpp_turns_every_roles_schema_into_a_grammar() -> None:
    # llama-cpp-python falls back to "any JSON" when a schema does not convert: it must.
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    from acode.llm import action_schema
    from sessions_app.agent.loop import tool_definitions
    from sessions_app.agent.plans import PLAN_ANSWER_SCHEMA

    for role in registry.list_roles():
        answer = PLAN_ANSWER_SCHEMA if role.spec.answer_sets_plan else None
        grammar = json_schema_to_gbnf(
            json.dumps(action_schema(tool_definitions(role), answer_schema=answer))
        )
        assert '"\\"final_answer\\""' in grammar, role.slug


def test_an_unreadable_answer_is_asked_again_once(user: Any) -> None:
    scripted_model(
        "explorer",
        [
            {"protocol": '{"action": "call_tool", "tool": "read_'},
            {"protocol": action(action="final_answer", answer="Read it.")},
        ],
    )
    job = run(session_in("explorer", user), "Look around", user)
    assert job.status == JobStatus.SUCCEEDED and job.result == "Read it."
    retry = job.events.filter(kind="llm_request").order_by("seq")[1].data["messages"]
    assert "could not be read" in retry[-1]["content"]


def test_two_unreadable_answers_in_a_row_fail_the_job_with_the_answer_kept(user: Any) -> None:
    scripted_model("explorer", [{"protocol": "I think"}, {"protocol": '{"tool": "x"}'}])
    job = run(session_in("explorer", user), "Look around", user)
    assert job.status == JobStatus.FAILED and job.error_code == "ACODE-LLM-002"
    assert "could not be read 2 times" in job.error_message
    assert job.result == '{"tool": "x"}'
