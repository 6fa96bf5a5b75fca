"""Backlogs: projects, their tasks, YAML imports and a person's actions on the board
(accept or reject a proposal, reprioritise, unblock). Reads and refusals:
``selectors.backlog``; every change: ``services.backlog``."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import ClassVar, TypeVar

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from acode.inputs import Input, body_of
from roles.apis.parsers import PlainTextParser
from roles.apis.portability import IMPORT_CODES
from sessions_app.apis.common import INVALID_CODES, request_user
from sessions_app.apis.serializers.backlog import (
    BacklogImportOutput,
    ProjectCreateInput,
    ProjectDetailOutput,
    ProjectOutput,
    ProjectPlanInput,
    ProjectPlanOutput,
    TaskNoteInput,
    TaskOutput,
    TaskPriorityInput,
    TaskRejectInput,
)
from sessions_app.services.backlog import (
    backlog_import,
    project_create,
    task_accept,
    task_reject,
    task_reprioritise,
    task_unblock,
)
from sessions_app.services.backlog_access import project_for, projects_visible_to, task_for
from sessions_app.services.backlog_document import DOCUMENT_SCHEMA, backlog_load
from sessions_app.services.backlog_integration import integration_head
from sessions_app.services.backlog_pm import project_plan
from sessions_app.services.workspaces import repository_for

SEE_CODES = ("ACODE-BKL-003",)
ACT_CODES = ("ACODE-BKL-003", "ACODE-API-403")


class ProjectListApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses=ProjectOutput(many=True),
        operation_id="backlog_projects_list",
        description="Projects whose board you may see (yours; every one for team leads).",
    )
    def get(self, request: Request) -> Response:
        projects = projects_visible_to(request_user(request))
        return Response(ProjectOutput(projects, many=True).data)

    @extend_schema(
        request=ProjectCreateInput,
        responses={201: ProjectOutput, **error_responses(*INVALID_CODES, "ACODE-API-409",
                                                         "ACODE-SES-005")},
        operation_id="backlog_projects_create",
        description="A new board, owned by you: its tasks' runs start as you.",
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        data = body_of(ProjectCreateInput, request)
        fields = dict(data)
        user = request_user(request)
        name = fields.pop("repository")
        repository = repository_for(user, name) if name else None
        project = project_create(owner=user, repository=repository, **fields)
        return Response(ProjectOutput(project).data, status=status.HTTP_201_CREATED)


class ProjectDetailApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses={200: ProjectDetailOutput, **error_responses(*SEE_CODES)},
        operation_id="backlog_projects_retrieve",
        description="The project, its settings, its integration branch's head and its tasks.",
    )
    def get(self, request: Request, slug: str) -> Response:
        project = project_for(request_user(request), slug)
        context = {"integration_head": integration_head(project)}
        return Response(ProjectDetailOutput(project, context=context).data)


class ProjectImportApi(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [PlainTextParser]

    @extend_schema(
        request={"application/yaml": copy.deepcopy(DOCUMENT_SCHEMA)},
        responses={201: BacklogImportOutput, **error_responses(*ACT_CODES, "ACODE-BKL-002", "ACODE-BKL-004",
                                                               *IMPORT_CODES)},
        operation_id="backlog_projects_import",
        description="Add a YAML document's epics and tasks to the backlog, all or nothing.",
    )  # fmt: skip
    def post(self, request: Request, slug: str) -> Response:
        user = request_user(request)
        project = project_for(user, slug, act=True)
        created = backlog_import(
            project=project, document=backlog_load(str(request.data)), actor=user.get_username()
        )
        return Response(BacklogImportOutput({"created": created}).data, status=201)


class ProjectPlanApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=ProjectPlanInput,
        responses={202: ProjectPlanOutput, **error_responses(*ACT_CODES, *INVALID_CODES,
                                                             "ACODE-BKL-005", "ACODE-BKL-006",
                                                             "ACODE-API-503")},
        operation_id="backlog_projects_plan",
        description="Give the project's product spec to the Product Manager: it is kept as the "
        "project's description, and a job in the project's Product Manager session (the "
        "product-manager role) proposes epics and tasks from it; accept them on the board "
        "or with .../tasks/{key}/accept/ (unless the project auto-accepts proposals).",
    )  # fmt: skip
    def post(self, request: Request, slug: str) -> Response:
        data = body_of(ProjectPlanInput, request)
        user = request_user(request)
        project = project_for(user, slug, act=True)
        job = project_plan(project=project, spec=data["spec"], user=user)
        return Response(ProjectPlanOutput(job).data, status=status.HTTP_202_ACCEPTED)


class TaskListApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses={200: TaskOutput(many=True), **error_responses(*SEE_CODES)},
        operation_id="backlog_tasks_list",
    )
    def get(self, request: Request, slug: str) -> Response:
        project = project_for(request_user(request), slug)
        return Response(TaskOutput(project.tasks.order_by("id"), many=True).data)


class TaskDetailApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses={200: TaskOutput, **error_responses(*SEE_CODES)},
        operation_id="backlog_tasks_retrieve",
    )
    def get(self, request: Request, slug: str, key: str) -> Response:
        return Response(TaskOutput(task_for(request_user(request), slug, key)).data)


# A person's action on a task (accept, unblock, reprioritise): the body checked by ``body``
# (None: no body), the task found for acting on (``task_for``), then the service ``act``
# called with the task, the user and the body's fields (named as its keywords). The answer
# is the task as it is then. (A comment, not a docstring: the schema would show it as the
# description of an operation that has none.)
class TaskActionApi(APIView):
    permission_classes = [IsAuthenticated]
    body: ClassVar[type[Input] | None] = None
    act: ClassVar[Callable[..., object]]

    def post(self, request: Request, slug: str, key: str) -> Response:
        data = body_of(self.body, request) if self.body is not None else {}
        user = request_user(request)
        task = type(self).act(task=task_for(user, slug, key, act=True), user=user, **data)
        return Response(TaskOutput(task).data)


View = TypeVar("View", bound=type[TaskActionApi])


def task_action(
    *codes: str, operation_id: str, description: str | None = None
) -> Callable[[View], View]:
    """The schema of a ``TaskActionApi``: its body, the task, the errors ``codes``."""

    def schema(view: View) -> View:
        return extend_schema_view(
            post=extend_schema(
                request=view.body,
                responses={200: TaskOutput, **error_responses(*codes)},
                operation_id=operation_id,
                description=description,
            )
        )(view)

    return schema


@task_action(
    *ACT_CODES,
    "ACODE-BKL-001",
    operation_id="backlog_tasks_accept",
    description="Accept a task the Product Manager proposed: it joins the backlog.",
)
class TaskAcceptApi(TaskActionApi):
    act = task_accept


@task_action(
    *ACT_CODES,
    *INVALID_CODES,
    "ACODE-BKL-001",
    "ACODE-BKL-008",
    operation_id="backlog_tasks_reject",
    description="Reject a task the Product Manager proposed, saying why: it is closed, "
    "never done, and the next completeness check is told. Refused while a task that is "
    "not rejected depends on it.",
)
class TaskRejectApi(TaskActionApi):
    body = TaskRejectInput
    act = task_reject


@task_action(
    *ACT_CODES,
    "ACODE-BKL-001",
    operation_id="backlog_tasks_unblock",
    description="Send a blocked task, or one whose merge conflicted, back to the backlog "
    "for a new run (the note is kept as its reason, and its next run is told).",
)
class TaskUnblockApi(TaskActionApi):
    body = TaskNoteInput
    act = task_unblock


@task_action(*ACT_CODES, *INVALID_CODES, "ACODE-BKL-001", operation_id="backlog_tasks_reprioritise")
class TaskPriorityApi(TaskActionApi):
    body = TaskPriorityInput
    act = task_reprioritise
