"""A plain span's content read straight from its text is what the payload reader reads.

:mod:`otel_replay.runs.plain_values` reads the common form of a message list
and of a tool's values (JSON text, its digest beside it or none) without the
payload reader.  The oracle is that reader (:func:`~otel_replay.runs.steps._content`,
and the tool reading of the full path), on drawn attributes: texts that are
JSON, JSON of JSON text, no JSON, values that are no text; each payload type,
no type and types that are none; digests that match, differ, are empty, are
no text.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import attributes as A
from otel_replay import json_text
from otel_replay import messages as M
from otel_replay.payload import codec as payload
from otel_replay.runs import plain_values as P
from otel_replay.runs.kit import _damaged
from otel_replay.runs.steps import _content, _messages

_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=5,
)
_MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "parts": st.just([])},
        optional={"content": st.text(max_size=5)},
    ),
    max_size=2,
)


@st.composite
def _text(draw: st.DrawFn) -> Any:
    """What an attribute holds where content is recorded."""
    value = draw(st.one_of(_MESSAGES, _JSON))
    how = draw(st.sampled_from(["json", "json of json", "no json", "deep", "deep chat", "no text"]))
    if how == "json":
        return json.dumps(value, ensure_ascii=draw(st.booleans()))
    if how == "json of json":
        return json.dumps(json.dumps(value))
    if how == "no json":
        return json.dumps(value)[:-1] + draw(st.sampled_from(["", "}", "x", "\ud800"]))
    if how == "deep":
        return "[" * 70 + "]" * 70
    if how == "deep chat":
        # A chat's text but for one value, nested past the bound: in a part or a turn.
        deep: Any = draw(st.sampled_from(["x", 1, None]))
        for _ in range(draw(st.integers(60, 70))):
            deep = [deep] if draw(st.booleans()) else {"k": deep}
        part = {"type": "text", "content": "hi"}
        message = {"role": "user", "parts": [part]}
        (part if draw(st.booleans()) else message)[draw(st.sampled_from(["content", "x"]))] = deep
        return json.dumps([message])
    return draw(st.one_of(st.integers(), st.lists(st.text(max_size=3), max_size=2)))


@st.composite
def _attributes(draw: st.DrawFn, keys: tuple[str, ...]) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for key in keys:
        if draw(st.integers(0, 9)) == 0:
            continue  # not recorded
        text = draw(_text())
        attrs[key] = text
        # (The common forms most often: those the straight reading takes.)
        kind = draw(
            st.sampled_from(
                ["json", "json", "json", None, "str", "pyjson", "bytes", "repr", "bogus", 5]
            )
        )
        if kind is not None:
            attrs[A.TYPE + key] = kind
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else b""
        right = hashlib.sha256(data).hexdigest()
        digest = draw(st.sampled_from([right, right, right, None, "0" * 64, "", right.upper(), 7]))
        if digest is not None:
            attrs[A.SHA256 + key] = digest
    return attrs


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and repr(a) == repr(b)


@settings(max_examples=400, deadline=None)
@given(attrs=_attributes(P.MESSAGE_LISTS), key=st.sampled_from(P.MESSAGE_LISTS))
def test_a_message_list_reads_as_the_payload_reader_reads_it(
    attrs: dict[str, Any], key: str
) -> None:
    value, p = _content(attrs, key, None)
    read, damaged, chat, parsed, clear = P.message_list(attrs, key)
    assert _same(read, value)
    assert damaged == _damaged(p)
    assert chat == P.chat_only(value)
    assert clear == P.blank(attrs, (key, key))  # (told apart for this key alone)
    # What is said to be parsed from text as it stands is plain JSON: the anomalies
    # encode it without the codec's walk.
    assert not parsed or payload.is_plain_json(read)


@settings(max_examples=400, deadline=None)
@given(attrs=_attributes(P.TOOL_VALUES))
def test_tool_values_read_as_the_payload_reader_reads_them(attrs: dict[str, Any]) -> None:
    read, through_reader = P.tool_values(attrs), P._read_tool_values(attrs)
    assert _same(read and read[:2], through_reader and through_reader[:2])
    if read is not None and read[2]:
        assert payload.is_plain_json(read[0]) and payload.is_plain_json(read[1])
    if read is not None:
        assert read[3] == P.blank(attrs, P.TOOL_VALUES)


_WORD = st.sampled_from(["x", "é", "", "a b"])
_ROLE = st.sampled_from(["user", "assistant", "tool", "model", "system", "function", 5])
#: Part types of every provider, tools' among them.
_TYPE = st.sampled_from(
    [
        *("text", "input_text", "output_text", "reasoning", "thinking", "item_reference"),
        *("tool_call", "tool_use", "function_call", "function", "tool_call_response"),
        *("tool_result", "function_call_output"),
    ]
)
_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 2), _WORD),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_WORD, inner, max_size=2),
    max_leaves=4,
)
_CALL = st.fixed_dictionaries({}, optional={"id": _WORD, "name": _WORD, "args": _VALUE})
#: A part (or a message of the Responses API) in any provider's shape.
_PART = st.one_of(
    _WORD,
    st.fixed_dictionaries(
        {"type": _TYPE},
        optional={
            **dict.fromkeys(("content", "text", "id", "name", "call_id", "input"), _VALUE),
            **dict.fromkeys(("arguments", "response", "result", "output"), _VALUE),
            **dict.fromkeys(("tool_use_id", "thinking"), _VALUE),
            "function": st.fixed_dictionaries({}, optional={"name": _WORD, "arguments": _VALUE}),
        },
    ),
    st.fixed_dictionaries(  # Gemini's
        {},
        optional={
            **dict.fromkeys(("function_call", "functionCall"), _CALL),
            **dict.fromkeys(("function_response", "functionResponse"), _CALL),
            "text": _WORD,
            "thought": st.booleans(),
        },
    ),
    st.dictionaries(  # Converse's
        st.sampled_from(["toolUse", "toolResult", "reasoningContent", "text"]),
        st.fixed_dictionaries(
            {}, optional={"toolUseId": _WORD, "input": _VALUE, "content": _VALUE}
        ),
        min_size=1,
        max_size=1,
    ),
)
_MESSAGE = st.one_of(
    _PART,
    st.fixed_dictionaries(
        {},
        optional={
            "role": _ROLE,
            "type": _TYPE,
            "parts": st.lists(_PART, max_size=2),
            "content": st.one_of(_WORD, _PART, st.lists(_PART, max_size=2)),
            "tool_calls": st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "id": _WORD,
                        "function": st.fixed_dictionaries(
                            {}, optional={"name": _WORD, "arguments": _VALUE}
                        ),
                    },
                ),
                max_size=2,
            ),
            "tool_call_id": _WORD,
            "name": _WORD,
        },
    ),
)


def _calls_or_results(messages: list[dict[str, Any]]) -> bool:
    """Whether normalized ``messages`` hold a tool's turn, or a part that calls a tool or
    answers one."""
    return any(
        message.get("role") == "tool"
        or any(
            isinstance(p, dict) and p.get("type") in ("tool_call", "tool_call_response")
            for p in message.get("parts") or ()
        )
        for message in messages
    )


_CHAT = st.lists(
    st.fixed_dictionaries(
        {"role": _ROLE, "parts": st.lists(_PART, max_size=3)},
        optional={"tool_calls": st.just([{"id": "c", "function": {"name": "f"}}])},
    ),
    max_size=3,
)


@settings(max_examples=1500, deadline=None)
@given(messages=st.one_of(_CHAT, st.lists(_MESSAGE, max_size=3), _MESSAGE))
def test_messages_of_text_alone_hold_no_tool_call_once_normalized(messages: Any) -> None:
    """Messages of every provider's shapes, GenAI ones most often: those told to be a
    chat's text alone, normalized, hold no tool's turn and no part that calls or answers
    one."""
    normalized = _messages(messages)
    if P.chat_only(messages):
        assert normalized is not None and not _calls_or_results(normalized)
        # Nor do they nest past the bound, whose check their text is spared.
        assert json_text.depth(messages) <= 4


#: Parts of our capture's shape, and each one change that its normalization makes.
_NEAR_PART = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "content": _VALUE}),
    st.fixed_dictionaries(
        {"type": st.just("tool_call"), "id": _VALUE, "name": _VALUE},
        optional={"arguments": st.sampled_from([{"a": [1]}, None, "x", '{"a": 1}', "[2]"])},
    ),
    st.fixed_dictionaries(
        {"type": st.just("tool_call_response"), "id": _VALUE, "response": _VALUE},
    ),
)
#: Roles, each that normalizing changes or reads otherwise among them.
_NEAR_ROLE = st.sampled_from(["user", "user", "assistant", "tool", "model", "system", 5])


@st.composite
def _near_message(draw: st.DrawFn) -> Any:
    message: dict[str, Any] = {
        "role": draw(_NEAR_ROLE),
        "parts": draw(st.lists(_NEAR_PART, min_size=1, max_size=2)),
    }
    change = draw(st.sampled_from([None, None, None, "key", "order", "part order", "other part"]))
    if change == "key":
        message[draw(st.sampled_from(["name", "finish_reason", "tool_call_id"]))] = draw(_VALUE)
    elif change == "order":
        message = {"parts": message["parts"], "role": message["role"]}
    elif change == "part order":
        message["parts"][0] = dict(reversed(message["parts"][0].items()))
    elif change == "other part":
        message["parts"].append(draw(_PART))
    return message


@settings(max_examples=2000, deadline=None)
@given(messages=st.one_of(st.lists(_near_message(), min_size=1, max_size=2), _CHAT))
def test_messages_told_normalized_are_their_own_normalization(messages: Any) -> None:
    """Messages of our capture's shape and each change normalizing makes to one: those
    told to be normalized read the same as normalized, keys in the same order."""
    normalized = _messages(messages)
    if P.as_normalized(messages):
        assert repr(normalized) == repr(messages)
        # Their calls, listed without copies, are those the full path lists (of the
        # messages, and of them as one answer).
        for answer in (messages, M.one_answer(messages)):
            assert repr(P.calls_of(answer)) == repr(M.tool_calls(answer))
    assert repr(P.normalized(messages)) == repr(normalized)
