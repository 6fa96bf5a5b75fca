"""A session's plan and pending changes."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError, error_responses
from acode.idempotency import idempotent
from sessions_app.apis.common import (
    ACT_CODES,
    IDEMPOTENCY,
    INVALID_CODES,
    NOT_VISIBLE_CODES,
    request_user,
    session_for,
)
from sessions_app.apis.serializers import (
    ApproveInput,
    ApproveOutput,
    PendingChangeInput,
    PendingChangeOutput,
    PlanInput,
    PlanStepOutput,
    StepStatusInput,
)
from sessions_app.services.changes import change_record, changes_approve
from sessions_app.services.plans import plan_set, plan_step_update


class SessionPlanApi(APIView):
    @extend_schema(
        responses={200: PlanStepOutput(many=True), **error_responses(*NOT_VISIBLE_CODES)},
        operation_id="sessions_plan_retrieve",
    )
    def get(self, request: Request, pk: str) -> Response:
        return Response(session_for(request, pk).plan)

    @extend_schema(
        request=PlanInput,
        responses={200: PlanStepOutput(many=True), **error_responses(*ACT_CODES, "ACODE-SES-004")},
        operation_id="sessions_plan_set",
    )
    def put(self, request: Request, pk: str) -> Response:
        session = session_for(request, pk, act=True)
        data = PlanInput(data=request.data)
        if not data.is_valid():  # every problem with a plan is ACODE-SES-004
            raise AcodeError("ACODE-SES-004", "The plan is invalid.", {"fields": data.errors})
        session = plan_set(
            session=session, steps=data.validated_data["steps"], user=request_user(request)
        )
        return Response(session.plan)


class SessionPlanStepApi(APIView):
    @extend_schema(
        request=StepStatusInput,
        responses={
            200: PlanStepOutput(many=True),
            **error_responses(*ACT_CODES, *INVALID_CODES, "ACODE-SES-004", "ACODE-API-404"),
        },
        parameters=[
            OpenApiParameter(
                "number",
                {"type": "integer", "minimum": 1},
                OpenApiParameter.PATH,
                description="The step's number (from 1); a number the plan does not have is 404.",
            )
        ],
        operation_id="sessions_plan_step_update",
    )
    def patch(self, request: Request, pk: str, number: int) -> Response:
        session = session_for(request, pk, act=True)
        data = StepStatusInput(data=request.data)
        data.is_valid(raise_exception=True)
        session = plan_step_update(
            session=session,
            number=number,
            status=data.validated_data["status"],
            user=request_user(request),
        )
        return Response(session.plan)


class SessionChangesApi(APIView):
    @extend_schema(
        responses={200: PendingChangeOutput(many=True), **error_responses(*NOT_VISIBLE_CODES)},
        operation_id="sessions_changes_list",
    )
    def get(self, request: Request, pk: str) -> Response:
        session = session_for(request, pk)
        return Response(
            PendingChangeOutput(session.pending_changes.select_related("role"), many=True).data
        )

    @extend_schema(
        request=PendingChangeInput,
        responses={201: PendingChangeOutput, **error_responses(*ACT_CODES, *INVALID_CODES)},
        parameters=[IDEMPOTENCY],
        operation_id="sessions_changes_record",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = session_for(request, pk, act=True)

        def record() -> Response:
            data = PendingChangeInput(data=request.data)
            data.is_valid(raise_exception=True)
            change = change_record(
                session=session, user=request_user(request), **data.validated_data
            )
            return Response(PendingChangeOutput(change).data, status=status.HTTP_201_CREATED)

        return idempotent(request, record)


class SessionChangesApproveApi(APIView):
    @extend_schema(
        request=ApproveInput,
        responses={
            200: ApproveOutput,
            **error_responses(*ACT_CODES, *INVALID_CODES, "ACODE-ROL-003", "ACODE-SES-006"),
        },
        parameters=[IDEMPOTENCY],
        operation_id="sessions_changes_approve",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = session_for(request, pk, act=True)

        def approve() -> Response:
            data = ApproveInput(data=request.data)
            data.is_valid(raise_exception=True)
            count = changes_approve(
                session=session, summary=data.validated_data["summary"], user=request_user(request)
            )
            return Response({"approved": count})

        return idempotent(request, approve)
