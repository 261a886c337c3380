"""What a later input recorded of earlier turns without their calls or ids, filled in.

LiteLLM's OpenTelemetry callback records a request's messages without the
tool calls of earlier assistant turns (the turn is left empty, or with its
text only), and the calls of an answer without their ids.  Once the calls of
one conversation are stitched (see :mod:`.stitch`), both halves are in the
run: the answer of an earlier call holds the calls (names, arguments), the
tool messages that follow the turn in a later input hold their ids.

A turn that lost its calls (:func:`~.stitch.lost_calls`: tool results follow
it) takes a copy of the answer of the earlier call whose whole input is the
messages before it, when that answer, calls left out, says what the turn
says.  The answer's calls that have no id take the ids of the tool results
that follow the turn, in order, when they answer as many calls.  Each fill
is noted in the step's :attr:`~.model.ModelCall.derived`; the span's
attributes stay as recorded.

Tool results recorded without their call ids (OpenInference's LiteLLM
instrumentation, OpenLLMetry's ``gen_ai.tool.message`` events) answer the
calls of the assistant turn before them: they take those calls' ids, in
order, when they answer as many calls and none has an id of its own.

An answer that was not recorded at all (a streamed generation whose span
kept no output) is proved by the next call, when that call's input is this
call's input followed by one assistant turn: the turn is the answer.  The
last call of a run has no next call; its answer stays missing.

An answer recorded with its text and without the calls beside it (the
OpenTelemetry bridge of the openai-agents SDK keeps a Chat Completions
message's ``content`` and drops its ``tool_calls`` when the model wrote both)
is proved the same way: the next call's input is this call's input followed
by an assistant turn that says what the answer says, plus calls, and the
tool results that answer them.  The turn is the answer, text and calls in
the order the next request carried them.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from ..same_message import message_key
from .model import Step
from .stitch import conversation, lost_calls, without_calls

_CALL = "tool_call"


def recover_turns(models: Sequence[Step]) -> int:
    """Fill what ``models``' inputs (in call order) lost of earlier turns; return how many."""
    filled = 0
    earlier_calls = _EarlierCalls()
    for step in models:
        m = step.model
        if m is None:
            continue
        inputs = m.input_messages or []
        for j, message in enumerate(inputs):
            if not lost_calls(inputs, j):
                continue
            earlier = earlier_calls.whose_input(inputs[:j], m.system_instructions)
            answer = _answer(earlier)
            if earlier is None or answer is None:
                continue
            if message_key(without_calls(answer)) != message_key(message):
                continue
            turn = {k: v for k, v in copy.deepcopy(answer).items() if k != "finish_reason"}
            note = f"input message {j}: the assistant turn recorded without its calls, the "
            note += f"output of the model call of span {earlier.span_id}"
            if _take_ids(turn, answer, inputs[j + 1 :]):
                note += "; its call ids from the tool results that follow, in order"
            inputs[j] = turn
            m.derived.append(note)
            filled += 1
        for j in _answered_without_ids(inputs):
            m.derived.append(
                f"input messages after {j}: the tool results' call ids, those of the calls of "
                "the assistant turn before them, in order"
            )
            filled += 1
        if m.input_messages is not None:
            earlier_calls.add(step)
    for step, after in itertools.pairwise(models):
        filled += _proved_answer(step, after) or _completed_answer(step, after)
    return filled


class _EarlierCalls:
    """The calls met so far, by their whole input; keyed only once a turn that lost its calls asks.

    Keying a conversation is most of what recovering turns costs, and most
    runs have no turn that lost its calls.
    """

    def __init__(self) -> None:
        self._by_input: dict[tuple[str, ...], Step] = {}
        self._unkeyed: list[Step] = []

    def add(self, step: Step) -> None:
        self._unkeyed.append(step)

    def whose_input(
        self, messages: Sequence[Mapping[str, Any]], system: Sequence[Mapping[str, Any]] | None
    ) -> Step | None:
        """The first call met whose whole input was ``messages`` (after ``system``)."""
        for step in self._unkeyed:
            m = step.model
            assert m is not None and m.input_messages is not None
            key = tuple(conversation(m.input_messages, m.system_instructions))
            self._by_input.setdefault(key, step)
        self._unkeyed.clear()
        return self._by_input.get(tuple(conversation(messages, system)))


def _proved_answer(step: Step, after: Step) -> int:
    """Fill ``step``'s unrecorded answer from the turn ``after``'s input sent back."""
    m, n = step.model, after.model
    if m is None or n is None or m.output_messages is not None or m.input_messages is None:
        return 0
    if n.input_messages is None or len(n.input_messages) <= len(m.input_messages):
        return 0
    turn = n.input_messages[len(m.input_messages)]
    before = list(conversation(m.input_messages, m.system_instructions))
    sent = list(conversation(n.input_messages[: len(m.input_messages)], n.system_instructions))
    if turn.get("role") != "assistant" or before != sent:
        return 0
    m.output_messages = [copy.deepcopy(dict(turn))]
    m.derived.append(
        f"output_messages: not recorded; the assistant turn the next model call (span "
        f"{after.span_id}) sent back"
    )
    return 1


def _completed_answer(step: Step, after: Step) -> int:
    """Give ``step``'s answer the calls it was recorded without, from the turn ``after``'s
    input sent back (see the module doc)."""
    m, n = step.model, after.model
    if m is None or n is None or m.input_messages is None or n.input_messages is None:
        return 0
    answers = m.output_messages or []
    if len(answers) != 1 or answers[0].get("role") != "assistant" or _has_calls(answers[0]):
        return 0
    at = len(m.input_messages)
    if len(n.input_messages) <= at + 1:
        return 0
    turn = n.input_messages[at]
    if not _has_calls(turn) or not lost_calls([without_calls(turn), n.input_messages[at + 1]], 0):
        return 0  # not an assistant turn whose calls tool results answer
    if message_key(without_calls(turn)) != message_key(without_calls(answers[0])):
        return 0
    before = list(conversation(m.input_messages, m.system_instructions))
    sent = list(conversation(n.input_messages[:at], n.system_instructions))
    if before != sent:
        return 0
    completed = copy.deepcopy(dict(turn))
    if "finish_reason" in answers[0]:
        completed["finish_reason"] = answers[0]["finish_reason"]
    m.output_messages = [completed]
    m.derived.append(
        "output_messages: recorded without its tool calls; the assistant turn the next model "
        f"call (span {after.span_id}) sent back, text and calls"
    )
    return 1


def _has_calls(message: Mapping[str, Any]) -> bool:
    parts = message.get("parts") or []
    return any(isinstance(p, Mapping) and p.get("type") == _CALL for p in parts)


def _answer(step: Step | None) -> dict[str, Any] | None:
    """The one assistant message ``step`` answered with, if it answered with one with calls."""
    if step is None or step.model is None:
        return None
    answers = [m for m in step.model.output_messages or [] if m.get("role") == "assistant"]
    if len(answers) != 1:
        return None
    parts = answers[0].get("parts") or []
    return answers[0] if any(p.get("type") == "tool_call" for p in parts) else None


def _take_ids(
    turn: dict[str, Any], answer: dict[str, Any], after: Sequence[Mapping[str, Any]]
) -> bool:
    """Give the turn's (and the answer's) id-less calls the ids of the results that follow."""
    calls = [p for p in turn.get("parts") or [] if p.get("type") == "tool_call"]
    if not calls or all(c.get("id") for c in calls):
        return False
    ids = []
    for message in after:
        if message.get("role") != "tool":
            break
        parts = [p for p in message.get("parts") or [] if isinstance(p, Mapping)]
        ids += [p.get("id") for p in parts if p.get("type") == "tool_call_response"]
    if len(ids) != len(calls) or not all(isinstance(i, str) and i for i in ids):
        return False
    originals = [p for p in answer.get("parts") or [] if p.get("type") == "tool_call"]
    for call, original, call_id in zip(calls, originals, ids, strict=True):
        if not call.get("id"):
            call["id"] = call_id
            original["id"] = call_id
    return True


def _answered_without_ids(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """Give tool results without ids the ids of the calls before them; the turns done."""
    done = []
    for j, message in enumerate(messages):
        calls = [p for p in message.get("parts") or [] if p.get("type") == "tool_call"]
        if message.get("role") != "assistant" or not calls:
            continue
        results = []
        for after in messages[j + 1 :]:
            if after.get("role") != "tool":
                break
            results += [
                p for p in after.get("parts") or [] if p.get("type") == "tool_call_response"
            ]
        ids = [c.get("id") for c in calls]
        if (
            len(results) != len(calls)
            or any(r.get("id") for r in results)
            or not all(isinstance(i, str) and i for i in ids)
        ):
            continue
        for result, call_id in zip(results, ids, strict=True):
            result["id"] = call_id
        done.append(j)
    return done
