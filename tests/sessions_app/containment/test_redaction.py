"""Redaction: what a model may never see, including credentials inside URLs."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app.containment.redaction import redact_file, redact_text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgres://user:hunter2@db:5432/app", "postgres://user:***@db:5432/app"),
        ("DATABASE_URL=postgres://app:s3cr3t@localhost/db", "DATABASE_URL=postgres://app:***@localhost/db"),
        ("redis://:pw-123@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("url = https://x-access-token:ghs_abc@github.com/o/r.git", "url = https://x-access-token:***@github.com/o/r.git"),
        ("amqp://guest:guest@rabbit//", "amqp://guest:***@rabbit//"),
        ("postgres://u:p@ss@host:5432/db rest", "postgres://u:***@host:5432/db rest"),
        ('dsn: "mysql+pymysql://root:toor@mysql/app"', 'dsn: "mysql+pymysql://root:***@mysql/app"'),
    ],
)  # fmt: skip
def test_passwords_in_urls_are_masked(text: str, shown: str) -> None:
    assert redact_text(text) == shown


@pytest.mark.parametrize(
    "text",
    ["https://github.com/acme/shop.git", "http://user@host/", "mailto:a@b.c", "see http://x:80/"],
)
def test_urls_without_a_password_are_left_alone(text: str) -> None:
    assert redact_text(text) == text


def test_a_url_in_a_password_assignment_is_masked_whole() -> None:
    assert redact_text("password=postgres://u:p4ssw0rd-x@h/d") == "password=[REDACTED]"


def test_private_keys_keep_their_line_count() -> None:
    text = "a\n-----BEGIN RSA PRIVATE KEY-----\nAAAA\nBBBB\n-----END RSA PRIVATE KEY-----\nz\n"
    redacted = redact_text(text)
    assert "AAAA" not in redacted and redacted.count("\n") == text.count("\n")
    assert redacted.splitlines()[5] == "z"


def test_the_servers_own_secrets_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_API_KEY", "value-of-the-server-key")
    monkeypatch.setenv("HARMLESS", "value-of-something-else")
    text = "error: value-of-the-server-key, value-of-something-else"
    assert redact_text(text) == "error: [REDACTED], value-of-something-else"


def test_secret_files_are_never_shown() -> None:
    assert "hunter2" not in redact_file("config/.env", "DB_PASSWORD=hunter2\n")


@pytest.mark.django_db
def test_acodes_own_settings_and_a_servers_declared_secret_are_masked_in_every_encoding(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roles.models import McpServer
    from roles.services.mcp import mcp_server_save
    from sessions_app.containment import encodings

    settings.SECRET_KEY = "django-key-for-this-test-0d9c8b7a"
    monkeypatch.setenv("PLAIN_NAMED_VALUE", "value-known-only-by-its-registration")
    mcp_server_save(
        server=McpServer(slug="srv", command=["true"], env_secrets={"X": "PLAIN_NAMED_VALUE"}),
        actor="test",
    )
    for value in (settings.SECRET_KEY, "value-known-only-by-its-registration"):
        for form in encodings(value):
            assert form not in redact_text(f"before {form} after"), form
