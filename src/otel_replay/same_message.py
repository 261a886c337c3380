"""The same message: one definition of what two messages must share to be the same.

Replay asks it of a request and the recording (the ``messages`` rung, and the
server routing a request to its conversation); stitching asks it of the
calls of one conversation traced apart.  Two messages are the same when they
say the same: the same role (``developer`` is ``system``; tool results are
``tool`` whichever role carried them) and the same parts, with call ids,
whitespace (at the ends and repeated), empty texts, how a text was cut into
parts (a Responses message's ``output_text`` parts, Anthropic text blocks,
recorded as they came or joined: consecutive texts are the text they spell)
and how a value was
encoded (JSON text or value, text blocks or one string) left out, and
nothing an instrumentation keeps beside role and parts (a tool message's
``name``, a ``finish_reason``) counted; replay compares them with secrets
hidden on both sides, as capture hides them.  Two conversations are the same when their
turns are: consecutive assistant messages are one answer (the Responses
API's items, recorded one message each), and tool results one message each
(Anthropic sends a turn's results in one user message, OpenAI one tool
message each), in any order: an agent that runs a turn's tools at once
sends their results as they finish, which is a race in the agent's own code
(the calls they answer keep the model's order).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from . import messages as M
from .payload import codec as payload
from .redaction import Redactor, redactor

#: How the key of an assistant message starts.
ASSISTANT_KEY = '["assistant",'
#: How the key of a tool result starts.
RESULT_KEY = '["tool",'


def turns(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The conversation's turns: consecutive assistant messages as one answer, and a
    message of several tool results as one message per result."""
    out: list[Mapping[str, Any]] = []
    for message in messages:
        last = out[-1] if out else None
        parts = message.get("parts") or []
        if last is not None and last.get("role") == message.get("role") == "assistant":
            out[-1] = {**last, "parts": [*(last.get("parts") or []), *parts]}
        elif len(parts) > 1 and all(_is_result(p) for p in parts):
            out += [{**message, "parts": [p]} for p in parts]
        else:
            out.append(message)
    return out


def without_repeated_system(
    messages: Sequence[Mapping[str, Any]], system: Sequence[Mapping[str, Any]] | None
) -> Sequence[Mapping[str, Any]]:
    """``messages`` without the leading system messages that only say ``system`` again.

    Some callers and stacks give the system prompt both ways: as system
    instructions and as the first messages (an OpenAI message list passed
    whole beside ``system=``).  The recording keeps both as they were given;
    a conversation holds the prompt once, so the messages that repeat it are
    left out here, wherever the two are joined or compared.  Leading system
    messages that say something else stay.
    """
    if not system or not messages:
        return messages
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        lead += 1
    if not lead:
        return messages
    said = message_key({"role": "system", "parts": list(system)})
    shown = message_key(
        {"role": "system", "parts": [p for m in messages[:lead] for p in m.get("parts") or []]}
    )
    return messages[lead:] if said is not None and said == shown else messages


def conversation_keys(messages: Sequence[Mapping[str, Any]], *, hidden: bool = False) -> list[str]:
    """The key of each turn of ``messages`` that says something (see :func:`message_key`);
    the results that answer one turn's calls are one key, as one message of them in any
    order would be."""
    keys = [k for m in turns(messages) if (k := message_key(m, hidden=hidden)) is not None]
    out: list[str] = []
    results: list[str] = []
    for key in [*keys, ""]:
        if key.startswith(RESULT_KEY):
            results.append(key[len(RESULT_KEY) + 1 : -2])  # the part: '["tool",[PART]]'
            continue
        if results:
            out.append(f"{RESULT_KEY}[{','.join(sorted(results))}]]")
            results = []
        if key:
            out.append(key)
    return out


def _is_result(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "tool_call_response"


def message_key(message: Mapping[str, Any], *, hidden: bool = False) -> str | None:
    """What a message says, as text: no ids, no edge or repeated whitespace, any key order.

    ``None`` for a message with nothing in it (an empty assistant turn some
    clients send back and others drop).  ``hidden``: with secrets hidden as
    capture hides them, for comparing what a live app sends with a recording
    (two recorded messages are compared as they were recorded).
    """
    r = redactor() if hidden else None
    parts = [k for p in _texts_joined(message.get("parts")) if (k := _part_key(p, r)) is not None]
    if not parts:
        return None
    role = message.get("role")
    if role == "developer":  # OpenAI's newer name for the system role
        role = "system"
    # A tool result is the same result whether the client sent it as role tool or user.
    if all(p[0] == "tool_call_response" for p in parts):
        role = "tool"
    # Compact, so that the key of an assistant message starts with ASSISTANT_KEY.
    return json.dumps(
        [role, parts], sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":")
    )


def _texts_joined(parts: Any) -> list[Any]:
    """``parts`` with each run of consecutive text parts as one text part (their texts
    joined as they are: the text they spell)."""
    out: list[Any] = []
    joined = False  # whether out[-1] is a text part this function made
    for p in parts or []:
        text = p if isinstance(p, str) else None
        if isinstance(p, Mapping) and p.get("type") == "text":
            text = str(p.get("content") if p.get("content") is not None else "")
        if text is None:
            out.append(p)
            joined = False
        elif joined:
            out[-1] = {"type": "text", "content": out[-1]["content"] + text}
        else:
            out.append({"type": "text", "content": text})
            joined = True
    return out


def _part_key(p: Any, r: Redactor | None) -> list[Any] | None:
    """One part, already in the GenAI shape (see runs/steps.py), as comparable values."""
    if not isinstance(p, Mapping):
        return _text_key(p, "text", r)
    kind = p.get("type")
    if kind in ("text", "reasoning"):
        return _text_key(p.get("content"), kind, r)
    if kind == "tool_call":
        return ["tool_call", p.get("name"), _value(p.get("arguments"), r)]
    if kind == "tool_call_response":
        return ["tool_call_response", _value(p.get("response"), r)]
    if kind == M.ITEM_REFERENCE:
        # The stored item's id is the server's: a trace does not hold the one a recorded
        # request named, and a replay's server gives its own.
        return [M.ITEM_REFERENCE]
    return [kind, _value({k: v for k, v in p.items() if k not in ("id", "type")}, r)]


def _text_key(text: Any, kind: str, r: Redactor | None) -> list[Any] | None:
    words = " ".join(str(text).split()) if text is not None else ""
    if not words:
        return None
    return [kind, words if r is None else r.text(words)]


def _value(value: Any, r: Redactor | None) -> Any:
    """A value as plain JSON: JSON text parsed, text blocks joined, whitespace ignored."""
    value = spelled_value(value)
    if isinstance(value, str):
        words = " ".join(value.split())
        return words if r is None else r.text(words)
    plain = payload.plain(value)
    return plain if r is None else r.scrub(plain, "", [])


def spelled_value(value: Any) -> Any:
    """A tool result as the value it spells: text blocks joined, then JSON text parsed.

    Instrumentations record the same result as JSON text or as the parsed
    value, and Anthropic's as text blocks; the model was given the same either way.
    """
    return M.parse_arguments(text_blocks(value))


def text_blocks(value: Any) -> Any:
    """A list of text blocks (``[{"type": "text", "text": ...}]``) as the one string it spells.

    Anthropic takes a tool result as a string or as such blocks, and its SDK
    records the string as blocks (Bedrock Converse's blocks, ``{"text": ...}``,
    name no type); anything else is returned as it is.
    """
    if (
        isinstance(value, list)
        and value
        and all(
            isinstance(b, Mapping)
            and (b.get("type") == "text" or set(b) == {"text"})
            and isinstance(_text(b), str)
            for b in value
        )
    ):
        return "".join(str(_text(b)) for b in value)
    return value


def _text(block: Mapping[str, Any]) -> Any:
    return block.get("text", block.get("content"))
