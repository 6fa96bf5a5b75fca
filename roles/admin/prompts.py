"""Admin for prompt packs; dangerous prompt text is refused in the form."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from roles.admin.base import ServiceAdmin
from roles.models import PromptComponent, PromptPack
from roles.services import (
    prompt_component_delete,
    prompt_component_save,
    prompt_pack_delete,
    prompt_pack_save,
    prompt_rejection_record,
)
from roles.validation import text_findings


class PromptComponentForm(forms.ModelForm):
    class Meta:
        model = PromptComponent
        fields = ("key", "content")

    def __init__(self, *args: Any, actor: str = "admin", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.actor = actor

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        findings = text_findings(f"admin prompt {data.get('key')}", data.get("content") or "")
        if findings:
            prompt_rejection_record(
                where=f"admin prompt {data.get('key')}", actor=self.actor, findings=findings
            )
            described = "; ".join(
                f"{f['rule']}: {f['match']!r} (line {f['line']})" for f in findings
            )
            raise forms.ValidationError(
                f"ACODE-PRM-001: dangerous prompt content refused. {described}"
            )
        return data


class PromptComponentInline(admin.StackedInline):
    model = PromptComponent
    form = PromptComponentForm
    extra = 0


@admin.register(PromptPack)
class PromptPackAdmin(ServiceAdmin):
    list_display = ("name", "version", "description")
    inlines = [PromptComponentInline]

    def get_formset_kwargs(
        self, request: HttpRequest, obj: Any, inline: Any, prefix: str
    ) -> dict[str, Any]:
        kwargs = super().get_formset_kwargs(request, obj, inline, prefix)
        kwargs["form_kwargs"] = {"actor": request.user.get_username()}
        return kwargs

    def save_model(self, request: HttpRequest, obj: PromptPack, form: Any, change: bool) -> None:
        prompt_pack_save(pack=obj, actor=request.user.get_username())

    def delete_model(self, request: HttpRequest, obj: PromptPack) -> None:
        prompt_pack_delete(pack=obj, actor=request.user.get_username())

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        actor = request.user.get_username()
        components = formset.save(commit=False)
        for obj in formset.deleted_objects:
            prompt_component_delete(component=obj, actor=actor)
        for component in components:
            prompt_component_save(component=component, actor=actor)
