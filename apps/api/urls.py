"""The client APIs: REST under /api/v1/ (OpenAPI at /api/v1/openapi.json), OpenAI-compatible chat under
/v1/, MCP (Streamable HTTP) at /mcp. Every one authenticates with ``Authorization: Bearer KEY``
(apps/accounts/middleware.py); the REST API also takes a logged-in browser session."""

from django.urls import path

from apps.api import mcp_http, openai_views, rest

urlpatterns = [
    path("api/v1/", rest.api.urls),
    path("v1/models", openai_views.models, name="openai-models"),
    path("v1/models/<str:model_id>", openai_views.model, name="openai-model"),
    path("v1/chat/completions", openai_views.chat_completions, name="openai-chat"),
    path("mcp", mcp_http.endpoint, name="mcp"),
]
