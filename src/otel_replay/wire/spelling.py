"""Tool-call arguments as the model spelled them: what a served answer carries.

Recorded output messages hold a call's arguments as a JSON value (every reader
parses them, to compare and to show), but the client was sent text: the
model's key order, spacing and escapes (``\\u00e9`` or ``é``, ``\\/``).  An
agent that keeps that text (smolagents writes its calls into its memory as
text) sends it back in its next request, so an answer served with other text
makes the next request differ from the recording.  Canonical forms are for
comparing; an answer is spelled as recorded.

The spelling is looked for where a step may hold it as text: the raw HTTP
response (``RecordingTransport``: a JSON body, or a stream's argument deltas
joined), the exact payload of ``gen_ai.output.messages``, and the span's output
attributes and events written as text (a flattened ``...arguments``
attribute, JSON text of the messages or of the response body).  A text found
is the spelling of the call whose arguments it parses to (the same value,
whatever key order the value was kept in: the text is what the client read);
each is used once, in order, the raw response's first.  A call no text
spells (the trace holds its arguments as a parsed value only) is re-spelled
as compact JSON, and :func:`spell` says so, for the replay to report.

A text found outside a raw response that is exactly what Python's ``json.dumps``
writes for its value by default (``", "`` and ``": "``) may be the model's, or the
instrumentation's own dump of the value it parsed (OpenInference's LangChain,
Haystack and Anthropic instrumentations write one): served as found, and said to
be possibly re-spelled, as the trace cannot tell which.
"""

from __future__ import annotations

import collections
import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .. import json_text
from ..payload.codec import canonical
from ..runs.call_ids import item_id_in_place
from ..runs.model import RawHttp, Step

#: Words an attribute or event name holds when it records a model's answer (the
#: instrumentations' many spellings of "output"), and those of its request.
_OUTPUT_WORDS = ("output", "completion", "response", "choice", "answer")
_INPUT_WORDS = ("input", "prompt", "request")
#: Keys whose text value is a call's arguments, in the shapes the APIs and the
#: instrumentations write (Chat Completions and Responses ``arguments``, Vercel's
#: ``args``, OpenInference's ``function_call_arguments_json``).
_ARGUMENT_KEYS = ("arguments", "args", "arguments_json", "function_call_arguments_json")
#: A text past this size is not parsed for spellings (a JSON body of the answer is
#: far smaller; a trace may hold anything).
_MAX_TEXT = 4 * 1024 * 1024


@dataclasses.dataclass
class Spelled:
    """A reply's tool calls as text: the recorded spelling of each, or a re-spelling."""

    #: One text per tool-call part, in order.
    texts: list[str]
    #: The ids (or names) of the calls whose text was not recorded and was re-spelled.
    respelled: list[str]
    #: Per call: its text is the recorded one (or the arguments were recorded as text).
    recorded: list[bool] = dataclasses.field(default_factory=list)
    #: The ids (or names) of the calls served with a recorded text that may be an
    #: instrumentation's dump of the parsed value rather than the model's (see above).
    doubtful: list[str] = dataclasses.field(default_factory=list)
    #: The names of the calls the trace holds no id for, served with one made up (the
    #: model may have sent none, or an empty one, which tracers do not keep).
    made_up_ids: list[str] = dataclasses.field(default_factory=list)
    #: The calls served with the Responses item id the trace holds for their call id
    #: (``name (id)``): the call id the model sent is in no record.
    item_ids: list[str] = dataclasses.field(default_factory=list)


def compact(arguments: Any) -> str:
    """Arguments as compact JSON text (the APIs' own form), for a call with no spelling."""
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)


def spell(step: Step, calls: Sequence[Mapping[str, Any]]) -> Spelled:
    """The text of each of ``calls`` (tool-call parts of ``step``'s answer), as recorded
    where ``step`` holds it (see the module docstring), else re-spelled.

    Each place that records the answer is a group of texts in its order of calls.
    The first group that spells every call that needs a text spells them all (a
    place may leave a call out: OpenInference writes no attribute for the
    Responses API's ``{}``); else each call takes the first text of any group.
    """
    if not calls:
        return Spelled([], [])  # an answer in text alone (most answers): nothing to spell
    # A call recorded without arguments is served "{}": the text of an empty object
    # where one is recorded, else said to be re-spelled.
    wanted = {
        i: canonical({} if c.get("arguments") is None else c.get("arguments"))
        for i, c in enumerate(calls)
        if not isinstance(c.get("arguments"), str)
    }
    chosen: dict[int, str] = {}
    raw: set[str] = set()  # texts of a recorded HTTP answer: the model's own
    if wanted:
        groups = [[(canonical(v), t) for v, t in group] for group in _groups(step)]
        m = step.model
        if m is not None and m.raw is not None and m.raw.usable and groups:
            raw = {t for _, t in groups[0]}
        for group in groups:
            chosen = _assign(wanted, group)
            if len(chosen) == len(wanted):
                break
        else:
            chosen = _assign(wanted, [found for group in groups for found in group])
    texts: list[str] = []
    respelled: list[str] = []
    recorded: list[bool] = []
    doubtful: list[str] = []
    for i, call in enumerate(calls):
        arguments = call.get("arguments")
        named = str(call.get("id") or call.get("name") or f"call {i + 1}")
        if isinstance(arguments, str):
            texts.append(arguments)  # recorded as text (not JSON): served as it is
            recorded.append(True)
        elif i in chosen:
            texts.append(chosen[i])
            recorded.append(True)
            if chosen[i] not in raw and _dumped(chosen[i], arguments):
                doubtful.append(named)
        else:
            texts.append(compact(arguments))
            respelled.append(named)
            recorded.append(False)
    names = [str(c.get("name") or f"call {i + 1}") for i, c in enumerate(calls)]
    made_up = [n for n, c in zip(names, calls, strict=True) if c.get("id") is None]
    items = [f"{n} ({c['id']})" for n, c in zip(names, calls, strict=True) if item_id_in_place(c)]
    return Spelled(texts, respelled, recorded, doubtful, made_up, items)


def _dumped(text: str, arguments: Any) -> bool:
    """Whether ``text`` is what Python's ``json.dumps`` writes for ``arguments`` by default
    (escaping non-ASCII or not), where that differs from compact JSON: the spelling an
    instrumentation gives a value it serializes itself."""
    value = {} if arguments is None else arguments
    if text == compact(value):
        return False  # no space to tell: the APIs' own spelling
    return text in (json.dumps(value), json.dumps(value, ensure_ascii=False))


def _assign(wanted: Mapping[int, str], found: list[tuple[str, str]]) -> dict[int, str]:
    """Each wanted call (index -> canonical value) its first unused text of that value."""
    left = list(found)
    out: dict[int, str] = {}
    for i, key in wanted.items():
        at = next((k for k, (value, _) in enumerate(left) if value == key), None)
        if at is not None:
            out[i] = left.pop(at)[1]
    return out


def _groups(step: Step) -> Iterator[list[tuple[Any, str]]]:
    """``(parsed value, text)`` of each recorded argument text of ``step``'s answer, one
    list per place that records it, the raw response's first; the flattened
    ``...arguments`` attributes of the span are one place."""
    m = step.model
    if m is None:
        return
    if m.raw is not None and m.raw.usable:
        yield list(_parsed(_raw_texts(m.raw)))
    p = m.output_payload
    if p is not None and p.usable and p.data is not None:
        yield list(_parsed(_json_texts(p.data)))
    flat: list[tuple[Any, str]] = []
    for key, value in step.attributes.items():
        if _is_output(key):
            if key.rsplit(".", 1)[-1] in _ARGUMENT_KEYS:
                flat.extend(_parsed(_attribute_texts(key, value)))
            else:
                yield list(_parsed(_attribute_texts(key, value)))
    yield flat
    for event in step.events:
        if _is_output(str(event.get("name") or "")):
            yield [
                found
                for key, value in (event.get("attributes") or {}).items()
                for found in _parsed(_attribute_texts(key, value))
            ]


def _parsed(texts: Iterator[str]) -> Iterator[tuple[Any, str]]:
    for text in texts:
        try:
            value = json_text.loads(text)
        except ValueError:
            continue
        if not isinstance(value, str):
            yield value, text


def _is_output(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in _OUTPUT_WORDS) and not any(w in low for w in _INPUT_WORDS)


def _attribute_texts(key: str, value: Any) -> Iterator[str]:
    """The argument texts an output attribute holds: itself, when it is a call's
    arguments (``...function.arguments``), else those inside it when it is JSON text."""
    if not isinstance(value, str) or len(value) > _MAX_TEXT:
        return
    if key.rsplit(".", 1)[-1] in _ARGUMENT_KEYS:
        yield value
    elif value.lstrip()[:1] in ("{", "["):
        yield from _json_texts(value)


def _json_texts(text: str | bytes) -> Iterator[str]:
    """The argument texts inside JSON ``text`` (a body, or messages), JSON text within
    it read too."""
    if len(text) > _MAX_TEXT:
        return
    try:
        value = json_text.loads(text)
    except ValueError:
        return
    yield from _walk(value)


def _walk(value: Any) -> Iterator[str]:
    """The argument texts in a parsed JSON value, breadth first (calls in their order)."""
    queue = collections.deque([value])
    while queue:
        node = queue.popleft()
        if isinstance(node, Mapping):
            for key, item in node.items():
                if isinstance(item, str):
                    if key in _ARGUMENT_KEYS:
                        yield item
                    elif key != "content" and item.lstrip()[:1] in ("{", "["):
                        yield from _json_texts(item)  # JSON text inside JSON (output.value)
                elif isinstance(item, (Mapping, list)):
                    queue.append(item)
        elif isinstance(node, list):
            queue.extend(node)


def _raw_texts(raw: RawHttp) -> Iterator[str]:
    """The argument texts of a recorded HTTP answer: a JSON body's, or a stream's deltas
    joined per call (Chat Completions), per block (Anthropic ``partial_json``), or its
    final response (Responses)."""
    assert raw.response_body is not None and raw.response_body.data is not None
    data = raw.response_body.data
    if "text/event-stream" not in raw.response_headers.get("content-type", ""):
        yield from _json_texts(data)
        return
    joined: dict[tuple[str, int, int], str] = {}
    for event in _events(data):
        if event.get("type") == "content_block_delta":  # Anthropic
            delta = event.get("delta")
            if isinstance(delta, Mapping) and isinstance(delta.get("partial_json"), str):
                key = ("block", _int(event.get("index")), 0)
                joined[key] = joined.get(key, "") + delta["partial_json"]
        elif event.get("type") in ("response.completed", "response.incomplete"):
            yield from _walk(event.get("response"))  # Responses: the whole answer
        for choice in event.get("choices") or [] if isinstance(event.get("choices"), list) else []:
            delta = choice.get("delta") if isinstance(choice, Mapping) else None
            calls = delta.get("tool_calls") if isinstance(delta, Mapping) else None
            for call in calls if isinstance(calls, list) else []:
                fn = call.get("function") if isinstance(call, Mapping) else None
                piece = fn.get("arguments") if isinstance(fn, Mapping) else None
                if isinstance(piece, str):
                    key = ("call", _int(choice.get("index")), _int(call.get("index")))
                    joined[key] = joined.get(key, "") + piece
    yield from joined.values()


def _events(data: bytes) -> Iterator[dict[str, Any]]:
    for raw in data.splitlines():  # as bytes: SSE lines end at CR or LF, not at U+2028
        line = raw.decode("utf-8", "replace")
        if line.startswith("data:"):
            text = line[5:].strip()
            if text and text != "[DONE]":
                try:
                    event = json_text.loads(text)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    yield event


def _int(value: Any) -> int:
    return value if type(value) is int else 0
