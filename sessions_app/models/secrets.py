"""A team's secret rules: what the detector also counts as a secret, and what it must not."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models


class SecretRuleKind(models.TextChoices):
    PATTERN = "pattern", "secret pattern (RE2): a match is a secret"
    ALLOW_PATH = "allow_path", "not secret: files matching this glob"
    ALLOW_VALUE = "allow_value", "not secret: values matching this pattern (RE2)"


class SecretRule(models.Model):
    """One rule a team adds to the secret detector (admin edits them; every workspace index
    is scanned again when they change)."""

    kind = models.CharField(max_length=20, choices=SecretRuleKind.choices)
    value = models.CharField(
        max_length=500,
        help_text="A pattern in RE2 syntax (linear time; a group named 'secret' marks the part "
        "to mask), or for files a workspace glob such as tests/fixtures/**.",
    )
    description = models.CharField(max_length=300, blank=True)
    created_by = models.CharField(max_length=150, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "value"]
        constraints = [models.UniqueConstraint(fields=["kind", "value"], name="secret_rule_unique")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.value}"

    def clean(self) -> None:
        from acode.patterns import compile_re2
        from roles.writes import glob_problem

        if self.kind == SecretRuleKind.ALLOW_PATH:
            problem = glob_problem(self.value)
            if problem:
                raise ValidationError({"value": problem})
            return
        try:
            compile_re2(self.value)
        except ValueError as exc:
            raise ValidationError({"value": str(exc)}) from exc
