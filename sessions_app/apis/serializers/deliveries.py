"""Shapes of what a session delivered: its commits on the session branch, and the patch."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from acode.inputs import Query
from sessions_app.apis.serializers.enums import enum_field
from sessions_app.models import ChangeKind, DeliveredCommit, PushStatus

SHA_PATTERN = r"^[0-9a-f]{40}([0-9a-f]{24})?$"


PushStatusField = enum_field(PushStatus, "PushStatusEnum")


class CommittedFileOutput(serializers.Serializer):
    path = serializers.CharField()
    kind = serializers.ChoiceField(choices=ChangeKind.choices)
    added = serializers.IntegerField(help_text="Lines added.")
    removed = serializers.IntegerField(help_text="Lines removed.")


def patch_url(commit: DeliveredCommit) -> str:
    path = reverse("api-session-patch", kwargs={"pk": commit.session_id})
    return f"{path}?commit={commit.sha}"


class DeliveredCommitOutput(serializers.Serializer):
    """A commit approved work became on the session branch, and whether it was pushed; or,
    in an attached directory, an approval of changes already there (``committed`` false)."""

    sha = serializers.CharField(help_text="'' when nothing was committed (see committed).")
    branch = serializers.CharField(help_text="The session branch: acode/<session> ('' none).")
    committed = serializers.BooleanField(
        help_text="False: approved in an attached directory, which already holds the changes "
        "(applied when they were made); acode commits only in workspaces it created."
    )
    subject = serializers.CharField(help_text="The commit message's first line.")
    message = serializers.CharField()
    files = CommittedFileOutput(many=True, help_text="The files the commit changed.")
    run = serializers.UUIDField(source="run_id", allow_null=True)
    approved_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    push_status = PushStatusField(
        help_text="none: the repository is not marked pushable; pending, pushed or failed."
    )
    push_remote = serializers.CharField(help_text="Where it is pushed, credentials masked.")
    push_message = serializers.CharField(help_text="What git said, credentials masked.")
    pushed_at = serializers.DateTimeField(allow_null=True)
    patch_url = serializers.SerializerMethodField(
        help_text="This commit as a patch (GET; apply with git am); '' when not committed."
    )

    def get_patch_url(self, obj: DeliveredCommit) -> str:
        return patch_url(obj) if obj.committed else ""


class PatchQuery(Query):
    commit = serializers.RegexField(
        SHA_PATTERN,
        required=False,
        help_text="Only this commit (one the session delivered); default: the whole branch",
    )
