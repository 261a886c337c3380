"""A Strands run's final output is what its agent returned, as the agent span records it.

Strands' agent span (the legacy conventions) records the agent's answer in its
``gen_ai.choice`` event: the text of its ``AgentResult``, each text block of the
last answer followed by a newline.  Where the model answered in one block that is
the model's text and a newline; in several (Bedrock's Converse answers in blocks),
it is not the model's text joined, and only the agent span says what the agent gave
its caller.  Drawn: every Strands case of the conformance corpus (real traces of
the package, every scenario and mode recorded), each run's final output against the
agent span's event as recorded.
"""

from __future__ import annotations

from typing import Any

import pytest

from otel_replay.runs.model import Run
from tests.conformance.checks import Case, check, find_cases

#: The cases of the legacy conventions (the ``latest`` modes record the agent's answer as
#: GenAI output messages, read as every stack's are).
CASES = [
    c
    for c in find_cases()
    if c.meta["stack"] == "strands"
    and c.meta["content"]
    and not str(c.meta["mode"]).startswith("latest")
]


def _choice(run: Run) -> Any:
    """The ``message`` of the root agent span's ``gen_ai.choice`` event (None: none)."""
    for root in run.roots:
        for event in root.events:
            if event.get("name") == "gen_ai.choice":
                return (event.get("attributes") or {}).get("message")
    return None


def test_the_corpus_holds_strands_runs() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_final_output_is_what_the_agent_returned(case: Case) -> None:
    checked = 0
    for run in check(case).runs:
        recorded = _choice(run)
        if recorded is None:
            continue  # a run that raised: the agent returned nothing
        assert run.final_output() == recorded
        checked += 1
    if not case.raised:
        assert checked, "no agent answer recorded"
