"""Attribute types given back to the strings of the clickhouseexporter's Map columns.

The exporter keeps every attribute value as the text pdata's
``Value.AsString`` makes of it: ``1024`` for the int 1024, ``0.5`` for the
double, ``true`` for the bool, ``["stop"]`` for a list, base64 for bytes.
That text alone cannot tell the int 7 from the string "7", so types are
given back by name, for the attributes whose type a convention fixes: the
GenAI semantic conventions, the instrumentations otel-replay reads
(OpenInference, OpenLLMetry, the Vercel AI SDK, LiteLLM, smolagents...), and
otel-replay's own.  A value is retyped only when its text is what the
exporter writes for that type; any other attribute, or a text that is not,
stays the string ClickHouse holds.  Where the instrumentation (the span's
scope) fixes a type the name alone leaves open, the scope decides.

A double without a fraction reads back as an int (the exporter writes 1.0
as ``1``): equal as a number, though not as a JSON value.

A list is written as Go's ``encoding/json`` writes it: compact, its strings
escaped its way (``<`` as ``\\u003c``).  A text of a list spelt otherwise
(spaced items, as Python's ``json.dumps`` writes them) was a string
attribute, and stays that string; a string spelt exactly as Go spells the
list cannot be told from the list, and reads as the list.  Where neither the
name nor the scope fixes the type (a message content an instrumentation may
set as a string or a list), that reading is a guess: the reader says so of
the span (:func:`ambiguous`), and the run's kit check says it of the step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from ... import attributes as A
from ...bytes_text import from_base64
from ...json_text import loads
from ...limits import MAX_NESTING
from .go_json import Raw, go_json

__all__ = [
    "SCOPE_NAME",
    "SCOPE_VERSION",
    "ambiguous",
    "attribute_type",
    "column_attributes",
    "text_contents",
    "typed_attributes",
    "typed_value",
]

#: Where exporters before 2024 kept the span's instrumentation scope.
SCOPE_NAME, SCOPE_VERSION = "otel.scope.name", "otel.scope.version"

#: What a convention says an attribute holds.
Kind = Literal["int", "number", "bool", "strings", "numbers", "bytes", "list"]

#: By exact name.
_EXACT: Final[dict[str, Kind]] = {
    # GenAI semantic conventions (gen_ai registry)
    "gen_ai.request.max_tokens": "int",
    "gen_ai.request.seed": "int",
    "gen_ai.request.choice.count": "int",
    "gen_ai.request.temperature": "number",
    "gen_ai.request.top_p": "number",
    "gen_ai.request.top_k": "number",
    "gen_ai.request.frequency_penalty": "number",
    "gen_ai.request.presence_penalty": "number",
    "gen_ai.request.stop_sequences": "strings",
    "gen_ai.request.encoding_formats": "strings",
    "gen_ai.request.stream": "bool",
    "gen_ai.response.finish_reasons": "strings",
    "gen_ai.embeddings.dimension.count": "int",
    "gen_ai.is_streaming": "bool",
    "gen_ai.response.time_to_first_chunk": "number",
    "gen_ai.server.time_to_first_token": "number",
    "gen_ai.client.operation.duration": "number",
    "gen_ai.client.operation.time_to_first_chunk": "number",
    "gen_ai.client.operation.time_per_output_chunk": "number",
    "gen_ai.execute_tool.duration": "number",
    "gen_ai.workflow.nodes": "strings",
    "gen_ai.workflow.edges": "strings",
    # general conventions
    A.SERVER_PORT: "int",
    A.HTTP_STATUS: "int",
    "process.pid": "int",
    "process.parent_pid": "int",
    "process.command_args": "strings",
    "thread.id": "int",
    "code.lineno": "int",
    "code.line.number": "int",
    # OpenLLMetry
    "llm.is_streaming": "bool",
    "llm.request.max_tokens": "int",
    "llm.request.temperature": "number",
    "llm.request.top_p": "number",
    "llm.top_k": "number",
    "llm.frequency_penalty": "number",
    "llm.presence_penalty": "number",
    "llm.chat.stop_sequences": "strings",
    "traceloop.association.properties.langgraph_step": "int",
    "traceloop.association.properties.langgraph_path": "strings",
    "traceloop.association.properties.langgraph_triggers": "strings",
    "traceloop.association.properties.ls_temperature": "number",
    "llm.openai.temperature": "number",
    "llm.openai.top_p": "number",
    "llm.openai.stream": "bool",
    "llm.openai.store": "bool",
    "llm.openai.background": "bool",
    "llm.openai.parallel_tool_calls": "bool",
    "llm.openai.created": "int",
    "llm.openai.created_at": "int",
    "llm.anthropic.temperature": "number",
    # the Vercel AI SDK
    "ai.settings.temperature": "number",
    "ai.settings.topP": "number",
    "ai.settings.topK": "number",
    "ai.settings.maxRetries": "int",
    "ai.settings.seed": "int",
    "ai.settings.frequencyPenalty": "number",
    "ai.settings.presencePenalty": "number",
    "ai.settings.stopSequences": "strings",
    "ai.prompt.tools": "strings",
    "ai.response.msToFirstChunk": "number",
    "ai.response.msToFinish": "number",
    "ai.response.avgOutputTokensPerSecond": "number",
    "ai.response.avgCompletionTokensPerSecond": "number",
    # LiteLLM, smolagents, CrewAI, pydantic-ai
    "litellm.cache_hit": "bool",
    "llm.cost.total": "number",
    "operation.cost": "number",
    "smolagents.max_steps": "int",
    "smolagents.tools_names": "strings",
    "tool.current_usage_count": "int",
    "tool.run_attempts": "int",
    "tool.description_updated": "bool",
    "tool.result_as_answer": "bool",
    "tools": "strings",
    "pydantic_ai.tool.retry.attempt": "int",
    "pydantic_ai.tool.retry.max_retries": "int",
    # otel-replay
    A.FP_DIRTY: "bool",
    A.FP_SEED: "int",
    A.FP_PACKAGES: "strings",
    A.REDACTED: "strings",
    A.HTTP_CHUNK_SIZES: "numbers",
    A.HTTP_CHUNK_OFFSETS_MS: "numbers",
}
#: By the start of the name.
_PREFIXES: Final[tuple[tuple[str, Kind], ...]] = (
    (A.BYTES, "bytes"),
    (A.SIZE, "int"),
    ("gen_ai.usage.", "int"),
    ("gen_ai.aggregated_usage.", "int"),
    ("gen_ai.cost.", "number"),
    ("llm.token_count.", "int"),
    ("llm.usage.", "int"),
    ("ai.usage.", "int"),
)
#: OpenInference's message contents: strings, or array attributes (of strings, or of the
#: blocks LiteLLM's Responses API spans record as maps).  A content that is the
#: instrumentation's own JSON text of its blocks is a string: Go spells the list otherwise.
_CONTENT: Final = re.compile(r"llm\.(?:input|output)_messages\.\d+\.message\.content")
#: By pattern.
_PATTERNS: Final[tuple[tuple[re.Pattern[str], Kind], ...]] = ((_CONTENT, "list"),)
#: Instrumentations (scope names, and the modules under them) whose message contents are
#: strings whatever their text: OpenInference's LangChain instrumentors keep ``content``
#: only when it is a string (a list of blocks goes to ``message.contents.N``), in Python
#: and JS; OpenAI's writes any other list as its JSON text; CrewAI's event listener
#: passes CrewAI's content on, a string or a list of maps no attribute holds (the SDK
#: drops it).  A text Go spells as a list is then a string: a tool's list of texts, an
#: empty list ``[]``.
_TEXT_CONTENT_SCOPES: Final = (
    "openinference.instrumentation.langchain",
    "@arizeai/openinference-instrumentation-langchain",
    "openinference.instrumentation.openai",
    "openinference.instrumentation.crewai",
)
#: Names ending so count tokens, whatever their namespace (``llm.openai.max_tokens``,
#: ``ai.settings.maxOutputTokens``).
_TOKENS = re.compile(r"(?:_tokens|Tokens)$")
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_INT64 = range(-(2**63), 2**63)


def attribute_type(name: str, scope: str = "") -> Kind | None:
    """What the conventions say ``name`` holds, set by the instrumentation ``scope`` names;
    None for a string or an unknown name."""
    kind = _EXACT.get(name)
    if kind is not None:
        return kind
    for prefix, kind in _PREFIXES:
        if name.startswith(prefix):
            return kind
    for pattern, kind in _PATTERNS:
        if pattern.fullmatch(name):
            return None if pattern is _CONTENT and text_contents(scope) else kind
    return "int" if _TOKENS.search(name) else None


def text_contents(scope: str) -> bool:
    """Whether the instrumentation ``scope`` names sets message contents as strings only."""
    return any(scope == s or scope.startswith(s + ".") for s in _TEXT_CONTENT_SCOPES)


def typed_value(kind: Kind, text: str) -> Any:
    """The value the exporter wrote as ``text``, if ``text`` is how it writes a ``kind``;
    else ``text`` itself."""
    got = _READ[kind](text)
    return text if got is None else got


def column_attributes(
    value: Any, flat: bool, scope: str | None = "", guessed: list[str] | None = None
) -> dict[str, Any]:
    """The attributes of one attributes column: a ``Map(String, String)`` with the types
    known for the instrumentation ``scope`` names given back (None: the scope the
    attributes name, as in tables of exporters before 2024); a ``JSON`` one (``flat``)
    with its objects joined into dotted keys.  The names of the attributes whose type
    was guessed are added to ``guessed`` (see :func:`typed_attributes`).  ``TypeError``
    when the column holds no object."""
    if not isinstance(value, dict):
        raise TypeError("an attributes column that is not an object")
    out: dict[str, Any] = value
    if flat:
        out = {}
        _join("", value, out)
    if scope is None:
        scope = str(out.get(SCOPE_NAME, ""))
    return typed_attributes(out, scope, guessed)


def _join(prefix: str, value: dict[str, Any], out: dict[str, Any], depth: int = 0) -> None:
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict) and item and depth < MAX_NESTING:
            _join(name + ".", item, out, depth + 1)
        else:
            out[name] = item


def typed_attributes(
    values: Mapping[str, Any], scope: str = "", guessed: list[str] | None = None
) -> dict[str, Any]:
    """``values`` (set by the instrumentation ``scope`` names) with the types of the
    attributes whose type is known given back; the names of those read as another type
    than the string they are though neither name nor scope fixes their type (a string
    may be spelt so too) added to ``guessed``."""
    out = dict(values)
    for name, value in values.items():
        if type(value) is str:
            kind = attribute_type(name, scope)
            if kind is not None:
                out[name] = typed = typed_value(kind, value)
                if guessed is not None and typed is not value and _left_open(name):
                    guessed.append(name)
    return out


def _left_open(name: str) -> bool:
    """Whether the type of ``name`` is one of several its instrumentations set (a string
    or a list), which no scope that :func:`attribute_type` reads as a string fixed."""
    return _CONTENT.fullmatch(name) is not None


def ambiguous(name: str, where: str = "") -> str:
    """What the reader says of the attribute ``name`` (of the event ``where`` names, if
    any) it read as a list though a string is spelt so too."""
    of = f" of event {where!r}" if where else ""
    return (
        f"the type of attribute {name!r}{of} is ambiguous: the table keeps it as text, spelt"
        " as the exporter spells a list, and a string spelt so is kept the same; read as"
        " the list"
    )


def _int(text: str) -> int | None:
    if _INT.fullmatch(text):
        value = int(text)
        if value in _INT64:
            return value
    return None


def _number(text: str) -> int | float | None:
    if not _NUMBER.fullmatch(text):
        return None
    return _exact(int(text)) if _INT.fullmatch(text) else float(text)


def _exact(value: int) -> int | float:
    """An integer text as the number it was: an int while a double holds it exactly; past
    2**53 it was a double written in its shortest digits (``4.0553097072643728e16`` is
    ``40553097072643730``)."""
    return value if -(2**53) <= value <= 2**53 else float(value)


def _bool(text: str) -> bool | None:
    return {"true": True, "false": False}.get(text)


def _list(text: str, item: Callable[[Any], bool]) -> list[Any] | None:
    if not text.startswith("["):
        return None
    try:
        value = loads(text)
    except ValueError:
        return None
    if type(value) is not list or not all(map(item, value)):
        return None
    return value if _as_go_writes(text) else None


def _as_go_writes(text: str) -> bool:
    """Whether ``text`` (JSON within the nesting bound) is spelt as Go's ``encoding/json``
    spells its value (by Go 1.22 or before, which escaped ``\\b`` and ``\\f`` otherwise):
    compact, keys sorted, strings escaped Go's way.  Numbers are taken as they are
    written (Go's ``-0`` is no Python number)."""
    value = json.loads(text, parse_int=Raw, parse_float=Raw, parse_constant=Raw)
    return text == go_json(value) or text == go_json(value, old=True)


def _strings(text: str) -> list[str] | None:
    return _list(text, lambda v: type(v) is str)


def _numbers(text: str) -> list[int | float] | None:
    found = _list(text, lambda v: type(v) in (int, float))
    return None if found is None else [_exact(v) if type(v) is int else v for v in found]


_READ: Final[dict[Kind, Callable[[str], Any]]] = {
    "int": _int,
    "number": _number,
    "bool": _bool,
    "strings": _strings,
    "numbers": _numbers,
    "bytes": from_base64,
    "list": lambda text: _list(text, lambda v: True),
}
