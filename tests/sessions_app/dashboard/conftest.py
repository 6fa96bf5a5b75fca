"""Users and a session for the dashboard page tests: a team lead, and a developer who
owns the session."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions_app.models import AgentSession
from sessions_app.services.sessions import session_create


@pytest.fixture
def lead(django_user_model: Any) -> User:
    return django_user_model.objects.create_superuser("lead", "lead@example.com", "pw-lead-123")


@pytest.fixture
def lead_client(client: Client, lead: User) -> Client:
    client.force_login(lead)
    return client


@pytest.fixture
def dev_client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def session(user: User) -> AgentSession:
    return session_create(owner=user, title="Add JWT authentication", task="JWT")
