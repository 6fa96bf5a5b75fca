"""Model endpoints: any OpenAI-compatible server; the embedded llama.cpp server by default."""

from __future__ import annotations

from acode.settings.env import env_bool, env_choice, env_float, env_int, env_list, env_str

ACODE_LLM_BASE_URL = env_str("ACODE_LLM_BASE_URL", "http://127.0.0.1:8011/v1")
ACODE_LLM_API_KEY_ENV = env_str("ACODE_LLM_API_KEY_ENV", "ACODE_LLM_API_KEY")
ACODE_LLM_DEFAULT_MODEL = env_str("ACODE_LLM_DEFAULT_MODEL", "smollm2-135m")
ACODE_LLM_TIMEOUT = env_float("ACODE_LLM_TIMEOUT", 120.0)
ACODE_LLM_CONTEXT_WINDOW = env_int("ACODE_LLM_CONTEXT_WINDOW", 8192)
# Constrain answers with a JSON schema (llama.cpp grammars) so tool calls always parse.
ACODE_LLM_JSON_SCHEMA = env_bool("ACODE_LLM_JSON_SCHEMA", True)
# How the server takes the schema: json_object (llama.cpp) or json_schema (OpenAI, vLLM, Ollama).
ACODE_LLM_SCHEMA_FORMAT = env_choice(
    "ACODE_LLM_SCHEMA_FORMAT", "json_object", ("json_object", "json_schema")
)
ACODE_LLM_MAX_ANSWER_TOKENS = env_int("ACODE_LLM_MAX_ANSWER_TOKENS", 512)
ACODE_TOOL_TIMEOUT = env_float("ACODE_TOOL_TIMEOUT", 120.0)
# Runs of these risk tiers pass only when their tests passed (a template's own
# require_tests overrides it): a run that ran no tests, or whose tests failed, fails.
ACODE_RUN_REQUIRE_TESTS_TIERS = env_list("ACODE_RUN_REQUIRE_TESTS_TIERS", ["medium", "high"])
