"""Chat Completions' error objects (`adapters.openai_common.errors`): OpenAI's own `type` for a 401, a 403 and a 429."""

from __future__ import annotations

from adapters.openai_common.errors import ErrorObjects

ERRORS = ErrorObjects({401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"})
error_reply = ERRORS.reply
