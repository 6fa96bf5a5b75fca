"""A session's plan and pending changes."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from acode.errors import AcodeError, error_responses
from acode.inputs import body_of
from sessions_app.apis.common import (
    ACT_CODES,
    IDEMPOTENCY,
    INVALID_CODES,
    NOT_VISIBLE_CODES,
    RUN_OWNS,
    SessionActionApi,
    request_user,
)
from sessions_app.apis.idempotency import idempotent
from sessions_app.apis.serializers import (
    CHANGES_DIGEST_HEADER,
    ApproveInput,
    ApproveOutput,
    PendingChangeInput,
    PendingChangeOutput,
    PlanInput,
    PlanStepOutput,
    StepStatusInput,
)
from sessions_app.permissions import SessionAction, session_for
from sessions_app.selectors.sessions import session_pending_changes
from sessions_app.services.changes import change_record, changes_approve, changes_digest
from sessions_app.services.plans import plan_set, plan_step_update


class SessionPlanApi(SessionActionApi):
    actions = {"PUT": SessionAction.PLAN_SET}

    @extend_schema(
        responses={200: PlanStepOutput(many=True), **error_responses(*NOT_VISIBLE_CODES)},
        operation_id="sessions_plan_retrieve",
    )
    def get(self, request: Request, pk: str) -> Response:
        return Response(self.access(request, session_for, pk).plan)

    @extend_schema(
        request=PlanInput,
        responses={
            200: PlanStepOutput(many=True),
            **error_responses(*ACT_CODES, RUN_OWNS, "ACODE-SES-004"),
        },
        operation_id="sessions_plan_set",
    )
    def put(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        data = PlanInput(data=request.data)
        if not data.is_valid():  # every problem with a plan is ACODE-SES-004
            raise AcodeError("ACODE-SES-004", "The plan is invalid.", {"fields": data.errors})
        session = plan_set(
            session=session, steps=data.validated_data["steps"], user=request_user(request)
        )
        return Response(session.plan)


class SessionPlanStepApi(SessionActionApi):
    actions = {"PATCH": SessionAction.PLAN_STEP}

    @extend_schema(
        request=StepStatusInput,
        responses={
            200: PlanStepOutput(many=True),
            **error_responses(
                *ACT_CODES, *INVALID_CODES, RUN_OWNS, "ACODE-SES-004", "ACODE-API-404"
            ),
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
        session = self.access(request, session_for, pk)
        data = body_of(StepStatusInput, request)
        session = plan_step_update(
            session=session,
            number=number,
            status=data["status"],
            user=request_user(request),
        )
        return Response(session.plan)


class SessionChangesApi(SessionActionApi):
    actions = {"POST": SessionAction.CHANGE_RECORD}

    @extend_schema(
        responses={
            200: OpenApiResponse(
                PendingChangeOutput(many=True),
                description=f"The pending changes by path; the {CHANGES_DIGEST_HEADER} header "
                "is the digest of exactly these (approving them sends it).",
            ),
            **error_responses(*NOT_VISIBLE_CODES),
        },
        parameters=[
            OpenApiParameter(
                CHANGES_DIGEST_HEADER, str, OpenApiParameter.HEADER, response=True,
                description="The digest of the listed changes: send it to approve them.",
            )
        ],
        operation_id="sessions_changes_list",
    )  # fmt: skip
    def get(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        rows = list(session_pending_changes(session))
        response = Response(PendingChangeOutput(rows, many=True).data)
        response[CHANGES_DIGEST_HEADER] = changes_digest(rows)
        return response

    @extend_schema(
        request=PendingChangeInput,
        responses={
            201: PendingChangeOutput,
            **error_responses(*ACT_CODES, *INVALID_CODES, RUN_OWNS),
        },
        parameters=[IDEMPOTENCY],
        operation_id="sessions_changes_record",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)

        def record() -> Response:
            data = body_of(PendingChangeInput, request)
            change = change_record(session=session, user=request_user(request), **data)
            return Response(PendingChangeOutput(change).data, status=status.HTTP_201_CREATED)

        return idempotent(request, record)


class SessionChangesApproveApi(SessionActionApi):
    actions = {"POST": SessionAction.CHANGES_APPROVE}

    @extend_schema(
        request=ApproveInput,
        responses={
            200: ApproveOutput,
            **error_responses(
                *ACT_CODES,
                *INVALID_CODES,
                RUN_OWNS,
                "ACODE-ROL-003",
                "ACODE-SES-006",
                "ACODE-CHG-002",
                "ACODE-CHG-003",
            ),
        },
        parameters=[IDEMPOTENCY],
        operation_id="sessions_changes_approve",
        description="Commit the pending changes on the session branch (a role holding "
        "approve_changes), if they are exactly the ones the digest names (else 409 "
        "ACODE-CHG-002, nothing committed). While a run executes in the session, only the "
        "run commits: 409 ACODE-RUN-003, nothing written.",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)

        def approve() -> Response:
            data = body_of(ApproveInput, request)
            done = changes_approve(
                session=session, digest=data["digest"], summary=data["summary"],
                user=request_user(request),
            )  # fmt: skip
            return Response(ApproveOutput(done).data)

        return idempotent(request, approve)
