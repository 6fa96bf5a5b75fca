"""A query built once (``acode.prebuilt``) finds what the ORM finds, value after value."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User

from acode.prebuilt import Prebuilt
from sessions_app.models import HookToken

pytestmark = pytest.mark.django_db


def _tokens(user_id: int, label: str, token_id: uuid.UUID) -> Any:
    return HookToken.objects.filter(user_id=user_id, label=label).exclude(pk=token_id)


def test_each_run_puts_its_values_where_the_stand_ins_were() -> None:
    ann, bob = User.objects.create(username="ann"), User.objects.create(username="bob")
    made = {
        (user.pk, label): HookToken.objects.create(user=user, label=label, key_hash=f"{user}{label}")
        for user in (ann, bob) for label in ("laptop", "ci")
    }  # fmt: skip
    query = Prebuilt(_tokens, user_id=-917_263_551, label="stand-in label", token_id=uuid.uuid4())
    for (user_id, label), token in made.items():
        nobody = uuid.uuid4()
        assert [t.pk for t in query.rows(user_id=user_id, label=label, token_id=nobody)] == [
            token.pk
        ]
        assert list(query.rows(user_id=user_id, label=label, token_id=token.pk)) == []
        assert [t.pk for t in _tokens(user_id, label, nobody)] == [token.pk]


def test_a_stand_in_the_query_does_not_hold_is_refused() -> None:
    query = Prebuilt(lambda label: HookToken.objects.all(), label="stand-in label")
    with pytest.raises(ValueError, match="label"):
        query.rows(label="laptop")
