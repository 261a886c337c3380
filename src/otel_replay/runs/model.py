"""A run as a tree of steps in GenAI terms: the shape every reader produces."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from ..messages import last_text
from ..otlp.errors import FormatError
from ..payload.attributes import Payload
from ..payload.codec import PayloadError, plain_from
from ..trusted_types import TypeResolver
from .kit import KitReport, check_kit
from .verdict import run_verdict

if TYPE_CHECKING:
    from ..otlp.records import SpanRecord

StepKind = Literal["agent", "model", "tool", "other"]


@dataclasses.dataclass
class RawHttp:
    """The HTTP exchange of a model call as the client saw it, byte for byte.

    Recorded by :class:`~otel_replay.capture.http_recorder.RecordingTransport`:
    the request and response bodies as payloads (digest-checked), the size of
    each response chunk as the server sent it and its offset in ms.
    """

    method: str | None
    path: str | None
    status: int | None
    request_body: Payload | None
    response_body: Payload | None
    #: Response headers (secrets redacted at capture), lower-case names.
    response_headers: dict[str, str]
    chunk_sizes: list[int]
    chunk_offsets_ms: list[float]

    @property
    def usable(self) -> bool:
        """The response bytes can be sent again exactly as recorded."""
        p = self.response_body
        return (
            p is not None
            and p.status == "exact"
            and p.data is not None
            and sum(self.chunk_sizes) == len(p.data)
        )

    def chunks(self) -> list[bytes]:
        """The response body cut where the server's chunks ended."""
        assert self.response_body is not None and self.response_body.data is not None
        data, out, at = self.response_body.data, [], 0
        for size in self.chunk_sizes:
            out.append(data[at : at + size])
            at += size
        return out or [data]


@dataclasses.dataclass
class ModelCall:
    """What a model step asked and answered (GenAI semconv shapes)."""

    provider: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    response_id: str | None = None
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    input_messages: list[dict[str, Any]] | None = None
    output_messages: list[dict[str, Any]] | None = None
    system_instructions: list[dict[str, Any]] | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    finish_reasons: list[str] | None = None
    usage: dict[str, int] = dataclasses.field(default_factory=dict)
    #: Exactness of the recorded messages (None when no digest was recorded).
    input_payload: Payload | None = None
    output_payload: Payload | None = None
    #: The raw HTTP exchange, when an HTTP recorder captured it.
    raw: RawHttp | None = None
    #: What was filled in from other steps rather than recorded here, one line each.
    derived: list[str] = dataclasses.field(default_factory=list)
    #: How the provider sent a failed tool's result, where the messages keep only its
    #: text (see :data:`~otel_replay.attributes.TOOL_ERRORS_SENT_AS`).
    tool_errors_sent_as: str | None = None
    #: How the stack made its tools' values into text (see
    #: :data:`~otel_replay.attributes.TOOL_RESULTS_SENT_AS`).
    tool_results_sent_as: str | None = None
    #: How the client sent back earlier answers' text (see
    #: :data:`~otel_replay.attributes.ANSWERS_SENT_AS`).
    answers_sent_as: str | None = None
    #: "not_recorded" when the stack leaves out the text beside an answer's tool calls
    #: (see :data:`~otel_replay.attributes.TEXT_BESIDE_CALLS`).
    text_beside_calls: str | None = None
    system_not_recorded: bool = False  #: :data:`~otel_replay.attributes.SYSTEM_NOT_RECORDED`
    #: The form of the ids the stack gives calls the model sent without one (see
    #: :data:`~otel_replay.attributes.CALL_IDS_MADE_AS`).
    call_ids_made_as: str | None = None


@dataclasses.dataclass
class ToolError:
    type: str
    message: str
    #: The exception's constructor arguments, when recorded byte-exactly.
    args_payload: Payload | None = None
    #: The stack marked the call failed from the value the tool returned (see
    #: :data:`~otel_replay.attributes.TOOL_ERROR_RETURNED`): nothing was raised out of
    #: it, and replay returns its recorded result.
    returned: bool = False


@dataclasses.dataclass
class ToolCall:
    """One tool execution: its arguments, result or error."""

    tool_name: str
    call_id: str | None = None
    arguments: Any = None
    result: Any = None
    error: ToolError | None = None
    arguments_payload: Payload | None = None
    result_payload: Payload | None = None
    #: True when taken from messages rather than from a tool span.
    derived: bool = False
    #: For a derived call: how the stack made its tools' values into the text its result
    #: is (see :data:`~otel_replay.attributes.TOOL_RESULTS_SENT_AS`).
    sent_as: str | None = None
    #: The stack answered the call itself, the tool never ran (see
    #: :data:`~otel_replay.attributes.TOOL_NOT_RUN`): a replay sees no call of it.
    not_run: bool = False

    @property
    def raised(self) -> bool:
        """The call failed with an error raised out of the tool; a failure the stack read
        off the value the tool returned (:attr:`ToolError.returned`) is answered with that
        value, which a replay needs as it needs any result."""
        return self.error is not None and not self.error.returned


@dataclasses.dataclass
class Snapshot:
    """Agent state recorded by ``otel_replay.snapshot(name, state)`` (an event on a span)."""

    name: str
    time_ns: int
    #: The span the snapshot was taken on.
    span_id: str
    payload: Payload | None

    def value(self, types: TypeResolver | None = None) -> Any:
        """The recorded state: an equal value of the same type (raises ``PayloadError``);
        objects are rebuilt only with the classes ``types`` allows (see
        :mod:`otel_replay.trusted_types`), others come back as plain JSON."""
        if self.payload is None:
            raise PayloadError(f"snapshot {self.name!r}: its state was not recorded (no content)")
        return self.payload.value(types)

    def plain(self) -> Any:
        """The recorded state as plain JSON values, for display (no class is imported)."""
        p = self.payload
        if p is None or p.data is None or not p.usable:
            raise PayloadError(p.reason if p is not None and p.reason else "no usable state")
        return plain_from(p.type, p.data)

    def to_json(self) -> dict[str, Any]:
        p = self.payload
        state: Any = None
        try:
            state = self.plain()
        except ValueError:
            state = None
        return {
            "name": self.name,
            "time_ns": self.time_ns,
            "span_id": self.span_id,
            "type": p.type if p is not None else None,
            "exact": p.status if p is not None else None,
            "size": len(p.data) if p is not None and p.data is not None else None,
            "state": state,
        }


@dataclasses.dataclass
class Step:
    """One span of a run, classified; children in start order."""

    kind: StepKind
    name: str
    span_id: str
    parent_span_id: str | None
    trace_id: str
    start_ns: int
    end_ns: int
    status: str = "UNSET"
    status_message: str = ""
    attributes: dict[str, Any] = dataclasses.field(default_factory=dict)
    events: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    children: list[Step] = dataclasses.field(default_factory=list)
    index: int = -1
    depth: int = 0
    model: ModelCall | None = None
    tool: ToolCall | None = None
    #: False for a step derived from messages: ``start_ns``/``end_ns`` only place it.
    timed: bool = True
    #: The model step that records the same call, when this span is its second trace.
    duplicate_of: str | None = None
    #: The model step that answered the request this failed attempt sent, when the call
    #: was retried (see :mod:`.retries`).
    retried_as: str | None = None
    #: State snapshots taken on this span, in time order.
    snapshots: list[Snapshot] = dataclasses.field(default_factory=list)
    #: The instrumentation scope that made the span.
    scope: str = ""
    #: What the reader could not tell of the span (:attr:`.SpanRecord.notes`).
    notes: tuple[str, ...] = ()

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6

    def label(self) -> str:
        """``step 3 (tool lookup_order, span 1a2b…)``: how errors name a step."""
        what = self.tool.tool_name if self.tool is not None else self.name
        return f"step {self.index} ({self.kind} {what}, span {self.span_id})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "depth": self.depth,
            "kind": self.kind,
            "name": self.name,
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "trace_id": self.trace_id,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "status": self.status,
            "timed": self.timed,
        }
        if self.status_message:
            out["status_message"] = self.status_message
        if self.duplicate_of:
            out["duplicate_of"] = self.duplicate_of
        if self.retried_as:
            out["retried_as"] = self.retried_as
        if self.snapshots:
            out["snapshots"] = [snap.to_json() for snap in self.snapshots]
        if self.model is not None:
            m = self.model
            out.update(
                provider=m.provider,
                request_model=m.request_model,
                response_model=m.response_model,
                response_id=m.response_id,
                params=m.params,
                input_messages=m.input_messages,
                output_messages=m.output_messages,
                system_instructions=m.system_instructions,
                tool_definitions=m.tool_definitions,
                finish_reasons=m.finish_reasons,
                usage=m.usage,
                exact={
                    "input_messages": m.input_payload.status if m.input_payload else None,
                    "output_messages": m.output_payload.status if m.output_payload else None,
                },
            )
            if m.derived:
                out["derived_fields"] = list(m.derived)
        if self.tool is not None:
            t = self.tool
            out.update(
                tool_name=t.tool_name,
                call_id=t.call_id,
                arguments=t.arguments,
                result=t.result,
                error=({"type": t.error.type, "message": t.error.message} if t.error else None),
                derived=t.derived,
                exact={
                    "arguments": t.arguments_payload.status if t.arguments_payload else None,
                    "result": t.result_payload.status if t.result_payload else None,
                    "result_type": t.result_payload.type if t.result_payload else None,
                },
            )
        return out


@dataclasses.dataclass(eq=False)
class Run:
    """One agent run: the steps of one trace (or of stitched traces), as a tree."""

    run_id: str
    trace_ids: list[str]
    roots: list[Step]
    steps: list[Step]
    #: Fingerprint and ids from the run root (commit, packages, flags, user.id, ...).
    fingerprint: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: Resource attributes of the process that recorded the run.
    resource: dict[str, Any] = dataclasses.field(default_factory=dict)
    sources: list[str] = dataclasses.field(default_factory=list)
    #: Faults met reading the input that may have cost this run records (see
    #: :func:`~otel_replay.runs.load.read_traces`): the run is not ``full``.
    read_faults: list[FormatError] = dataclasses.field(default_factory=list)
    _kit: KitReport | None = dataclasses.field(default=None, repr=False)

    def build_steps(self) -> None:
        """Build the steps now if they wait for their first use (see :class:`PendingRun`)."""

    def __eq__(self, other: object) -> bool:
        # As the dataclass would compare, without asking for the same class: a run whose
        # steps were built on first use equals one built at once.
        if not isinstance(other, Run):
            return NotImplemented
        return _fields(self) == _fields(other)

    __hash__ = None  # type: ignore[assignment]

    @property
    def start_ns(self) -> int:
        return min((s.start_ns for s in self.steps), default=0)

    @property
    def end_ns(self) -> int:
        return max((s.end_ns for s in self.steps), default=0)

    def model_steps(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "model"]

    def tool_steps(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "tool"]

    def step(self, ref: int | str) -> Step:
        """A step by index or by (a prefix of) its span id."""
        if isinstance(ref, int):
            return self.steps[ref]
        for s in self.steps:
            if s.span_id.startswith(ref):
                return s
        raise KeyError(f"no step {ref!r} in run {self.run_id}")

    def snapshots(self) -> list[Snapshot]:
        """Every state snapshot of the run, in time order."""
        snaps = [snap for s in self.steps for snap in s.snapshots]
        return sorted(snaps, key=lambda snap: snap.time_ns)

    def snapshot_at(self, ref: int | str) -> Snapshot:
        """The snapshot in force when step ``ref`` (an index) starts, or the last one named ``ref``.

        For a step: the latest snapshot taken before the step started (the
        state before a risky step).  Raises ``KeyError`` when there is none.
        """
        snaps = self.snapshots()
        if isinstance(ref, str):
            named = [snap for snap in snaps if snap.name == ref]
            if not named:
                known = ", ".join(dict.fromkeys(snap.name for snap in snaps)) or "none"
                raise KeyError(f"no snapshot {ref!r} in run {self.run_id} (snapshots: {known})")
            return named[-1]
        step = self.step(ref)
        before = [snap for snap in snaps if snap.time_ns <= step.start_ns]
        if not before:
            raise KeyError(f"no snapshot was taken before {step.label()} in run {self.run_id}")
        return before[-1]

    @property
    def kit(self) -> KitReport:
        if self._kit is None:
            self._kit = check_kit(self)
        return self._kit

    @property
    def checked_kit(self) -> KitReport | None:
        """:attr:`kit` if it was made already, else None."""
        return self._kit

    @property
    def replayable(self) -> bool:
        return self.kit.replayable

    def final_output(self) -> str | None:
        """The run's answer: the root agent's recorded output, else the last model text
        (of a ReAct answer, what follows its ``Final Answer:``)."""
        for root in self.roots:
            if root.kind == "agent" and root.model is not None and root.model.output_messages:
                text = last_text(root.model.output_messages)
                if text is not None:
                    return text
        for s in reversed(self.steps):
            if s.kind == "model" and s.model is not None and s.model.output_messages:
                text = last_text(s.model.output_messages)
                if text is not None:
                    return _react_answer(text)
        return None

    def question(self) -> str | None:
        """The run's input text: the root agent's recorded input, else the first user
        message of its model calls."""
        for root in self.roots:
            if root.model is not None and root.model.input_messages:
                text = last_text(root.model.input_messages)
                if text is not None:
                    return text
        for step in self.model_steps():
            for message in (step.model.input_messages or []) if step.model else []:
                if message.get("role") == "user":
                    text = last_text([message])
                    if text is not None:
                        return text
        return None

    def to_json(self) -> dict[str, Any]:
        kit = self.kit
        said = run_verdict(self).to_json()
        return {
            "run_id": self.run_id,
            "trace_ids": self.trace_ids,
            "replayable": kit.replayable,
            "verdict": kit.verdict,
            "replays": said["replays"],
            "replay_problem": said["replay_problem"],
            "outcome": said["outcome"],
            "verdict_words": said["verdict_words"],
            "missing": kit.missing,
            "not_set": kit.not_set,
            "problems": kit.problems,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "fingerprint": self.fingerprint,
            "resource": self.resource,
            "final_output": self.final_output(),
            "sources": self.sources,
            "steps": [s.to_json() for s in self.steps],
        }


def _fields(run: Run) -> tuple[Any, ...]:
    return tuple(getattr(run, f.name) for f in dataclasses.fields(Run))


#: What builds a run's steps: its roots, its steps in pre-order, its fingerprint.
StepsBuilder: TypeAlias = "Callable[[], tuple[list[Step], list[Step], dict[str, Any]]]"


class Batch:
    """The pending runs read together: once :data:`BUILT_ALONE` of them are built one
    at a time, the rest still held are built at once.

    Someone going through every run then pays what building them all at once
    costs: built one by one, each run's objects are put through the cycle
    collector again and again as the others are added (a fifth of the time).
    A run let go of is not built.
    """

    #: How many runs are built one at a time before the rest are built together.
    BUILT_ALONE: ClassVar[int] = 8

    def __init__(self) -> None:
        self._runs: list[weakref.ref[PendingRun]] = []
        self._built = 0

    def add(self, run: PendingRun) -> None:
        self._runs.append(weakref.ref(run))

    def built_one(self) -> None:
        self._built += 1
        if self._built != self.BUILT_ALONE:
            return
        runs, self._runs = self._runs, []
        with no_cycle_collection():
            for ref in runs:
                run = ref()
                if run is not None:
                    run.build_steps()


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Building runs makes many objects and frees few: the cycle collector, run again
    and again over them meanwhile, finds nothing (a third of the time of a load)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _BuiltOnUse:
    """A field of a :class:`PendingRun` that its steps' building fills (a non-data
    descriptor: once built, the value is the instance's own and costs nothing to read)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, run: PendingRun | None, owner: type | None = None) -> Any:
        if run is None:
            return self
        run.build_steps()
        return run.__dict__[self.name]


class PendingRun(Run):
    """A trace that holds a run of its own, whose steps are built when first asked for.

    Loading many runs then costs what reading their spans costs: the steps of a
    run (its content decoded, its payloads checked, its repairs made) are built
    the first time anything asks for its roots, steps or fingerprint, once,
    exactly as they would have been at load.  Pickled or copied, it is a plain
    :class:`Run`.
    """

    roots = _BuiltOnUse()
    steps = _BuiltOnUse()
    fingerprint = _BuiltOnUse()

    @classmethod
    def later(
        cls,
        run_id: str,
        build: StepsBuilder,
        *,
        span: tuple[int, int],
        resource: dict[str, Any],
        sources: list[str],
        batch: Batch | None = None,
        spans: Sequence[SpanRecord] = (),
    ) -> PendingRun:
        """A run of trace ``run_id`` whose steps ``build`` makes; ``span``: its first start
        and last end; ``batch``: the runs read with it (see :class:`Batch`); ``spans``:
        the records it is built from (see :attr:`pending_spans`)."""
        run = cls.__new__(cls)
        run.__dict__.update(
            run_id=run_id,
            trace_ids=[run_id],
            resource=resource,
            sources=sources,
            read_faults=[],
            _kit=None,
            _build=build,
            _span=span,
            _lock=threading.Lock(),
            _batch=batch,
            _spans=spans,
        )
        if batch is not None:
            batch.add(run)
        return run

    def build_steps(self) -> None:
        """Build the steps now, if they are not yet (a no-op after the first time)."""
        state = self.__dict__
        if "_build" not in state:
            return
        with state["_lock"]:
            build = state.get("_build")
            if build is None:
                return  # built by another thread meanwhile
            with no_cycle_collection():
                roots, steps, fingerprint = build()
            for name, value in (("roots", roots), ("steps", steps), ("fingerprint", fingerprint)):
                state.setdefault(name, value)
            del state["_build"]  # and with it the spans it was built from
            state.pop("_spans", None)
            batch: Batch | None = state.pop("_batch", None)
        if batch is not None:
            batch.built_one()

    @property
    def pending_spans(self) -> Sequence[SpanRecord] | None:
        """The span records of the trace while its steps are not built yet, else None:
        what a reader that needs less than the steps (an ``ls`` line) reads instead."""
        state = self.__dict__
        return state.get("_spans") if "_build" in state else None

    @property
    def start_ns(self) -> int:
        if "_build" in self.__dict__:
            return int(self.__dict__["_span"][0])
        return super().start_ns

    @property
    def end_ns(self) -> int:
        if "_build" in self.__dict__:
            return int(self.__dict__["_span"][1])
        return super().end_ns

    def __reduce__(self) -> tuple[Any, ...]:
        return (Run, _fields(self))


#: Where a ReAct agent's answer starts in the model's last text (CrewAI, LangChain's ReAct).
_FINAL_ANSWER = re.compile(r"^Final Answer:[ \t]*", re.MULTILINE)


def _react_answer(text: str) -> str:
    """The answer a ReAct text gives after ``Final Answer:``; any other text as it is."""
    found = _FINAL_ANSWER.search(text)
    return text[found.end() :].strip() if found else text
