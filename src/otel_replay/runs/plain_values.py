"""The content of a plain run's spans, read straight from their attributes' text.

A first ``ls`` reads every message list of a file, and most are JSON text with
their digest beside them (otel-replay's capture) or without one (third-party
spans).  The payload reader (:func:`~..payload.attributes.from_attributes`)
makes an object of each, checks it and decodes it through the codec: that
costs as much as the parse itself.  A span of a plain run (see
:mod:`.quick_summary`) has no bytes, blob or reference companion, so its value
is its text parsed once the digest, when recorded, matches.  These functions
read that common form so and give every other form to the payload reader; a
test compares both readings on drawn attributes.  Which spans' names allow a
plain run's is told here too (:func:`shape`), once per set of names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import json_text
from .. import messages as M
from ..dialects.placeholders import may_hold_placeholder
from ..dialects.registry import genai_only, genai_only_by_names
from ..otlp.records import SpanRecord
from ..payload import codec as payload
from ..payload.attributes import from_attributes
from .build import IDS
from .kit import _damaged
from .steps import _arguments, _content, _messages, _result, _semconv_object

MESSAGE_LISTS = (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES)
TOOL_VALUES = (A.TOOL_CALL_ARGUMENTS, A.TOOL_CALL_RESULT)
#: The payload types under which an attribute's text is parsed as JSON as it stands: JSON,
#: and text with no type or typed ``str`` (third-party spans carry JSON so).
_AS_TEXT = (None, payload.JSON, payload.STR)
#: Each value's digest and type attribute names, made once (a name made per span is
#: hashed per span, and every span's are looked up).
_DIGEST = {key: A.SHA256 + key for key in (*MESSAGE_LISTS, *TOOL_VALUES)}
_TYPE = {key: A.TYPE + key for key in (*MESSAGE_LISTS, *TOOL_VALUES)}
_sha256 = hashlib.sha256


#: The content attributes a plain span may carry, each with its digest and type.
_CONTENT = (
    A.INPUT_MESSAGES,
    A.OUTPUT_MESSAGES,
    A.TOOL_CALL_ARGUMENTS,
    A.TOOL_CALL_RESULT,
    A.SYSTEM_INSTRUCTIONS,
    A.TOOL_DEFINITIONS,
)
#: The attribute names a span of a plain run may carry (and ``gen_ai.request.*``, and
#: the run's identity: :data:`~.build.IDS`, ``otel_replay.fingerprint.*``).
PLAIN_KEYS = frozenset(
    (
        A.OPERATION_NAME,
        A.AGENT_NAME,
        A.PROVIDER_NAME,
        A.REQUEST_MODEL,
        A.RESPONSE_MODEL,
        A.RESPONSE_ID,
        A.RESPONSE_FINISH_REASONS,
        A.USAGE_INPUT_TOKENS,
        A.USAGE_OUTPUT_TOKENS,
        A.TOOL_NAME,
        A.TOOL_TYPE,
        A.TOOL_DESCRIPTION,
        A.TOOL_CALL_ID,
        *_CONTENT,
        *(A.SHA256 + k for k in _CONTENT),
        *(A.TYPE + k for k in _CONTENT),
    )
)
_IDS = frozenset(IDS)
#: By scope and attribute names (in their order: a stack writes them so each time): what
#: :func:`shape` tells of a span of them.  A run's spans share a few sets of names: each
#: set is judged once.
SHAPES: dict[tuple[str, tuple[str, ...]], tuple[bool, bool]] = {}
_MAX_SHAPES = 4096


def shape(span: SpanRecord) -> tuple[bool, bool]:
    """Whether ``span``'s scope and attribute names allow a plain run's span (see
    :mod:`.quick_summary`: names among :data:`PLAIN_KEYS`, none its stack's dialects
    read), and whether they name the run's user, session, tenant or build; kept in
    :data:`SHAPES` when the names alone tell it."""
    attrs = span.attributes
    marked = False
    plain = True
    if not PLAIN_KEYS.issuperset(attrs):
        for k in attrs:
            if k in _IDS or k.startswith(A.FP):
                marked = True
            elif k not in PLAIN_KEYS and not k.startswith(A.REQUEST_PREFIX):
                plain = False
                break
    # A dialect reads it otherwise.  (The GenAI one alone, which every span speaks, adds
    # only current names for replaced ones: none of PLAIN_KEYS is one.)
    plain = plain and genai_only(
        attrs, name=span.name, scope=span.scope_name, scope_version=span.scope_version
    )
    if not plain or genai_only_by_names(attrs, scope=span.scope_name) is not None:
        if len(SHAPES) >= _MAX_SHAPES:
            SHAPES.clear()
        SHAPES[span.scope_name, tuple(attrs)] = (plain, marked)
    return plain, marked


def _matches(text: str, digest: str | None) -> bool:
    # (hashlib's own function, as payload.sha256 uses it: every value of a listing is
    # checked, and the call between costs a tenth of hashing a short one.)
    return digest is None or _sha256(text.encode("utf-8", "surrogatepass")).hexdigest() == digest


def message_list(attrs: Mapping[str, Any], key: str) -> tuple[Any, bool, bool, bool, bool]:
    """What :func:`~.steps._content` reads of a plain span's message list under ``key``,
    whether its payload is damaged (:func:`~.kit._damaged`), whether the messages are a
    chat's text alone (:func:`chat_only`), whether they were parsed from JSON text as
    it stands (then they are plain JSON, :func:`~..payload.codec.is_plain_json`: parsed
    JSON nests no deeper than the bound, far below the codec's), and whether the value
    surely holds no placeholder (:func:`blank`, of this key alone: its text and type are
    at hand here)."""
    text = attrs.get(key)
    digest = attrs.get(_DIGEST[key])
    type_ = attrs.get(_TYPE[key])
    if (
        type(text) is str
        and type_ in _AS_TEXT
        and (digest is None or type(digest) is str)
        and _matches(text, digest)
    ):
        try:
            value = json_text.loads_unbounded(text)
            chat = chat_only(value)
            if not chat:
                # A chat's text alone nests four levels deep: its brackets need no count
                # (the count costs a fifth of the parse of a long turn).
                json_text.bound(text, value)
            if type_ == payload.JSON and isinstance(value, str):
                value = json_text.loads(value)  # a JSON payload that is text: read as text
                chat = chat_only(value)
        except ValueError:
            # (The reader's second try, the same text, fails alike.)
            return None, False, False, False, not may_hold_placeholder(text)
        return value, False, chat, True, not may_hold_placeholder(text)
    value, p = _content(attrs, key, None)  # any other form, or a damaged payload
    return value, _damaged(p), chat_only(value), False, _clear(text, type_)


def tool_values(attrs: Mapping[str, Any]) -> tuple[Any, Any, bool, bool] | None:
    """A plain tool span's arguments and result as :func:`~.steps._arguments` and
    :func:`~.steps._result` read them, whether both were parsed from JSON text as it
    stands (then they are plain JSON, as in :func:`message_list`), and whether both surely
    hold no placeholder (:func:`blank`); None unless both are byte-exact (recorded with a
    digest that matches), as a plain tool span's must be."""
    values = []
    clear = True
    for key in TOOL_VALUES:
        text = attrs.get(key)
        digest = attrs.get(_DIGEST[key])
        if type(text) is not str or type(digest) is not str:
            return _read_tool_values(attrs)
        if attrs.get(_TYPE[key]) != payload.JSON:
            return _read_tool_values(attrs)
        if not _matches(text, digest):
            return None  # not byte-exact
        clear = clear and not may_hold_placeholder(text)
        try:
            value = json_text.loads(text)
        except ValueError:
            values.append(text)  # no JSON after all: both readers keep the text
            continue
        if key == A.TOOL_CALL_ARGUMENTS and isinstance(value, str):
            value = M.parse_arguments(value)  # JSON text of JSON text, as semconv writes it
        values.append(value)
    return values[0], values[1], True, clear


def _read_tool_values(attrs: Mapping[str, Any]) -> tuple[Any, Any, bool, bool] | None:
    """:func:`tool_values` through the payload reader: any form of a tool's values."""
    args_p = from_attributes(attrs, A.TOOL_CALL_ARGUMENTS, None)
    result_p = _semconv_object(from_attributes(attrs, A.TOOL_CALL_RESULT, None), attrs)
    if args_p is None or result_p is None:
        return None
    if args_p.status != "exact" or result_p.status != "exact":
        return None
    arguments = _arguments(args_p, attrs.get(A.TOOL_CALL_ARGUMENTS))
    result = _result(result_p, attrs.get(A.TOOL_CALL_RESULT))
    return arguments, result, False, blank(attrs, TOOL_VALUES)


def blank(attrs: Mapping[str, Any], keys: tuple[str, str]) -> bool:
    """Whether the values a plain span gives under ``keys`` surely hold no placeholder.

    Each is read from its attribute's text alone (a plain span has no bytes, blob or
    reference companion) unless its payload type decodes otherwise; a text that
    :func:`~..dialects.placeholders.may_hold_placeholder` clears cannot give one.
    """
    return all(_clear(attrs.get(key), attrs.get(_TYPE[key])) for key in keys)


def _clear(text: Any, type_: Any) -> bool:
    """:func:`blank` of one value: its attribute's ``text`` and its payload ``type_``."""
    if text is None:
        return True  # nothing recorded: the value is None
    if not isinstance(text, str) or type_ not in _AS_TEXT:
        return False
    return not may_hold_placeholder(text)


#: The roles of a chat's turns that call no tool and answer none.
_CHAT_ROLES = frozenset(("user", "assistant", "system"))


def chat_only(messages: Any) -> bool:
    """Whether parsed ``messages`` are GenAI messages of text alone: each a user's,
    assistant's or system turn whose parts are all of type ``text``, no other value of
    a message or of a part a list or a map.

    Normalized (:func:`~.steps._messages`), such messages hold no tool's turn and no
    part that calls a tool or answers one (a message's parts are read, never its
    ``tool_calls``; a part of type ``text`` stays one), so the checks for tool calls
    need not normalize them: most turns of a chat.  And they nest four levels deep, so
    their text needs no bound on nesting (:func:`~..json_text.bound`).
    """
    if type(messages) is not list:
        return False
    for message in messages:
        if type(message) is not dict or message.get("role") not in _CHAT_ROLES:
            return False
        parts = message.get("parts")
        if type(parts) is not list:
            return False
        if len(message) > 2:  # (a role and parts alone, most often)
            for k, v in message.items():
                if k != "parts" and type(v) in _NESTED:
                    return False
        for part in parts:
            if type(part) is not dict or part.get("type") != "text":
                return False
            for v in part.values():
                if type(v) in _NESTED:
                    return False
    return True


#: What a parsed JSON value nests in.
_NESTED = frozenset((list, dict))


def normalized(messages: Any) -> list[dict[str, Any]] | None:
    """:func:`~.steps._messages` of parsed ``messages``: the messages themselves when they
    are their own normalization (:func:`as_normalized`), as most of our capture's are."""
    return messages if as_normalized(messages) else _messages(messages)


#: The keys, in order, of a message that normalizes to itself.
_MESSAGE_KEYS = ("role", "parts")
#: The keys, in order, of a part of each type that normalizes to an equal copy of itself.
_PART_KEYS = {
    "tool_call": (("type", "id", "name", "arguments"), ("type", "id", "name")),
    "tool_call_response": (("type", "id", "response"),),
}


def as_normalized(messages: Any) -> bool:
    """Whether parsed ``messages`` normalize (:func:`~.steps._messages`) to a list equal
    to them, keys in the same order: GenAI messages of a role and parts alone (no role
    renamed, no user's turn of tool results alone), each part text with its content, a
    call with its id, name and arguments as values (not text, which is parsed), or a
    result with its id and a response that is no list (a list of text blocks is joined).
    The checks of a plain run then read them as they are, and no copy is made.
    """
    if type(messages) is not list:
        return False
    for message in messages:
        if type(message) is not dict or tuple(message) != _MESSAGE_KEYS:
            return False
        role, parts = message["role"], message["parts"]
        if type(role) is not str or role == "model" or type(parts) is not list:
            return False
        for part in parts:
            if type(part) is not dict:
                return False
            kind = part.get("type")
            if kind == "text" and "content" in part:
                continue
            if type(kind) is not str or tuple(part) not in _PART_KEYS.get(kind, ()):
                return False
            if kind == "tool_call":
                if type(part.get("arguments")) is str:
                    return False
            elif role == "user" or type(part["response"]) is list:
                return False
    return True


def calls_of(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`~otel_replay.messages.tool_calls` of messages that :func:`as_normalized`
    passed (or one answer made of them, :func:`~otel_replay.messages.one_answer`): their
    ``tool_call`` parts themselves, not copies, when each id and name is text or absent
    (as they are but in a hostile trace).  Read, never changed, by the checks."""
    calls = [p for m in messages for p in m["parts"] if p["type"] == "tool_call"]
    for c in calls:
        if not (type(c["id"]) is str or c["id"] is None) or not (
            type(c["name"]) is str or c["name"] is None
        ):
            return M.tool_calls(messages)
    return calls
