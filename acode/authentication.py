"""``Authorization: Token <key>`` for the API, reading the user in one precompiled query."""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's token authentication, without compiling a join through the ORM per request.

    Every API request pays for this lookup. ``request.auth`` is a Token carrying the key
    and the user (its ``created`` is not read).
    """

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        # Imported here: DRF imports authentication classes while apps are loading.
        from django.contrib.auth.models import User
        from rest_framework.authtoken.models import Token

        from acode.db import fetch_one

        user = fetch_one(User, key, lookup="auth_token__key")
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return user, Token(key=key, user=user)
