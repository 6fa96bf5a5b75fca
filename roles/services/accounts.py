"""Who made an account or gave it rights (``roles.account_models``), and whose accounts
those are: the people a draft's author cannot publish through."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import User

from roles.account_models import AccountGrant
from roles.services.common import actor_label, data_changed

MAX_DEPTH = 20  # accounts made by accounts made by ...: far deeper than any real chain


def account_grants_record(
    *, account: User, by: User | None, kinds: Iterable[str]
) -> list[AccountGrant]:
    """Keep that ``by`` created ``account`` or gave it rights (``kinds``), audited. A
    grant to oneself, or by nobody known, is not kept."""
    if by is None or by.pk is None or by.pk == account.pk:
        return []
    label = actor_label(None, by)
    grants = [
        AccountGrant.objects.create(account=account, granted_by=by, granted_by_name=label, kind=k)
        for k in sorted(set(kinds))
    ]
    if grants:
        data_changed(
            "account", "granted", account.get_username(), label,
            {"account": account.get_username(), "kinds": [g.kind for g in grants]}, live=False,
        )  # fmt: skip
    return grants


def accounts_made_by(user_id: int) -> set[int]:
    """Every account ``user_id`` created or gave rights to, and theirs in turn."""
    found: set[int] = set()
    frontier = {user_id}
    for _ in range(MAX_DEPTH):
        made = (
            set(
                AccountGrant.objects.filter(granted_by_id__in=frontier).values_list(
                    "account_id", flat=True
                )
            )
            - found
            - {user_id}
        )
        if not made:
            break
        found |= made
        frontier = made
    return found
