"""What OpenAI's two APIs, Chat Completions and Responses, write and read alike, shared by their dialects
(`openai_chat`, `openai_responses`) rather than copied: usage as OpenAI names it (which the eval contract,
`agent_respond`, names as Chat Completions does), the error object and what a judge asks of one, the model listing,
and the pieces of a request both read and write (content parts as data URLs, the upstream request).

Not a dialect: the registry lists none of it, and it imports only the core (`tests/test_architecture.py` declares
who may import it)."""
