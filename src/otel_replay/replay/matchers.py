"""Matchers: pure functions comparing a recorded step with a live request.

Each returns ``None`` when it matches, else a short reason; the reasons of
all matchers make the "closest candidates" part of a divergence.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from .. import messages as M
from ..payload import codec as payload
from ..redaction import redactor
from ..runs.model import Step
from ..same_message import conversation_keys, message_key, turns, without_repeated_system
from .options import MATCH_RUNGS

Reason = str | None


def tool_arguments_key(arguments: Any) -> str:
    """The canonical form tool arguments are indexed and compared by.

    Secrets are hidden as capture hides them: recorded arguments were scrubbed,
    and the live call's must compare equal to them.
    """
    return payload.canonical(redactor().scrub(payload.plain(arguments), "", []))


def tool_name(step: Step, name: str, call_id: str | None, args_key: str) -> Reason:
    recorded = step.tool.tool_name if step.tool else step.name
    return None if recorded == name else f"tool name {recorded!r} != {name!r}"


def tool_call_id(step: Step, name: str, call_id: str | None, args_key: str) -> Reason:
    recorded = step.tool.call_id if step.tool else None
    if recorded is None or call_id is None or recorded == call_id:
        return None
    return f"call id {recorded!r} != {call_id!r}"


def tool_args(step: Step, name: str, call_id: str | None, args_key: str) -> Reason:
    recorded = step.tool.arguments if step.tool else None
    if tool_arguments_key(recorded) == args_key:
        return None
    return "arguments differ" + _dict_delta(recorded, _loads(args_key))


TOOL_MATCHERS: Sequence[Callable[[Step, str, str | None, str], Reason]] = (
    tool_name,
    tool_call_id,
    tool_args,
)


def tool_reasons(step: Step, name: str, call_id: str | None, args_key: str) -> list[str]:
    return [r for m in TOOL_MATCHERS if (r := m(step, name, call_id, args_key)) is not None]


# --- model requests: a ladder from strict to loose ---------------------------------

#: Rungs in order of strictness; a session accepts a rung and every stricter one.
RUNGS = MATCH_RUNGS


def split_system(
    messages: Sequence[Mapping[str, Any]], system: Any = None
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """System instructions apart from the conversation, however the client sent them.

    OpenAI clients send them as leading ``system`` (or ``developer``) messages,
    Anthropic clients and Responses ``instructions`` beside the messages: both
    read as ``(system parts, the other messages)``.
    """
    if system is not None:
        parts = M.system_parts(system)
        return parts, [dict(m) for m in without_repeated_system(messages, parts)]
    msgs = [dict(m) for m in messages]
    lead = 0
    while lead < len(msgs) and msgs[lead].get("role") in ("system", "developer"):
        lead += 1
    if not lead:
        return None, msgs
    parts = [p for m in msgs[:lead] for p in m.get("parts") or []]
    return parts, msgs[lead:]


def model_rung(
    recorded_input: Sequence[Mapping[str, Any]] | None,
    recorded_system: Any,
    actual_input: Sequence[Mapping[str, Any]],
    actual_system: Any,
) -> str:
    """The strictest rung on which the request matches the recording.

    ``messages``: the same conversation (:mod:`otel_replay.same_message`);
    ``last_message``: the same last turn; ``exact``: the same messages, as given.
    """
    if same_json(recorded_input, actual_input) and same_json(recorded_system, actual_system):
        # The recorded request sent as it is (a client replaying its run): the same values
        # are the same once normalized, split and keyed.
        return "exact"
    # Recorded steps hold messages already in the GenAI shape (runs/steps.py).
    rec_sys, rec = split_system(M.normalize(recorded_input), recorded_system)
    act_sys, act = split_system(M.normalize(actual_input), actual_system)
    apart = rec_sys is not None and act_sys is not None
    exact_system = not apart or payload.canonical(rec_sys) == payload.canonical(act_sys)
    if exact_system and payload.canonical(rec) == payload.canonical(act):
        return "exact"
    # Keyed only now: most requests of a replay match on the exact rung.
    same_system = exact_system or _system_key(rec_sys or []) == _system_key(act_sys or [])
    rec_keys, act_keys = conversation_keys(rec, hidden=True), conversation_keys(act, hidden=True)
    if same_system and rec_keys == act_keys:
        return "messages"
    if rec_keys and act_keys and rec_keys[-1] == act_keys[-1]:
        return "last_message"
    return "any"


def same_json(a: Any, b: Any, a_text: str | None = None) -> bool:
    """Whether two JSON values are the same value, in any key order.

    ``==`` alone takes ``1`` for ``1.0`` or ``True``; their canonical texts tell
    them apart.  Two values it calls the same have the same normalized form and
    the same keys; a value JSON cannot spell is the same as none.  ``a_text``:
    :func:`strict_text` of ``a``, when known.
    """
    if a is b:
        return True
    if a != b:
        return False
    b_text = strict_text(b)
    return b_text is not None and b_text == (a_text if a_text is not None else strict_text(a))


def strict_text(value: Any) -> str | None:
    """The canonical JSON text :func:`same_json` compares values by (None: JSON cannot
    spell the value)."""
    try:
        return _strict(value)
    except (TypeError, ValueError, RecursionError):
        return None


#: Canonical JSON of values as they are (:func:`~otel_replay.payload.codec.canonical`
#: makes a value JSON cannot spell plain first: :func:`same_json` takes none).
_strict: Final = payload.text_encoder(
    json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
)


def _system_key(parts: list[dict[str, Any]]) -> str | None:
    return message_key({"role": "system", "parts": parts}, hidden=True)


def messages_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """What two requests share when they match on the ``messages`` rung (system aside).

    A dict key: the server finds the conversation a request continues in O(1).
    """
    return request_keys(messages)[0]


def request_keys(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str | None]:
    """What two requests share when they match on the ``messages`` rung (the keys of
    the messages after the leading system ones, as JSON text) and on the
    ``last_message`` rung (the key of the last message that says something),
    the messages keyed once.

    The messages after the leading system ones are the tail of the whole
    conversation, and no turn joins a system message to the next: their last
    key is the whole's last key.
    """
    normalized = M.normalize(messages)
    keys = conversation_keys(split_system(normalized)[1], hidden=True)
    if keys:
        return json.dumps(keys), keys[-1]
    every = conversation_keys(normalized, hidden=True)
    return json.dumps(keys), (every[-1] if every else None)


def same_tools(recorded: Sequence[Mapping[str, Any]], actual: Sequence[Mapping[str, Any]]) -> bool:
    """Whether two tool-definition lists describe the same tools (any order, any shape)."""

    def key(tools: Sequence[Mapping[str, Any]]) -> list[str]:
        return sorted(payload.canonical(M.tool_definition(t)) for t in tools)

    return key(recorded) == key(actual)


def accepts(minimum: str, rung: str) -> bool:
    return RUNGS.index(rung) <= RUNGS.index(minimum)


def first_difference(
    recorded: Sequence[Mapping[str, Any]], actual: Sequence[Mapping[str, Any]]
) -> str:
    """Where two message lists part: ``message 3 (tool) differs`` and the like.

    Counted from 1 in the conversation, system instructions apart (an API that takes
    them beside the messages and one that takes them as the first message count
    alike), and said so when there are any: a diff shown beside it lists them first.
    """
    system, rest = split_system(M.normalize(recorded))
    rec = [m for m in turns(rest) if message_key(m) is not None]
    act = [m for m in turns(split_system(M.normalize(actual))[1]) if message_key(m) is not None]
    after = " after the system instructions" if system else ""
    for i, (r, a) in enumerate(zip(rec, act, strict=False)):
        if message_key(r, hidden=True) != message_key(a, hidden=True):
            return f"message {i + 1}{after} ({r.get('role')}) differs"
    if len(rec) != len(act):
        return f"{len(rec)} messages recorded, {len(act)} sent"
    return "system instructions differ"


def _loads(text: str) -> Any:
    return json.loads(text)


def _dict_delta(recorded: Any, actual: Any) -> str:
    if not isinstance(recorded, dict) or not isinstance(actual, dict):
        return ""
    added = sorted(set(actual) - set(recorded))
    removed = sorted(set(recorded) - set(actual))
    changed = sorted(
        k
        for k in set(recorded) & set(actual)
        if payload.canonical(recorded[k]) != payload.canonical(actual[k])
    )
    parts = []
    if added:
        parts.append("added " + ", ".join(added))
    if removed:
        parts.append("missing " + ", ".join(removed))
    if changed:
        parts.append("changed " + ", ".join(changed))
    return f" ({'; '.join(parts)})" if parts else ""
