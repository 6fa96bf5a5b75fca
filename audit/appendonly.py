"""Append-only rows: history is written once."""

from __future__ import annotations

from typing import Any

from django.db import models

from acode.errors import AcodeError


class AppendOnlyQuerySet(models.QuerySet):
    """Bulk updates and deletes are refused: history is written once."""

    def update(self, **kwargs: Any) -> int:
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")


class AppendOnlyError(AcodeError):
    """Someone tried to change or remove a history row."""

    def __init__(self, message: str) -> None:
        super().__init__("ACODE-AUD-001", message, {})


class AppendOnlyModel(models.Model):
    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError(f"{type(self).__name__} rows are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise AppendOnlyError(f"{type(self).__name__} rows are append-only")
