"""Repositories a user may start sessions on, and a session branch as a patch."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from acode.errors import error_responses
from sessions_app.apis.common import NOT_VISIBLE_CODES, request_user, session_for
from sessions_app.apis.serializers import RepositoryOutput
from sessions_app.permissions import repositories_usable_by
from sessions_app.services.workspaces import workspace_patch


class RepositoryListApi(APIView):
    @extend_schema(responses=RepositoryOutput(many=True), operation_id="repositories_list")
    def get(self, request: Request) -> Response:
        repositories = repositories_usable_by(request_user(request))
        return Response(RepositoryOutput(repositories, many=True).data)


class SessionPatchApi(APIView):
    @extend_schema(
        responses={
            (200, "text/x-patch"): OpenApiTypes.STR,
            **error_responses(*NOT_VISIBLE_CODES, "ACODE-API-409", "ACODE-SES-006"),
        },
        operation_id="sessions_patch",
        description="The commits approved on the session branch, as `git format-patch` output "
        "(apply with `git am`). Empty until a review approves changes.",
    )
    def get(self, request: Request, pk: str) -> HttpResponse:
        session = session_for(request, pk)
        response = HttpResponse(workspace_patch(session), content_type="text/x-patch")
        response["Content-Disposition"] = f'attachment; filename="acode-{session.pk}.patch"'
        return response
