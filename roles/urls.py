from __future__ import annotations

from django.urls import path

from roles import apis

urlpatterns = [
    path("roles/", apis.RoleListApi.as_view(), name="api-roles"),
    path("roles/<str:name>/", apis.RoleDetailApi.as_view(), name="api-role"),
    path("roles/<str:name>/prompt/", apis.RolePromptApi.as_view(), name="api-role-prompt"),
    path("tools/", apis.ToolListApi.as_view(), name="api-tools"),
    path("transition-rules/", apis.TransitionRuleListApi.as_view(), name="api-transition-rules"),
]
