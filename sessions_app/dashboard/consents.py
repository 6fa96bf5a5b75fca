"""The session page's answer to a tool call a rule put to a person."""

from __future__ import annotations

from typing import cast
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from acode.errors import AcodeError
from sessions_app.dashboard.live import back_to
from sessions_app.permissions import session_for
from sessions_app.services.consents import tool_consent_answer


@login_required
@require_POST
def consent_answer(request: HttpRequest, pk: UUID, consent_id: UUID) -> HttpResponse:
    """Allow or refuse a waiting call through the service; a refusal comes back as a message."""
    user = cast(User, request.user)
    try:
        session = session_for(user, pk)
    except AcodeError:  # none, or not theirs to see
        raise Http404("No such session, or it is not yours to see.") from None
    allow = request.POST.get("allow") == "yes"
    try:
        tool_consent_answer(
            consent_id=consent_id, session=session, user=user, allow=allow,
            note=request.POST.get("note", "").strip()[:2000],
        )  # fmt: skip
    except AcodeError as error:
        messages.error(request, error.message, error.code)
    else:
        messages.success(request, "The call was allowed." if allow else "The call was refused.")
    return back_to(request, reverse("dashboard-session", kwargs={"pk": pk}))
