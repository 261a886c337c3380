"""Attribute names: the GenAI semantic conventions plus the few otel-replay adds.

GenAI names are the current ones (semconv >= 0.65); the names they replaced are
listed in ``LEGACY`` so readers can accept both.

Every content-carrying attribute ``A`` (a tool result, the input messages, ...)
may come with companions that make it byte-exact::

    otel_replay.sha256.A   hex sha256 of the exact payload bytes (always)
    otel_replay.type.A     type tag of the payload codec (when not plain text)
    otel_replay.bytes.A    the exact bytes, when ``A`` itself cannot carry them
    otel_replay.ref.A      "sha256:<hex>": the bytes live in the blob store
    otel_replay.size.A     payload size in bytes
"""

from __future__ import annotations

from typing import Final

# --- GenAI semantic conventions -------------------------------------------------
#: Instrumentation scope of our own capture spans (already written in the current semconv).
SCOPE_NAME: Final = "otel_replay"
OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_ID: Final = "gen_ai.response.id"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
#: Where content was stored instead of on the span: ``gen_ai.input.messages`` + this
#: (opentelemetry-util-genai's upload hook writes ``gen_ai.input.messages_ref`` and the like).
STORED_REF: Final = "_ref"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
ERROR_TYPE: Final = "error.type"
#: The message of the exception that failed a span, where a dialect read it from elsewhere
#: than an exception event (the exception semconv's attribute, set on the span).
EXCEPTION_MESSAGE: Final = "exception.message"

#: Request parameters, as ``gen_ai.request.<name>``.
REQUEST_PARAMS: Final = (
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "stop_sequences",
    "choice.count",
    "stream",
)
REQUEST_PREFIX: Final = "gen_ai.request."

#: Replaced names still found in older traces: old -> current.
LEGACY: Final = {
    "gen_ai.system": PROVIDER_NAME,
    "gen_ai.usage.prompt_tokens": USAGE_INPUT_TOKENS,
    "gen_ai.usage.completion_tokens": USAGE_OUTPUT_TOKENS,
    "gen_ai.openai.request.seed": "gen_ai.request.seed",
}

OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_INVOKE_AGENT: Final = "invoke_agent"
MODEL_OPERATIONS: Final = frozenset(
    {"chat", "text_completion", "generate_content", "embeddings", "responses"}
)
OP_CREATE_AGENT: Final = "create_agent"
AGENT_OPERATIONS: Final = frozenset({"invoke_agent", OP_CREATE_AGENT, "invoke_workflow"})

# --- identity (semconv registry names; tenant has none, so the plain one) -------
USER_ID: Final = "user.id"
SESSION_ID: Final = "session.id"
TENANT_ID: Final = "tenant.id"

# --- otel-replay ------------------------------------------------------------------
PREFIX: Final = "otel_replay."
SHA256: Final = "otel_replay.sha256."
TYPE: Final = "otel_replay.type."
BYTES: Final = "otel_replay.bytes."
REF: Final = "otel_replay.ref."
SIZE: Final = "otel_replay.size."

#: Paths of values replaced by the redactor, e.g. ``gen_ai.tool.call.arguments.api_key``.
REDACTED: Final = "otel_replay.redacted"
#: Exception constructor arguments, as a payload (so replay re-raises them exactly).
EXCEPTION_ARGS: Final = "otel_replay.exception.args"
#: "NO_CONTENT" when content capture was off for this span.
CONTENT: Final = "otel_replay.content"
#: How the span's provider sent a failed tool's result, where its messages keep only the
#: error's text: "error_object" is ``{"error": <text>}`` (pydantic-ai), "error_object_text"
#: the JSON text of it as JavaScript writes it (the Vercel AI SDK's OpenAI providers).
TOOL_ERRORS_SENT_AS: Final = "otel_replay.tool_errors_sent_as"
#: True on a tool span whose stack records no result for a tool that returned None (the
#: openai-agents SDK): unless the step failed, its result is None, not missing.
TOOL_RETURNED_NONE: Final = "otel_replay.tool_returned_none"
#: True on a failed tool span whose stack marks the failure from what the tool returned
#: (Google ADK marks a returned dict with an "error" member, and records no exception):
#: its recorded result is what the tool returned, and replay returns it.
TOOL_ERROR_RETURNED: Final = "otel_replay.tool_error_returned"
#: True on a tool span whose stack answered the model's call itself, without running the
#: tool (CrewAI answers a call made again with the arguments of the one before with its
#: own words): its result is what the model was sent; a replay expects no call of the tool.
TOOL_NOT_RUN: Final = "otel_replay.tool_not_run"
#: How the span's stack turned its tools' values into the text the model was sent, where no
#: tool span records them: "str_as_is" sends a str as it is and any other value as text
#: of its own making (Haystack), so a tool returning the very text the model was sent
#: gives the same request.
TOOL_RESULTS_SENT_AS: Final = "otel_replay.tool_results_sent_as"
#: How the span's client sent back the text of earlier answers in its input, where the
#: messages keep the text: "item_reference" is a reference to the message item the server
#: stored (the Vercel AI SDK's OpenAI Responses provider, which stores answers by default).
ANSWERS_SENT_AS: Final = "otel_replay.answers_sent_as"
#: "not_recorded" on a model span whose stack records an answer with tool calls without
#: any text the model wrote beside them (Semantic Kernel): the replay kit names that text.
TEXT_BESIDE_CALLS: Final = "otel_replay.text_beside_calls"
#: True on a model span whose stack records the request's input without the system
#: instructions sent beside it (the OpenTelemetry bridge of openai-agents on a Responses
#: model: the SDK sends the agent's instructions apart from the input items, and the bridge
#: reads system instructions off the items alone): whether there were any is not known,
#: and the replay kit names them as not recorded.
SYSTEM_NOT_RECORDED: Final = "otel_replay.system_not_recorded"
#: On a model span whose stack gives a tool call the model sent without an id one of its
#: own and records it as the model's: the form of those ids ("pyd_ai": pydantic-ai's
#: ``pyd_ai_<32 hex>``, "adk": Google ADK's ``adk-<uuid4>`` or index, "ai_sdk": the Vercel AI SDK's
#: 16 letters and digits), which no model writes, so a call with one came with no id on
#: the wire (see :mod:`otel_replay.runs.made_ids`).
CALL_IDS_MADE_AS: Final = "otel_replay.call_ids_made_as"
#: What dialects tell the reader about a span, never written on exported spans (a reader
#: derives them again from the span itself).
READER_HINTS: Final = frozenset(
    {
        TOOL_ERRORS_SENT_AS,
        TOOL_RETURNED_NONE,
        TOOL_ERROR_RETURNED,
        TOOL_NOT_RUN,
        TOOL_RESULTS_SENT_AS,
        ANSWERS_SENT_AS,
        TEXT_BESIDE_CALLS,
        SYSTEM_NOT_RECORDED,
        CALL_IDS_MADE_AS,
    }
)

FP: Final = "otel_replay.fingerprint."
FP_COMMIT: Final = "otel_replay.fingerprint.commit"
FP_DIRTY: Final = "otel_replay.fingerprint.dirty"
FP_PYTHON: Final = "otel_replay.fingerprint.python"
FP_PACKAGES: Final = "otel_replay.fingerprint.packages"
FP_FLAGS: Final = "otel_replay.fingerprint.flags"
FP_SEED: Final = "otel_replay.fingerprint.seed"
FP_HOST: Final = "otel_replay.fingerprint.host"

REDACTED_VALUE: Final = "[REDACTED]"

#: ``otel_replay.snapshot(name, state)``: a span event of this name on the current span,
#: with the snapshot's name and its state as a byte-exact payload (the companions above).
SNAPSHOT_EVENT: Final = "otel_replay.snapshot"
SNAPSHOT_NAME: Final = "otel_replay.snapshot.name"
SNAPSHOT_STATE: Final = "otel_replay.snapshot.state"

# --- the raw HTTP exchange of a model call (capture/http_recorder.py) ---------------
#: Request and response bodies as sent, byte-exact payloads (digest, bytes, blob ref).
HTTP_REQUEST_BODY: Final = "otel_replay.http.request.body"
HTTP_RESPONSE_BODY: Final = "otel_replay.http.response.body"
#: Headers as a JSON object, lower-case names, secrets redacted.
HTTP_REQUEST_HEADERS: Final = "otel_replay.http.request.headers"
HTTP_RESPONSE_HEADERS: Final = "otel_replay.http.response.headers"
#: Size in bytes of each response chunk, in the order the server sent them.
HTTP_CHUNK_SIZES: Final = "otel_replay.http.response.chunk_sizes"
#: Milliseconds from sending the request to receiving each chunk.
HTTP_CHUNK_OFFSETS_MS: Final = "otel_replay.http.response.chunk_offsets_ms"
HTTP_METHOD: Final = "http.request.method"
HTTP_STATUS: Final = "http.response.status_code"
URL_PATH: Final = "url.path"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
