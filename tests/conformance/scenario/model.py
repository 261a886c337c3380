"""The scenario data: what the model answers, how it spells it, and the agent's tools' side.

A :class:`Scenario` and its parts (:class:`Spelling`, :class:`Call`, :class:`Tool`,
:class:`Retry`, :class:`Parts`, :class:`ToolRetry`), the texts ReAct and code agents are asked in, and the
shapes of call ids.  Stdlib only (see the package's docstring).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
import re
import uuid
from typing import Any

_ORDER_ID = re.compile(r"ORD-\d+")
_AGAIN = re.compile(r"(ORD-\d+)-(\d+)")
DEFAULT_ORDER = "ORD-5521"


def order_in(text: str) -> str:
    """The order id a question (or any text) names; the default order when none."""
    found = _ORDER_ID.search(text)
    return found.group(0) if found else DEFAULT_ORDER


def again_of(order_id: str) -> tuple[str, str | None]:
    """``ORD-5521-2`` -> ``("ORD-5521", "2")``: the run's order and which call again of a
    tool this is (a tool called twice gets another ``order_id`` argument, so that its
    result differs and pairs with its call); ``ORD-5521`` -> ``("ORD-5521", None)``."""
    found = _AGAIN.fullmatch(order_id)
    return (found.group(1), found.group(2)) if found else (order_id, None)


def digits(order_id: str) -> str:
    """``ORD-5521`` -> ``5521``: the suffix of every id the server makes for that order."""
    return order_id.rsplit("-", 1)[-1]


def fill(template: Any, order_id: str) -> Any:
    """``template`` with ``{order_id}`` and ``{digits}`` in its strings replaced (recursively)."""
    if isinstance(template, str):
        return template.replace("{order_id}", order_id).replace("{digits}", digits(order_id))
    if isinstance(template, list):
        return [fill(v, order_id) for v in template]
    if isinstance(template, dict):
        return {k: fill(v, order_id) for k, v in template.items()}
    return template


@dataclasses.dataclass(frozen=True)
class Spelling:
    """How the model writes one call's arguments as JSON text.

    ``separators`` None: the wire's own (no spaces on the APIs, ``json.dumps``'
    default in a ReAct answer); ``key_order``: ``given`` (the call's), ``sorted``
    or ``reversed``; ``escape_slash``: ``/`` written ``\\/``; ``indent``: pretty-printed
    (``{\\n  "order_id": ...\\n}``, as ``json.dumps(indent=...)`` does); ``around``: the
    whitespace before and after the JSON text (models write leading spaces and trailing
    newlines).
    """

    separators: tuple[str, str] | None = None
    ensure_ascii: bool = False
    key_order: str = "given"
    escape_slash: bool = False
    indent: int | None = None
    around: tuple[str, str] = ("", "")

    def ordered(self, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` with its keys in this spelling's order."""
        keys = list(args)
        if self.key_order == "sorted":
            keys.sort()
        elif self.key_order == "reversed":
            keys.reverse()
        return {k: args[k] for k in keys}

    def spell(self, args: dict[str, Any], separators: tuple[str, str] = (",", ":")) -> str:
        """The JSON text of ``args`` (``separators``: the wire's own, when this has none)."""
        text = json.dumps(
            self.ordered(args),
            ensure_ascii=self.ensure_ascii,
            separators=self.separators or separators,
            indent=self.indent,
        )
        text = text.replace("/", "\\/") if self.escape_slash else text
        return self.around[0] + text + self.around[1]


@dataclasses.dataclass(frozen=True)
class Call:
    """One tool call the model makes: the tool, its arguments (templates), their spelling."""

    tool: str
    arguments: dict[str, Any]
    spelling: Spelling = Spelling()


@dataclasses.dataclass(frozen=True)
class Tool:
    """A tool: its description, its parameters (JSON Schema), what it returns (a template)."""

    description: str
    parameters: dict[str, Any]
    returns: Any = None


@dataclasses.dataclass(frozen=True)
class Retry:
    """A model request the server fails before it answers it: the first request of ``turn``
    in each run gets HTTP ``status`` (429 with ``retry-after: 0``, or 500 or 503), ``times``
    times in a row, which the agent's client SDK retries (as every SDK does by default).

    ``cut``: the connection closes instead, ``before`` any answer (every client retries
    it), or partway through the ``body`` it promised (a whole-JSON answer, which the OpenAI
    and Anthropic Python SDKs retry; a streamed one is closed ``before``), or ``stream``: a
    stream cut inside an event, which the SDKs raise to the agent (on a whole-JSON answer:
    half the body, as ``body``).  ``before`` and ``stream`` are drawn: with ``stream`` a
    run whose client does not retry ends in an error (the agent prints ``RAISED_LINE``
    for it, and ``generate`` records that run as one that raised).
    """

    turn: int
    status: int = 429
    times: int = 1
    cut: str = ""


@dataclasses.dataclass(frozen=True)
class Parts:
    """How the model's answers come in parts on the wire (the default: one part, words).

    ``text``: the answer and the text beside calls cut into this many parts at
    arbitrary characters where the API has parts (Responses ``output_text``
    parts of one message, Anthropic text blocks); ``piece``: characters per
    streamed delta of text and of tool-call arguments (0: a text's words, and
    7 characters of arguments), so that a delta may end inside an escape or
    between the characters of a word; ``write``: bytes per write of a stream
    (0: one write per event), so that a multi-byte character, or an event,
    spans two writes.
    """

    text: int = 1
    piece: int = 0
    write: int = 0

    def cut(self, text: str) -> list[str]:
        """``text`` in :attr:`text` parts (fewer when it is shorter), none of them empty."""
        n = max(1, min(self.text, len(text)))
        bounds = [len(text) * i // n for i in range(n + 1)]
        return [text[a:b] for a, b in itertools.pairwise(bounds)] or [text]


@dataclasses.dataclass(frozen=True)
class ToolRetry:
    """The framework runs the raising tool again by itself after it raised, within the one
    call the model made (LangChain's ``ToolRetryMiddleware``): up to ``retries`` times more,
    at once.  The tool raises its first ``fails`` attempts in a run (counted per order, as
    every attempt is); when ``fails`` is over ``retries``, every attempt of that call fails
    and the model is sent the last one's error, else the model is sent only the result.

    Only stacks whose framework retries a tool (``"tool_retry": true`` in ``stack.json``)
    play it (see :meth:`Scenario.for_stack`); the others run the scenario without it.
    """

    retries: int = 2
    fails: int = 1


#: What the raising tool may raise: an error of its own, or the timeout Python names.
RAISES = ("RuntimeError", "TimeoutError")
#: The classes of :data:`RAISES`, which agents that answer the model with a tool's error
#: catch (a replay must raise the recorded class, or the agent's handling differs).
TOOL_ERRORS: tuple[type[Exception], ...] = (RuntimeError, TimeoutError)


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A conversation the fake model server scripts and the agents' tools play along with.

    ``turns``: per turn, the calls the model makes (the turn after the last
    one is the answer).  ``raising``: the tool that raises ``error`` (none:
    every tool returns).  ``beside``: text the model writes beside its tool
    calls on Chat Completions and Responses; ``anthropic_beside``: on
    Anthropic Messages.  ``raises``: the class the raising tool raises (:data:`RAISES`:
    ``TimeoutError`` is a tool that timed out).  ``retries``: model requests the server
    fails first (:class:`Retry`), which the client retries.  ``ids``: the shape of the
    model's call ids (:data:`ID_SHAPES`).  ``parts``: how answers come in parts on the
    wire (:class:`Parts`).  ``retried``: the raising tool fails its first attempt only,
    and the model calls it again.  ``tool_retry``: the framework runs the raising tool
    again itself after it raised (:class:`ToolRetry`).  ``again``: what a tool
    returns when called again with other arguments (key ``<tool>-<n>``: its call whose
    ``order_id`` argument is ``{order_id}-<n>``, see :func:`again_of`), so that each
    result pairs with one call.  Strings may hold ``{order_id}`` and ``{digits}``.
    """

    name: str
    system_prompt: str
    questions: tuple[str, ...]
    tools: dict[str, Tool]
    turns: tuple[tuple[Call, ...], ...]
    raising: str | None
    error: str
    answer: str
    beside: str | None = None
    anthropic_beside: str | None = None
    raises: str = "RuntimeError"
    retries: tuple[Retry, ...] = ()
    ids: str = "named"
    parts: Parts = Parts()
    #: The raising tool fails only its first attempt in a run: the model, told of the error,
    #: calls it again (same arguments) in a turn of its own, and that attempt returns.
    retried: bool = False
    again: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The framework runs the raising tool again by itself after it raised (:class:`ToolRetry`;
    #: None: it does not).
    tool_retry: ToolRetry | None = None

    def for_stack(self, tool_retry: bool) -> Scenario:
        """The scenario as a stack plays it: without :attr:`tool_retry` when the stack's
        framework does not run a tool again by itself (``tool_retry`` false)."""
        return (
            self
            if tool_retry or self.tool_retry is None
            else dataclasses.replace(self, tool_retry=None)
        )

    # --- the model's side ---------------------------------------------------------
    def calls_of_turn(self, turn: int, order_id: str) -> list[tuple[Call, dict[str, Any]]]:
        """The calls at ``turn`` with their arguments for ``order_id`` (none: the answer)."""
        if turn >= len(self.turns):
            return []
        return [(c, fill(c.arguments, order_id)) for c in self.turns[turn]]

    def turn_of(self, tool_results: int) -> int:
        """The turn a request is at, from the number of tool results it carries.

        Any result moves past the first turn (some frameworks send a failed call's
        result later); a later turn starts once all the calls before it have results.
        """
        if tool_results == 0:
            return 0
        done = 0
        for turn, calls in enumerate(self.turns):
            done += len(calls)
            if turn and tool_results < done:
                return turn
        return len(self.turns)

    def retry_at(self, turn: int) -> Retry | None:
        """How the server fails the first request of ``turn`` before answering it (None: it
        does not)."""
        return next((r for r in self.retries if r.turn == turn), None)

    def call_id(self, turn: int, index: int, order_id: str, prefix: str = "call") -> str:
        """The model's id of the ``index``-th call of ``turn``, in this scenario's shape
        (:data:`ID_SHAPES`; ``named`` ids, the default's, are unique in their run)."""
        if self.ids != "named":
            return _shaped_id(self.ids, f"{self.name}|{order_id}|{turn}|{index}", index)
        flat = [c.tool for calls in self.turns for c in calls]
        at = sum(len(calls) for calls in self.turns[:turn]) + index
        tool = flat[at]
        seen = flat[:at].count(tool)
        suffix = f"_{seen + 1}" if seen else ""
        return f"{prefix}_{tool}_{digits(order_id)}{suffix}"

    @property
    def ids_repeat(self) -> bool:
        """Whether the same call id may come back in another model answer of a run."""
        return self.ids in ("counter", "empty")

    def final_answer(self, order_id: str) -> str:
        """The model's last answer for ``order_id``."""
        return str(fill(self.answer, order_id))

    def react_calls(self, order_id: str) -> list[tuple[Call, dict[str, Any]]]:
        """The calls of a ReAct agent's run, one per answer (ReAct has no parallel calls)."""
        return [c for turn in range(len(self.turns)) for c in self.calls_of_turn(turn, order_id)]

    def react_text(self, observations: int, order_id: str) -> str:
        """The model's answer to a ReAct prompt that already holds ``observations`` results."""
        calls = self.react_calls(order_id)
        if observations < len(calls):
            call, args = calls[observations]
            action = call.spelling.spell(args, (", ", ": "))
            return f"Thought: I need {call.tool}.\nAction: {call.tool}\n{REACT_ACTION} {action}"
        return f"Thought: I now know the final answer\n{REACT_FINAL} {self.final_answer(order_id)}"

    def code_text(self, observations: int, order_id: str) -> str:
        """The model's answer to a code agent that already holds ``observations`` results: the
        calls of the next turn as Python (the tools are functions there), then
        ``final_answer(...)``."""
        turn = min(observations, len(self.turns))
        lines = [
            f"{c.tool}({', '.join(f'{k}={v!r}' for k, v in c.spelling.ordered(args).items())})"
            for c, args in self.calls_of_turn(turn, order_id)
        ]
        if not lines:
            lines = [f"final_answer(answer={self.final_answer(order_id)!r})"]
        code = "\n".join(
            f"print({line})" if not line.startswith("final_answer") else line for line in lines
        )
        return f"Thought: step {turn + 1}.\n{CODE_OPEN}\n{code}\n{CODE_CLOSE}"

    # --- the agent's side ---------------------------------------------------------
    def result(self, tool: str, order_id: str) -> Any:
        """What ``tool`` returns for ``order_id`` (None for the raising tool, unless it is
        retried: then what its second attempt returns); for ``<order>-<n>`` (a call again,
        :func:`again_of`), its result in :attr:`again`."""
        if tool == self.raising and not self.retried and self.tool_retry is None:
            return None
        order, n = again_of(order_id)
        if n is not None and f"{tool}-{n}" in self.again:
            return fill(self.again[f"{tool}-{n}"], order)
        return fill(self.tools[tool].returns, order_id)

    def raised(self, tool: str, attempt: int) -> bool:
        """Whether the ``attempt``-th call (from 0) of ``tool`` in a run raises (with
        :attr:`tool_retry`, the ``attempt``-th time the tool runs: the framework may run one
        call several times)."""
        if tool != self.raising:
            return False
        if self.tool_retry is not None:
            return attempt < self.tool_retry.fails
        return attempt == 0 or not self.retried

    def attempts(self, tool: str, call: int) -> tuple[int, bool]:
        """``(failed attempts before the last, whether the last raised)`` of the ``call``-th
        call (from 0) the model made of ``tool`` in a run: the framework runs a call again
        after it raised (:attr:`tool_retry`), the call's result being its last attempt's."""
        if self.tool_retry is None or tool != self.raising:
            return 0, self.raised(tool, call)
        ran = 0  # the tool's attempts before this call's
        for _ in range(call + 1):
            failed = min(max(self.tool_retry.fails - ran, 0), self.tool_retry.retries + 1)
            raised = failed > self.tool_retry.retries
            tries = failed if raised else failed + 1
            ran += tries
        return tries - 1, raised

    def error_of(self, order_id: str) -> str:
        """The raising tool's error message for ``order_id``."""
        return str(fill(self.error, order_id))

    # --- as data ------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The scenario as JSON-able data (:func:`from_json` reads it back)."""
        return dataclasses.asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> Scenario:
        """The scenario :meth:`to_json` wrote."""

        def call(c: dict[str, Any]) -> Call:
            sp = dict(c.get("spelling") or {})
            if sp.get("separators") is not None:
                sp["separators"] = tuple(sp["separators"])
            if sp.get("around") is not None:
                sp["around"] = tuple(sp["around"])
            return Call(c["tool"], c["arguments"], Spelling(**sp))

        return Scenario(
            name=data["name"],
            system_prompt=data["system_prompt"],
            questions=tuple(data["questions"]),
            tools={n: Tool(**t) for n, t in data["tools"].items()},
            turns=tuple(tuple(call(c) for c in calls) for calls in data["turns"]),
            raising=data.get("raising"),
            error=data["error"],
            answer=data["answer"],
            beside=data.get("beside"),
            anthropic_beside=data.get("anthropic_beside"),
            raises=data.get("raises", "RuntimeError"),
            retries=tuple(Retry(**r) for r in data.get("retries") or ()),
            ids=data.get("ids", "named"),
            parts=Parts(**(data.get("parts") or {})),
            retried=bool(data.get("retried")),
            again=dict(data.get("again") or {}),
            tool_retry=ToolRetry(**data["tool_retry"]) if data.get("tool_retry") else None,
        )


#: How a ReAct prompt asks for an action, and for the answer.
REACT_ACTION = "Action Input:"
REACT_FINAL = "Final Answer:"
#: How a code agent's prompt asks for code (smolagents' CodeAgent), and ends it.
CODE_OPEN, CODE_CLOSE = "<code>", "</code>"
#: What the model says before its first tool calls (Anthropic answers carry text beside them).
PREAMBLE = "Je vérifie la commande et son suivi…"


# --- call ids ----------------------------------------------------------------------------

#: The shapes of call ids a model server gives: ``named`` (the default's, readable and unique
#: in a run), OpenAI's ``call_`` + 24 characters, Anthropic's ``toolu_01`` + 22, Bedrock's
#: ``tooluse_`` + 22, a UUID, ``counter`` (``call_0``, ``call_1``: restarting in each answer,
#: as Ollama's and several OpenAI-compatible servers' do, so ids repeat across a run's
#: steps), and ``empty`` (no id at all, on the APIs that let a call go without one: Chat
#: Completions; the others get ``counter`` ids).
ID_SHAPES = ("named", "openai", "anthropic", "bedrock", "uuid", "counter", "empty")
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _shaped_id(shape: str, key: str, index: int) -> str:
    """A call id of ``shape``, the same for the same ``key`` (scenario, order, turn, index)."""
    if shape == "counter":
        return f"call_{index}"
    if shape == "empty":
        return ""
    rng = random.Random(key)
    if shape == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    prefix, size, alphabet = {
        "openai": ("call_", 24, _ALNUM),
        "anthropic": ("toolu_01", 22, _ALNUM),
        "bedrock": ("tooluse_", 22, _ALNUM + "-_"),
    }[shape]
    return prefix + "".join(rng.choice(alphabet) for _ in range(size))
