"""Repositories a user may start sessions on; what a session delivered on its branch (its
commits, and the branch or one commit as a patch)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import AcodeError, error_responses
from acode.inputs import query_of
from sessions_app.apis.common import (
    NOT_VISIBLE_CODES,
    SessionActionApi,
    SessionItemsApi,
    request_user,
    session_items,
)
from sessions_app.apis.serializers import DeliveredCommitOutput, PatchQuery, RepositoryOutput
from sessions_app.permissions import repositories_usable_by, session_for
from sessions_app.selectors.sessions import session_commits, session_delivered
from sessions_app.services.workspaces import workspace_commit_patch, workspace_patch


class RepositoryListApi(APIView):
    @extend_schema(responses=RepositoryOutput(many=True), operation_id="repositories_list")
    def get(self, request: Request) -> Response:
        repositories = repositories_usable_by(request_user(request))
        return Response(RepositoryOutput(repositories, many=True).data)


@session_items(
    operation_id="sessions_commits",
    description="What the session delivered: the commits approved work became on its "
    "branch, newest first, with the files each changed, its patch and its push.",
)
class SessionCommitsApi(SessionItemsApi):
    output = DeliveredCommitOutput
    listed = session_commits


class SessionPatchApi(SessionActionApi):
    @extend_schema(
        parameters=[PatchQuery],
        responses={
            (200, "text/x-patch"): OpenApiTypes.STR,
            **error_responses(
                "ACODE-API-400", *NOT_VISIBLE_CODES, "ACODE-API-409", "ACODE-SES-006"
            ),
        },
        operation_id="sessions_patch",
        description="The commits approved on the session branch, as `git format-patch` output "
        "(apply with `git am`). Empty until a review approves changes. With `commit`, only "
        "that one (a commit the session delivered; any other is 404).",
    )
    def get(self, request: Request, pk: str) -> HttpResponse:
        session = self.access(request, session_for, pk)
        sha = query_of(PatchQuery, request).get("commit")
        if sha is None:
            body, name = workspace_patch(session), f"acode-{session.pk}.patch"
        else:
            if not session_delivered(session, sha):
                raise AcodeError(
                    "ACODE-API-404",
                    "The session delivered no commit with that id.",
                    {"commit": sha},
                )
            body, name = workspace_commit_patch(session, sha), f"acode-{sha[:12]}.patch"
        response = HttpResponse(body, content_type="text/x-patch")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
