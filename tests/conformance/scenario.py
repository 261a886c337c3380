"""The conformance scenario: what the customer asks, the three tools, what the model answers.

One definition shared by the fake model server (which scripts the model's
side), every stack's agent (which runs the tools), and the checks.  Stdlib
only: the agents import it inside their own virtualenvs.

A run, as the model server scripts it (the *turn* follows from how many tool
results the request carries):

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
import json
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TextIO

SYSTEM_PROMPT = (
    "You are the support agent of the Ködbüro store. Use the tools to look orders up, "
    "track them and open tickets; answer in the customer's language."
)

#: The question of each agent run in one process; each names its own order.
QUESTIONS = (
    "Bonjour ! Où en est ma commande ORD-5521 ? Je l'ai payée 24,98 € et rien n'est arrivé 📦",
    "Hallo! Wo bleibt meine Bestellung ORD-7730? Sie hat 24,98 € gekostet, danke für die Hilfe ☕",
)
DEFAULT_ORDER = "ORD-5521"
_ORDER_ID = re.compile(r"ORD-\d+")

#: The tool that raises in the agent, and what it raises.
RAISING_TOOL = "track_shipment"
TRACKING_ERROR = "le transporteur « Colis-Express » ne répond pas (délai dépassé)"
TICKET_REASON = "échec du suivi du colis"

#: Tool name -> description, as every agent declares them.
TOOL_DESCRIPTIONS = {
    "lookup_order": "Look up an order by its id: status, items and total.",
    "track_shipment": "Track the shipment of an order with the carrier.",
    "open_ticket": "Open a support ticket about an order.",
}


def order_in(text: str) -> str:
    """The order id a question (or any text) names; the default order when none."""
    found = _ORDER_ID.search(text)
    return found.group(0) if found else DEFAULT_ORDER


def digits(order_id: str) -> str:
    """``ORD-5521`` -> ``5521``: the suffix of every id the server makes for that order."""
    return order_id.rsplit("-", 1)[-1]


# --- the agent's side: the three tools -------------------------------------------------

#: The tools that ran in this process, in order (a replay with stubbed tools runs none).
CALLS: list[str] = []


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: status, items and total."""
    CALLS.append("lookup_order")
    return {
        "order_id": order_id,
        "status": "en préparation",
        "items": [{"name": "Câble USB-C 2 m", "qty": 2}],
        "total": "24,98 €",
    }


def track_shipment(order_id: str) -> dict[str, Any]:
    """Track the shipment of an order with the carrier (always fails: the carrier is down)."""
    CALLS.append("track_shipment")
    raise RuntimeError(TRACKING_ERROR)


def open_ticket(order_id: str, reason: str) -> dict[str, Any]:
    """Open a support ticket about an order."""
    CALLS.append("open_ticket")
    return {"ticket_id": f"T-{digits(order_id)}", "order_id": order_id, "status": "ouvert"}


TOOLS = {"lookup_order": lookup_order, "track_shipment": track_shipment, "open_ticket": open_ticket}


def tool_of(declared: str) -> str:
    """The scenario's name of a tool a framework declared under a longer name.

    ``OrderPlugin-lookup_order`` (Semantic Kernel's plugin prefix) -> ``lookup_order``;
    any other name is itself.
    """
    for name in TOOL_DESCRIPTIONS:
        if declared == name or declared.endswith(("-" + name, "." + name, "_" + name)):
            return name
    return declared


#: JSON Schemas of the tools' parameters (for agents that declare tools as schemas).
TOOL_PARAMETERS: dict[str, dict[str, Any]] = {
    "lookup_order": {
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "Order id, e.g. ORD-1234"}},
        "required": ["order_id"],
    },
    "track_shipment": {
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "Order id, e.g. ORD-1234"}},
        "required": ["order_id"],
    },
    "open_ticket": {
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "description": "Order id, e.g. ORD-1234"},
            "reason": {"type": "string", "description": "Why the ticket is opened"},
        },
        "required": ["order_id", "reason"],
    },
}


def openai_tools() -> list[dict[str, Any]]:
    """The three tools in the Chat Completions ``tools`` shape."""
    return [
        {
            "type": "function",
            "function": {"name": name, "description": desc, "parameters": TOOL_PARAMETERS[name]},
        }
        for name, desc in TOOL_DESCRIPTIONS.items()
    ]


# --- the model's side: what the server answers at each turn -----------------------------


def tool_calls_of_turn(turn: int, order_id: str) -> list[tuple[str, dict[str, Any]]]:
    """``(tool name, arguments)`` the model asks for at ``turn`` (none: the final answer)."""
    if turn == 0:
        return [
            ("lookup_order", {"order_id": order_id}),
            ("track_shipment", {"order_id": order_id}),
        ]
    if turn == 1:
        return [("open_ticket", {"order_id": order_id, "reason": TICKET_REASON})]
    return []


def turn_of(tool_results: int) -> int:
    """The turn a request is at, from the number of tool results it carries."""
    if tool_results == 0:
        return 0
    return 1 if tool_results < 3 else 2


#: How a ReAct prompt asks for an action, and for the answer.
REACT_ACTION = "Action Input:"
REACT_FINAL = "Final Answer:"


def react_calls(order_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The calls of a ReAct agent's run: the scripted ones, one per answer (ReAct has no
    parallel calls)."""
    return [call for turn in (0, 1) for call in tool_calls_of_turn(turn, order_id)]


def react_text(observations: int, order_id: str) -> str:
    """The model's answer to a ReAct prompt that already holds ``observations`` results."""
    calls = react_calls(order_id)
    if observations < len(calls):
        name, args = calls[observations]
        action = json.dumps(args, ensure_ascii=False)
        return f"Thought: I need {name}.\nAction: {name}\n{REACT_ACTION} {action}"
    return f"Thought: I now know the final answer\n{REACT_FINAL} {final_answer(order_id)}"


#: How a code agent's prompt asks for code (smolagents' CodeAgent), and ends it.
CODE_OPEN, CODE_CLOSE = "<code>", "</code>"


def code_text(observations: int, order_id: str) -> str:
    """The model's answer to a code agent that already holds ``observations`` results: the
    scripted calls of the next turn as Python (the tools are functions there), then
    ``final_answer(...)``."""
    turn = min(observations, 2)
    lines = [
        f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
        for name, args in tool_calls_of_turn(turn, order_id)
    ]
    if not lines:
        lines = [f"final_answer(answer={final_answer(order_id)!r})"]
    code = "\n".join(
        f"print({line})" if not line.startswith("final_answer") else line for line in lines
    )
    return f"Thought: step {turn + 1}.\n{CODE_OPEN}\n{code}\n{CODE_CLOSE}"


#: What the model says before its first tool calls (Anthropic answers carry text beside them).
PREAMBLE = "Je vérifie la commande et son suivi…"


def final_answer(order_id: str) -> str:
    """The model's last answer for ``order_id``."""
    return (
        f"Votre commande {order_id} (2 × câble USB-C, 24,98 €) est en préparation. "
        f"Le suivi du transporteur est indisponible ; j'ai ouvert le ticket T-{digits(order_id)}, "
        "vous aurez une réponse sous 24 h. Merci de votre patience 🙏"
    )


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


def as_json() -> dict[str, Any]:
    """What a non-Python agent needs of the scenario (``generate`` writes it beside the agent
    as ``scenario.json``): prompts, tools, and each tool's result or error by order id."""
    orders = [order_in(q) for q in QUESTIONS]
    return {
        "system_prompt": SYSTEM_PROMPT,
        "questions": list(QUESTIONS),
        "tools": {
            name: {"description": desc, "parameters": TOOL_PARAMETERS[name]}
            for name, desc in TOOL_DESCRIPTIONS.items()
        },
        "raising_tool": RAISING_TOOL,
        "tracking_error": TRACKING_ERROR,
        "results": {
            "lookup_order": {o: lookup_order(o) for o in orders},
            "open_ticket": {o: open_ticket(o, TICKET_REASON) for o in orders},
        },
    }
