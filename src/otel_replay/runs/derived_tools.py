"""Tool steps derived from messages, for tool calls no tool span records.

Client-only instrumentations see the model calls, not the tools the agent ran
between them.  What the tools did is still in the conversation: the call in
the assistant's output (name, id, arguments) and the result in a later call's
input (a ``tool_call_response`` part, sent with role ``tool`` or ``user``).
When the call's output was not recorded, the assistant turn the next call
sent back stands in for it.  Each such call becomes a tool step with
``tool.derived`` set, placed right after the model step that made the call (a
sibling in the tree).  It has no timing of its own (``timed`` is false; it
stands at the end of the call that asked for it), and its result is the
value the model was given, unverified.  A tool span for the call (same call
id, else same tool name) always wins.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from .. import messages as M
from ..payload import codec as payload
from ..payload.attributes import Payload
from ..same_message import text_blocks
from .model import Step, ToolCall
from .sent_results import NOT_SENT, SentResults


def derive_tool_steps(roots: list[Step], steps: Sequence[Step]) -> list[Step]:
    """Add a derived tool step to the tree for each unanswered tool call; return them."""
    models = sorted(
        (s for s in steps if s.kind == "model" and s.model is not None),
        key=lambda s: (s.start_ns, s.index),
    )
    if len(models) < 2:
        return []  # a result can only show up in a later call
    real = [s.tool for s in steps if s.kind == "tool" and s.tool is not None]
    real_ids = {t.call_id for t in real if t.call_id}
    answers = [_answer(s, after) for s, after in itertools.zip_longest(models, models[1:])]
    calls_of = [M.tool_calls(a) for a in answers]  # read twice below, made once
    called = {c.get("id") for calls in calls_of for c in calls} - {None, ""}
    # A tool span whose id no call has, or with none at all (even where the model's calls
    # have none either), answers a call by tool name.
    by_name = collections.Counter(
        t.tool_name for t in real if not t.call_id or t.call_id not in called
    )
    results = SentResults(models)
    parents = {s.span_id: s for s in steps}
    derived: list[Step] = []
    for pos, step in enumerate(models):
        assert step.model is not None
        calls = calls_of[pos]
        if not calls:
            continue
        anonymous: Iterator[Any] | None = None
        for k, call in enumerate(calls):
            call_id = call.get("id") if isinstance(call.get("id"), str) else None
            name = str(call.get("name"))
            if call_id in real_ids:
                continue
            if by_name[name] > 0:
                by_name[name] -= 1
                continue
            if call_id:
                same = [c for c in calls if c.get("id") == call_id]
                found = results.of(pos, call_id, next(i for i, c in enumerate(same) if c is call))
            else:
                if anonymous is None:
                    anonymous = iter(_new_anonymous_results(step, answers[pos], models[pos + 1 :]))
                found = next(anonymous, NOT_SENT)
            if found is NOT_SENT:
                continue  # no later input answers it: the kit reports the gap
            after = models[pos + 1] if pos + 1 < len(models) else None
            tool = _derived_step(step, after, k, name, call_id, call.get("arguments"), found)
            parent = parents.get(tool.parent_span_id or "")
            (parent.children if parent is not None else roots).append(tool)
            derived.append(tool)
    return derived


def _answer(step: Step, after: Step | None) -> list[dict[str, Any]]:
    """The call's output; if it was not recorded, the assistant turn the next call
    (``after``) sent back."""
    if step.model is None:
        return []
    if step.model.output_messages is not None:
        return step.model.output_messages
    if after is None or after.model is None:
        return []
    sent = after.model.input_messages or []
    turn: list[dict[str, Any]] = []
    for message in sent[len(step.model.input_messages or []) :]:
        if message.get("role") != "assistant":
            break
        turn.append(message)
    return turn


def _new_anonymous_results(
    step: Step, answer: Sequence[dict[str, Any]], later: Sequence[Step]
) -> list[Any]:
    """Results without call ids the next call adds after this call's input and answer."""
    if not later or later[0].model is None or step.model is None:
        return []
    seen = len(step.model.input_messages or []) + len(answer)
    added = (later[0].model.input_messages or [])[seen:]
    return [p.get("response") for p in _responses(added) if not p.get("id")]


def _responses(messages: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for message in messages:
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "tool_call_response":
                yield part


def _derived_step(
    calling: Step,
    after: Step | None,
    k: int,
    name: str,
    call_id: str | None,
    arguments: Any,
    response: Any,
) -> Step:
    result = text_blocks(response)
    # Between the call and the next one.  A span may end after the next call has
    # started (LiteLLM ends a stream's span when its logging callback runs).
    at = calling.end_ns
    if after is not None and at >= after.start_ns:
        at = max(calling.start_ns, after.start_ns - 1)
    return Step(
        kind="tool",
        name=f"execute_tool {name}",
        # Not a span id: the calling span's, with the call's position in its output.
        span_id=f"{calling.span_id}.{k}",
        parent_span_id=calling.parent_span_id,
        trace_id=calling.trace_id,
        start_ns=at,
        end_ns=at,
        timed=False,
        tool=ToolCall(
            tool_name=name,
            call_id=call_id,
            arguments=arguments,
            result=result,
            arguments_payload=unverified(arguments),
            result_payload=unverified(result),
            derived=True,
            sent_as=next(
                (s.model.tool_results_sent_as for s in (after, calling) if s and s.model), None
            ),
        ),
    )


def unverified(value: Any) -> Payload:
    """A value taken from the messages: all there is, with no digest to check it by."""
    enc = payload.encode(value)
    return Payload(enc.type, enc.data, None, "unverified")
