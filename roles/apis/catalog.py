"""The catalog a role draws on, read-only: tools, transition rules and prompt packs (with
their components), as the registry holds them."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from roles import selectors
from roles.registry import registry
from roles.serializers import RuleOutput, ToolOutput, rule_data, tool_data


class ToolListApi(APIView):
    @extend_schema(responses=ToolOutput(many=True), operation_id="tools_list")
    def get(self, request: Request) -> Response:
        return Response([tool_data(t) for t in registry.tools()])


class TransitionRuleListApi(APIView):
    @extend_schema(responses=RuleOutput(many=True), operation_id="transition_rules_list")
    def get(self, request: Request) -> Response:
        return Response([rule_data(r) for r in registry.all_rules()])


class PromptComponentOutput(serializers.Serializer):
    key = serializers.CharField()
    bytes = serializers.IntegerField()
    content = serializers.CharField(required=False)


class PromptPackOutput(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField()
    description = serializers.CharField()
    active = serializers.BooleanField()
    components = PromptComponentOutput(many=True)


class PromptPackListApi(APIView):
    @extend_schema(responses=PromptPackOutput(many=True), operation_id="prompt_packs_list")
    def get(self, request: Request) -> Response:
        return Response([_pack_data(name, with_content=False) for name in registry.prompt_packs()])


class PromptPackDetailApi(APIView):
    @extend_schema(responses=PromptPackOutput, operation_id="prompt_packs_retrieve")
    def get(self, request: Request, name: str) -> Response:
        return Response(_pack_data(name, with_content=True))


def _pack_data(name: str, *, with_content: bool) -> dict[str, Any]:
    texts = registry.prompt_texts(name)
    pack = selectors.prompt_pack_row(name)
    return {
        "name": name,
        "version": pack.version,
        "description": pack.description,
        "active": name == settings.ACODE_PROMPT_PACK,
        "components": [
            {
                "key": key,
                "bytes": len(text.encode("utf-8")),
                **({"content": text} if with_content else {}),
            }
            for key, text in sorted(texts.items())
        ],
    }
