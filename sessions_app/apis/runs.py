"""Orchestrated runs: start one in a session, list and read them, follow their events,
answer, approve, reject or cancel them. The services decide; these views check who asks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.inputs import Input, body_of, query_of
from sessions_app.apis.common import (
    ACT_CODES,
    IDEMPOTENCY,
    INVALID_CODES,
    NOT_VISIBLE_CODES,
    SessionActionApi,
    request_user,
)
from sessions_app.apis.idempotency import idempotent
from sessions_app.apis.serializers import (
    RunAnswerInput,
    RunApproveInput,
    RunDetailOutput,
    RunEventsOutput,
    RunEventsQuery,
    RunListQuery,
    RunPageOutput,
    RunRejectInput,
    RunStartInput,
    RunSummaryOutput,
)
from sessions_app.permissions import SessionAction, run_for, runs_visible_to, session_for
from sessions_app.selectors.runs import run_detail, run_events, runs_listed
from sessions_app.services.runs import run_answer, run_approve, run_cancel, run_reject, run_start

DECIDE_CODES = ("ACODE-RUN-008", "ACODE-API-404")  # approve_run missing; run not visible


def detail(request: Request, pk: Any, *, status_code: int = status.HTTP_200_OK) -> Response:
    run = run_detail(pk)
    context = {"user": request_user(request)}
    return Response(RunDetailOutput(run, context=context).data, status=status_code)


class RunPagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500
    max_offset = 2**31 - 1  # beyond what the database takes as an OFFSET

    def get_offset(self, request: Request) -> int:
        return min(super().get_offset(request), self.max_offset)


class SessionRunsApi(SessionActionApi):
    actions = {"POST": SessionAction.RUN_START}

    @extend_schema(
        request=RunStartInput,
        responses={
            201: RunDetailOutput,
            **error_responses(
                *ACT_CODES,
                *INVALID_CODES,
                "ACODE-RUN-001",
                "ACODE-RUN-002",
                "ACODE-RUN-003",
                "ACODE-API-409",
                "ACODE-API-503",
            ),
        },
        parameters=[IDEMPOTENCY],
        operation_id="sessions_runs_create",
        description="Start a run of the request: the effective risk tier (the declared one "
        "raised by risk signals) picks the workflow template unless one is named; the "
        "first stage's job is queued. One run at a time per session.",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)

        def start() -> Response:
            data = body_of(RunStartInput, request)
            run = run_start(
                session=session,
                request=data["request"],
                user=request_user(request),
                risk=data.get("risk"),
                template=data.get("template"),
            )
            return detail(request, run.pk, status_code=status.HTTP_201_CREATED)

        return idempotent(request, start)


class RunListApi(APIView):
    @extend_schema(
        parameters=[RunListQuery],
        responses={200: RunPageOutput, **error_responses("ACODE-API-400")},
        operation_id="runs_list",
        description="Runs of the sessions you may see, newest first.",
    )
    def get(self, request: Request) -> Response:
        query = query_of(RunListQuery, request)
        runs = runs_listed(
            runs_visible_to(request_user(request)),
            session=query.get("session"),
            statuses=query.get("status"),
        )
        paginator = RunPagination()
        page = paginator.paginate_queryset(runs, request, view=self)
        return paginator.get_paginated_response(RunSummaryOutput(page, many=True).data)


class RunDetailApi(SessionActionApi):
    @extend_schema(
        responses={200: RunDetailOutput, **error_responses(*NOT_VISIBLE_CODES)},
        operation_id="runs_retrieve",
    )
    def get(self, request: Request, pk: str) -> Response:
        return detail(request, self.access(request, run_for, pk).pk)


class RunEventsApi(SessionActionApi):
    @extend_schema(
        parameters=[RunEventsQuery],
        responses={
            200: RunEventsOutput,
            **error_responses("ACODE-API-400", *NOT_VISIBLE_CODES),
        },
        operation_id="runs_events",
        description="The run's stage starts and ends, pauses and decisions, and the events "
        "of its jobs, in time order (at most 200 per answer: poll again with ?after=next).",
    )
    def get(self, request: Request, pk: str) -> Response:
        run = self.access(request, run_for, pk)
        after = query_of(RunEventsQuery, request)["after"]
        return Response(RunEventsOutput(run_events(run, after=after)).data)


class RunActionApi(SessionActionApi):
    """A person's action on a run (answer, approve, reject, cancel): the run fetched and
    checked for the action, then, once per Idempotency-Key, the body checked by ``body``
    (None: no body) and the service ``act`` called with the run, the user and the body's
    fields (named as its keywords). The answer is the run as it is then."""

    body: ClassVar[type[Input] | None] = None
    act: ClassVar[Callable[..., object]]

    def post(self, request: Request, pk: str) -> Response:
        run = self.access(request, run_for, pk)

        def operation() -> Response:
            data = body_of(self.body, request) if self.body is not None else {}
            type(self).act(run=run, user=request_user(request), **data)
            return detail(request, run.pk)

        return idempotent(request, operation)


View = TypeVar("View", bound=type[RunActionApi])


def run_action(*codes: str, operation_id: str, description: str) -> Callable[[View], View]:
    """The schema of a ``RunActionApi``: its body, the run's detail, the errors ``codes``."""

    def schema(view: View) -> View:
        return extend_schema_view(
            post=extend_schema(
                request=view.body,
                responses={200: RunDetailOutput, **error_responses(*codes)},
                parameters=[IDEMPOTENCY],
                operation_id=operation_id,
                description=description,
            )
        )(view)

    return schema


@run_action(
    *ACT_CODES,
    *INVALID_CODES,
    "ACODE-RUN-004",
    "ACODE-RUN-006",
    operation_id="runs_answer",
    description="Answer the run's open question: a waiting stage goes on with the "
    "answer; a blocked run sends the plan step back to the Coder with it.",
)
class RunAnswerApi(RunActionApi):
    actions = {"POST": SessionAction.RUN_ANSWER}
    body = RunAnswerInput
    act = run_answer


@run_action(
    *DECIDE_CODES,
    *INVALID_CODES,
    "ACODE-RUN-004",
    "ACODE-RUN-009",
    "ACODE-RUN-010",
    "ACODE-RUN-011",
    "ACODE-SES-006",
    operation_id="runs_approve",
    description="Approve the run at its gate: commits exactly what the digest names. "
    "Needs approve_run; whoever started the run cannot approve it.",
)
class RunApproveApi(RunActionApi):
    actions = {"POST": SessionAction.RUN_APPROVE}
    body = RunApproveInput
    act = run_approve


@run_action(
    *DECIDE_CODES,
    *INVALID_CODES,
    "ACODE-RUN-004",
    operation_id="runs_reject",
    description="Reject the run at its gate: it ends rejected; the changes stay pending.",
)
class RunRejectApi(RunActionApi):
    actions = {"POST": SessionAction.RUN_REJECT}
    body = RunRejectInput
    act = run_reject


@run_action(
    *ACT_CODES,
    "ACODE-RUN-004",
    operation_id="runs_cancel",
    description="Cancel the run: at once when it waits, at the end of the running "
    "stage otherwise. The session goes back to Default.",
)
class RunCancelApi(RunActionApi):
    actions = {"POST": SessionAction.RUN_CANCEL}
    act = run_cancel
