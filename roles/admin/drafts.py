"""Admin for drafts of protected roles: what a draft changes, its example results, its
replay, and publishing or rejecting it (``roles.services.draft_review`` decides who may)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from acode.errors import AcodeError
from roles.models import RoleDraft, RoleDraftStatus
from roles.selectors import role_draft_is_stale
from roles.services import (
    role_draft_decision_refusal,
    role_draft_publish,
    role_draft_reject,
)
from roles.services.draft_review import PUBLISH_PERMISSION, role_draft_replay_report


def draft_admin_url(draft: RoleDraft) -> str:
    """The draft's page in admin."""
    return reverse("admin:roles_roledraft_change", args=[draft.pk])


@admin.register(RoleDraft)
class RoleDraftAdmin(admin.ModelAdmin):
    list_display = (
        "__str__",
        "role_slug",
        "status",
        "author_name",
        "created_at",
        "decided_by_name",
    )
    list_filter = ("status", "role_slug")
    fields = (
        "role_slug",
        "status",
        "stale",
        "base_number",
        "author_name",
        "created_at",
        "decided_by_name",
        "decided_at",
        "reason",
        "changes",
        "examples",
    )
    readonly_fields = fields
    change_form_template = "admin/roles/roledraft_change_form.html"

    @admin.display(description="Stale (the role changed since)")
    def stale(self, obj: RoleDraft) -> str:
        if obj.status != RoleDraftStatus.OPEN:
            return "-"
        return "yes: cannot be published" if role_draft_is_stale(obj) else "no"

    @admin.display(description="Changes (against the base version)")
    def changes(self, obj: RoleDraft) -> SafeString:
        return render_to_string("admin/roles/draft_diff.html", {"diff": obj.diff})

    @admin.display(description="Example results when drafted")
    def examples(self, obj: RoleDraft) -> SafeString:
        return render_to_string("admin/roles/draft_examples.html", {"results": obj.example_results})

    @staticmethod
    def replay(draft: RoleDraft, user: Any) -> SafeString | str:
        """The draft's replay, for who may change roles (it names audit rows of every
        session, as POST /api/roles/<name>/replay/ does)."""
        if not user.has_perm("roles.change_role"):
            return ""
        report = role_draft_replay_report(draft)
        return render_to_string("admin/roles/draft_replay.html", {"report": report})

    def decision(self, draft: RoleDraft, user: Any) -> SafeString | str:
        """The publish and reject buttons, only those ``user`` may use."""
        if draft.status != RoleDraftStatus.OPEN:
            return ""
        publish = role_draft_decision_refusal(draft=draft, user=user, publishing=True)
        if publish is None and role_draft_is_stale(draft):
            publish = AcodeError("ACODE-ROL-012", "the role changed since it was drafted.")
        reject = role_draft_decision_refusal(draft=draft, user=user, publishing=False)
        return render_to_string(
            "admin/roles/draft_decision.html",
            {
                "can_publish": publish is None,
                "can_reject": reject is None,
                "why_not": f"{publish.code}: {publish.message}" if publish is not None else "",
            },
        )

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        user: Any = request.user
        return any(
            user.has_perm(p)
            for p in ("roles.view_roledraft", "roles.change_role", PUBLISH_PERMISSION)
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # drafts change only by being published or rejected (below)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        deciding = "_publish" in request.POST or "_reject" in request.POST
        if request.method == "POST" and object_id is not None and object_id.isdigit() and deciding:
            return self._decide(request, int(object_id), publish="_publish" in request.POST)
        if object_id is not None and object_id.isdigit():
            draft = RoleDraft.objects.filter(pk=object_id).first()
            if draft is not None:
                extra_context = {
                    **(extra_context or {}),
                    "draft_decision": self.decision(draft, request.user),
                    "draft_replay": self.replay(draft, request.user),
                }
        return super().changeform_view(request, object_id, form_url, extra_context)

    def _decide(self, request: HttpRequest, pk: int, *, publish: bool) -> HttpResponse:
        user: Any = request.user
        reason = str(request.POST.get("decision_reason", ""))[:2000]
        try:
            if publish:
                draft = role_draft_publish(draft_id=pk, user=user, reason=reason)
                text = f"Draft #{pk} published: role {draft.role_slug} is changed."
            else:
                draft = role_draft_reject(draft_id=pk, user=user, reason=reason)
                text = f"Draft #{pk} rejected: nothing changed."
            self.message_user(request, text, messages.SUCCESS)
        except AcodeError as exc:
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
        return HttpResponseRedirect(reverse("admin:roles_roledraft_change", args=[pk]))
