"""Tool spans joined to the model's tool calls they answer.

Framework tool spans (LangChain/LangGraph under OpenInference or OpenLLMetry,
LlamaIndex under OpenInference) record the tool run, not the model's call:

- no call id: each tool span is joined to a call in the output of the last
  model step with tool calls that ended before it (same run), by call id
  when it has one, else by tool name and arguments, else by order among
  that turn's calls of the same tool; the step then takes the call's id;
- arguments as the framework saw them (a one-argument tool's bare value, the
  callback's whole input with ``input_str``/tags/metadata, ``{"kwargs": ...}``)
  where the model's call has the exact JSON object: when the span's value
  shows exactly the call's values but is not that object, the call's
  arguments are taken (arguments an agent changed are the tool's own, kept);
- results as the framework's message wrapper (a serialized LangChain
  ``ToolMessage``, LlamaIndex's ``ToolOutput``): the content the model was
  sent for that call id in a later request is taken; without one, the
  wrapper's content.  A result that is no wrapper is the tool's own and kept.

A span that keeps no content at all while the messages carry it (Google
ADK records tool content only in SPAN_ONLY mode) takes the call's arguments
and the result the model was sent, unverified; its error, when it names only
a type, takes the text the model was told.  A span that recorded one but not
the other (a result lost), or values hidden by the instrumentation, is not
filled in: the kit reports them missing.

A span that only merges a turn's parallel calls (Google ADK's ``(merged
tools)``) runs no tool: it becomes an ``other`` step (:func:`_drop_merge_spans`).

Exact values (a digest proves them, as otel-replay's own capture records
them) and a tool's error are never replaced.  Values taken from the
messages or a wrapper are marked ``unverified``; the span's own attributes
are left as recorded.
"""

from __future__ import annotations

import ast
import bisect
import collections
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .. import attributes as A
from .. import json_text
from .. import messages as M
from ..dialects.google_adk import MERGED_TOOLS
from ..dialects.langchain_serialized import tool_message_content
from ..payload.attributes import Payload
from ..same_message import spelled_value
from .derived_tools import unverified
from .model import Step
from .sent_results import NOT_SENT, SentResults


def join_tool_spans(steps: Sequence[Step]) -> int:
    """Join the tool steps of one run to the model's calls; return how many were joined."""
    models = sorted(
        (s for s in steps if s.kind == "model" and s.model is not None),
        key=lambda s: (s.start_ns, s.index),
    )
    tools = sorted(
        (s for s in steps if s.kind == "tool" and s.tool is not None and not s.tool.derived),
        key=lambda s: (s.start_ns, s.index),
    )
    if not models or not tools:
        return 0
    # Each model step's calls, once: every pass below reads them, none changes them.
    calls = [_calls(m) for m in models]
    if _drop_merge_spans(models, tools, calls):
        tools = [s for s in tools if s.tool is not None]
    received = SentResults(models)
    joined = 0
    for pos, spans in _asked(models, calls, tools).items():
        for tool, call in _pairs(spans, calls[pos]):
            call_id = str(call.get("id"))
            _fill(tool, call, received.of(pos, call_id, _nth_with_id(calls[pos], call, call_id)))
            joined += 1
    return joined


def _asked(
    models: Sequence[Step], calls: Sequence[list[dict[str, Any]]], tools: Sequence[Step]
) -> dict[int, list[Step]]:
    """The ``tools`` (in start order) each model step asked for, by its place in ``models``."""
    turns: dict[int, list[Step]] = collections.defaultdict(list)
    asking = _Asking(models, calls)
    for tool in tools:
        pos = asking.before(tool)
        if pos is not None:
            turns[pos].append(tool)
    return turns


def _nth_with_id(calls: list[dict[str, Any]], call: dict[str, Any], call_id: str) -> int:
    """The how-many-th of ``calls`` with ``call_id`` ``call`` is (parallel calls may share one)."""
    same = [c for c in calls if str(c.get("id")) == call_id]
    return next(i for i, c in enumerate(same) if c is call)


def sent_to_tools(steps: Sequence[Step]) -> dict[int, Any]:
    """Each tool step's index -> what the model was sent for the call it ran.

    The call is found as tool spans are joined to calls (the model step that asked,
    then id, name and arguments); its result by the call's id in a later input, else
    by its place there (:meth:`SentResults.by_place`: calls that reached the model
    without an id, answered under one the framework made).  A step whose call or
    result is not found is left out."""
    models = sorted(
        (s for s in steps if s.kind == "model" and s.model is not None),
        key=lambda s: (s.start_ns, s.index),
    )
    calls = [_calls(m) for m in models]
    tools = sorted(
        (s for s in steps if s.kind == "tool" and s.tool is not None),
        key=lambda s: (s.start_ns, s.index),
    )
    received = SentResults(models)
    out: dict[int, Any] = {}
    for pos, asked in _asked(models, calls, tools).items():
        for tool, call in _pairs(asked, calls[pos]):
            call_id = call.get("id")
            sent = NOT_SENT
            if isinstance(call_id, str) and call_id:
                sent = received.of(pos, call_id, _nth_with_id(calls[pos], call, call_id))
            if sent is NOT_SENT:
                sent = received.by_place(
                    pos, next(i for i, c in enumerate(calls[pos]) if c is call)
                )
            if sent is not NOT_SENT:
                out[tool.index] = sent
    return out


def _drop_merge_spans(
    models: Sequence[Step], tools: Sequence[Step], calls: Sequence[list[dict[str, Any]]]
) -> int:
    """Make the tool spans that only merge a turn's parallel calls ``other`` steps.

    ``models`` and ``tools`` (the recorded tool spans) are one run's, in start
    order; ``calls``, the tool calls of each model step.  After a model step,
    a tool span whose name is no tool that step offered or called, and whose
    id no call has, that follows two or more spans of tools it did offer,
    runs nothing itself.  Content is not needed:
    the offered tools' names are recorded without it (where they are not, as
    Google ADK 1.x's spans without content, ADK's own name for the span says it).
    """
    starts = [m.start_ns for m in models]
    after: dict[int, list[Step]] = collections.defaultdict(list)
    for step in tools:
        pos = bisect.bisect_right(starts, step.start_ns) - 1
        if pos >= 0:
            after[pos].append(step)
    dropped = 0
    for pos, spans in after.items():
        m = models[pos].model
        assert m is not None
        names = _texts([*(m.tool_definitions or []), *calls[pos]], "name")
        ids = _texts(calls[pos], "id")
        ran = 0
        for step in spans:
            t = step.tool
            assert t is not None
            if t.tool_name in names:
                ran += 1
            elif (ran >= 2 and t.call_id not in ids) or t.tool_name == MERGED_TOOLS:
                step.kind = "other"
                step.tool = None
                dropped += 1
    return dropped


class _Asking:
    """The model steps with tool calls, by start: which one asked for a tool span.

    The last such step that started before the tool (started, not ended: a
    span kept open while its answer is handed on, as Google ADK's
    ``call_llm``, still holds the tools it asked for).  A step that made no
    call (a framework's answerless inner LLM span) asks for no tool.  A
    binary search: a run of thousands of turns costs no more per tool.
    """

    def __init__(self, models: Sequence[Step], calls: Sequence[list[dict[str, Any]]]) -> None:
        # ``models`` is in start order; so is this subsequence.
        self.positions = [pos for pos, m in enumerate(models) if m.model is not None and calls[pos]]
        self.starts = [models[pos].start_ns for pos in self.positions]

    def before(self, tool: Step) -> int | None:
        i = bisect.bisect_right(self.starts, tool.start_ns)
        return self.positions[i - 1] if i else None


def _texts(items: list[Any], key: str) -> set[str]:
    """The ``key`` of each of ``items`` that is text (a recorded name or id may be anything)."""
    return {v for d in items if isinstance(d, Mapping) and isinstance(v := d.get(key), str)}


def _calls(model: Step) -> list[dict[str, Any]]:
    return M.tool_calls((model.model.output_messages if model.model is not None else None) or [])


def _pairs(spans: list[Step], calls: list[dict[str, Any]]) -> list[tuple[Step, dict[str, Any]]]:
    """Tool spans and the calls they answer: by call id, name and arguments, then order."""
    left = list(calls)
    pairs: list[tuple[Step, dict[str, Any]]] = []
    waiting = list(spans)
    # (An id shared by parallel calls, the empty one, goes to the call of the span's tool.)
    for rule in ("id and name", "id", "name and arguments", "name"):
        for tool in list(waiting):
            call = next((c for c in left if _answers(tool, c, rule)), None)
            if call is not None:
                left.remove(call)
                waiting.remove(tool)
                pairs.append((tool, call))
    return pairs


def _answers(tool: Step, call: Mapping[str, Any], rule: str) -> bool:
    t = tool.tool
    assert t is not None
    if rule.startswith("id"):
        same = t.call_id is not None and t.call_id == call.get("id")
        return same and (rule == "id" or t.tool_name == call.get("name"))
    if t.call_id is not None or t.tool_name != call.get("name"):
        return False  # a span with its own id answers only that call
    # Arguments recorded as JSON text or as a Python ``str()`` of the dict (OpenInference 0.1
    # on LangChain 0.3), or inside the callback's whole input (OpenLLMetry: ``input_str``,
    # ``inputs``, tags, metadata): the same tool called twice in one turn pairs by its own
    # arguments.
    if rule == "name":
        return True
    args = spelled_value(call.get("arguments"))
    return _spelled(t.arguments) == args or (
        isinstance(args, Mapping) and bool(args) and _stands_for(t.arguments, args)
    )


def _fill(tool: Step, call: Mapping[str, Any], sent: Any) -> None:
    """Complete ``tool`` from the model's ``call`` it ran and the result the model was
    ``sent`` for that call (:data:`NOT_SENT`: none)."""
    t = tool.tool
    assert t is not None
    call_id = call.get("id")
    if t.call_id is None and isinstance(call_id, str) and call_id:
        t.call_id = call_id
    args = call.get("arguments")
    # A span that keeps no content at all (Google ADK sends it in log records only) ran
    # the model's call: its arguments, and the result the model was sent, are the tool's.
    # One whose capture was turned off on purpose stays without.
    bare = (
        t.arguments_payload is None
        and t.result_payload is None
        and tool.attributes.get(A.CONTENT) != "NO_CONTENT"
    )
    # Exact values (a digest proves them: otel-replay's own capture) are the tool's own.
    if (bare and t.arguments is None and isinstance(args, Mapping)) or (
        t.arguments is not None
        and not _exact(t.arguments_payload)
        and isinstance(args, Mapping)
        and _stands_for(t.arguments, args)
    ):
        t.arguments = dict(args)
        t.arguments_payload = unverified(t.arguments)
    if t.error is not None:
        if sent is not NOT_SENT and _type_only(t.error.type, t.error.message):
            # Marked failed by type alone: what the model was told is the error's only text.
            t.error.message = _error_text(sent)
        if bare and t.result is None and sent is not NOT_SENT:
            # A span with no content of its own marked failed (Google ADK 2.x: a response
            # its tool flagged as an error, ``{"error": ...}``, returned or made by an
            # on_tool_error_callback; the span cannot say which): the error with its
            # output, the response the model was sent, whole ("code" and all), which
            # replay returns (the callback's own work is not done again).
            t.result = sent
            t.result_payload = unverified(sent)
        return  # otherwise the error is the tool's own record
    if bare and t.result is None and sent is not NOT_SENT:
        t.result = sent
        t.result_payload = unverified(sent)
        return
    if _lost_not_none(tool, sent):
        # Read as None because the span has no output, but the model was sent another
        # value: the output was lost (an exporter drops a value it cannot encode, such as
        # an integer past 64 bits), and stays missing: the kit names it.
        t.result, t.result_payload = None, None
        return
    if t.result is None or _exact(t.result_payload):
        return  # a result lost (the span kept its arguments) stays missing: the kit names it
    if sent == "" and t.result in ("null", []):
        # None or an empty list, recorded as JSON text (which the text "null" or "[]" would
        # be too), sent as empty text (pydantic-ai from 1.69): the text the model was sent,
        # which the framework sends again as it is.
        t.result = sent
        t.result_payload = unverified(sent)
        return
    content = unwrap_result(t.result)
    if content is t.result:
        return  # the tool's own value: kept as recorded
    # A wrapper: what the model was sent for this call is the content it carried.
    t.result = content if sent is NOT_SENT else sent
    t.result_payload = unverified(t.result)


#: How a framework that records no output for a tool that returned None sends that None
#: to the model (the OpenAI Agents SDK: ``str(None)``).
_NONE_SENT = ("None", None, "null", "")


def _lost_not_none(tool: Step, sent: Any) -> bool:
    """Whether ``tool``'s result was read as None for want of an output
    (:data:`~otel_replay.attributes.TOOL_RETURNED_NONE`: the only result a span's own
    step holds as an unverified None) though the model was ``sent`` another value."""
    t = tool.tool
    return (
        t is not None
        and t.result is None
        and t.result_payload is not None
        and t.result_payload.status == "unverified"
        and sent is not NOT_SENT
        and not (isinstance(sent, (str, type(None))) and sent in _NONE_SENT)
    )


def _type_only(kind: str, message: str) -> bool:
    """An error message that only names the error's type (``""``, ``"ToolRetryError: "``)."""
    names = {kind, kind.rsplit(".", 1)[-1]}
    return message.strip() == "" or message.strip().rstrip(":").strip() in names


def _error_text(sent: Any) -> str:
    """The text of an error result the model was sent: its ``error`` / ``message`` string."""
    value = spelled_value(sent)
    if isinstance(value, Mapping):
        for key in ("error", "message", "detail"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _exact(p: Payload | None) -> bool:
    return p is not None and p.status == "exact"


def _stands_for(value: Any, call_args: Mapping[str, Any]) -> bool:
    """True when ``value`` is not the call's arguments object but shows exactly those values.

    Shown as: the bare value of a one-argument call, or the arguments (as an
    object, or their JSON or Python literal text) under a wrapper's key
    (``{"kwargs": ...}``, ``{"input_str": ..., "tags": ..., "metadata": ...}``).
    A value that differs (an agent that changed the arguments) is the tool's own;
    the arguments' own text stands for the object.
    """
    spelled = _spelled(value)
    if spelled == call_args:
        # The arguments object itself: the span's own bytes are kept.  Their text (a
        # Python ``str()`` of the dict, as OpenInference 0.1 records LangChain 0.3
        # tools): the object it spells, which is what the tool was called with.
        return not isinstance(value, Mapping)
    value = spelled
    if isinstance(value, Mapping):
        # A wrapper holds the whole object; one of its values alone proves nothing.
        return any(_spelled(v) == call_args for v in value.values())
    only = list(call_args.values())
    return len(only) == 1 and value == only[0]


def _spelled(value: Any) -> Any:
    """JSON text parsed, then Python literal text (a ``str()`` of a dict) evaluated."""
    value = spelled_value(value)
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return value
    return value


def unwrap_result(value: Any) -> Any:
    """The content of a framework's tool-message wrapper; other values as they are.

    Handled: a LangChain ``ToolMessage``
    (:func:`~otel_replay.dialects.langchain_serialized.tool_message_content`),
    and LlamaIndex's ``ToolOutput`` (``{"blocks": [{"text": ...}], "raw_output":
    ..., "tool_name": ...}``), also under ``{"output": ...}`` as OpenLLMetry
    records a callback's output.
    """
    parsed = value
    if isinstance(value, str):
        try:
            parsed = json_text.loads(value)
        except ValueError:
            return value
    if not isinstance(parsed, Mapping):
        return value
    if isinstance(parsed.get("output"), Mapping) and set(parsed) <= {"output", "kwargs"}:
        parsed = parsed["output"]
    langchain = tool_message_content(parsed)
    if langchain is not None:
        return langchain[0]
    if "tool_name" in parsed and "raw_output" in parsed and isinstance(parsed.get("blocks"), list):
        texts = [b.get("text") for b in parsed["blocks"] if isinstance(b, Mapping)]
        if all(isinstance(x, str) for x in texts):
            # ``ToolOutput.content``, what LlamaIndex sends: its text blocks' texts, one a
            # line (none: empty text).
            return "\n".join(str(x) for x in texts)
    return value
