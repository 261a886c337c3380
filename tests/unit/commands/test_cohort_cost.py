"""``otel-replay cohort``: each run's wall time and cost per candidate, and the totals'
slowest and costliest runs.

The candidates are fake OpenAI-compatible servers on 127.0.0.1 (``test_cohort``'s),
one of them slow; each answer reports 11 input and 3 output tokens.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_replay.commands.cohort import Price
from tests.unit.commands.test_cohort import (
    QUESTIONS,
    as_json,
    cohort,
    cohort_cli,
    function_model,
    scripted,
)

__all__ = ["cohort"]  # the recorded runs, a fixture shared with test_cohort

#: What one run of the example costs a candidate: two requests of 11 tokens in, 3 out.
TOKENS_IN, TOKENS_OUT = 2 * 11, 2 * 3
SLOW_S = 0.15


def slow(messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
    """The example's model, taking its time over each answer."""
    time.sleep(SLOW_S)
    return scripted(messages, body)


def test_each_run_costs_what_its_tokens_cost_at_the_price_given(cohort: Path) -> None:
    with function_model(scripted) as fast, function_model(slow) as late:
        doc = as_json(
            cohort,
            *("--model", f"openai:mini@{fast}", "--model", f"openai:big@{late}"),
            *("--agent", f"tests.fixtures.cohort_agents:fixed_agent@openai:mini@{fast}"),
            *(
                "--kwarg",
                "user_id=@user.id",
                "--live-tool",
                "lookup_order=tests.fixtures.cohort_agents:live_lookup",
            ),
            *("--price", "openai:mini=0.4/1.6", "--price", "unused=1/1"),
            "--replayable",
        )
    assert doc["cohort"]["prices"] == {
        "openai:mini": {"input": 0.4, "output": 1.6},
        "unused": {"input": 1.0, "output": 1.0},
    }
    one_run = (TOKENS_IN * 0.4 + TOKENS_OUT * 1.6) / 1e6
    for run in doc["runs"]:
        agent, mini, big = run["outcomes"]  # agents first, then models
        assert math.isclose(mini["cost"], one_run) and math.isclose(agent["cost"], one_run)
        assert big["cost"] is None  # no price given for it
        # Wall time of the run: the slow candidate's two answers, each SLOW_S at least.
        assert big["latency_ms"] >= 2 * SLOW_S * 1000
        assert mini["latency_ms"] is not None and mini["latency_ms"] > 0
    agent_t, mini_t, big_t = doc["totals"]
    assert math.isclose(agent_t["cost"], len(QUESTIONS) * one_run)
    n = len(QUESTIONS)
    assert math.isclose(mini_t["cost"], n * one_run) and big_t["cost"] is None
    assert big_t["latency_ms_per_run"] >= 2 * SLOW_S * 1000
    assert len(big_t["slowest"]) == 3 and big_t["costliest"] == []
    times = [s["latency_ms"] for s in big_t["slowest"]]
    assert times == sorted(times, reverse=True)
    by_run = {r["run_id"]: r["outcomes"][2]["latency_ms"] for r in doc["runs"]}
    assert all(by_run[s["run_id"]] == s["latency_ms"] for s in big_t["slowest"])
    assert times[0] == max(by_run.values())
    assert [c["cost"] for c in mini_t["costliest"]] == [one_run] * 3


def test_the_table_says_cost_and_the_slowest_runs(cohort: Path) -> None:
    with function_model(scripted) as url:
        code, out, err = cohort_cli(
            cohort, "--model", f"openai:mini@{url}", "--price", "mini=2/10", "--replayable"
        )
    assert code == 0, err
    one_run = (TOKENS_IN * 2 + TOKENS_OUT * 10) / 1e6
    assert out.count(f"same (28 tok, ${one_run:.4g})") == len(QUESTIONS)
    assert f"(100% same); 88→24 tok; ${len(QUESTIONS) * one_run:.4g};" in out
    assert "  slowest: " in out and "  costliest: " in out


def test_a_price_that_is_none_is_a_usage_error(cohort: Path) -> None:
    for price in ["mini", "mini=1", "=1/2", "mini=a/b", "mini=-1/2", "mini=nan/1"]:
        code, _, err = cohort_cli(
            cohort, "--model", "openai:m@http://127.0.0.1:9", "--price", price
        )
        assert code == 2 and "--price" in err, (price, err)


_rate = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
_name = st.text(st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1).filter(str.strip)


@given(model=_name, rate_in=_rate, rate_out=_rate)
def test_a_price_reads_back_for_any_model_name_and_rate(
    model: str, rate_in: float, rate_out: float
) -> None:
    """The class: model names as providers spell them (slashes, colons, ``=``) and any
    rate written as Python writes a float."""
    assert Price.parse(f"{model}={rate_in!r}/{rate_out!r}") == (
        model.strip(),
        Price(rate_in, rate_out),
    )


@given(
    model=_name,
    rates=st.sampled_from(["", "1", "1/", "/1", "-1/1", "1/-0.5", "inf/1", "1/nan", "a/1"]),
)
def test_a_price_that_is_no_price_is_refused_by_name(model: str, rates: str) -> None:
    with pytest.raises(ValueError, match=r"MODEL=IN/OUT|not negative"):
        Price.parse(f"{model}={rates}")
