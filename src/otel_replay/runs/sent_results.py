"""The result the model was sent for each call a model step made, read off later inputs.

A tool's result comes back in a later model call's input, as a
``tool_call_response`` part with the call's id.  An id alone does not name a
call of a run: some model servers give ids that restart in every answer
(``call_0`` at each step: Ollama, vLLM, llama.cpp and other OpenAI-compatible
servers), so a later input may answer several calls with the same id.  A
result answers a call of the nearest assistant message before it that holds
a call with its id still unanswered (the first such call there: parallel
calls are answered in order), as the providers read a conversation.

Each input's assistant messages holding a call with a given id are that id's
*groups*, in order.  A model step's answer is the next group of the id after
those its own input already holds: the step whose input holds ``g`` groups
with ``call_0`` made the ``g``-th (from 0) in every later input.  With ids
unique in a run this is the one group there is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..same_message import spelled_value
from .model import Step

#: No result was sent for a call (none yet, or never).
NOT_SENT: Any = object()

#: Call id -> its groups in one input, each the ``tool_call_response`` parts that answer
#: that group's calls with the id, in order (:data:`NOT_SENT` where none answers it).
Groups = dict[str, list[list[Any]]]


def groups_of(messages: Sequence[Mapping[str, Any]]) -> Groups:
    """Each call id's groups in ``messages``, with the part that answers each call."""
    out: Groups = {}
    for message in messages:
        opened: set[str] = set()
        for part in message.get("parts") or []:
            if not isinstance(part, Mapping):
                continue
            call_id = part.get("id")
            if not isinstance(call_id, str):
                continue
            if part.get("type") == "tool_call":
                groups = out.setdefault(call_id, [])
                if call_id not in opened:
                    opened.add(call_id)
                    groups.append([])
                groups[-1].append(NOT_SENT)
            elif part.get("type") == "tool_call_response":
                _answer(out.setdefault(call_id, []), part)
    return out


def _answer(groups: list[list[Any]], response: Mapping[str, Any]) -> None:
    """Give ``response`` to the first unanswered call of the last group that has one.

    A result whose id no call of the input has (an input recorded without the assistant
    turn) is a group of its own; one sent again for an answered call adds nothing."""
    for group in reversed(groups):
        for i, slot in enumerate(group):
            if slot is NOT_SENT:
                group[i] = response
                return
    if not groups:
        groups.append([response])


class SentResults:
    """What the model was sent for each call of one run's model steps (in start order)."""

    def __init__(self, models: Sequence[Step]) -> None:
        self._models = models
        self._inputs = [
            (m.model.input_messages if m.model is not None else None) or [] for m in models
        ]
        self._groups: list[Groups | None] = [None] * len(models)

    def _at(self, pos: int) -> Groups:
        groups = self._groups[pos]
        if groups is None:
            groups = self._groups[pos] = groups_of(self._inputs[pos])
        return groups

    def of(self, pos: int, call_id: str, k: int = 0) -> Any:
        """The result the model was sent, in the first later input that answers it, for
        the ``k``-th call with ``call_id`` that model step ``pos`` made (:data:`NOT_SENT`:
        none does)."""
        for p in range(pos + 1, len(self._inputs)):
            part = self.part(p, pos, call_id, k)
            if part is not None:
                return part.get("response")
        return NOT_SENT

    def part(self, p: int, pos: int, call_id: str, k: int = 0) -> Mapping[str, Any] | None:
        """The ``tool_call_response`` part of model step ``p``'s input that answers the
        ``k``-th call with ``call_id`` model step ``pos`` made (None: none there does)."""
        if p <= pos:
            return None
        g = len(self._at(pos).get(call_id, ()))
        groups = self._at(p).get(call_id, ())
        if len(groups) > g and k < len(groups[g]) and groups[g][k] is not NOT_SENT:
            found: Mapping[str, Any] = groups[g][k]
            return found
        return None

    def by_place(self, pos: int, i: int) -> Any:
        """The result the model was sent for the ``i``-th call model step ``pos`` made,
        found by its place rather than its id (:data:`NOT_SENT`: none found).

        For calls whose answer carried no id, where the framework made one of its own
        for its later requests: a later input holds the calls of every earlier answer in
        order, so the step's ``i``-th call is the one after the calls its own input held;
        its result is the first after it with that call's id (the how-many-th result
        without id, for a call without).  The call found must be the same call (name and
        arguments), else the input did not keep the whole conversation and nothing is
        found."""
        calls = [p for m in self._inputs[pos] for p in _parts(m) if p.get("type") == "tool_call"]
        made = _output_calls(self._models[pos])
        if i >= len(made):
            return NOT_SENT
        for p in range(pos + 1, len(self._inputs)):
            found = _sent_at(self._inputs[p], len(calls) + i, made[i])
            if found is not NOT_SENT:
                return found
        return NOT_SENT


def _parts(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p for p in message.get("parts") or [] if isinstance(p, Mapping)]


def _output_calls(model: Step) -> list[Mapping[str, Any]]:
    out = (model.model.output_messages if model.model is not None else None) or []
    return [p for m in out for p in _parts(m) if p.get("type") == "tool_call"]


def _sent_at(messages: Sequence[Mapping[str, Any]], nth: int, made: Mapping[str, Any]) -> Any:
    """The response in ``messages`` to their ``nth`` tool call, which must be ``made``
    (name and arguments); :data:`NOT_SENT` when there is none or it is another call."""
    seen = 0
    for at, message in enumerate(messages):
        calls = [p for p in _parts(message) if p.get("type") == "tool_call"]
        if seen + len(calls) <= nth:
            seen += len(calls)
            continue
        call = calls[nth - seen]
        if call.get("name") != made.get("name") or spelled_value(
            call.get("arguments")
        ) != spelled_value(made.get("arguments")):
            return NOT_SENT
        call_id = call.get("id")
        # Without an id, the how-many-th call without one in its message it is.
        k = [c for c in calls if not c.get("id")].index(call) if not call_id else 0
        for later in messages[at:]:
            for part in _parts(later):
                if part.get("type") != "tool_call_response":
                    continue
                if call_id and part.get("id") == call_id:
                    return part.get("response")
                if not call_id and not part.get("id"):
                    if k == 0:
                        return part.get("response")
                    k -= 1
        return NOT_SENT
    return NOT_SENT
