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

The package's parts: :mod:`.model` (the data: :class:`Scenario` and what it is made
of), :mod:`.stories` (:data:`DEFAULT` and :data:`NAMED`), :mod:`.draw`
(:func:`scenario_for`); this module holds the active scenario, the agents' tools
and command line, and names all of them (``import scenario`` in an agent).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TextIO

from .draw import PNG_BASE64, scenario_for
from .model import (
    CODE_CLOSE,
    CODE_OPEN,
    DEFAULT_ORDER,
    ID_SHAPES,
    PREAMBLE,
    RAISES,
    REACT_ACTION,
    REACT_FINAL,
    TOOL_ERRORS,
    Call,
    Parts,
    Retry,
    Scenario,
    Spelling,
    Tool,
    ToolRetry,
    again_of,
    digits,
    fill,
    order_in,
)
from .stories import _TOOL_SHAPES, DEFAULT, NAMED

#: The module's names, its parts' included: an agent imports them all from ``scenario``.
__all__ = [
    "ACTIVE",
    "CALLS",
    "CALL_MODES",
    "CODE_CLOSE",
    "CODE_OPEN",
    "DEFAULT",
    "DEFAULT_ORDER",
    "ID_SHAPES",
    "NAMED",
    "PNG_BASE64",
    "PREAMBLE",
    "QUESTIONS",
    "RAISES",
    "RAISING_TOOL",
    "REACT_ACTION",
    "REACT_FINAL",
    "SCENARIO_ENV",
    "SYSTEM_PROMPT",
    "TOOLS",
    "TOOL_DESCRIPTIONS",
    "TOOL_ERRORS",
    "TOOL_PARAMETERS",
    "TOOL_RETRY_ENV",
    "TRACKING_ERROR",
    "Call",
    "Parts",
    "Retry",
    "Scenario",
    "Spelling",
    "Tool",
    "ToolRetry",
    "again_of",
    "agent_arguments",
    "as_json",
    "digits",
    "fill",
    "final_answer",
    "lookup_order",
    "open_ticket",
    "openai_tools",
    "order_in",
    "print_answers",
    "scenario_for",
    "scenario_named",
    "tool_calls_of_turn",
    "tool_of",
    "track_shipment",
    "turn_of",
]


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
#: The variable set (to ``1``) when the agent's framework runs a raising tool again itself as
#: the scenario asks (:class:`ToolRetry`; ``"tool_retry": true`` in the stack's ``stack.json``).
TOOL_RETRY_ENV = "CONFORMANCE_TOOL_RETRY"
#: The scenario this process runs (the default unless ``CONFORMANCE_SCENARIO`` names another).
ACTIVE = scenario_named(os.environ.get(SCENARIO_ENV) or "default").for_stack(
    os.environ.get(TOOL_RETRY_ENV) == "1"
)

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


#: How an agent's output says a run ended in an error instead of an answer (the class of
#: the exception follows; ``generate`` records such a run as one that raised).
RAISED_LINE = "raised: "


def raised_line(e: BaseException) -> str:
    """The output line of a run that raised ``e`` (its traceback goes to standard error: the
    process goes on, and its tracing still exports)."""
    traceback.print_exception(e, file=sys.stderr)
    return f"{RAISED_LINE}{type(e).__name__}"


def said(answer: Callable[[], str]) -> str:
    """``answer()``, or the :func:`raised_line` of the error it ended in (for an agent that
    does not go through :func:`print_answers`)."""
    try:
        return answer()
    except Exception as e:  # as in ``print_answers``
        return raised_line(e)


async def or_raised(answer: Awaitable[str]) -> str:
    """The awaited ``answer``, or the :func:`raised_line` of the error it ended in (for an
    agent that does not go through :func:`print_answers`)."""
    try:
        return await answer
    except Exception as e:  # as in ``print_answers``
        return raised_line(e)


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

    def answered(q: str) -> str:
        try:
            return ask(args, q, stream)
        except Exception as e:  # the run ended in an error: said, and the next run goes on
            return raised_line(e)

    async def aanswered(q: str) -> str:
        try:
            return await aask(args, q, stream)
        except Exception as e:  # as in ``answered``
            return raised_line(e)

    if args.mode in ("sync", "stream"):
        answers = [answered(q) for q in questions]
    else:
        answers = asyncio.run(answer_all(aanswered, questions, args.concurrent))
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
            if name != scn.raising or scn.retried or scn.tool_retry
        },
    }
