from __future__ import annotations

from django.urls import path

from roles.apis import agents, catalog, drafts, endpoints, mcp, me, portability, roles
from roles.apis.check import RoleToolCheckApi
from roles.apis.examples import RoleTestApi
from roles.apis.replay import RoleReplayApi

urlpatterns = [
    path("me/", me.MeApi.as_view(), name="api-me"),
    path("agents/", agents.CustomAgentCollectionApi.as_view(), name="api-agents"),
    path("agents/<str:role>/", agents.CustomAgentDetailApi.as_view(), name="api-agent"),
    path("roles/", roles.RoleCollectionApi.as_view(), name="api-roles"),
    path("roles/export/", portability.RoleExportApi.as_view(), name="api-roles-export"),
    path("roles/import/", portability.RoleImportApi.as_view(), name="api-roles-import"),
    path("roles/test/", RoleTestApi.as_view(), name="api-roles-test"),
    path("roles/<str:name>/", roles.RoleResourceApi.as_view(), name="api-role"),
    path("roles/<str:name>/replay/", RoleReplayApi.as_view(), name="api-role-replay"),
    path("roles/<str:name>/prompt/", roles.RolePromptApi.as_view(), name="api-role-prompt"),
    path("roles/<str:name>/check/", RoleToolCheckApi.as_view(), name="api-role-check"),
    path(
        "roles/<str:name>/argument-limits/",
        mcp.ArgumentLimitCollectionApi.as_view(),
        name="api-role-argument-limits",
    ),
    path(
        "roles/<str:name>/argument-limits/<str:tool>/",
        mcp.ArgumentLimitResourceApi.as_view(),
        name="api-role-argument-limit",
    ),
    path("mcp-servers/", mcp.McpServerCollectionApi.as_view(), name="api-mcp-servers"),
    path("mcp-servers/<str:slug>/", mcp.McpServerResourceApi.as_view(), name="api-mcp-server"),
    path(
        "mcp-servers/<str:slug>/refresh/",
        mcp.McpServerRefreshApi.as_view(),
        name="api-mcp-server-refresh",
    ),
    path("mcp-servers/<str:slug>/tools/", mcp.McpToolListApi.as_view(), name="api-mcp-tools"),
    path(
        "mcp-servers/<str:slug>/tools/<str:tool>/approve/",
        mcp.McpToolApproveApi.as_view(),
        name="api-mcp-tool-approve",
    ),
    path("role-drafts/", drafts.RoleDraftListApi.as_view(), name="api-role-drafts"),
    path("role-drafts/<int:pk>/", drafts.RoleDraftDetailApi.as_view(), name="api-role-draft"),
    path(
        "role-drafts/<int:pk>/publish/",
        drafts.RoleDraftPublishApi.as_view(),
        name="api-role-draft-publish",
    ),
    path(
        "role-drafts/<int:pk>/reject/",
        drafts.RoleDraftRejectApi.as_view(),
        name="api-role-draft-reject",
    ),
    path("tools/", catalog.ToolListApi.as_view(), name="api-tools"),
    path("transition-rules/", catalog.TransitionRuleListApi.as_view(), name="api-transition-rules"),
    path("prompt-packs/", catalog.PromptPackListApi.as_view(), name="api-prompt-packs"),
    path("prompt-packs/<str:name>/", catalog.PromptPackDetailApi.as_view(), name="api-prompt-pack"),
    path("model-endpoints/", endpoints.ModelEndpointListApi.as_view(), name="api-model-endpoints"),
    path(
        "model-endpoints/<str:name>/",
        endpoints.ModelEndpointDetailApi.as_view(),
        name="api-model-endpoint",
    ),
    path(
        "model-endpoints/<str:name>/check/",
        endpoints.ModelEndpointCheckApi.as_view(),
        name="api-model-endpoint-check",
    ),
]
