"""Decision memory (issue 41): a person's answer to an ask or a question, remembered
with its scope.

A stage's question (``ask_human``) a signed-in person answered is kept the same way,
scoped to the session, the role that asked and the question's words
(``question_remember``, from a receiver on the question); the same question asked again
there is answered with it instead of pausing the run.

When a person allows or denies a call put to them (``sessions_app.services.consents``),
the answer is kept as a ``RememberedAnswer`` scoped to the session, the role that asked
and the exact call (``answer_key``: the tool, its target, the rule that asked and the
normalised, redacted arguments). The same call asked again in that scope is answered
with it at once, by the same person's name, and the consent says "answered before by
...". An admin (superuser, or ``sessions_app.revoke_rememberedanswer``) revokes one; the
next such ask goes to a person again. Each reuse and each revocation is audited."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from acode.errors import AcodeError
from sessions_app.models import AgentSession, AuditEventType
from sessions_app.models.consents import RememberedAnswer, ToolConsent
from sessions_app.permissions import sessions_visible_to
from sessions_app.services.audit import audit_record
from sessions_app.services.locks import lock_session

REVOKE_PERMISSION = "sessions_app.revoke_rememberedanswer"


def answer_key(*, tool: str, target: str, rule: str, arguments: dict[str, Any]) -> str:
    """The exact call, as one hash: what a remembered answer answers."""
    data = {"tool": tool, "target": target, "rule": rule, "arguments": arguments}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def question_key(question: str) -> str:
    """A question (``ask_human``), as one hash: its words, whitespace collapsed."""
    text = "question:" + " ".join(question.split())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def remembered_question_for(
    *, session: AgentSession, role: str, question: str
) -> RememberedAnswer | None:
    """A person's live answer to this question asked in this session by this role."""
    return remembered_answer_for(session=session, role=role, key=question_key(question))


def question_remember(question: Any) -> RememberedAnswer | None:
    """Keep a person's answer to a stage's question (a ``RunQuestion`` a role asked and a
    signed-in person answered); None for any other."""
    if question.stage_id is None or question.answered_by_id is None or not question.answer:
        return None
    session_id = question.run.session_id
    key = question_key(question.question)
    live = RememberedAnswer.objects.filter(
        session_id=session_id, role_slug=question.asked_by, key=key, revoked_at__isnull=True
    )
    if live.exists():
        return live.first()
    return RememberedAnswer.objects.create(
        session_id=session_id, role_slug=question.asked_by, key=key, tool="",
        question=question.question, note=question.answer, answered_by_id=question.answered_by_id,
        answered_by_name=question.answered_by.get_username(),
    )  # fmt: skip


def remembered_answer_for(*, session: AgentSession, role: str, key: str) -> RememberedAnswer | None:
    """The live remembered answer to this call in this session and role, if any."""
    return (
        RememberedAnswer.objects.filter(
            session_id=session.pk, role_slug=role, key=key, revoked_at__isnull=True
        )
        .select_related("answered_by")
        .first()
    )


def answer_remember(consent: ToolConsent, *, user: User, allowed: bool) -> RememberedAnswer:
    """Keep a person's answer to ``consent`` for its scope (in the caller's transaction,
    under the session's lock); a live one for the same call is kept as it is."""
    key = answer_key(
        tool=consent.tool, target=consent.target, rule=consent.rule, arguments=consent.arguments
    )
    existing = remembered_answer_for(session=consent.session, role=consent.role_slug, key=key)
    if existing is not None:
        return existing
    return RememberedAnswer.objects.create(
        session_id=consent.session_id, role_slug=consent.role_slug, key=key, tool=consent.tool,
        target=consent.target, rule=consent.rule, allowed=allowed, note=consent.note,
        source=consent, answered_by=user, answered_by_name=user.get_username(),
    )  # fmt: skip


def may_revoke_answers(user: Any) -> bool:
    return bool(user.is_superuser or user.has_perm(REVOKE_PERMISSION))


def remembered_answers_visible_to(user: Any) -> QuerySet[RememberedAnswer]:
    """Remembered answers of the sessions ``user`` sees."""
    sessions = sessions_visible_to(user).values("pk")
    return RememberedAnswer.objects.filter(session_id__in=sessions).select_related("session")


def remembered_answer_revoke(*, answer_id: Any, user: Any) -> RememberedAnswer:
    """Revoke a remembered answer (ACODE-TOL-010 without the permission, ACODE-API-404 when
    ``user`` cannot see it); revoking a revoked one changes nothing."""
    answer = remembered_answers_visible_to(user).filter(pk=answer_id).first()
    if answer is None:
        raise AcodeError("ACODE-API-404", "No such remembered answer.")
    if not may_revoke_answers(user):
        raise AcodeError(
            "ACODE-TOL-010",
            "Revoking a remembered answer needs the sessions_app.revoke_rememberedanswer "
            "permission.",
            {"permission": REVOKE_PERMISSION},
        )
    with transaction.atomic(), lock_session(answer.session_id) as session:
        answer = RememberedAnswer.objects.select_for_update().get(pk=answer.pk)
        if answer.revoked_at is not None:
            return answer
        answer.revoked_at = timezone.now()
        answer.revoked_by_name = user.get_username()
        answer.save(update_fields=["revoked_at", "revoked_by_name"])
        audit_record(
            event_type=AuditEventType.TOOL_CONSENT, actor=user.get_username(), session=session,
            role=answer.role_slug, target=f"{answer.tool} {answer.target}".strip()[:1000],
            result="revoked",
            details={"phase": "memory_revoked", "remembered": answer.pk, "tool": answer.tool,
                     "rule": answer.rule, "answered_by": answer.answered_by_name},
        )  # fmt: skip
    return answer
