"""How a stack's framework ends a run its own way under some scenarios.

Some frameworks end a run otherwise than the scenario scripts it, by design: they raise an
error of their own, answer another text than the scripted final answer, or stop before the
model's last turn.  Users' agents do exactly that in production, so those runs are recorded
like any other: the model calls the server saw are the truth, and the agent's own output is
the run's answer (``generate`` checks that the framework ended the run the way its entry
says, and writes the entry into ``case.json`` as ``ending``).  Only an ending that leaves
nothing to record (a framework that never stops) is refused, saying why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tests.conformance import scenario

#: The run ends in an error of the framework's (its output line is ``raised: <class>``).
RAISES = "raises"
#: The run answers another text than the scripted final answer.
ANSWERS_OTHERWISE = "answers differently"
#: The run stops before the model's final turn (after fewer model calls than scripted).
STOPS_EARLY = "stops early"
KINDS = (RAISES, ANSWERS_OTHERWISE, STOPS_EARLY)


@dataclasses.dataclass(frozen=True)
class Ending:
    """How a framework ends a run of the scenarios ``when`` picks."""

    #: Each way a run may end (:data:`KINDS`); a run ends in one of them.
    kinds: tuple[str, ...]
    #: Whether the ending applies: the scenario and the mode's entry of ``stack.json``.
    when: Callable[[scenario.Scenario, dict[str, Any]], bool]
    #: What the framework does, and where (its code or documentation).
    why: str
    #: False: nothing can be recorded (``why`` says why); the scenario is refused.
    recordable: bool = True
    #: True: the framework keeps what streamed of an answer cut partway and goes on from
    #: it, so the request the server cut is not sent again.
    keeps_cut: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"kinds": list(self.kinds), "why": self.why}


def _cut_stream(scn: scenario.Scenario) -> bool:
    """Whether ``scn`` cuts a streamed answer partway through (no client retries it)."""
    return any(r.cut == "stream" for r in scn.retries)


def _streamed(mode: dict[str, Any]) -> bool:
    """Whether a mode's agent streams its answers."""
    return any("stream" in a for a in mode.get("args", []))


def _responses_text_in_parts_unstreamed(scn: scenario.Scenario, mode: dict[str, Any]) -> bool:
    """Whether a mode gets the Responses API's answers, not streamed, text in several parts."""
    return (
        scn.parts.text > 1
        and mode.get("api") == "responses"
        and "async_stream" not in mode.get("args", [])
    )


#: Stack -> how its framework ends the runs of some scenarios.
ENDINGS: dict[str, Ending] = {
    **{
        stack: Ending(
            (RAISES, ANSWERS_OTHERWISE),
            lambda scn, mode: scn.ids_repeat,
            "the OpenAI Agents SDK stops a run whose model reuses a call id in a later answer "
            "(ModelBehaviorError: Model reused a completed tool call ID) or gives two calls of "
            "one answer the same id (an empty one, say), or answers otherwise when the ids "
            "repeat within an answer",
        )
        for stack in ("openai_agents_openinference", "openai_agents_otel")
    },
    **{
        stack: Ending(
            (ANSWERS_OTHERWISE, STOPS_EARLY),
            lambda scn, mode: bool(scn.beside) and "async_stream" in mode.get("args", []),
            "pydantic-ai's run_stream takes the first text the model streams as the run's "
            "output, so with text beside the calls the run ends at that text, the model sent "
            "no result of them (1.x runs none of the calls, as its documentation says: it "
            "'will not execute any tool calls made by the model after this final output'; "
            "2.x runs them)",
        )
        for stack in ("pydantic_ai", "pydantic_ai_v1")
    },
    **{
        stack: Ending(
            (RAISES,),
            lambda scn, mode: (
                mode.get("api") in ("responses", "anthropic")
                and any(r.cut != "stream" for r in scn.retries)
            ),
            "LiteLLM's Anthropic provider and its openai/responses/ route send requests through "
            "its own HTTP handler, which does not retry a failed request (num_retries is unset "
            "by default), unlike its Chat Completions route on the OpenAI client: the run ends "
            "in the error the server sent on purpose",
        )
        for stack in ("litellm_openinference", "litellm_otel")
    },
    "semantic_kernel": Ending(
        (ANSWERS_OTHERWISE, RAISES),
        lambda scn, mode: (
            _responses_text_in_parts_unstreamed(scn, mode)
            or (bool(scn.beside) and "async_stream" in mode.get("args", []))
        ),
        "Semantic Kernel's OpenAIResponsesAgent keeps each output_text part of an answer as "
        "a TextContent of its own, and ChatMessageContent.content (what get_response "
        "gives an agent to print) is the first one's text alone: with the answer in several "
        "parts the run answers its first part; and invoke_stream yields the text of every "
        "model answer of a run (its trace records the run's output so too): with text beside "
        "the calls a streamed run answers that text, then its answer (through the Responses "
        "API the run raises instead: each text delta's StreamingChatMessageContent has "
        "choice_index=request_index, the model call's number in the run, and the agent "
        "diagnostics decorator adds up every chunk the run yielded, which raises "
        "ContentAdditionException 'with different choice_index')",
    ),
    "llamaindex_openinference": Ending(
        (ANSWERS_OTHERWISE,),
        _responses_text_in_parts_unstreamed,
        "LlamaIndex's OpenAIResponses keeps each output_text part of an answer as a TextBlock "
        "of its own, and ChatMessage.content (what the agent's run gives) joins them with "
        "newlines: with the answer in several parts the run answers the parts one per line, "
        "not the text the model sent",
    ),
    "crewai_v0": Ending(
        (ANSWERS_OTHERWISE, STOPS_EARLY),
        lambda scn, mode: _cut_stream(scn) and _streamed(mode),
        "CrewAI 0.x keeps what streamed of an answer cut partway and goes on from it "
        "(LLM._handle_streaming_response: 'Returning partial response despite error'): the "
        "run answers that partial text, or goes on from it to another answer",
        keeps_cut=True,
    ),
    "google_adk_v1": Ending(
        (ANSWERS_OTHERWISE, STOPS_EARLY),
        lambda scn, mode: _cut_stream(scn) and _streamed(mode),
        "ADK 1.x on LiteLLM ends a streamed call where LiteLLM's stream ends, quietly at a "
        "cut, and finalizes what streamed (LiteLlm.generate_content_async): text cut "
        "partway is taken for the answer, sync or async; and the sync Runner.run runs the "
        "agent in a thread of its own and drops the error it ended in (a cut inside a "
        "call's arguments, which ADK fails to decode): the run ends at the events before "
        "the cut, answering another text than the scripted one instead of raising",
        keeps_cut=True,
    ),
    "strands": Ending(
        (),
        lambda scn, mode: scn.ids == "empty" and mode.get("api") != "converse",
        "Strands sends its first request again and again on an answer whose calls have no "
        "id (hundreds of times, until the agent is stopped after "
        "OTEL_REPLAY_CONFORMANCE_TIMEOUT_S): nothing to record (Bedrock's Converse gives "
        "every call an id)",
        recordable=False,
    ),
}


#: Stack -> the other ways its framework ends runs of other scenarios (the first that
#: applies, after its entry in :data:`ENDINGS`).
MORE_ENDINGS: dict[str, tuple[Ending, ...]] = {
    "strands": (
        Ending(
            (ANSWERS_OTHERWISE,),
            lambda scn, mode: scn.parts.text > 1 and mode.get("api") == "converse",
            "Strands keeps each text block of a Bedrock answer as a content block of its own, "
            "and AgentResult.__str__ (what an agent prints) ends each block's text with a "
            "newline: with the answer in several blocks the run answers them one per line",
        ),
    ),
}


def ending_of(stack: str, scn: scenario.Scenario, mode: dict[str, Any]) -> Ending | None:
    """How ``stack``'s framework ends a run of ``scn`` in ``mode`` (its ``stack.json``
    entry), when it ends it its own way (None: as the scenario scripts it)."""
    for ending in (ENDINGS.get(stack), *MORE_ENDINGS.get(stack, ())):
        if ending is not None and ending.when(scn, mode):
            return ending
    return None
