"""The custom agents page (issue 41): the agents a user made (admins: every one, with who
made it), and, for those holding ``roles.configure``, the form that makes one from a role
template. It asks ``roles.services.agents`` as the API does (``POST /api/agents/``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from acode.errors import AcodeError
from roles.registry import registry
from roles.services.agents import (
    custom_agent_create,
    custom_agent_delete,
    custom_agents_visible_to,
    may_configure_agents,
    may_delete_agent,
)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


@login_required
@require_http_methods(["GET", "POST"])
def agents(request: HttpRequest) -> HttpResponse:
    """List custom agents; a POST makes one, or deletes one (``delete``: its slug); a
    refusal comes back with its code."""
    error, delete_error, values = "", "", {}
    if request.method == "POST" and "delete" in request.POST:
        slug = str(request.POST["delete"])
        try:
            custom_agent_delete(user=request.user, slug=slug)  # type: ignore[arg-type]
        except AcodeError as exc:
            delete_error = f"{exc.code}: {exc.message}"
        else:
            return redirect(f"{request.path}?deleted={slug}")
    elif request.method == "POST":
        values = {k: str(request.POST.get(k, "")) for k in
                  ("name", "template", "goals", "checklist", "keywords", "prompt")}  # fmt: skip
        try:
            agent = custom_agent_create(
                user=request.user,  # type: ignore[arg-type]
                name=values["name"].strip(), template=values["template"],
                goals=_lines(values["goals"]), checklist=_lines(values["checklist"]),
                routing_keywords=[k.strip() for k in values["keywords"].split(",") if k.strip()],
                prompt=values["prompt"].strip(),
            )  # fmt: skip
        except AcodeError as exc:
            error = f"{exc.code}: {exc.message}"
        else:
            return redirect(f"{request.path}?made={agent.role.slug}")
    ways_in: dict[str, list[str]] = {}
    for rule in registry.all_rules():  # where a session may enter each agent
        ways_in.setdefault(rule.to_slug, []).append(
            f"{registry.get(rule.from_slug).name} ({rule.condition_text})"
        )
    context: dict[str, Any] = {
        "nav": "agents",
        "agents": [
            (
                a,
                sorted(registry.get(a.role.slug).access.permissions),
                ways_in.get(a.role.slug, []),
                may_delete_agent(request.user, a),
            )
            for a in custom_agents_visible_to(request.user)
        ],
        "may_configure": may_configure_agents(request.user),
        "templates": [r for r in registry.list_roles() if not r.spec.custom],
        "error": error,
        "delete_error": delete_error,
        "values": values,
        "made": request.GET.get("made", ""),
        "deleted": request.GET.get("deleted", ""),
    }
    status = 400 if error or delete_error else 200
    return render(request, "dashboard/agents.html", context, status=status)
