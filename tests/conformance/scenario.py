"""The conformance scenarios: what the customer asks, the tools, what the model answers.

One description shared by the fake model server (which scripts the model's
side), every stack's agent (which runs the tools), and the checks.  Stdlib
only: the agents import it inside their own virtualenvs; JavaScript agents
read it as ``scenario.json``, which ``generate`` writes beside them.

A :class:`Scenario` is data (JSON-able): the system prompt and questions,
the tools (names, descriptions, parameters, what each returns), the tool
that raises and its error, per turn the calls the model makes (one, several
in parallel, or one turn after another), how the model spells each call's
arguments (:class:`Spelling`), the text it writes beside its calls, and the
answer.  :data:`DEFAULT` is the story every stack has always run; named
scenarios (:data:`NAMED`) and seeded random ones (:func:`scenario_for`) vary
what it never did.  An agent process runs the scenario named by
``CONFORMANCE_SCENARIO`` (a name of :data:`NAMED`, or ``seed-N``; the
default when unset): this module's constants and tool functions are that
scenario's (:data:`ACTIVE`).

The tools keep the default's names and parameters (``lookup_order(order_id)``,
``track_shipment(order_id)``, ``open_ticket(order_id, reason)``): each
stack's agent declares them the way its framework documents (decorated
functions with typed parameters), and calls this module's functions, which
return or raise what the active scenario says.

A run of the default scenario, as the model server scripts it (the *turn*
follows from how many tool results the request carries):

1. no tool result yet: two parallel tool calls, ``lookup_order`` and
   ``track_shipment``; the agent's ``track_shipment`` raises, so the framework
   sends an error result back;
2. one or two results: one more call, ``open_ticket``;
3. three or more: the final answer.

Texts carry non-ASCII characters on purpose (accents, the euro sign, an
emoji), in the question, the arguments, a tool result, the error and the answer.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import json
import os
import random
import re
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TextIO

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
    stream cut inside an event, which the SDKs raise to the agent.  Only ``before`` is
    drawn: with the others some stacks' runs end in an error, which ``generate`` does not
    record yet.
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
    and the model calls it again.  ``again``: what a tool
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
        if tool == self.raising and not self.retried:
            return None
        order, n = again_of(order_id)
        if n is not None and f"{tool}-{n}" in self.again:
            return fill(self.again[f"{tool}-{n}"], order)
        return fill(self.tools[tool].returns, order_id)

    def raised(self, tool: str, attempt: int) -> bool:
        """Whether the ``attempt``-th call (from 0) of ``tool`` in a run raises."""
        return tool == self.raising and (attempt == 0 or not self.retried)

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
        )


#: How a ReAct prompt asks for an action, and for the answer.
REACT_ACTION = "Action Input:"
REACT_FINAL = "Final Answer:"
#: How a code agent's prompt asks for code (smolagents' CodeAgent), and ends it.
CODE_OPEN, CODE_CLOSE = "<code>", "</code>"
#: What the model says before its first tool calls (Anthropic answers carry text beside them).
PREAMBLE = "Je vérifie la commande et son suivi…"

_ORDER_PARAM = {"type": "string", "description": "Order id, e.g. ORD-1234"}
#: The tools' descriptions and parameters: every agent declares these three.
_TOOL_SHAPES = {
    "lookup_order": (
        "Look up an order by its id: status, items and total.",
        {"type": "object", "properties": {"order_id": _ORDER_PARAM}, "required": ["order_id"]},
    ),
    "track_shipment": (
        "Track the shipment of an order with the carrier.",
        {"type": "object", "properties": {"order_id": _ORDER_PARAM}, "required": ["order_id"]},
    ),
    "open_ticket": (
        "Open a support ticket about an order.",
        {
            "type": "object",
            "properties": {
                "order_id": _ORDER_PARAM,
                "reason": {"type": "string", "description": "Why the ticket is opened"},
            },
            "required": ["order_id", "reason"],
        },
    ),
}


def _tools(returns: dict[str, Any]) -> dict[str, Tool]:
    return {n: Tool(d, p, returns.get(n)) for n, (d, p) in _TOOL_SHAPES.items()}


_TICKET_REASON = "échec du suivi du colis"

#: The story every stack has always run (its cases are ``cases/<stack>/<mode>/``).
DEFAULT = Scenario(
    name="default",
    system_prompt=(
        "You are the support agent of the Ködbüro store. Use the tools to look orders up, "
        "track them and open tickets; answer in the customer's language."
    ),
    questions=(
        "Bonjour ! Où en est ma commande ORD-5521 ? Je l'ai payée 24,98 € et rien n'est arrivé 📦",
        "Hallo! Wo bleibt meine Bestellung ORD-7730? Sie hat 24,98 € gekostet, danke für die Hilfe ☕",
    ),
    tools=_tools(
        {
            "lookup_order": {
                "order_id": "{order_id}",
                "status": "en préparation",
                "items": [{"name": "Câble USB-C 2 m", "qty": 2}],
                "total": "24,98 €",
            },
            "open_ticket": {
                "ticket_id": "T-{digits}",
                "order_id": "{order_id}",
                "status": "ouvert",
            },
        }
    ),
    turns=(
        (
            Call("lookup_order", {"order_id": "{order_id}"}),
            Call("track_shipment", {"order_id": "{order_id}"}),
        ),
        (Call("open_ticket", {"order_id": "{order_id}", "reason": _TICKET_REASON}),),
    ),
    raising="track_shipment",
    error="le transporteur « Colis-Express » ne répond pas (délai dépassé)",
    answer=(
        "Votre commande {order_id} (2 × câble USB-C, 24,98 €) est en préparation. "
        "Le suivi du transporteur est indisponible ; j'ai ouvert le ticket T-{digits}, "
        "vous aurez une réponse sous 24 h. Merci de votre patience 🙏"
    ),
    anthropic_beside=PREAMBLE,
)


def _same_shapes(name: str, **fields: Any) -> Scenario:
    """A scenario on the default's prompt and tools, with ``fields`` of its own."""
    return dataclasses.replace(DEFAULT, name=name, **fields)


#: Named scenarios of the committed corpus (``cases/<stack>/<mode>@<name>/``).
NAMED: dict[str, Scenario] = {
    # Tools return JSON objects (nested, numbers, booleans, null), the model writes the
    # arguments in its own key order without spaces, two parallel calls, one tool raising.
    "json_results": _same_shapes(
        "json_results",
        questions=(
            "Salut ! Ma commande ORD-4410 n'est toujours pas là… Vous pouvez vérifier ? 🙂",
            "Hej! Var är min beställning ORD-6082? Tack på förhand ✨",
        ),
        tools=_tools(
            {
                "lookup_order": {
                    "order": {"id": "{order_id}", "état": "expédiée", "livrable": True},
                    "lignes": [{"sku": 'ÉCRAN-27"', "qté": 1, "prix": 199.9}],
                    "total": {"montant": 199.9, "devise": "EUR"},
                    "note": None,
                },
                "open_ticket": {"ticket": "T-{digits}", "priorité": 2, "tags": ["suivi", "colis"]},
            }
        ),
        turns=(
            (
                Call("track_shipment", {"order_id": "{order_id}"}),
                Call("lookup_order", {"order_id": "{order_id}"}),
            ),
            (
                Call(
                    "open_ticket",
                    {"reason": "suivi indisponible — « Suivi+ » muet", "order_id": "{order_id}"},
                ),
            ),
        ),
        error="Délai dépassé : le service « Suivi+ » n'a pas répondu après 30 s",
        answer=(
            "Commande {order_id} : expédiée (1 écran, 199,90 €). Le suivi ne répond pas ; "
            "ticket T-{digits} ouvert. Bonne journée ☀️"
        ),
    ),
    # One call per turn; a tool returns a list of content blocks, one returns an error
    # result, one raises an error with quotes and a tab; text beside every call; the
    # arguments spelled with spaces, \u escapes and escaped slashes.
    "blocks_and_errors": _same_shapes(
        "blocks_and_errors",
        questions=(
            "Ma commande ORD-3107 (réf. A/B-12) est bloquée ? Merci ! 🙏",
            "Mi pedido ORD-8815 no llega, ¿qué pasa? Gracias 📮",
        ),
        tools=_tools(
            {
                "lookup_order": [
                    {"type": "text", "text": "Commande {order_id} : en transit 🚚"},
                    {"type": "text", "text": "2 colis, dépôt Lyon/Saint-Priest"},
                ],
                "open_ticket": {"error": "ticketing en lecture seule (maintenance)", "code": 503},
            }
        ),
        turns=(
            (Call("lookup_order", {"order_id": "{order_id}"}, Spelling((", ", ": "), True)),),
            (Call("track_shipment", {"order_id": "{order_id}"}, Spelling((", ", ": "))),),
            (
                Call(
                    "open_ticket",
                    {"order_id": "{order_id}", "reason": "colis bloqué\n« urgent »\tA/B-12"},
                    Spelling((",", ": "), True, "sorted", escape_slash=True),
                ),
            ),
        ),
        error='HTTP 503 from "carrier/api" — réessayer plus tard\tcode=E42',
        answer=(
            "La commande {order_id} est en transit (2 colis). Le transporteur ne répond pas "
            "et le ticket n'a pas pu être ouvert : réessayez demain 🙇"
        ),
        beside="Je regarde ça tout de suite…",
        anthropic_beside="Je regarde ça tout de suite…",
    ),
    # Tools return plain text, a number and nothing (None); no tool raises; one call,
    # then two in parallel; the arguments spelled as Python's json.dumps does by default.
    "plain_text": _same_shapes(
        "plain_text",
        questions=(
            "Où est passé mon colis ORD-2290 ? Ça fait 3 semaines… 😕",
            "Wo ist Paket ORD-9034? Grüße aus Köln 🌧",
        ),
        tools=_tools(
            {
                "lookup_order": "Commande {order_id} : livrée le 3 mars à 14 h 05 — signée « M. Dupré »",
                "track_shipment": 42,
                "open_ticket": None,
            }
        ),
        turns=(
            (Call("lookup_order", {"order_id": "{order_id}"}, Spelling((", ", ": "), True)),),
            (
                Call("track_shipment", {"order_id": "{order_id}"}, Spelling((", ", ": "), True)),
                Call(
                    "open_ticket",
                    {"order_id": "{order_id}", "reason": "colis déclaré livré, non reçu"},
                    Spelling((", ", ": "), True),
                ),
            ),
        ),
        raising=None,
        answer=(
            "Le colis {order_id} est noté livré le 3 mars (signé M. Dupré) ; j'ai signalé "
            "le problème. Désolé pour l'attente 🙏"
        ),
    ),
    # A tool times out (Python's TimeoutError, not an error of its own), and the model server
    # fails two requests first, which the agent's client retries: the first (HTTP 429, rate
    # limited, ``retry-after: 0``) and the answer (HTTP 503, overloaded).
    "retries_and_timeouts": _same_shapes(
        "retries_and_timeouts",
        questions=(
            "Bonsoir ! Ma commande ORD-6614 devait arriver hier, vous savez où elle est ? 🕰️",
            "Hola, ¿dónde está mi pedido ORD-2047? Lo espero desde el lunes ⏳",
        ),
        turns=(
            (
                Call("lookup_order", {"order_id": "{order_id}"}),
                Call("track_shipment", {"order_id": "{order_id}"}),
            ),
            (Call("open_ticket", {"order_id": "{order_id}", "reason": "suivi hors délai (30 s)"}),),
        ),
        raises="TimeoutError",
        error="le suivi « Colis-Express » n'a pas répondu en 30 s (délai dépassé)",
        retries=(Retry(0, 429), Retry(2, 503)),
        answer=(
            "Votre commande {order_id} (2 × câble USB-C, 24,98 €) est en préparation ; le suivi "
            "n'a pas répondu à temps, j'ai ouvert le ticket T-{digits}. Merci ⏳"
        ),
    ),
}


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


# --- the generator ---------------------------------------------------------------------

#: Texts the generator draws from: accents, other scripts, emoji, quotes, slashes.
_WORDS = (
    "colis",
    "Bestellung",
    "paquete",
    "посылка",
    "包裹",
    "طرد",
    "Ködbüro",
    "naïve",
    "€",
    "×",
    "—",
    "« guillemets »",
    '"quoted"',
    "a/b",
    "back\\slash",
    "📦",
    "🚚",
    "✅",
    "日本",
    "ß",
)
#: Characters a tool result or an argument may carry that JSON must escape.
_CONTROL = ("\n", "\t", "\r", "\u0007", "\u001f", "\u2028")


def _text(rng: random.Random, n: int, control: bool = False) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)]
    if control:
        words.insert(rng.randrange(len(words) + 1), rng.choice(_CONTROL))
    return " ".join(words)


def _value(rng: random.Random) -> Any:
    """A tool result of a drawn kind: text, object, list, number, None, empty, large, control."""
    kind = rng.choice(
        ("text", "object", "list", "number", "none", "empty", "large", "control", "error")
    )
    if kind == "text":
        return f"{{order_id}}: {_text(rng, 5)}"
    if kind == "object":
        return {
            "order_id": "{order_id}",
            _text(rng, 1): rng.choice([1, 2.5, True, None, _text(rng, 2)]),
            "nested": {"items": [_text(rng, 2) for _ in range(rng.randint(0, 3))]},
        }
    if kind == "list":
        return [{"type": "text", "text": _text(rng, 3)} for _ in range(rng.randint(1, 3))]
    if kind == "number":
        return rng.choice([0, 42, -7, 3.25])
    if kind == "none":
        return None
    if kind == "empty":
        return rng.choice(["", {}, []])
    if kind == "large":
        return "{order_id} " + _text(rng, rng.randint(300, 900))
    if kind == "control":
        return _text(rng, 4, control=True)
    return {"error": _text(rng, 4), "code": rng.choice([400, 404, 503])}


#: A 1×1 PNG (base64): the image a tool may return (kept small: traces carry it whole).
PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def _shape(rng: random.Random) -> Any:
    """A tool result of a shape :func:`_value` never draws: an image (an MCP or Anthropic
    image content block with base64 data, a data URL, text and an image in one list), a
    list that is not text blocks (of strings, numbers, objects, nested lists), an empty
    list inside an object, a boolean, a very small or large number, unicode keys."""
    kind = rng.choice(
        (
            "mcp_image",
            "anthropic_image",
            "data_url",
            "text_and_image",
            "strings",
            "numbers",
            "objects",
            "nested",
            "empty_inside",
            "boolean",
            "extreme",
            "unicode_keys",
        )
    )
    mcp_image = {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}
    if kind == "mcp_image":
        return [mcp_image]
    if kind == "anthropic_image":
        source = {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}
        return [{"type": "image", "source": source}]
    if kind == "data_url":
        return "data:image/png;base64," + PNG_BASE64
    if kind == "text_and_image":
        return [{"type": "text", "text": f"{{order_id}}: {_text(rng, 3)}"}, mcp_image]
    if kind == "strings":
        return [_text(rng, 2) for _ in range(rng.randint(1, 4))]
    if kind == "numbers":
        return rng.sample([0, 1, -7, 2.5, 1e-9, 3.0e10, 12345678901], rng.randint(1, 4))
    if kind == "objects":
        return [{"sku": f"SKU-{i}", "qty": i, "label": _text(rng, 1)} for i in range(1, 3)]
    if kind == "nested":
        return [[1, 2], [[_text(rng, 1)]], [], [{"k": []}]]
    if kind == "empty_inside":
        return {"order_id": "{order_id}", "items": [], "notes": {}, "tags": [[]]}
    if kind == "boolean":
        return rng.choice([True, False])
    if kind == "extreme":
        return rng.choice([5e-324, 1e-300, 1.7976931348623157e308, 1e21, 2**63, -(2**53) - 1])
    return {"clé": "{order_id}", "数量": 2, "🚚": True, "ключ": None, "a/b\tc": _text(rng, 1)}


def _again(rng: random.Random, call: Call, n: int) -> Call:
    """``call``'s tool called again with other arguments (``order_id`` ``{order_id}-<n>``, and
    another ``reason``), spelled its own way."""
    args: dict[str, Any] = {**call.arguments, "order_id": f"{{order_id}}-{n}"}
    if "reason" in args:
        args["reason"] = _text(rng, 3)
    return Call(call.tool, args, _spelling(rng))


#: Whitespace a model may write around or inside its arguments: (indent, around).
_WHITESPACE: tuple[tuple[int | None, tuple[str, str]], ...] = (
    (2, ("", "")),
    (4, ("", "")),
    (None, (" ", "")),
    (None, ("", "\n")),
    (None, ("\n", "\n")),
    (2, ("  ", " \n")),
)


def _spelling(rng: random.Random) -> Spelling:
    return Spelling(
        separators=rng.choice([None, (",", ":"), (", ", ": "), (",", ": ")]),
        ensure_ascii=rng.random() < 0.3,
        key_order=rng.choice(["given", "sorted", "reversed"]),
        escape_slash=rng.random() < 0.2,
    )


def scenario_for(seed: int) -> Scenario:
    """A random scenario drawn from ``seed`` (the same seed, the same scenario).

    Drawn: the order the three tools are called in and how they are grouped into
    turns (one call, parallel calls, one turn after another), each call's spelling,
    what each tool returns (:func:`_value`), whether one of them raises and with what
    message, the arguments' texts (non-ASCII, control characters), the text beside
    the calls, the answer, and last (so that the draws before them are what they were)
    whether the raising tool times out (``TimeoutError``) and which model requests the
    server fails first (HTTP 429, 500 or 503), for the client to retry; then the shape
    of the model's call ids (:data:`ID_SHAPES`), how the answers come in parts
    (:class:`Parts`), and whether the raising tool fails once only, the model calling
    it again (one logical call, two attempts); and which of the failed requests are a
    connection closed instead (:attr:`Retry.cut`); then results of other shapes
    (:func:`_shape`: images, lists, booleans, extreme numbers, unicode keys), the same
    tool called again (in its turn with other arguments, and in a later turn, with the
    same or other arguments), and whitespace around or inside a call's arguments
    (leading spaces, trailing newlines, pretty-printed).  Its name is ``seed-N``.
    """
    rng = random.Random(seed)
    tools = list(_TOOL_SHAPES)
    rng.shuffle(tools)
    tools = tools[: rng.randint(1, 3)]
    turns: list[tuple[Call, ...]] = []
    at = 0
    while at < len(tools):
        size = rng.randint(1, len(tools) - at)
        group = []
        for name in tools[at : at + size]:
            args: dict[str, Any] = {"order_id": "{order_id}"}
            if name == "open_ticket":
                args["reason"] = _text(rng, 3, control=rng.random() < 0.5)
            group.append(Call(name, args, _spelling(rng)))
        turns.append(tuple(group))
        at += size
    raising = rng.choice([None, *tools])
    first, second = rng.sample(range(1000, 10000), 2)
    beside = _text(rng, 3) if rng.random() < 0.4 else None
    questions = (
        f"{_text(rng, 3)} ORD-{first} ? {_text(rng, 2)}",
        f"{_text(rng, 3)} ORD-{second} ? {_text(rng, 2)}",
    )
    results = _tools({name: _value(rng) for name in _TOOL_SHAPES})
    error = _text(rng, 4, control=rng.random() < 0.3)
    answer = f"{{order_id}}: {_text(rng, 6)}"
    raises = rng.choice(RAISES)
    retries = tuple(
        Retry(turn, rng.choice((429, 500, 503)))
        for turn in range(len(turns) + 1)
        if rng.random() < 0.25
    )
    ids = rng.choice(ID_SHAPES)
    parts = Parts(
        text=rng.choice((1, 1, 2, 3, 5)),
        piece=rng.choice((0, 0, 1, 2, 3, 5, 11)),
        write=rng.choice((0, 0, 1, 3, 7, 64)),
    )
    if raising is not None and rng.random() < 0.35:
        # The raising tool fails once and the model calls it again, right after.
        at = next(i for i, group in enumerate(turns) if any(c.tool == raising for c in group))
        repeat = next(c for c in turns[at] if c.tool == raising)
        turns.insert(at + 1, (repeat,))
        retried = True
    else:
        retried = False
    # Some failures are a connection closed before the answer, which every client retries
    # (one closed partway through a JSON answer is not drawn: the Vercel AI SDK and LiteLLM's
    # own transport raise it to the agent, whose run then ends in an error).
    retries = tuple(dataclasses.replace(r, cut=rng.choice(("", "", "before"))) for r in retries)
    # Drawn after all of the above, so that those draws stay what they were for every seed.
    results = {
        name: dataclasses.replace(t, returns=_shape(rng)) if rng.random() < 0.35 else t
        for name, t in results.items()
    }
    again: dict[str, Any] = {}
    grouped = [list(calls) for calls in turns]
    if rng.random() < 0.35:
        # The same tool twice in one turn, with other arguments (placed before or after).
        group = grouped[rng.randrange(len(grouped))]
        twice = _again(rng, rng.choice(group), 2)
        group.insert(rng.randint(0, len(group)), twice)
        again[f"{twice.tool}-2"] = _value(rng) if rng.random() < 0.5 else _shape(rng)
    if rng.random() < 0.35:
        # A tool called again in a later turn: the same arguments, or others.
        first = rng.choice([c for calls in grouped for c in calls])
        if rng.random() < 0.3:
            grouped.append([Call(first.tool, first.arguments, _spelling(rng))])
        else:
            grouped.append([_again(rng, first, 3)])
            again[f"{first.tool}-3"] = _value(rng) if rng.random() < 0.5 else _shape(rng)
    for calls in grouped:
        for i, c in enumerate(calls):
            if rng.random() < 0.3:
                indent, around = rng.choice(_WHITESPACE)
                spelled = dataclasses.replace(c.spelling, indent=indent, around=around)
                calls[i] = dataclasses.replace(c, spelling=spelled)
    turns = [tuple(calls) for calls in grouped]
    return dataclasses.replace(
        DEFAULT,
        name=f"seed-{seed}",
        questions=questions,
        tools=results,
        turns=tuple(turns),
        raising=raising,
        error=error,
        answer=answer,
        beside=beside,
        anthropic_beside=beside,
        raises=raises,
        retries=retries,
        ids=ids,
        parts=parts,
        retried=retried,
        again=again,
    )


def scenario_named(name: str) -> Scenario:
    """The scenario called ``name``: ``default``, one of :data:`NAMED`, or ``seed-N``."""
    if name == "default":
        return DEFAULT
    if name in NAMED:
        return NAMED[name]
    if name.startswith("seed-") and name[5:].isdigit():
        return scenario_for(int(name[5:]))
    known = ", ".join(["default", *NAMED, "seed-N"])
    raise ValueError(f"no scenario {name!r}; scenarios: {known}")


#: The variable that names an agent process's scenario.
SCENARIO_ENV = "CONFORMANCE_SCENARIO"
#: The scenario this process runs (the default unless ``CONFORMANCE_SCENARIO`` names another).
ACTIVE = scenario_named(os.environ.get(SCENARIO_ENV) or "default")

SYSTEM_PROMPT = ACTIVE.system_prompt
#: The question of each agent run in one process; each names its own order.
QUESTIONS = ACTIVE.questions
#: The tool that raises in the agent (None: none does), and what it raises.
RAISING_TOOL = ACTIVE.raising
TRACKING_ERROR = ACTIVE.error
#: Tool name -> description, as every agent declares them.
TOOL_DESCRIPTIONS = {name: t.description for name, t in ACTIVE.tools.items()}
#: JSON Schemas of the tools' parameters (for agents that declare tools as schemas).
TOOL_PARAMETERS: dict[str, dict[str, Any]] = {n: t.parameters for n, t in ACTIVE.tools.items()}


# --- the agent's side: the three tools -------------------------------------------------

#: The tools that ran in this process, in order (a replay with stubbed tools runs none).
CALLS: list[str] = []
#: ``(tool, order id)`` of each call in :data:`CALLS`: a run's attempts of a tool are counted.
_CALLED: list[tuple[str, str]] = []


def _run(name: str, order_id: str) -> Any:
    attempt = sum(1 for called, order in _CALLED if (called, order) == (name, order_id))
    CALLS.append(name)
    _CALLED.append((name, order_id))
    if ACTIVE.raised(name, attempt):
        raise TOOL_ERRORS[RAISES.index(ACTIVE.raises)](ACTIVE.error_of(order_id))
    return ACTIVE.result(name, order_id)


def lookup_order(order_id: str) -> Any:
    """Look up an order by its id: status, items and total."""
    return _run("lookup_order", order_id)


def track_shipment(order_id: str) -> Any:
    """Track the shipment of an order with the carrier (in the default scenario, always
    fails: the carrier is down)."""
    return _run("track_shipment", order_id)


def open_ticket(order_id: str, reason: str) -> Any:
    """Open a support ticket about an order."""
    return _run("open_ticket", order_id)


TOOLS = {"lookup_order": lookup_order, "track_shipment": track_shipment, "open_ticket": open_ticket}


def tool_of(declared: str) -> str:
    """The scenario's name of a tool a framework declared under a longer name.

    ``OrderPlugin-lookup_order`` (Semantic Kernel's plugin prefix) -> ``lookup_order``;
    any other name is itself.
    """
    for name in _TOOL_SHAPES:
        if declared == name or declared.endswith(("-" + name, "." + name, "_" + name)):
            return name
    return declared


def openai_tools() -> list[dict[str, Any]]:
    """The three tools in the Chat Completions ``tools`` shape."""
    return [
        {
            "type": "function",
            "function": {"name": name, "description": desc, "parameters": TOOL_PARAMETERS[name]},
        }
        for name, desc in TOOL_DESCRIPTIONS.items()
    ]


# --- the model's side, for the active scenario ------------------------------------------


def tool_calls_of_turn(turn: int, order_id: str) -> list[tuple[str, dict[str, Any]]]:
    """``(tool name, arguments)`` the model asks for at ``turn`` (none: the final answer)."""
    return [(c.tool, args) for c, args in ACTIVE.calls_of_turn(turn, order_id)]


def turn_of(tool_results: int) -> int:
    """The turn a request is at, from the number of tool results it carries."""
    return ACTIVE.turn_of(tool_results)


def final_answer(order_id: str) -> str:
    """The model's last answer for ``order_id``."""
    return ACTIVE.final_answer(order_id)


# --- the agents' command line ----------------------------------------------------------

#: How an agent calls the model: blocking or asyncio, whole answers or streamed.
CALL_MODES = ("sync", "async", "stream", "async_stream")


def agent_arguments(description: str | None) -> argparse.Namespace:
    """The command line every stack's ``agent.py`` takes (``generate`` passes it).

    ``--mode`` (:data:`CALL_MODES`), ``--api`` (``chat``, ``responses``,
    ``anthropic``), ``--runs`` (agent runs in this process, one per
    question, one after the other or, with ``--concurrent``, at once) and
    ``--base-url`` (the model server).
    """
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--mode", choices=CALL_MODES, default="sync")
    ap.add_argument("--api", choices=("chat", "responses", "anthropic"), default="chat")
    ap.add_argument("--runs", type=int, default=1, choices=range(1, len(QUESTIONS) + 1))
    ap.add_argument("--concurrent", action="store_true", help="the runs at once (async modes)")
    ap.add_argument("--base-url", required=True)
    return ap.parse_args()


async def answer_all(
    ask: Callable[[str], Awaitable[str]], questions: Sequence[str], concurrent: bool
) -> list[str]:
    """Each question's answer from ``ask``: one run after the other or, ``concurrent``, at once."""
    if concurrent:
        return list(await asyncio.gather(*(ask(q) for q in questions)))
    return [await ask(q) for q in questions]


def print_answers(
    description: str | None,
    ask: Callable[[argparse.Namespace, str, bool], str],
    aask: Callable[[argparse.Namespace, str, bool], Awaitable[str]],
    out: TextIO | None = None,
) -> None:
    """An agent's main: each question of the command line's runs answered, and printed.

    ``ask(args, question, stream)`` answers in the sync modes, ``aask`` under
    asyncio in the others (one run after the other, or at once).  The answers
    go to ``out`` (standard output when None: a framework that prints there
    itself gets another stream for its own text).
    """
    args = agent_arguments(description)
    questions = QUESTIONS[: args.runs]
    stream = args.mode in ("stream", "async_stream")
    if args.mode in ("sync", "stream"):
        answers = [ask(args, q, stream) for q in questions]
    else:
        answers = asyncio.run(
            answer_all(lambda q: aask(args, q, stream), questions, args.concurrent)
        )
    out = out or sys.stdout
    for answer in answers:
        print(answer, file=out)
    out.flush()


def as_json(scn: Scenario | None = None) -> dict[str, Any]:
    """What a non-Python agent needs of a scenario (the active one by default; ``generate``
    writes it beside the agent as ``scenario.json``): prompts, tools, and each tool's result
    or error by order id."""
    scn = scn or ACTIVE
    orders = [order_in(q) for q in scn.questions]
    return {
        "scenario": scn.name,
        "system_prompt": scn.system_prompt,
        "questions": list(scn.questions),
        "tools": {
            name: {"description": t.description, "parameters": t.parameters}
            for name, t in scn.tools.items()
        },
        "raising_tool": scn.raising,
        "retried": scn.retried,
        "raises": scn.raises,
        "tracking_error": scn.error,
        "errors": {o: scn.error_of(o) for o in orders},
        # Keyed by the call's order_id argument: ``ORD-5521-2`` is a tool called again.
        "results": {
            name: {
                o: scn.result(name, o)
                for o in [
                    *orders,
                    *(f"{o}-{k.rpartition('-')[2]}" for o in orders for k in scn.again),
                ]
            }
            for name in scn.tools
            if name != scn.raising or scn.retried
        },
    }
