"""Sessions: list, open, read, change details, archive and restore; history, stats, usage,
context, tools."""

from __future__ import annotations

from pathlib import Path

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.inputs import body_of, query_of
from acode.middleware import request_id_of
from roles.registry import registry
from roles.serializers import tool_data
from sessions_app.agent.context import build_context, role_gains
from sessions_app.agent.project_config import project_config_load
from sessions_app.apis.common import (
    ACT_CODES,
    IDEMPOTENCY,
    INVALID_CODES,
    NOT_VISIBLE_CODES,
    RUN_OWNS,
    SessionActionApi,
    SessionItemsApi,
    request_user,
    session_items,
)
from sessions_app.apis.idempotency import idempotent
from sessions_app.apis.serializers import (
    ContextOutput,
    ContextQuery,
    SessionCreateInput,
    SessionListQuery,
    SessionOutput,
    SessionPageOutput,
    SessionToolsOutput,
    SessionUpdateInput,
    TransitionOutput,
    UsageOutput,
)
from sessions_app.filters import SessionFilter
from sessions_app.permissions import SessionAction, session_for, sessions_visible_to
from sessions_app.selectors.sessions import (
    session_history,
    session_pending_diffs,
    sessions_listed,
)
from sessions_app.selectors.time_in_role import session_usage, usage
from sessions_app.services.archive import session_archive, session_restore
from sessions_app.services.sessions import session_create, session_update
from sessions_app.services.workspaces import session_git_dir


class SessionPagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500


class SessionListApi(APIView):
    @extend_schema(
        parameters=[SessionListQuery],
        responses={200: SessionPageOutput, **error_responses(*INVALID_CODES)},
        operation_id="sessions_list",
    )
    def get(self, request: Request) -> Response:
        query_of(SessionListQuery, request)
        visible = sessions_listed(sessions_visible_to(request_user(request)))
        filters = SessionFilter(request.query_params, queryset=visible)
        if not filters.is_valid():
            raise ValidationError(filters.errors)
        qs = filters.qs
        paginator = SessionPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(SessionOutput(page, many=True).data)

    @extend_schema(
        request=SessionCreateInput,
        responses={
            201: SessionOutput,
            **error_responses(*INVALID_CODES, "ACODE-SES-002", "ACODE-SES-005", "ACODE-SES-006"),
        },
        parameters=[IDEMPOTENCY],
        operation_id="sessions_create",
    )
    def post(self, request: Request) -> Response:
        def create() -> Response:
            data = body_of(SessionCreateInput, request)
            session = session_create(
                owner=request_user(request),
                request_id=request_id_of(request),
                **data,
            )
            return Response(SessionOutput(session).data, status=status.HTTP_201_CREATED)

        return idempotent(request, create)


class SessionDetailApi(SessionActionApi):
    actions = {"PATCH": SessionAction.SESSION_UPDATE}

    @extend_schema(
        responses={200: SessionOutput, **error_responses(*NOT_VISIBLE_CODES)},
        operation_id="sessions_retrieve",
    )
    def get(self, request: Request, pk: str) -> Response:
        return Response(SessionOutput(self.access(request, session_for, pk)).data)

    @extend_schema(
        request=SessionUpdateInput,
        responses={
            200: SessionOutput,
            **error_responses(
                *ACT_CODES, *INVALID_CODES, RUN_OWNS, "ACODE-SES-003", "ACODE-SES-009"
            ),
        },
        operation_id="sessions_update",
    )
    def patch(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        if isinstance(request.data, dict) and (
            "current_role" in request.data or "role" in request.data
        ):
            session_update(session=session, data={"current_role": None})  # ACODE-SES-003
        data = SessionUpdateInput(data=request.data, partial=True)
        data.is_valid(raise_exception=True)  # also refuses a body that is not an object
        session = session_update(
            session=session, data=data.validated_data, user=request_user(request)
        )
        return Response(SessionOutput(session).data)


class SessionArchiveApi(SessionActionApi):
    actions = {"POST": SessionAction.SESSION_ARCHIVE}

    @extend_schema(
        request=None,
        responses={200: SessionOutput, **error_responses(*ACT_CODES, "ACODE-SES-008")},
        operation_id="sessions_archive",
        description="Archive the session: its checkout, its layer and its indexes are freed "
        "(its git directory, history and audit chain are kept) and it is read-only until "
        "restored. Refused while a run executes or a job is queued or running in it. "
        "Archiving an archived session changes nothing.",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        session = session_archive(session=session, user=request_user(request))
        return Response(SessionOutput(session).data)


class SessionRestoreApi(SessionActionApi):
    actions = {"POST": SessionAction.SESSION_RESTORE}

    @extend_schema(
        request=None,
        responses={200: SessionOutput, **error_responses(*ACT_CODES, "ACODE-SES-006")},
        operation_id="sessions_restore",
        description="Make an archived session active again: its branch is checked out where "
        "it was, with every pending change on top. A session that is not archived is left "
        "as it is.",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        session = session_restore(session=session, user=request_user(request))
        return Response(SessionOutput(session).data)


@session_items(operation_id="sessions_history")
class SessionHistoryApi(SessionItemsApi):
    output = TransitionOutput
    listed = session_history


class SessionStatsApi(SessionActionApi):
    @extend_schema(
        responses={200: UsageOutput, **error_responses(*NOT_VISIBLE_CODES)},
        operation_id="sessions_stats",
    )
    def get(self, request: Request, pk: str) -> Response:
        return Response(session_usage(self.access(request, session_for, pk)))


class UsageApi(APIView):
    @extend_schema(
        responses=UsageOutput,
        operation_id="usage_retrieve",
        description="Time in role over all visible sessions, with the spec's target shares.",
    )
    def get(self, request: Request) -> Response:
        return Response(usage(sessions_visible_to(request_user(request))))


class SessionContextApi(SessionActionApi):
    @extend_schema(
        parameters=[ContextQuery],
        responses={
            200: ContextOutput,
            **error_responses(
                "ACODE-ROL-001",
                "ACODE-CFG-001",
                "ACODE-CFG-002",
                *INVALID_CODES,
                *NOT_VISIBLE_CODES,
            ),
        },
        operation_id="sessions_context",
        description="What a job would see: strategy, token count and files with their share.",
    )
    def get(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        query = query_of(ContextQuery, request)
        role = registry.get(query.get("role") or session.current_role.slug)
        writes, reviews = role_gains(registry.effective_tools(role.slug))
        bundle = build_context(
            workspace=Path(session.workspace),
            role_name=role.name,
            strategy=role.spec.context_strategy,
            request=query.get("task") or session.task or session.title,
            task=session.task,
            plan=session.plan,
            pending=session_pending_diffs(session),
            git_dir=session_git_dir(session),
            project=project_config_load(Path(session.workspace)).context,
            writes=writes,
            reviews=reviews,
        )
        return Response(bundle.as_dict())


class SessionToolsApi(SessionActionApi):
    @extend_schema(
        responses={200: SessionToolsOutput, **error_responses(*NOT_VISIBLE_CODES)},
        operation_id="sessions_tools",
    )
    def get(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        role = registry.resolve(session.current_role.slug)
        return Response(
            {
                "role": role.name,
                "available": [tool_data(t) for t in registry.effective_tools(role.slug)],
                "restricted": [
                    {
                        "name": w.name,
                        "description": w.description,
                        "reason": w.reason,
                        "missing_permissions": list(w.missing_permissions),
                    }
                    for w in role.access.withheld
                ],
            }
        )
