"""Anomalies in a recorded run: the usual shapes of an agent going wrong.

Each :class:`Finding` names its step (index and span id).  Findings are
warnings about the run's behaviour, not about what was recorded (that is the
replay-kit check, :mod:`otel_replay.runs.kit`):

``repeated_tool_call``
    a tool called again with the same (canonical) arguments as an earlier call;
``loop``
    a sequence of steps (tool calls with their arguments, model answers)
    repeated back to back;
``tool_budget``
    more tool calls than the budget (:attr:`Config.max_tool_calls`), named at
    the first call over it;
``tool_error``
    a tool call that raised or whose span has an error status;
``retry``
    a failed step followed by the same call again (same tool and arguments,
    or a model request with the same messages);
``http_status``
    an HTTP 429 or 5xx answer: ``http.response.status_code`` on a span, an
    error status naming one, or a tool result carrying one;
``partial_body``
    a tool result that starts as JSON and does not parse: a cut-off body;
``error_wording``
    the final answer contains a phrase of :attr:`Config.error_phrases`
    ("I'm sorry", "unable to", ...).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

from .. import json_text
from .. import messages as M
from ..payload import codec as payload
from .model import Run, Step

#: Phrases in a final answer that usually mean the agent failed (case-insensitive, whole words).
DEFAULT_ERROR_PHRASES: tuple[str, ...] = (
    "I'm sorry",
    "I am sorry",
    "I apologize",
    "unable to",
    "error",
    "failed",
    "can't",
    "cannot",
)
DEFAULT_MAX_TOOL_CALLS = 20

_STATUS_ATTRS = ("http.response.status_code", "http.status_code")
_STATUS_WORDS = re.compile(r"\b(429|5\d\d)\b|rate.?limit|overloaded|too many requests", re.I)


@dataclasses.dataclass(frozen=True)
class Finding:
    """One anomaly, at one step."""

    kind: str
    step: int
    span_id: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "step": self.step,
            "span_id": self.span_id,
            "message": self.message,
        }

    def __str__(self) -> str:
        return f"step {self.step} (span {self.span_id}): {self.kind}: {self.message}"


@dataclasses.dataclass(frozen=True)
class Config:
    """What counts as an anomaly."""

    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    error_phrases: Sequence[str] = DEFAULT_ERROR_PHRASES
    #: A loop is a block of steps seen at least this many times back to back.
    loop_repeats: int = 2
    #: The longest block of steps looked for as a loop.
    loop_max_steps: int = 12


def find_anomalies(run: Run, config: Config | None = None) -> list[Finding]:
    """Every anomaly of ``run``, in step order (ties in the order of the list above)."""
    config = config or Config()
    steps = [s for s in run.steps if s.kind in ("model", "tool") and not s.duplicate_of]
    # Both the repeats and the loops compare each tool call's arguments: encoded once.
    arguments = {
        id(s): payload.canonical(payload.plain(s.tool.arguments))
        for s in steps
        if s.tool is not None
    }
    found: list[Finding] = []
    found.extend(_repeats_and_retries(steps, arguments))
    found.extend(_loops(steps, config.loop_repeats, config.loop_max_steps, arguments))
    found.extend(_budget(steps, config.max_tool_calls))
    found.extend(_errors(run.steps))
    found.extend(_error_wording(run, config.error_phrases))
    order = {k: i for i, k in enumerate(KINDS)}
    found.sort(key=lambda f: (f.step, order.get(f.kind, len(order))))
    return found


KINDS = (
    "tool_error",
    "http_status",
    "partial_body",
    "retry",
    "repeated_tool_call",
    "loop",
    "tool_budget",
    "error_wording",
)


def _finding(kind: str, step: Step, message: str) -> Finding:
    return Finding(kind, step.index, step.span_id, message)


def _failed(step: Step) -> bool:
    return step.status == "ERROR" or (step.tool is not None and step.tool.error is not None)


def _signature(step: Step, arguments: Mapping[int, str]) -> tuple[str, str, str]:
    """What makes two steps "the same call": a tool and its arguments (``arguments``: the
    canonical text of each tool step's, by id), a model's request."""
    if step.tool is not None:
        return ("tool", step.tool.tool_name, arguments[id(step)])
    m = step.model
    request = payload.canonical(payload.plain(M.normalize(m.input_messages or []))) if m else ""
    return ("model", (m.request_model or "") if m else "", request)


def _answer(step: Step, arguments: Mapping[int, str]) -> Hashable:
    """What a step did, for loop detection: a tool call with its arguments (``arguments``:
    the canonical text of each tool step's, by id), a model's output.  Only compared: two
    steps did the same when their answers are equal."""
    if step.tool is not None:
        return ("tool", step.tool.tool_name, arguments[id(step)])
    m = step.model
    return model_answer(step.name, m.output_messages if m is not None else None)


def model_answer(
    name: str,
    output: list[dict[str, Any]] | None,
    calls: Sequence[dict[str, Any]] | None = None,
    *,
    plain_json: bool = False,
) -> str:
    """What a model step named ``name`` answered with ``output``, for loop detection (see
    :func:`_answer`): its tool calls, else its last text.  ``calls``: the output's
    :func:`~otel_replay.messages.tool_calls`, when listed already; ``plain_json``: their
    arguments are plain JSON (parsed from text) and need no :func:`~.codec.plain`."""
    if not output:
        return f"model {name}"
    if calls is None:
        calls = M.tool_calls(output)
    if plain_json:
        called = [[c.get("name"), c.get("arguments")] for c in calls]
    else:
        called = [[c.get("name"), payload.plain(c.get("arguments"))] for c in calls]
    return "model " + payload.canonical(called or M.last_text(output) or "")


def _repeats_and_retries(steps: Sequence[Step], arguments: Mapping[int, str]) -> Iterator[Finding]:
    # A model request counts only as a retry of a failed one: without a failed model
    # call, model requests (the whole conversation, each) are never compared.
    failed_models = any(s.tool is None and _failed(s) for s in steps)
    seen: dict[tuple[str, str, str], Step] = {}
    for step in steps:
        if step.tool is None and not failed_models:
            continue
        sig = _signature(step, arguments)
        earlier = seen.get(sig)
        if earlier is not None and _failed(earlier):
            what = f"tool {sig[1]}" if step.tool is not None else "model request"
            yield _finding("retry", step, f"{what} retried after step {earlier.index} failed")
        elif earlier is not None and step.tool is not None:
            yield _finding(
                "repeated_tool_call",
                step,
                f"{sig[1]} called again with the same arguments as step {earlier.index}",
            )
        seen[sig] = step


def _loops(
    steps: Sequence[Step], repeats: int, max_period: int, arguments: Mapping[int, str]
) -> Iterator[Finding]:
    """Blocks of steps repeated back to back at least ``repeats`` times (reported once each).

    Blocks of up to ``max_period`` steps are looked for, so a long run costs
    O(steps x max_period²), not a cube of its length.
    """
    keys = [_answer(s, arguments) for s in steps]
    for i, period, reps in loop_blocks(keys, repeats, max_period):
        first = steps[i + period]  # where the repetition starts
        names = ", ".join(_short_name(s) for s in steps[i : i + period])
        yield _finding(
            "loop",
            first,
            f"the {period} step(s) from step {steps[i].index} ({names}) repeat "
            f"{reps} times in a row",
        )


def loop_blocks(
    keys: Sequence[Hashable], repeats: int, max_period: int
) -> Iterator[tuple[int, int, int]]:
    """Where ``keys`` (what each step did) repeat a block back to back: (first index,
    period, repetitions) of each loop, as :func:`_loops` reports them."""
    n = len(keys)
    # A period is tried only where the key it ends at equals the first, and most do not:
    # where each key is seen next is found once, by hashing each key (keys are text and
    # tuples of text), rather than by comparing each with the max_period after it.
    seen_next = [-1] * n
    last: dict[Hashable, int] = {}
    for j in range(n - 1, -1, -1):
        key = keys[j]
        seen_next[j] = last.get(key, -1)
        last[key] = j
    i = 0
    while i < n:
        best: tuple[int, int] | None = None  # (period, repetitions)
        most = min(max_period, (n - i) // max(repeats, 2))
        at = seen_next[i]
        while at != -1 and at - i <= most:
            period, at = at - i, seen_next[at]
            reps = 1
            while keys[i + reps * period : i + (reps + 1) * period] == keys[i : i + period]:
                reps += 1
            # One step repeated is a loop only when it repeats more (a retry is not a loop).
            if reps >= repeats and period * reps >= 2 * max(period, 2):
                best = (period, reps)
                break
        if best is None:
            i += 1
            continue
        period, reps = best
        yield i, period, reps
        i += period * reps


def _short_name(step: Step) -> str:
    return f"tool {step.tool.tool_name}" if step.tool is not None else "model"


def _budget(steps: Sequence[Step], budget: int) -> Iterator[Finding]:
    tools = [s for s in steps if s.tool is not None]
    if budget >= 0 and len(tools) > budget:
        yield _finding(
            "tool_budget",
            tools[budget],
            f"{len(tools)} tool calls, over the budget of {budget}; this is call {budget + 1}",
        )


def _status_code(step: Step) -> int | None:
    for key in _STATUS_ATTRS:
        value = step.attributes.get(key)
        try:
            return int(value) if value is not None else None
        except (TypeError, ValueError):
            continue
    return None


def _errors(steps: Sequence[Step]) -> Iterator[Finding]:
    for step in steps:
        code = _status_code(step)
        if code is not None and (code == 429 or code >= 500):
            yield _finding("http_status", step, f"HTTP {code} answer")
        elif step.status == "ERROR" and _STATUS_WORDS.search(
            f"{step.status_message} {step.attributes.get('error.type', '')}"
        ):
            yield _finding(
                "http_status",
                step,
                f"error status: {step.status_message or step.attributes['error.type']}",
            )
        t = step.tool
        if t is not None:
            if t.error is not None:
                yield _finding(
                    "tool_error", step, f"{t.tool_name} raised {t.error.type}: {t.error.message}"
                )
            elif step.status == "ERROR":
                yield _finding(
                    "tool_error",
                    step,
                    f"{t.tool_name} span has an error status: {step.status_message}",
                )
            if t.error is None:
                yield from _result_findings(step)


def _result_findings(step: Step) -> Iterator[Finding]:
    assert step.tool is not None
    warning = result_warning(step.tool.result)
    if warning is not None:
        kind, message = warning
        yield _finding(kind, step, message)


def result_warning(result: Any) -> tuple[str, str] | None:
    """What a tool's ``result`` warns of (kind and message: an HTTP 429/5xx it carries, a
    cut-off JSON body), or None."""
    if isinstance(result, dict):
        for key in ("status_code", "status", "http_status"):
            value = result.get(key)
            if (
                isinstance(value, int)
                and not isinstance(value, bool)
                and (value == 429 or 500 <= value < 600)
            ):
                return "http_status", f"the result carries HTTP {value} ({key})"
        return None
    text = result.decode("utf-8", "replace") if isinstance(result, (bytes, bytearray)) else result
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and len(stripped) > 1:
        try:
            json_text.loads(stripped)
        except ValueError:
            return (
                "partial_body",
                f"the result starts as JSON and does not parse ({len(text)} chars): cut off?",
            )
    if re.match(r"HTTP/\d(\.\d)? (429|5\d\d)\b", stripped):
        return "http_status", f"the result is an HTTP error: {stripped[:40]!r}"
    return None


def final_step(run: Run) -> Step | None:
    """The step whose output is the run's final answer."""
    agents = [r for r in run.roots if r.kind == "agent"]
    models = [s for s in reversed(run.steps) if s.kind == "model"]
    for step in agents + models:
        if step.model is not None and M.last_text(step.model.output_messages or []) is not None:
            return step
    return None


def _error_wording(run: Run, phrases: Sequence[str]) -> Iterator[Finding]:
    answer = run.final_output()
    step = final_step(run)
    if answer is None or step is None:
        return
    said = error_phrase(answer, phrases)
    if said is not None:
        yield _finding("error_wording", step, f"the final answer says {said[0]!r}: …{said[1]}…")


def error_phrase(answer: str, phrases: Sequence[str]) -> tuple[str, str] | None:
    """The first of ``phrases`` ``answer`` holds as words (case-insensitive), with the
    text around it; None when it holds none."""
    # Typographic apostrophes are common in model output.
    text = answer.replace("\u2019", "'")
    for phrase in phrases:
        pattern = r"(?<!\w)" + re.escape(phrase.replace("\u2019", "'")) + r"(?!\w)"
        m = re.search(pattern, text, re.I)
        if m:
            lo, hi = max(0, m.start() - 30), min(len(text), m.end() + 30)
            return phrase, text[lo:hi]
    return None
