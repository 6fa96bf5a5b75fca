"""REST API for sessions, transitions, plans, pending changes, usage and the audit log."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from django.contrib.auth.models import User
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.pagination import CursorPagination, LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError
from acode.idempotency import idempotent
from roles.registry import registry
from roles.serializers import tool_data
from sessions_app import services
from sessions_app.audit import audit_verify
from sessions_app.context import build_context
from sessions_app.jobs import job_cancel, job_create
from sessions_app.models import AgentSession, Job
from sessions_app.selectors import (
    audit_visible_to,
    can_view_all,
    session_can_act,
    session_list,
    sessions_visible_to,
    usage,
)
from sessions_app.serializers import (
    AllowedTransitionOutput,
    ApproveInput,
    ApproveOutput,
    AuditEventOutput,
    AuditFilterInput,
    ChainReportOutput,
    ContextOutput,
    JobCreateInput,
    JobDetailOutput,
    JobEventOutput,
    JobOutput,
    PendingChangeInput,
    PendingChangeOutput,
    PlanInput,
    PlanStepOutput,
    SessionCreateInput,
    SessionOutput,
    SessionToolsOutput,
    SessionUpdateInput,
    StepStatusInput,
    TransitionInput,
    TransitionOutput,
    TransitionResultOutput,
    UsageOutput,
    session_stats,
)

IDEMPOTENCY = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Retries with the same key return the first result and write nothing new.",
)
REQUEST_ID = OpenApiParameter(
    "X-Request-ID",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Recorded on the transition for tracing.",
)
ERRORS = {
    400: OpenApiResponse(description="ACODE-API-400, ACODE-ROL-001, ACODE-ROL-007 ..."),
    401: OpenApiResponse(description="ACODE-API-401"),
    403: OpenApiResponse(description="ACODE-API-403"),
    404: OpenApiResponse(description="ACODE-API-404"),
    409: OpenApiResponse(description="ACODE-ROL-002, ACODE-ROL-006"),
}


def _user(request: Request) -> User:
    """The authenticated user (every endpoint here requires authentication)."""
    return cast(User, request.user)


NOT_VISIBLE = "No session with that id is visible to you."


def _check_access(user: Any, session: AgentSession | None, *, act: bool = False) -> AgentSession:
    # Owners need no permission lookup (two queries) to see their own session.
    if session is None or not (session.owner_id == user.pk or can_view_all(user)):
        raise NotFound(NOT_VISIBLE)
    if act and not session_can_act(user, session):
        raise PermissionDenied("You may view this session but not act on it.")
    return session


def _session_for(request: Request, pk: Any, *, act: bool = False) -> AgentSession:
    session = AgentSession.objects.select_related("owner").filter(pk=pk).first()
    return _check_access(_user(request), session, act=act)


class SessionPagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500


class SessionListApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("role", str, description="Current role (slug or name)"),
            OpenApiParameter("status", str),
            OpenApiParameter("owner", str, description="Owner username"),
            OpenApiParameter("q", str, description="Text in title, task or last reason"),
        ],
        responses=SessionOutput(many=True),
        operation_id="sessions_list",
    )
    def get(self, request: Request) -> Response:
        qs = session_list(
            user=_user(request),
            role=request.query_params.get("role"),
            status=request.query_params.get("status"),
            owner=request.query_params.get("owner"),
            text=request.query_params.get("q"),
        ).select_related("role_version")
        paginator = SessionPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(SessionOutput(page, many=True).data)

    @extend_schema(
        request=SessionCreateInput,
        responses={201: SessionOutput, **ERRORS},
        parameters=[IDEMPOTENCY],
        operation_id="sessions_create",
    )
    def post(self, request: Request) -> Response:
        def create() -> Response:
            data = SessionCreateInput(data=request.data)
            data.is_valid(raise_exception=True)
            session = services.session_create(
                owner=_user(request),
                request_id=request.headers.get("X-Request-ID", ""),
                **data.validated_data,
            )
            return Response(SessionOutput(session).data, status=status.HTTP_201_CREATED)

        return idempotent(request, create)


class SessionDetailApi(APIView):
    @extend_schema(responses=SessionOutput, operation_id="sessions_retrieve")
    def get(self, request: Request, pk: str) -> Response:
        return Response(SessionOutput(_session_for(request, pk)).data)

    @extend_schema(
        request=SessionUpdateInput,
        responses={200: SessionOutput, **ERRORS},
        operation_id="sessions_update",
    )
    def patch(self, request: Request, pk: str) -> Response:
        session = _session_for(request, pk, act=True)
        if "current_role" in request.data or "role" in request.data:
            services.session_update(session=session, data={"current_role": None})
        data = SessionUpdateInput(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        session = services.session_update(
            session=session, data=data.validated_data, user=_user(request)
        )
        return Response(SessionOutput(session).data)


class SessionTransitionApi(APIView):
    @extend_schema(
        request=TransitionInput,
        responses={200: TransitionResultOutput, **ERRORS},
        parameters=[IDEMPOTENCY, REQUEST_ID],
        operation_id="sessions_transition",
        description="Change the session's role. The only way a role changes; refused "
        "transitions answer 409 ACODE-ROL-002 with the transitions allowed now.",
    )
    def post(self, request: Request, pk: str) -> Response:
        user = _user(request)

        def transition() -> Response:
            data = TransitionInput(data=request.data)
            data.is_valid(raise_exception=True)
            try:
                # Access is checked on the locked row, so the lock is the only read.
                result = services.session_transition(
                    session=pk,
                    to_role=data.validated_data["to_role"],
                    reason=data.validated_data["reason"],
                    user=user,
                    expected_role=data.validated_data.get("expected_role") or None,
                    request_id=request.headers.get("X-Request-ID") or None,
                    authorize=lambda locked: _check_access(user, locked, act=True),
                )
            except AgentSession.DoesNotExist:
                raise NotFound(NOT_VISIBLE) from None
            return Response(
                {
                    "changed": result.changed,
                    "message": result.message,
                    "transition": TransitionOutput(result.transition).data
                    if result.transition
                    else None,
                    "session": SessionOutput(result.session).data,
                }
            )

        return idempotent(request, transition)


class SessionTransitionsAllowedApi(APIView):
    @extend_schema(
        responses=AllowedTransitionOutput(many=True), operation_id="sessions_transitions_allowed"
    )
    def get(self, request: Request, pk: str) -> Response:
        session = _session_for(request, pk)
        return Response([t.as_dict() for t in services.transitions_from(session)])


class SessionHistoryApi(APIView):
    @extend_schema(responses=TransitionOutput(many=True), operation_id="sessions_history")
    def get(self, request: Request, pk: str) -> Response:
        session = _session_for(request, pk)
        rows = session.transitions.select_related("from_role", "to_role", "role_version").order_by(
            "seq"
        )
        return Response(TransitionOutput(rows, many=True).data)


class SessionPlanApi(APIView):
    @extend_schema(responses=PlanStepOutput(many=True), operation_id="sessions_plan_retrieve")
    def get(self, request: Request, pk: str) -> Response:
        return Response(_session_for(request, pk).plan)

    @extend_schema(
        request=PlanInput,
        responses={200: PlanStepOutput(many=True), **ERRORS},
        operation_id="sessions_plan_set",
    )
    def put(self, request: Request, pk: str) -> Response:
        session = _session_for(request, pk, act=True)
        data = PlanInput(data=request.data)
        data.is_valid(raise_exception=True)
        session = services.plan_set(
            session=session, steps=data.validated_data["steps"], user=_user(request)
        )
        return Response(session.plan)


class SessionPlanStepApi(APIView):
    @extend_schema(
        request=StepStatusInput,
        responses={200: PlanStepOutput(many=True), **ERRORS},
        operation_id="sessions_plan_step_update",
    )
    def patch(self, request: Request, pk: str, number: int) -> Response:
        session = _session_for(request, pk, act=True)
        data = StepStatusInput(data=request.data)
        data.is_valid(raise_exception=True)
        session = services.plan_step_update(
            session=session,
            number=number,
            status=data.validated_data["status"],
            user=_user(request),
        )
        return Response(session.plan)


class SessionChangesApi(APIView):
    @extend_schema(responses=PendingChangeOutput(many=True), operation_id="sessions_changes_list")
    def get(self, request: Request, pk: str) -> Response:
        session = _session_for(request, pk)
        return Response(
            PendingChangeOutput(session.pending_changes.select_related("role"), many=True).data
        )

    @extend_schema(
        request=PendingChangeInput,
        responses={201: PendingChangeOutput, **ERRORS},
        parameters=[IDEMPOTENCY],
        operation_id="sessions_changes_record",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = _session_for(request, pk, act=True)

        def record() -> Response:
            data = PendingChangeInput(data=request.data)
            data.is_valid(raise_exception=True)
            change = services.change_record(
                session=session, user=_user(request), **data.validated_data
            )
            return Response(PendingChangeOutput(change).data, status=status.HTTP_201_CREATED)

        return idempotent(request, record)


class SessionChangesApproveApi(APIView):
    @extend_schema(
        request=ApproveInput,
        responses={200: ApproveOutput, **ERRORS},
        parameters=[IDEMPOTENCY],
        operation_id="sessions_changes_approve",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = _session_for(request, pk, act=True)

        def approve() -> Response:
            data = ApproveInput(data=request.data)
            data.is_valid(raise_exception=True)
            count = services.changes_approve(
                session=session, summary=data.validated_data["summary"], user=_user(request)
            )
            return Response({"approved": count})

        return idempotent(request, approve)


class SessionStatsApi(APIView):
    @extend_schema(responses=UsageOutput, operation_id="sessions_stats")
    def get(self, request: Request, pk: str) -> Response:
        return Response(session_stats(_session_for(request, pk)))


class UsageApi(APIView):
    @extend_schema(
        responses=UsageOutput,
        operation_id="usage_retrieve",
        description="Time in role over all visible sessions, with the spec's target shares.",
    )
    def get(self, request: Request) -> Response:
        return Response(usage(sessions_visible_to(_user(request))))


# -- audit ----------------------------------------------------------------------------
class AuditCursor(CursorPagination):
    ordering = "-seq"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


AUDIT_FILTERS = [
    OpenApiParameter("event_type", str),
    OpenApiParameter("session", OpenApiTypes.UUID),
    OpenApiParameter("role", str),
    OpenApiParameter("actor", str),
    OpenApiParameter("since", OpenApiTypes.DATETIME),
    OpenApiParameter("until", OpenApiTypes.DATETIME),
    OpenApiParameter("last", int, description="Only the newest N events"),
]


def _audit_queryset(request: Request) -> Any:
    filters = AuditFilterInput(data=request.query_params)
    filters.is_valid(raise_exception=True)
    f = filters.validated_data
    qs = audit_visible_to(_user(request))
    if "event_type" in f:
        qs = qs.filter(event_type=f["event_type"])
    if "session" in f:
        qs = qs.filter(session_id=f["session"])
    if "role" in f:
        qs = qs.filter(role__iexact=f["role"])
    if "actor" in f:
        qs = qs.filter(actor=f["actor"])
    if "since" in f:
        qs = qs.filter(created_at__gte=f["since"])
    if "until" in f:
        qs = qs.filter(created_at__lt=f["until"])
    if "last" in f:
        newest = list(qs.order_by("-seq").values_list("seq", flat=True)[: f["last"]])
        qs = qs.filter(seq__in=newest)
    return qs


class AuditListApi(APIView):
    @extend_schema(
        parameters=AUDIT_FILTERS, responses=AuditEventOutput(many=True), operation_id="audit_list"
    )
    def get(self, request: Request) -> Response:
        paginator = AuditCursor()
        page = paginator.paginate_queryset(_audit_queryset(request), request, view=self)
        return paginator.get_paginated_response(AuditEventOutput(page, many=True).data)


class AuditExportApi(APIView):
    @extend_schema(
        parameters=[
            *AUDIT_FILTERS,
            OpenApiParameter("format", str, enum=["jsonl", "csv"], required=True),
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "text/csv"): OpenApiTypes.STR,
        },
        operation_id="audit_export",
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in ("jsonl", "csv"):
            raise AcodeError("ACODE-API-400", "format must be jsonl or csv.", {"format": fmt})
        qs = _audit_queryset(request).order_by("seq")
        rows = (AuditEventOutput(e).data for e in qs.iterator(chunk_size=1000))
        if fmt == "jsonl":
            body: Iterator[str] = (json.dumps(r, default=str) + "\n" for r in rows)
            response = StreamingHttpResponse(body, content_type="application/x-ndjson")
            response["Content-Disposition"] = 'attachment; filename="acode-audit.jsonl"'
        else:
            response = StreamingHttpResponse(_csv_lines(rows), content_type="text/csv")
            response["Content-Disposition"] = 'attachment; filename="acode-audit.csv"'
        return response


def _csv_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    columns = list(AuditEventOutput.Meta.fields)
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(columns)
    yield flush()
    for row in rows:
        writer.writerow([json.dumps(row[c]) if c == "details" else row[c] for c in columns])
        yield flush()


class AuditVerifyApi(APIView):
    @extend_schema(
        responses=ChainReportOutput,
        operation_id="audit_verify",
        description="Recompute the audit hash chain and name the first bad row.",
    )
    def get(self, request: Request) -> Response:
        user: Any = request.user
        if not (user.is_superuser or user.has_perm("sessions_app.view_auditevent")):
            raise PermissionDenied(
                "Verifying the whole audit chain needs the view_auditevent permission."
            )
        return Response(audit_verify().as_dict())


# -- jobs, context, tools ---------------------------------------------------------------
def _job_for(request: Request, pk: Any, *, act: bool = False) -> Job:
    job = get_object_or_404(
        Job.objects.select_related("session", "role", "role_version").filter(
            session__in=sessions_visible_to(_user(request))
        ),
        pk=pk,
    )
    if act and not session_can_act(_user(request), job.session):
        raise PermissionDenied("You may view this job but not act on it.")
    return job


class SessionJobsApi(APIView):
    @extend_schema(
        responses=JobOutput(many=True),
        parameters=[
            OpenApiParameter(
                "status", str, description="Comma-separated statuses, e.g. queued,running"
            )
        ],
        operation_id="sessions_jobs_list",
    )
    def get(self, request: Request, pk: str) -> Response:
        session = _session_for(request, pk)
        jobs = session.jobs.order_by("-created_at")
        if request.query_params.get("status"):
            jobs = jobs.filter(status__in=request.query_params["status"].split(","))
        jobs = jobs[:200]
        return Response(JobOutput(jobs, many=True).data)

    @extend_schema(
        request=JobCreateInput,
        responses={201: JobOutput, **ERRORS},
        parameters=[IDEMPOTENCY],
        operation_id="sessions_jobs_create",
        description="Queue an inference job in the session's current role; a worker on the role's queue runs it.",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = _session_for(request, pk, act=True)

        def create() -> Response:
            data = JobCreateInput(data=request.data)
            data.is_valid(raise_exception=True)
            job = job_create(
                session=session, request=data.validated_data["request"], user=_user(request)
            )
            return Response(JobOutput(job).data, status=status.HTTP_201_CREATED)

        return idempotent(request, create)


class JobDetailApi(APIView):
    @extend_schema(responses=JobDetailOutput, operation_id="jobs_retrieve")
    def get(self, request: Request, pk: str) -> Response:
        job = _job_for(request, pk)
        data = JobOutput(job).data
        data["events"] = JobEventOutput(job.events.order_by("seq"), many=True).data
        return Response(data)


class JobEventsApi(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("after", int, description="Only events with a higher seq")],
        responses=JobEventOutput(many=True),
        operation_id="jobs_events",
    )
    def get(self, request: Request, pk: str) -> Response:
        job = _job_for(request, pk)
        after = int(request.query_params.get("after", 0) or 0)
        return Response(
            JobEventOutput(job.events.filter(seq__gt=after).order_by("seq"), many=True).data
        )


class JobCancelApi(APIView):
    @extend_schema(request=None, responses={200: JobOutput, **ERRORS}, operation_id="jobs_cancel")
    def post(self, request: Request, pk: str) -> Response:
        job = _job_for(request, pk, act=True)
        return Response(JobOutput(job_cancel(job=job, user=_user(request))).data)


class SessionContextApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "role", str, description="Role to build for (default: the current role)"
            ),
            OpenApiParameter("task", str, description="Request text (default: the session task)"),
        ],
        responses=ContextOutput,
        operation_id="sessions_context",
        description="What a job would see: strategy, token count and files with their share.",
    )
    def get(self, request: Request, pk: str) -> Response:
        session = _session_for(request, pk)
        role = registry.get(request.query_params.get("role") or session.current_role.slug)
        bundle = build_context(
            workspace=Path(session.workspace),
            role_name=role.name,
            strategy=role.spec.context_strategy,
            request=request.query_params.get("task") or session.task or session.title,
            task=session.task,
            plan=session.plan,
            pending=dict(session.pending_changes.values_list("path", "diff")),
        )
        return Response(bundle.as_dict())


class SessionToolsApi(APIView):
    @extend_schema(responses=SessionToolsOutput, operation_id="sessions_tools")
    def get(self, request: Request, pk: str) -> Response:
        session = _session_for(request, pk)
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
