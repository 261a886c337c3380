"""A run's ``ls`` line computed from its span records, without building its steps.

A first ``otel-replay ls`` of a file must decode every span, parse every
message list and check every digest (its verdict asks whether each message
says something and whether each payload is byte-exact).  Building a run's
steps, repairing them and checking them costs several times that.  Most runs
of a file need none of the repairs: for those the line follows from the
decoded records directly, and this module computes it so.

It does so for the runs of one class only, told cheaply and exactly from the
records; for any other run :func:`quick_summary` gives None and the caller
builds the run (:func:`~.summary.summarize`).  The class (a *plain run*):

- a trace that holds an agent's run of its own, not built yet
  (:attr:`~.model.PendingRun.pending_spans`), with no read fault blamed on it;
- each span with no event, no error status, attribute names among
  :data:`~.plain_values.PLAIN_KEYS` (GenAI names and otel-replay's payload companions) and
  nothing its stack's dialects would add or repair; an agent span records
  no messages;
- a tree without cycles; no tool span inside a tool span; no model span
  inside a model span, nor two model spans of one parent that overlap in
  time (no span recorded twice);
- every model span records its input messages; no payload is damaged; every
  tool span has a call id and byte-exact arguments and result;
- nothing a run repair of :data:`~.repairs.RUN_REPAIRS` would set right:
  no input turn that lost its calls, no tool result without its call id, no
  answer that the next call's input could fill or complete, no call left
  open in an input or answered under another id, every tool span named by a
  call of the model call before it, and (with two model calls or more)
  every call an answer makes answered by a tool span of its id.

Every predicate that decides a repair, a verdict or an anomaly is the full
path's own function where one exists; the conditions above are supersets of
what would make a repair change anything.  A test compares the lines of both
paths on every trace we hold, on damaged copies and on drawn runs.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Mapping, Sequence
from typing import Any

from .. import attributes as A
from .. import messages as M
from ..dialects.placeholders import placeholder_in
from ..otlp.records import SpanRecord
from ..payload import codec as payload
from . import verdict as V
from .anomalies import (
    DEFAULT_ERROR_PHRASES,
    DEFAULT_MAX_TOOL_CALLS,
    Config,
    error_phrase,
    loop_blocks,
    model_answer,
    result_warning,
)
from .build import _fingerprint
from .call_ids import _id
from .double_spans import sequential
from .kit import _says_something
from .model import PendingRun, Run, _react_answer
from .plain_values import (
    SHAPES,
    as_normalized,
    calls_of,
    message_list,
    normalized,
    shape,
    tool_values,
)
from .recovered_turns import _has_calls
from .steps import (
    _answer,
    _content,
    _has_messages,
    _is_int,
    _messages,
    _str,
    classify,
    tool_name,
)
from .stitch import lost_calls
from .summary import RunSummary, _text, step_agent_name

_ERROR = 2  # the OTLP status code of a span that ended in error
_DEFAULTS = Config()  # what ls counts as an anomaly
_DIGEST_OF_OUTPUT = A.SHA256 + A.OUTPUT_MESSAGES


class _Span:
    """What the line needs of one span of a plain run."""

    __slots__ = (
        "_inputs",
        "answered",
        "arguments",
        "attributes",
        "blank",
        "call_id",
        "calls",
        "end_ns",
        "index",
        "kind",
        "marked",
        "model_name",
        "name",
        "output_recorded",
        "outputs",
        "parent",
        "plain_json",
        "raw_inputs",
        "result",
        "root",
        "sent",
        "span_id",
        "start_ns",
        "tokens",
        "tool_name",
        "tooling",
    )

    def __init__(self, span: SpanRecord, kind: str) -> None:
        self.kind = kind
        self.span_id = span.span_id
        self.parent = span.parent_span_id
        self.start_ns = span.start_ns
        self.end_ns = span.end_ns
        self.name = span.name
        self.attributes = span.attributes
        self.index = 0
        self.marked = False  # it names the run's user, session, tenant or build
        self.blank = False  # no value of it can hold a placeholder (see plain_values.blank)
        self.root = False
        # A model span's input messages as parsed, how many messages they make, and
        # whether they may call a tool or answer one (see plain_values.chat_only);
        # normalized (:attr:`inputs`) only for a check that reads them.
        self.raw_inputs: Any = None
        self._inputs: list[dict[str, Any]] | None = None
        self.sent = 0
        self.tooling = False
        # The call ids its input answers (tool_call_response parts), when its input calls
        # or answers a tool: listed by the repair checks, read by the verdict's.
        self.answered: set[str | None] | None = None
        self.outputs: list[dict[str, Any]] | None = None
        # A model span's: M.tool_calls(outputs), once.
        self.calls: Sequence[dict[str, Any]] = ()
        self.output_recorded = False
        self.model_name: str | None = None
        self.tokens = (0, 0)
        self.tool_name = ""
        self.call_id: str | None = None
        self.arguments: Any = None
        self.result: Any = None
        # Its tool's values, or the calls of its answer, are plain JSON as they stand (see
        # plain_values.tool_values): the anomalies encode them without a walk to check.
        self.plain_json = False

    @property
    def inputs(self) -> list[dict[str, Any]]:
        """A model span's input messages, normalized (as a model step holds them)."""
        if self._inputs is None:
            self._inputs = normalized(self.raw_inputs) or []
        return self._inputs


def quick_summary(run: Run) -> RunSummary | None:
    """The ``ls`` line of ``run`` if it is a plain run (see the module doc), computed from
    its span records; else None (its steps are to be built).  A plain run holds an
    agent's step: it depends on its own trace alone."""
    if not isinstance(run, PendingRun) or run.read_faults:
        return None
    records = run.pending_spans
    if not records:
        return None
    spans: list[_Span] = []
    for record in records:
        span = _plain(record.plain())
        if span is None:
            return None
        spans.append(span)
    order = _preorder(spans)
    if order is None:
        return None
    steps = _Steps(order)
    if not _unrepaired(steps):
        return None
    return _line(run, steps)


class _Steps:
    """A plain run's spans in the order of its steps, and each kind's apart (read by
    several checks: listed once)."""

    def __init__(self, order: list[_Span]) -> None:
        self.order = order
        self.models: list[_Span] = []
        self.tools: list[_Span] = []
        self.agents: list[_Span] = []
        by_kind = {"model": self.models, "tool": self.tools, "agent": self.agents}
        for span in order:
            kind = by_kind.get(span.kind)
            if kind is not None:
                kind.append(span)
        # In start order, ties in step order (a stable sort of the steps' order), as the
        # repairs and the kit's checks take them.
        self.timed_models = sorted(self.models, key=_started)
        self.timed_tools = sorted(self.tools, key=_started)
        #: The call ids the tool spans ran.
        self.ran = {t.call_id for t in self.tools}


_started = operator.attrgetter("start_ns")


def _plain(span: SpanRecord) -> _Span | None:
    """What a span of a plain run gives the line; None when it is not one."""
    attrs = span.attributes
    if span.events or span.status_code == _ERROR or span.parent_span_id == span.span_id:
        return None
    plain, marked = SHAPES.get((span.scope_name, tuple(attrs))) or shape(span)
    if not plain:
        return None
    kind = classify(attrs)
    out = _Span(span, kind)
    if marked:
        out.marked = True
    if kind == "agent":
        if _has_messages(attrs):
            # Its answer may be the run's (a root agent's); damaged, it is only reported.
            outputs, _ = _content(attrs, A.OUTPUT_MESSAGES, None)
            out.outputs = _answer(_messages(outputs))
        return out
    if kind == "model":
        inputs, damaged, chat, _, clear = message_list(attrs, A.INPUT_MESSAGES)
        if damaged:
            return None
        if type(inputs) is list:
            out.sent = len(inputs)
        elif isinstance(inputs, Mapping):
            out.sent = 1  # one message (see steps._messages)
        else:
            return None  # no messages
        out.raw_inputs = inputs
        out.tooling = not chat
        if A.OUTPUT_MESSAGES in attrs or _DIGEST_OF_OUTPUT in attrs:
            outputs, damaged, _, parsed, clear_out = message_list(attrs, A.OUTPUT_MESSAGES)
            if damaged:
                return None
            clear = clear and clear_out
            calls = calls_of
            if as_normalized(outputs):
                # Not copied: parsed from text, its calls' arguments are plain JSON.
                out.plain_json = parsed
            else:
                outputs, calls = _messages(outputs), M.tool_calls
            out.outputs, out.output_recorded = _answer(outputs), True
            out.calls = calls(out.outputs) if out.outputs else []
        # (Else nothing of it was recorded: neither value nor digest, the only companions
        # a plain span may carry, without which the payload reader finds none.)
        out.blank = clear
        out.model_name = _str(attrs.get(A.RESPONSE_MODEL)) or _str(attrs.get(A.REQUEST_MODEL))
        used, made = attrs.get(A.USAGE_INPUT_TOKENS), attrs.get(A.USAGE_OUTPUT_TOKENS)
        if used is not None or made is not None:
            out.tokens = (
                used if type(used) is int else _tokens(used),
                made if type(made) is int else _tokens(made),
            )
    elif kind == "tool":
        values = tool_values(attrs)
        call_id = _str(attrs.get(A.TOOL_CALL_ID))
        if values is None or call_id is None:
            return None
        out.tool_name, out.call_id = tool_name(span.name, attrs), call_id
        out.arguments, out.result, out.plain_json, out.blank = values
    return out


def _tokens(value: Any) -> int:
    """A usage count as a model step keeps it (an integer, else none)."""
    return int(value) if value is not None and _is_int(value) else 0


#: Siblings' order: by start, then span id.
_key = operator.attrgetter("start_ns", "span_id")


def _preorder(spans: list[_Span]) -> list[_Span] | None:
    """The spans in the order of a run's steps (see :func:`.build._preorder`), ``index``
    set; None when parent links form a cycle, or a span is recorded twice over: a tool
    span inside a tool span, a model span inside a model span, model spans of one parent
    that overlap in time."""
    by_id = {s.span_id: s for s in spans}
    children: dict[str, list[_Span]] = {}
    roots: list[_Span] = []
    for span in spans:
        parent = by_id.get(span.parent) if span.parent else None
        if parent is None:
            roots.append(span)
            continue
        if span.kind == parent.kind and span.kind in ("tool", "model"):
            return None
        children.setdefault(parent.span_id, []).append(span)
    order: list[_Span] = []
    stack = sorted(roots, key=_key, reverse=True)
    for root in roots:
        root.root = True
    while stack:
        span = stack.pop()
        span.index = len(order)
        order.append(span)
        below = children.get(span.span_id)
        if below:
            below.sort(key=_key)
            stack.extend(reversed(below))
    if len(order) < len(spans):
        return None  # a cycle with no root
    for below in children.values():
        models = [c for c in below if c.kind == "model"]
        # (In start order already: each list of children was sorted by the walk.)
        if len(models) > 1 and not sequential(models):
            return None
    return order


def _unrepaired(steps: _Steps) -> bool:
    """Whether no run repair would change the steps of these spans (see the module doc)."""
    models, tools = steps.timed_models, steps.timed_tools
    answered: set[str | None] = set()
    for m in models:
        if not m.tooling:
            continue  # a chat's text alone: no turn of it called a tool or answered one
        inputs = m.inputs
        calls: set[str | None] = set()
        results: set[str | None] = set()
        # One walk over the turns and their parts (an input is walked for each check
        # otherwise, and most inputs of an agent's loop hold tool turns).
        for j, message in enumerate(inputs):
            called = False
            for part in message.get("parts") or ():
                if not isinstance(part, dict):
                    continue
                kind = part.get("type")
                if kind == "tool_call":
                    calls.add(_id(part))
                    called = True
                elif kind != "tool_call_response":
                    continue
                elif not part.get("id"):
                    return False  # a result without its call id
                else:
                    results.add(_id(part))
            # (Only an assistant's turn loses its calls, and only one without a call: the
            # others are not asked.)
            if not called and message.get("role") == "assistant" and lost_calls(inputs, j):
                return False
        if calls - results:
            return False  # a call no result of its input answers
        answered |= results
        m.answered = results
    answered.discard(None)
    for m, n in itertools.pairwise(models):
        at = m.sent
        if m.outputs is None and n.sent > at:
            return False  # the next input may prove the answer
        answers = m.outputs or []
        if (
            len(answers) == 1
            and n.sent > at + 1
            and answers[0].get("role") == "assistant"
            and not _has_calls(answers[0])
            and _has_calls(n.inputs[at])
        ):
            return False  # the next input may complete the answer
        # (Loops, not any() of a generator: every model call is asked.)
        for message in answers:
            for p in message.get("parts") or ():
                if isinstance(p, dict) and p.get("type") == "tool_call" and _id(p) not in answered:
                    return False  # a call answered under another id, maybe
    if models and tools:
        starts = [m.start_ns for m in models]
        for tool in tools:
            pos = bisect.bisect_right(starts, tool.start_ns) - 1
            # (A list, not all() of a generator: every tool span is asked.)
            if pos >= 0 and tool.tool_name not in [c.get("name") for c in models[pos].calls]:
                return False  # a span that may only merge a turn's calls
    if len(models) > 1:
        ran = steps.ran
        for m in models:
            for c in m.calls:
                if c.get("id") not in ran:
                    return False  # a call no tool span records: a derived tool step
    return True


def _line(run: Run, steps: _Steps) -> RunSummary:
    order, models, tools, agents = steps.order, steps.models, steps.tools, steps.agents
    names: dict[str, None] = {}
    used = made = 0
    for m in models:
        if m.model_name:
            names.setdefault(m.model_name)
        used += m.tokens[0]
        made += m.tokens[1]
    verdict, replayable, problem = _verdict(steps)
    agent = agents[0] if agents else None
    # Spans that name none of the run's identity add nothing to its fingerprint.
    fp = _fingerprint([s for s in order if s.marked])  # type: ignore[misc]
    return RunSummary(
        run_id=run.run_id,
        trace_ids=list(run.trace_ids),
        start_ns=run.start_ns,
        end_ns=run.end_ns,
        agent=(
            step_agent_name(agent.name, agent.attributes)
            if agent is not None
            else _text(run.resource.get("service.name"))
        ),
        user_id=_text(fp.get(A.USER_ID)),
        session_id=_text(fp.get(A.SESSION_ID) or fp.get(A.CONVERSATION_ID)),
        tenant_id=_text(fp.get(A.TENANT_ID)),
        models=list(names),
        steps=len(order),
        model_calls=len(models),
        tool_calls=len(tools),
        tools=list(dict.fromkeys(t.tool_name for t in tools)),
        errors=0,
        input_tokens=used,
        output_tokens=made,
        verdict=verdict,
        replayable=replayable,
        replay_problem=problem,
        raised=False,
        error_type=None,
        error_message=None,
        tool_calls_failed=0,
        model_calls_failed=0,
        anomalies=_anomalies(order, models, tools),
    )


def _verdict(steps: _Steps) -> tuple[str, bool, str | None]:
    """What :func:`~.kit.kit_verdict` says of a plain run (no payload of one is damaged,
    every tool span has its result, no step is derived, every call is answered)."""
    models, tools = steps.models, steps.tools
    if not models and tools and any(a.attributes.get(A.TOOL_DEFINITIONS) for a in steps.agents):
        # Tools an agent offered ran, and no model call that asked for them is recorded.
        return "inspect-only", False, V.replay_problem({V.NO_MODEL_CALLS: 1})
    # Each reason counted in a local (a Counter's item update per model call costs more
    # than the check it counts).
    not_recorded = unreadable = left_out = 0
    for m in models:
        outputs = m.outputs
        if outputs is None:
            if m.output_recorded:
                unreadable += 1
            else:
                not_recorded += 1
        elif outputs and not _says_something(outputs):
            not_recorded += 1
        if not m.blank:
            left_out += (placeholder_in(m.inputs) is not None) + (
                placeholder_in(outputs) is not None
            )
    for t in tools:
        if not t.blank:
            left_out += (placeholder_in(t.arguments) is not None) + (
                placeholder_in(t.result) is not None
            )
    lost = _lost_history(steps.timed_models, steps.ran)
    if models:
        content = any(_says_something(m.inputs) or _says_something(m.outputs) for m in models)
    else:
        content = bool(tools)
    if not content:
        return "inspect-only", False, V.replay_problem({V.NO_CONTENT: 1})
    if not_recorded or unreadable or left_out or lost:
        reasons = {
            V.OUTPUT_NOT_RECORDED: not_recorded,
            V.OUTPUT_UNREADABLE: unreadable,
            V.LEFT_OUT: left_out,
            V.HISTORY_NOT_RECORDED: lost,
        }
        return "model-only", False, V.replay_problem(reasons)
    return "full", True, None


def _lost_history(models: list[_Span], ran: set[str | None]) -> int:
    """How many model inputs hold no more than the call before them and none of its tool
    calls (see :meth:`.kit._Check._lost_history`); ``models`` in start order, their
    :attr:`~_Span.answered` listed (:func:`_unrepaired`), ``ran`` the call ids of the tool
    spans."""
    lost = 0
    if not ran:
        return lost  # no model call's tool call ran
    for before, after in itertools.pairwise(models):
        if not before.calls:
            continue
        asked = {c.get("id") for c in before.calls} & ran
        if not asked:
            continue
        # Most often the next input answers a call asked (the ids its results answer, listed
        # by the repair checks, are among those it holds): then neither walk is needed.
        if after.answered is not None and not after.answered.isdisjoint(asked):
            continue
        if after.inputs != before.inputs[: len(after.inputs)]:
            continue
        parts = (p for msg in after.inputs for p in msg.get("parts") or [])
        seen = {p.get("id") for p in parts if isinstance(p, dict)}
        if not asked & seen:
            lost += 1
    return lost


def _anomalies(order: list[_Span], models: list[_Span], tools: list[_Span]) -> int:
    """How many anomalies :func:`~.anomalies.find_anomalies` finds in a plain run (no step
    failed, no HTTP status recorded) with the default :class:`~.anomalies.Config`."""
    config = _DEFAULTS
    found = 0
    keys: list[Any] = []
    seen: set[tuple[str, str]] = set()
    for s in order:
        if s.kind == "tool":
            arguments = payload.canonical(
                s.arguments if s.plain_json else payload.plain(s.arguments)
            )
            if (s.tool_name, arguments) in seen:
                found += 1  # called again with the same arguments
            seen.add((s.tool_name, arguments))
            keys.append(("tool", s.tool_name, arguments))
            if result_warning(s.result) is not None:
                found += 1
        elif s.kind == "model":
            keys.append(model_answer(s.name, s.outputs, s.calls, plain_json=s.plain_json))
    for _ in loop_blocks(keys, config.loop_repeats, config.loop_max_steps):
        found += 1
    if len(tools) > DEFAULT_MAX_TOOL_CALLS:
        found += 1
    found += _error_wording(order, models)
    return found


def _error_wording(order: list[_Span], models: list[_Span]) -> int:
    """1 when the run's final answer (:meth:`~.model.Run.final_output`: a root agent's
    output, else the last model text) holds an error phrase, else 0."""
    answer: str | None = None
    for s in order:
        if s.root and s.kind == "agent" and s.outputs:
            answer = M.last_text(s.outputs)
            if answer is not None:
                break
    if answer is None:
        for m in reversed(models):
            text = M.last_text(m.outputs) if m.outputs else None
            if text is not None:
                answer = _react_answer(text)
                break
    return int(answer is not None and error_phrase(answer, DEFAULT_ERROR_PHRASES) is not None)
