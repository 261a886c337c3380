"""One line per run: what ``otel-replay ls`` lists, filters and sorts.

A :class:`RunSummary` holds only plain values, so a list of them can be kept
in a cache file beside a big dump (see :mod:`.summary_cache`) and read back
without loading a single span.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .. import attributes as A
from .anomalies import Config, find_anomalies
from .kit import kit_verdict
from .model import Run
from .verdict import Outcome, RunVerdict, outcome


@dataclasses.dataclass(frozen=True)
class RunSummary:
    run_id: str
    trace_ids: list[str]
    start_ns: int
    end_ns: int
    agent: str | None
    user_id: str | None
    session_id: str | None
    tenant_id: str | None
    models: list[str]
    steps: int
    model_calls: int
    tool_calls: int
    tools: list[str]
    errors: int
    input_tokens: int
    output_tokens: int
    #: What the trace holds of the replay kit: ``full``, ``model-only``, ``inspect-only``.
    verdict: str
    replayable: bool
    #: Why the run does not replay (see :mod:`~otel_replay.runs.verdict`); None when it does.
    replay_problem: str | None
    #: The agent run raised: its error's type and message, as far as recorded.
    raised: bool
    error_type: str | None
    error_message: str | None
    tool_calls_failed: int
    model_calls_failed: int
    #: Number of anomalies found with the default :class:`~.anomalies.Config`.
    anomalies: int
    #: True when :attr:`anomalies` counts the candidates a database found (a tool called
    #: again with the same arguments, failed tools, HTTP 429/5xx answers, cut-off JSON
    #: results, calls past the budget) rather than what ``check`` finds in the run.
    candidates: bool = False

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def run_verdict(self) -> RunVerdict:
        """The three answers every command gives of this run."""
        return RunVerdict(
            self.verdict,
            None if self.replayable else (self.replay_problem or "reason not named"),
            Outcome(
                raised=self.raised,
                error_type=self.error_type,
                error_message=self.error_message,
                tool_calls=self.tool_calls,
                tool_calls_failed=self.tool_calls_failed,
                model_calls=self.model_calls,
                model_calls_failed=self.model_calls_failed,
            ),
        )

    def to_json(self) -> dict[str, Any]:
        # Fields are plain values and lists of strings: no deep copy (asdict's) needed.
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["duration_ms"] = self.duration_ms
        out["tokens"] = self.tokens
        said = self.run_verdict.to_json()
        out.update(replays=said["replays"], outcome=said["outcome"])
        out["verdict_words"] = said["verdict_words"]
        return out

    @classmethod
    def from_json(cls, doc: Any) -> RunSummary:
        """The summary :meth:`to_json` gave; ``ValueError`` unless every field is there with
        its type (``doc`` may come from a file anyone wrote)."""
        if type(doc) is not dict:
            raise ValueError(f"a run summary is an object, not {type(doc).__name__}")
        doc = {"candidates": False, **doc}
        for name, fits in _FIELD_CHECKS:
            if not fits(doc.get(name)):
                raise ValueError(f"run summary field {name!r} is not {_FIELD_TYPES[name]}")
        return cls(**{name: doc[name] for name in _FIELD_TYPES})


#: The most an integer field may hold: what a 64-bit protobuf field can carry.
_INT_MIN, _INT_END = -(2**63), 2**64


def _check(hint: Any) -> Callable[[Any], bool]:
    """Whether a value parsed from JSON has the type ``hint`` (one of RunSummary's field types).

    Built once per field: a cache of thousands of summaries is checked in milliseconds.
    """
    if hint is bool:
        return lambda v: v is True or v is False
    if hint is int:
        return lambda v: type(v) is int and _INT_MIN <= v < _INT_END
    if hint is str:
        return lambda v: type(v) is str
    if hint is type(None):
        return lambda v: v is None
    args = typing.get_args(hint)
    if typing.get_origin(hint) is list:
        item = _check(args[0])
        return lambda v: type(v) is list and all(map(item, v))
    options = [_check(a) for a in args]  # a union: str | None
    return lambda v: any(fits(v) for fits in options)


_FIELD_TYPES: dict[str, Any] = typing.get_type_hints(RunSummary)
_FIELD_CHECKS = [(name, _check(hint)) for name, hint in _FIELD_TYPES.items()]
_FIELD_NAMES = frozenset(_FIELD_TYPES)


def summary_of(**fields: Any) -> RunSummary:
    """The summary of these ``fields`` (every one, each of its field's type: the caller
    makes sure of the types, only the names are checked).

    Made without the dataclass's ``__init__``: frozen, it sets each field through
    ``object.__setattr__``, which takes ten times as long, felt over the hundreds of
    thousands of lines a database lists."""
    if fields.keys() != _FIELD_NAMES:
        missing, unknown = (
            sorted(_FIELD_NAMES - fields.keys()),
            sorted(fields.keys() - _FIELD_NAMES),
        )
        raise TypeError(f"run summary fields: missing {missing}, unknown {unknown}")
    made = object.__new__(RunSummary)
    made.__dict__.update(fields)
    return made


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def agent_name(run: Run) -> str | None:
    """``gen_ai.agent.name`` of the first agent step, else its span name, else the service."""
    for step in run.steps:
        if step.kind == "agent":
            return step_agent_name(step.name, step.attributes)
    return _text(run.resource.get("service.name"))


def step_agent_name(name: str, attributes: Mapping[str, Any]) -> str:
    """The name of the agent a span named ``name`` with ``attributes`` ran."""
    agent = attributes.get(A.AGENT_NAME)
    if agent:
        return str(agent)
    for prefix in ("invoke_agent ", "create_agent ", "invoke_workflow "):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def answer_of(run: Run) -> str | None:
    """The answer ``run`` gave: its final output (:meth:`~otel_replay.runs.model.Run.final_output`),
    or None when its agent raised: its last model text was never returned."""
    return None if outcome(run).raised else run.final_output()


def summarize(run: Run) -> RunSummary:
    """The ``ls`` line of ``run``."""
    fp = run.fingerprint
    models: list[str] = []
    tools: list[str] = []
    input_tokens = output_tokens = errors = model_calls = tool_calls = 0
    for step in run.steps:
        if step.kind == "model" and step.model is not None:
            model_calls += 1
            m = step.model
            name = m.response_model or m.request_model
            if name and name not in models:
                models.append(name)
            input_tokens += int(m.usage.get("input_tokens", 0) or 0)
            output_tokens += int(m.usage.get("output_tokens", 0) or 0)
        elif step.kind == "tool" and step.tool is not None:
            tool_calls += 1
            if step.tool.tool_name not in tools:
                tools.append(step.tool.tool_name)
        if step.status == "ERROR" or (step.tool is not None and step.tool.error is not None):
            errors += 1
    verdict, replayable, replay_problem = kit_verdict(run)
    how = outcome(run)
    return RunSummary(
        run_id=run.run_id,
        trace_ids=list(run.trace_ids),
        start_ns=run.start_ns,
        end_ns=run.end_ns,
        agent=agent_name(run),
        user_id=_text(fp.get(A.USER_ID)),
        session_id=_text(fp.get(A.SESSION_ID) or fp.get(A.CONVERSATION_ID)),
        tenant_id=_text(fp.get(A.TENANT_ID)),
        models=models,
        steps=len(run.steps),
        model_calls=model_calls,
        tool_calls=tool_calls,
        tools=tools,
        errors=errors,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        verdict=verdict,
        replayable=replayable,
        replay_problem=replay_problem,
        raised=how.raised,
        error_type=how.error_type,
        error_message=how.error_message,
        tool_calls_failed=how.tool_calls_failed,
        model_calls_failed=how.model_calls_failed,
        anomalies=len(find_anomalies(run, Config())),
    )


# --- filters and order ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Filter:
    agent: str | None = None
    since_ns: int | None = None
    errors_only: bool = False
    tools: Sequence[str] = ()
    replayable_only: bool = False

    def keeps(self, s: RunSummary) -> bool:
        if self.agent is not None and self.agent.lower() not in (s.agent or "").lower():
            return False
        if self.since_ns is not None and s.start_ns < self.since_ns:
            return False
        if self.errors_only and s.errors == 0:
            return False
        if any(t not in s.tools for t in self.tools):
            return False
        return not (self.replayable_only and not s.replayable)


SORT_KEYS = ("start", "duration", "tokens", "errors", "steps", "tools")


def select(
    summaries: Iterable[RunSummary], flt: Filter, sort: str = "start", reverse: bool = False
) -> list[RunSummary]:
    """The summaries ``flt`` keeps, sorted by ``sort`` (ties by start, then id)."""
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {SORT_KEYS}, not {sort!r}")

    def key(s: RunSummary) -> tuple[float, int, str]:
        value: float = {
            "start": s.start_ns,
            "duration": s.end_ns - s.start_ns,
            "tokens": s.tokens,
            "errors": s.errors,
            "steps": s.steps,
            "tools": s.tool_calls,
        }[sort]
        return (value, s.start_ns, s.run_id)

    return sorted((s for s in summaries if flt.keeps(s)), key=key, reverse=reverse)
