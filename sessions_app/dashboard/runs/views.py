"""The run panel's buttons: start a run, answer it, approve or reject it at its gate,
cancel it; and a stage's job. Each view looks the session or run up as the user may see it
and calls ``sessions_app.services.runs``, which decides who may and whether now
(``permissions.action_check``) and whose refusals the panel shows with their codes; htmx swaps the
re-rendered panel in (``#run`` of ``dashboard/session.html``, root ``#run-panel``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from acode.errors import AcodeError
from acode.inputs import has_forbidden_characters
from sessions_app.dashboard.jobs import job_panel
from sessions_app.dashboard.runs.panel import run_panel
from sessions_app.dashboard.runs.shapes import RunError
from sessions_app.models import AgentSession, RiskTier, Run
from sessions_app.permissions import run_for, session_for
from sessions_app.selectors.lookups import session_by_id
from sessions_app.services import runs as run_services
from sessions_app.services.event_catalog import SESSION_PAGE

SESSION_TEMPLATE = SESSION_PAGE.template
RUN_PARTIAL = f"{SESSION_TEMPLATE}#run"
JOB_TEMPLATE = "dashboard/job.html"
# The POST views' text limits are the services' own; these stop what no service would take
# before it is even read into a query.
MAX_TEXT_CHARS = 20_000

Seen = TypeVar("Seen")


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _visible(user: User, find: Callable[[User, UUID], Seen], pk: UUID) -> Seen:
    """The session or run ``find`` (``session_for``, ``run_for``) reads by id, if the user
    may see it (404 otherwise)."""
    try:
        return find(user, pk)
    except AcodeError:  # none, or not theirs to see
        raise Http404("No such session or run, or it is not yours to see.") from None


def _error(error: AcodeError) -> RunError:
    digest = error.details.get("digest") if error.details else None
    return RunError(error.code, error.message, str(digest) if digest else "")


def _answer(
    request: HttpRequest, session: AgentSession, error: AcodeError | None, done: str
) -> HttpResponse:
    """The re-rendered panel for htmx; otherwise back to the session page with a message."""
    user = cast(User, request.user)
    if _is_htmx(request):
        # Read again: the action may have changed the session (its active run).
        session = session_by_id(session.pk) or session
        panel = run_panel(session, user, error=_error(error) if error else None)
        return render(request, RUN_PARTIAL, {"runs": panel})
    if error is not None:
        messages.error(request, _error(error).message, error.code)
    else:
        messages.success(request, done)
    return HttpResponseRedirect(reverse("dashboard-session", kwargs={"pk": session.pk}))


def _text(request: HttpRequest, name: str) -> str:
    value = request.POST.get(name, "")
    if has_forbidden_characters(value) or len(value) > MAX_TEXT_CHARS:
        raise AcodeError(
            "ACODE-API-400",
            f"The {name} has characters that are not allowed or is too long.",
            {"field": name},
        )
    return value


@login_required
@require_POST
def run_start(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Start a run of the request in the session (the Run form). The service decides who
    may, and whether now (``permissions.action_check``)."""
    user = cast(User, request.user)
    session = _visible(user, session_for, pk)
    try:
        risk = request.POST.get("risk", "").strip() or None
        if risk is not None and risk not in RiskTier.values:
            raise AcodeError("ACODE-API-400", f"Unknown risk tier {risk!r}.", {"field": "risk"})
        run_services.run_start(
            session=session, request=_text(request, "request"), user=user, risk=risk
        )
    except AcodeError as error:
        return _answer(request, session, error, "")
    return _answer(request, session, None, "Run started.")


def _run_action(
    request: HttpRequest,
    pk: UUID,
    act: Callable[[Run, User], object],
    done: str,
) -> HttpResponse:
    """Take a person's action on a run they may see; the service decides who may, and
    whether now (``permissions.action_check``), and audits refused decisions."""
    user = cast(User, request.user)
    run = _visible(user, run_for, pk)
    session = run.session
    try:
        act(run, user)
    except AcodeError as error:
        return _answer(request, session, error, "")
    return _answer(request, session, None, done)


@login_required
@require_POST
def run_answer(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Answer the run's open question; the run goes on."""

    def act(run: Run, user: User) -> object:
        return run_services.run_answer(run=run, answer=_text(request, "answer"), user=user)

    return _run_action(request, pk, act, "Answer sent; the run goes on.")


@login_required
@require_POST
def run_approve(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Approve the run at its gate, bound to the digest the page showed. The service
    decides who may (the approve-run permission, not the run's starter)."""

    def act(run: Run, user: User) -> object:
        digest = request.POST.get("digest", "").strip()
        if not digest:
            raise AcodeError(
                "ACODE-API-400", "Approve the digest shown on the page.", {"field": "digest"}
            )
        return run_services.run_approve(
            run=run, user=user, digest=digest, reason=_text(request, "reason")
        )

    return _run_action(request, pk, act, "Run approved.")


@login_required
@require_POST
def run_reject(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Reject the run at its gate, with a reason."""

    def act(run: Run, user: User) -> object:
        return run_services.run_reject(run=run, user=user, reason=_text(request, "reason"))

    return _run_action(request, pk, act, "Run rejected.")


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Cancel the run: at once when it waits, at the end of the running stage otherwise."""

    def act(run: Run, user: User) -> object:
        return run_services.run_cancel(run=run, user=user)

    return _run_action(request, pk, act, "Cancel requested.")


@login_required
@require_GET
def stage_job(request: HttpRequest, pk: UUID, job_id: UUID) -> HttpResponse:
    """One job of the session with its events (a run stage's "job" link): the job card for
    htmx, a page of its own otherwise."""
    user = cast(User, request.user)
    session = _visible(user, session_for, pk)
    job = job_panel(session.pk, job_id)
    if job is None:
        raise Http404("No such job in this session.")
    context = {"job": job, "open_result": True, "session": session}
    if _is_htmx(request):
        return render(request, f"{SESSION_TEMPLATE}#job-card", context)
    return render(request, JOB_TEMPLATE, {**context, "nav": "board"})
