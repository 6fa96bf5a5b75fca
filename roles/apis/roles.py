"""The roles API: list, show, create, change and delete roles, and a role's composed
prompt. Reads come from the registry; writes go through ``role_write`` and ``role_delete``."""

from __future__ import annotations

import copy
from dataclasses import asdict
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import DjangoModelPermissions, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError, error_responses
from acode.inputs import Query, Text, json_schema_problems, query_of
from acode.yamldoc import integral_numbers
from roles import selectors
from roles.prompts import compose_prompt
from roles.registry import registry
from roles.serializers import (
    ComposedPromptOutput,
    RoleDetailOutput,
    RoleDraftOutput,
    RoleOutput,
    draft_data,
)
from roles.services import role_delete, role_write
from roles.validation import role_field_problems, role_schema

# /api/roles/export/, /api/roles/import/ and /api/roles/test/ are routes of their own, so
# no role answers to those names (roles.validation.RESERVED_SLUGS).
ROLE_NAME = OpenApiParameter(
    "name",
    str,
    OpenApiParameter.PATH,
    pattern=r"^(?!(export|import|test)$)(?!\.\.?$)[^/\u0000]{1,100}$",
    description="A role's slug or name, any case.",
)


class RoleListApi(APIView):
    @extend_schema(responses=RoleOutput(many=True), operation_id="roles_list")
    def get(self, request: Request) -> Response:
        return Response(RoleOutput(registry.list_roles(), many=True).data)


class RoleDetailApi(APIView):
    @extend_schema(
        responses={200: RoleDetailOutput, **error_responses("ACODE-ROL-001")},
        parameters=[ROLE_NAME],
        operation_id="roles_retrieve",
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(RoleDetailOutput(registry.get(name)).data)


class PromptQuery(Query):
    pack = Text(max_length=100, required=False, help_text="Prompt pack (default: active pack)")
    language = Text(
        max_length=200,
        required=False,
        help_text="Language layers, comma-separated, in order (e.g. python,typescript)",
    )
    framework = Text(
        max_length=200,
        required=False,
        help_text="Framework layers, comma-separated, in order (e.g. django,react)",
    )


def _names(value: str | None) -> list[str]:
    return [n.strip() for n in (value or "").split(",") if n.strip()]


class RolePromptApi(APIView):
    @extend_schema(
        responses={
            200: ComposedPromptOutput,
            **error_responses("ACODE-ROL-001", "ACODE-PRM-002"),
        },
        parameters=[ROLE_NAME, PromptQuery],
        operation_id="roles_prompt",
    )
    def get(self, request: Request, name: str) -> Response:
        query = query_of(PromptQuery, request)
        composed = compose_prompt(
            name,
            pack=query.get("pack"),
            languages=_names(query.get("language")),
            frameworks=_names(query.get("framework")),
        )
        return Response({**asdict(composed), "tokens": composed.tokens})


class RoleWritePermission(DjangoModelPermissions):
    """Writes need Django's model permissions on Role (add/change/delete), as in admin;
    the views name the model with an empty ``queryset``."""


ROLE_CREATE = role_schema(required=("slug", "name"))
ROLE_UPDATE = role_schema(required=(), with_slug=False)  # a slug cannot change
ROLE_CODES = (
    "ACODE-ROL-004",
    "ACODE-PRM-001",
    "ACODE-ROL-001",
    "ACODE-API-404",
    "ACODE-API-409",
    "ACODE-ROL-008",
    "ACODE-ROL-016",
)


def role_input(data: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """The request body once ``schema``, the one the API publishes, allows it (else 400
    ACODE-ROL-004 naming each problem); ``role_write`` checks the rest."""
    problems = json_schema_problems(schema, data)
    if problems:
        # The schema decides; the role checks say it in their own words where they can.
        listed = (role_field_problems(data) if isinstance(data, dict) else []) or problems
        raise AcodeError(
            "ACODE-ROL-004", "Invalid role: " + "; ".join(listed), {"problems": listed}
        )
    return dict(integral_numbers(data))


class RoleCreateApi(APIView):
    permission_classes = [IsAuthenticated, RoleWritePermission]
    queryset = selectors.roles_all().none()

    @extend_schema(
        request={"application/json": copy.deepcopy(ROLE_CREATE)},
        responses={201: RoleDetailOutput, **error_responses(*ROLE_CODES)},
        operation_id="roles_create",
    )
    def post(self, request: Request) -> Response:
        slug = role_write(
            data=role_input(request.data, ROLE_CREATE),
            user=request.user,  # type: ignore[arg-type]
            create=True,
        ).slug
        return Response(RoleDetailOutput(registry.get(slug)).data, status=201)


class RoleWriteApi(APIView):
    permission_classes = [IsAuthenticated, RoleWritePermission]
    queryset = selectors.roles_all().none()

    @extend_schema(
        request={"application/json": copy.deepcopy(ROLE_UPDATE)},
        responses={
            200: RoleDetailOutput,
            202: RoleDraftOutput,
            **error_responses(*ROLE_CODES, "ACODE-ROL-015"),
        },
        parameters=[ROLE_NAME],
        operation_id="roles_update",
        description="Change a role. A protected role is not changed: the change becomes a "
        "draft (202, the draft) another admin publishes (POST /api/role-drafts/{id}/publish/).",
    )
    def patch(self, request: Request, name: str) -> Response:
        role = registry.get(name)
        written = role_write(
            data=role_input(request.data, ROLE_UPDATE),
            user=request.user,  # type: ignore[arg-type]
            create=False,
            slug=role.slug,
        )
        if written.draft is not None:
            return Response(draft_data(written.draft), status=202)
        return Response(RoleDetailOutput(registry.get(role.slug)).data)

    @extend_schema(
        responses={
            204: None,
            **error_responses("ACODE-ROL-001", "ACODE-ROL-005", "ACODE-ROL-009"),
        },
        parameters=[ROLE_NAME],
        operation_id="roles_destroy",
    )
    def delete(self, request: Request, name: str) -> Response:
        role = selectors.role_row(registry.get(name).slug)
        role_delete(role=role, user=request.user)  # type: ignore[arg-type]
        return Response(status=204)


class RoleCollectionApi(RoleCreateApi, RoleListApi):
    """``GET`` lists roles; ``POST`` creates one (needs ``roles.add_role``)."""


class RoleResourceApi(RoleWriteApi, RoleDetailApi):
    """``GET`` shows a role; ``PATCH`` and ``DELETE`` need the change/delete permissions."""
