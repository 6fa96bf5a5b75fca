"""Choice fields shown in the schema as named enum components."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import models
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


def enum_field(
    choices: type[models.TextChoices], component: str
) -> Callable[..., serializers.ChoiceField]:
    """A field class taking one of ``choices``, shown in the schema as the enum component
    ``component``: several choice sets share a field name (status, kind, tier) with other
    sets in the schema, which would leave them hashed names."""

    @extend_schema_field({"type": "string", "enum": choices.values}, component_name=component)
    class EnumField(serializers.ChoiceField):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(choices=choices.choices, **kwargs)

    EnumField.__name__ = EnumField.__qualname__ = component.removesuffix("Enum") + "Field"
    return EnumField
