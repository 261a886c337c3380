"""Call ids a framework made for calls the model sent without one read as no id.

pydantic-ai, Google ADK, the Vercel AI SDK and CrewAI give a call the model
sent without an id one of their own and record it as the model's (CrewAI's on
the model spans of its client's instrumentation: its own spans in the run
mark it).  The traces of the real stacks under a model that gives none are
conformance cases (``cases/<stack>/<mode>@seed-27``, read here too); many runs
mixing the ids each framework makes with the ids providers give are drawn.
"""

from __future__ import annotations

import random
import string
import uuid
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.dialects import crewai
from otel_replay.runs.made_ids import forget_unmatched_ids, unmake_call_ids
from otel_replay.runs.model import ModelCall, Step, ToolCall
from tests.conformance.checks import Case
from tests.fixtures.data import ROOT

_ALNUM = string.ascii_letters + string.digits


def _made(form: str, rng: random.Random, index: int) -> str:
    """An id as the framework makes it (its own generator's recipe) for the ``index``-th
    call of a run."""
    u = uuid.UUID(int=rng.getrandbits(128), version=4)
    if form == "pyd_ai":
        return f"pyd_ai_{u.hex}"
    if form == "adk":
        # Streamed through LiteLLM, ADK gives the call's index in its answer.
        return rng.choice([f"adk-{u}", str(index)])
    if form == "crewai":
        # ``f"call_{id(tool_call)}"``: an address in decimal, as CPython's id() gives it.
        return f"call_{rng.randrange(2**24, 2**48)}"
    return "".join(rng.choice(_ALNUM) for _ in range(16))


#: Ids models give: OpenAI's, Anthropic's, Bedrock's, UUIDs, a restarting counter, readable
#: ones, Mistral's 9 characters, none.
def _given(shape: str, rng: random.Random) -> str:
    def chars(n: int, alphabet: str = _ALNUM) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    return {
        "openai": lambda: f"call_{chars(24)}",
        "anthropic": lambda: f"toolu_01{chars(22)}",
        "bedrock": lambda: f"tooluse_{chars(22, _ALNUM + '_-')}",
        "uuid": lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "counter": lambda: f"call_{rng.randrange(3)}",
        "named": lambda: f"lookup_order-{rng.randrange(100)}",
        "mistral": lambda: chars(9),
        "empty": lambda: "",
    }[shape]()


#: The frameworks that make ids, by the form their ids take.
MADE = ("pyd_ai", "adk", "ai_sdk", "crewai")

GIVEN = ("openai", "anthropic", "bedrock", "uuid", "counter", "named", "mistral", "empty")


def _model(pos: int, calls: list[dict[str, Any]], form: str | None) -> Step:
    output = [{"role": "assistant", "parts": calls}]
    # CrewAI's model spans are its client instrumentation's: no mark of their own.
    mark = None if form == "crewai" else form
    model = ModelCall(output_messages=output, call_ids_made_as=mark)
    return Step(
        "model", f"chat {pos}", f"m{pos:015x}", None, "t" * 32, pos * 10, pos * 10 + 1, model=model
    )


def _marks(form: str | None, rng: random.Random) -> list[Step]:
    """The steps that mark a run with ``form`` besides its model steps' marks: CrewAI's
    own span (its agent's, of either of its instrumentation's scopes)."""
    if form != "crewai":
        return []
    scope = rng.choice(sorted(crewai.SCOPES))
    return [Step("agent", "Agent._execute_core", "a" * 16, None, "t" * 32, 0, 0, scope=scope)]


def _tool(pos: int, i: int, call: dict[str, Any]) -> Step:
    tool = ToolCall(tool_name=call["name"], call_id=call["id"] or None, result="r")
    start = pos * 10 + 2 + i
    return Step("tool", call["name"], f"t{pos:07x}{i:08x}", None, "t" * 32, start, start, tool=tool)


@settings(max_examples=200, deadline=None)
@given(
    form=st.sampled_from(MADE),
    marked=st.booleans(),
    turns=st.lists(
        st.lists(st.one_of(st.none(), st.sampled_from(GIVEN)), min_size=1, max_size=3),
        min_size=1,
        max_size=4,
    ),
    seed=st.integers(0, 2**32),
)
def test_ids_the_framework_made_are_none_and_the_models_own_are_kept(
    form: str, marked: bool, turns: list[list[str | None]], seed: int
) -> None:
    """Each turn's calls: ``None`` is a call the model sent without an id (the framework
    made one), a shape a call with the model's own id.  On a stack marked with the form,
    every made id reads as the empty id the model sent, and the tool steps that ran those
    calls have none; the model's own ids stay, on calls and tool steps alike.  Unmarked,
    nothing changes."""
    rng = random.Random(seed)
    steps: list[Step] = _marks(form if marked else None, rng)
    want: list[tuple[dict[str, Any], Step, str]] = []
    for pos, shapes in enumerate(turns):
        calls = [
            {
                "type": "tool_call",
                "id": _made(form, rng, len(want) + i) if shape is None else _given(shape, rng),
                "name": f"tool{i}",
                "arguments": {},
            }
            for i, shape in enumerate(shapes)
        ]
        steps.append(_model(pos, calls, form if marked else None))
        for i, (call, shape) in enumerate(zip(calls, shapes, strict=True)):
            tool = _tool(pos, i, call)
            steps.append(tool)
            want.append((call, tool, "" if shape is None and marked else call["id"]))
    changed = unmake_call_ids(steps)
    made = sum(1 for shapes in turns for s in shapes if s is None) if marked else 0
    assert changed == 2 * made, "each made id: on its call and on its tool step"
    for call, tool, call_id in want:
        assert call["id"] == call_id
        assert tool.tool is not None and tool.tool.call_id == (call_id or None)


CASES = ROOT / "tests" / "conformance" / "cases"


def _run(case: Path) -> Any:
    runs = otel_replay.load(*Case(case).trace_files())
    assert len(runs) == 1
    return runs[0]


def test_real_stacks_under_a_model_that_gives_no_ids() -> None:
    """pydantic-ai, Google ADK (1.x too; streamed: the index ids), the Vercel AI SDK and
    CrewAI (streamed: it keeps a streamed call as a dict, whose ``id()`` makes its id), recorded against a model that sent every call with an empty id: each output call has
    that id, and each tool step none and a result or error (joined by the framework's id
    first, or by tool and arguments where ADK 1.x records the model's answer as it came)."""
    cases = sorted(CASES.glob("*/*@seed-27"))
    stacks = {c.parent.name for c in cases}
    assert {"pydantic_ai", "google_adk", "vercel_ai", "crewai"} <= stacks
    for case in cases:
        if case.parent.name not in (
            "pydantic_ai",
            "google_adk",
            "google_adk_v1",
            "vercel_ai",
            "crewai",
        ):
            continue
        run = _run(case)
        calls = [
            p
            for s in run.steps
            if s.kind == "model" and s.model is not None
            for m in s.model.output_messages or []
            for p in m["parts"]
            if p.get("type") == "tool_call"
        ]
        assert calls and all(p["id"] == "" for p in calls), case
        tools = [s.tool for s in run.steps if s.kind == "tool" and s.tool is not None]
        assert len(tools) == len(calls), case
        assert all(t.call_id is None for t in tools), case
        assert all(t.result is not None or t.error is not None for t in tools), case


@settings(max_examples=200, deadline=None)
@given(
    form=st.sampled_from(MADE),
    marked=st.booleans(),
    # Per tool step: made by the framework and held by an output, made and held by none
    # (the output keeps the model's empty id), or the model's own id of a shape.
    kinds=st.lists(st.sampled_from(["held", "unheld", *GIVEN]), min_size=1, max_size=6),
    seed=st.integers(0, 2**32),
)
def test_a_made_id_no_call_holds_is_taken_from_its_tool_step_before_joining(
    form: str, marked: bool, kinds: list[str], seed: int
) -> None:
    """Google ADK 1.x records the model's answer as it came (no id) and the tool run under
    the id ADK made: such a tool step loses the id, to be joined by tool and arguments.
    A made id an output holds, and the model's own ids, stay; unmarked, nothing changes."""
    rng = random.Random(seed)
    calls, tools, want = [], [], []
    for i, kind in enumerate(kinds):
        call_id = _made(form, rng, i) if kind in ("held", "unheld") else _given(kind, rng)
        output_id = "" if kind == "unheld" else call_id
        calls.append({"type": "tool_call", "id": output_id, "name": f"tool{i}", "arguments": {}})
        tools.append(_tool(0, i, {"name": f"tool{i}", "id": call_id}))
        want.append(None if kind == "unheld" and marked else (call_id or None))
    steps = [
        *_marks(form if marked else None, rng),
        _model(0, calls, form if marked else None),
        *tools,
    ]
    changed = forget_unmatched_ids(steps)
    assert changed == (kinds.count("unheld") if marked else 0)
    assert [t.tool.call_id for t in tools if t.tool is not None] == want
