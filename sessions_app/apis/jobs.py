"""Jobs: queue one in a session, read it and its events, cancel it."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from acode.errors import error_responses
from acode.inputs import body_of, query_of
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
    JobCreateInput,
    JobDetailOutput,
    JobEventOutput,
    JobEventsQuery,
    JobOutput,
    SessionJobsQuery,
)
from sessions_app.permissions import SessionAction, job_for, session_for
from sessions_app.selectors.jobs import job_events, session_jobs_listed
from sessions_app.services.jobs import job_cancel, job_create, job_queue_consumed, job_resume


class SessionJobsApi(SessionActionApi):
    actions = {"POST": SessionAction.JOB_CREATE}

    @extend_schema(
        responses={
            200: JobOutput(many=True),
            **error_responses("ACODE-API-400", *NOT_VISIBLE_CODES),
        },
        parameters=[SessionJobsQuery],
        operation_id="sessions_jobs_list",
    )
    def get(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)
        statuses = query_of(SessionJobsQuery, request).get("status")
        jobs = session_jobs_listed(session, statuses=statuses, limit=200)
        return Response(JobOutput(jobs, many=True).data)

    @extend_schema(
        request=JobCreateInput,
        responses={
            201: JobOutput,
            **error_responses(*ACT_CODES, *INVALID_CODES, RUN_OWNS, "ACODE-API-503"),
        },
        parameters=[IDEMPOTENCY],
        operation_id="sessions_jobs_create",
        description="Queue an inference job in the session's current role; a worker on the role's queue runs it.",
    )
    def post(self, request: Request, pk: str) -> Response:
        session = self.access(request, session_for, pk)

        def create() -> Response:
            data = body_of(JobCreateInput, request)
            job = job_create(session=session, request=data["request"], user=request_user(request))
            return Response(JobOutput(job).data, status=status.HTTP_201_CREATED)

        return idempotent(request, create)


class JobDetailApi(SessionActionApi):
    @extend_schema(
        responses={200: JobDetailOutput, **error_responses(*NOT_VISIBLE_CODES)},
        operation_id="jobs_retrieve",
    )
    def get(self, request: Request, pk: str) -> Response:
        job = self.access(request, job_for, pk)
        data = JobOutput(job).data
        data["queue_consumed"] = job_queue_consumed(job)
        data["events"] = JobEventOutput(job_events(job), many=True).data
        return Response(data)


class JobEventsApi(SessionActionApi):
    @extend_schema(
        parameters=[JobEventsQuery],
        responses={
            200: JobEventOutput(many=True),
            **error_responses("ACODE-API-400", *NOT_VISIBLE_CODES),
        },
        operation_id="jobs_events",
    )
    def get(self, request: Request, pk: str) -> Response:
        job = self.access(request, job_for, pk)
        after = query_of(JobEventsQuery, request)["after"]
        return Response(JobEventOutput(job_events(job, after=after), many=True).data)


class JobCancelApi(SessionActionApi):
    actions = {"POST": SessionAction.JOB_CANCEL}

    @extend_schema(
        request=None,
        responses={200: JobOutput, **error_responses(*ACT_CODES, RUN_OWNS, "ACODE-JOB-006")},
        operation_id="jobs_cancel",
    )
    def post(self, request: Request, pk: str) -> Response:
        job = self.access(request, job_for, pk)
        return Response(JobOutput(job_cancel(job=job, user=request_user(request))).data)


class JobResumeApi(SessionActionApi):
    actions = {"POST": SessionAction.JOB_CREATE}  # a new job in the job's session

    @extend_schema(
        request=None,
        responses={
            201: JobOutput,
            **error_responses(*ACT_CODES, RUN_OWNS, "ACODE-JOB-013", "ACODE-API-503"),
        },
        parameters=[IDEMPOTENCY],
        operation_id="jobs_resume",
        description="Continue a job that stopped at a limit (its budget, or a loop) with a "
        "fresh budget: a new job in the same session and role, on the same request, shown "
        "what the stopped one did. The answer is the new job (`resumed_from` names this one).",
    )
    def post(self, request: Request, pk: str) -> Response:
        job = self.access(request, job_for, pk)

        def resume() -> Response:
            resumed = job_resume(job=job, user=request_user(request))
            return Response(JobOutput(resumed).data, status=status.HTTP_201_CREATED)

        return idempotent(request, resume)
