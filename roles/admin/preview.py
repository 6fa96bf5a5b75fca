"""Admin "Preview impact": the role change form's current, unsaved values replayed against
the role's recorded tool decisions (``roles.services.role_replay``). Nothing is saved.

The change form's button posts the same form here (``formaction``); each field is cleaned on
its own (the form's own ``clean`` would record refused text, a write), turned into the data
the API's PATCH takes, and the service checks it as a save would.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Model
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from acode.errors import AcodeError
from roles.models import Role
from roles.services.replay import role_replay


def form_draft(
    form_class: Any, request: HttpRequest, role: Role
) -> tuple[dict[str, Any], list[str]]:
    """The form's posted values as role data (slugs, codes and names for relations), and
    each field's problems."""
    form = form_class(instance=role)
    draft: dict[str, Any] = {}
    problems: list[str] = []
    for name, field in form.fields.items():
        raw = field.widget.value_from_datadict(request.POST, request.FILES, form.add_prefix(name))
        try:
            value = field.clean(raw)
        except ValidationError as exc:
            problems += [f"{name}: {message}" for message in exc.messages]
            continue
        draft[name] = _plain(name, value)
    return draft, problems


def _plain(name: str, value: Any) -> Any:
    if name == "parent":
        return value.slug if isinstance(value, Role) else None
    if name in ("permissions", "allowed_tools"):
        return sorted(getattr(v, "code", None) or getattr(v, "name", "") for v in value)
    if isinstance(value, Model):
        return str(value.pk)
    return value


def preview_view(model_admin: Any, request: HttpRequest, object_id: str) -> HttpResponse:
    """POST: the report for the posted form; nothing is saved."""
    role = Role.objects.filter(pk=object_id).first()
    if role is None:
        raise Http404("No such role.")
    if request.method != "POST" or not model_admin.has_change_permission(request, role):
        raise PermissionDenied
    draft, problems = form_draft(model_admin.get_form(request, role, change=True), request, role)
    report: dict[str, Any] | None = None
    error = ""
    if not problems:
        try:
            report = role_replay(slug=role.slug, data=draft)
        except AcodeError as exc:
            error = f"{exc.code}: {exc.message}"
    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"Preview impact: {role.name}",
        "opts": model_admin.model._meta,
        "original": role,
        "report": report,
        "problems": problems,
        "error": error,
    }
    return TemplateResponse(request, "admin/roles/replay_preview.html", context)
