"""``otel_replay.replay(...)``: run the user's own agent code against a recording.

::

    with otel_replay.replay("run.otlp") as session:
        answer = my_agent("where is my order?", model=session.model)
    print(session.report())

Inside the block every ``@tool`` function, and every tool an agent framework
runs (see :mod:`otel_replay.capture.frameworks`), is answered from the
recording (per-tool policy ``stub``/``live``/``error``); ``session.model``
serves the recorded model responses (``session.base_url`` and
``session.transport()`` serve them to a model client); the clock stands at
each recorded step's start, and outbound connections other than loopback
are refused.  The first divergence
is raised where it happens and again when the block ends, even if the agent
code caught it; a run that ends before replaying every recorded step
diverges too (``require_complete=False`` to allow it).

A replay that cannot be exact is refused, not diverged (:class:`ReplayRefused`):
entering the block raises it, naming every item, when the trace lacks what the
replay will certainly ask for (:func:`.servable.needed`: what live tools and
overrides supply is not asked for), before the agent runs; a step the agent
reaches whose data the trace lacks is refused there, and the block ends with
that refusal unless a divergence came first.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from ..capture import frameworks, hooks
from ..payload import codec as payload
from ..runs.model import Run, Step
from ..runs.pick import RunNotPicked, pick_run
from ..trusted_types import TypeResolver
from .clock import FrozenClock
from .divergence import ReplayDivergence, ReplayError, ReplayRefused
from .network import NetworkGuard
from .observer import ReplayObserver
from .options import ReplayOptions, ToolPolicy
from .pinned_model import PinnedModel
from .recorder import ReplayLog, ToolEntry
from .selective import DriftReport, LivePlan
from .servable import Unservable, needed
from .tool_stubs import ToolStubs

#: How a replay ended: it followed the recording, left it, or could not be exact.
Verdict = Literal["matched", "diverged", "refused"]

if TYPE_CHECKING:
    from .adapters.transport import AsyncReplayTransport, ReplayTransport
    from .adapters.uvicorn_server import BackgroundServer
    from .engine import ReplayEngine


@dataclasses.dataclass
class ReplayReport:
    """What a replay did: steps replayed, matched, diverged, not reached; or refused."""

    run_id: str
    total: int
    replayed: list[tuple[int, str, str]]  # (step index, kind, how: stub/live/pinned:<rung>)
    not_reached: list[Step]
    divergence: ReplayDivergence | None
    output_matched: bool | None
    notes: list[str]
    #: The refusal the replay ended with: the trace lacks what it needs (every item named).
    refusal: ReplayRefused | None = None

    @property
    def matched(self) -> bool:
        return (
            self.refusal is None
            and self.divergence is None
            and not self.not_reached
            and self.output_matched is not False
        )

    @property
    def verdict(self) -> Verdict:
        """``matched``, ``diverged`` (the agent left the recording) or ``refused`` (the
        trace lacks what the replay needs: not the agent's doing)."""
        if self.refusal is not None:
            return "refused"
        return "matched" if self.matched else "diverged"

    def __str__(self) -> str:
        head = f"replay of run {self.run_id}: {self.verdict.upper()} — "
        refusal = self.refusal
        if refusal is None:
            lines = [
                head + f"{len(self.replayed)} of {self.total} recorded model/tool steps replayed"
            ]
        else:
            lines = [
                head
                + f"the trace lacks {len(refusal.items)} item(s) the replay needs; "
                + (
                    "the agent was not run"
                    if refusal.before
                    else f"{len(self.replayed)} of {self.total} recorded model/tool steps "
                    "replayed before"
                )
            ]
            lines.extend(f"  refused: {item.what}" for item in refusal.items)
        if self.divergence is not None and refusal is None:
            lines.append(str(self.divergence))
        if refusal is None or not refusal.before:
            lines.extend(f"  not reached: {s.label()}" for s in self.not_reached)
        if self.output_matched is not None:
            lines.append(
                f"  final answer: {'same as recorded' if self.output_matched else 'DIFFERENT'}"
            )
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        refusal = self.refusal
        return {
            "run_id": self.run_id,
            "verdict": self.verdict,
            "matched": self.matched,
            "total": self.total,
            "replayed": [{"index": i, "kind": k, "how": h} for i, k, h in self.replayed],
            "not_reached": [s.index for s in self.not_reached],
            "divergence": self.divergence.to_json() if self.divergence else None,
            "refused": refusal.to_json() if refusal is not None else None,
            "refused_before_run": refusal.before if refusal is not None else None,
            "output_matched": self.output_matched,
            "notes": self.notes,
        }


class ReplaySession(ReplayObserver):
    """A running replay; use :func:`replay` to make one.

    ``options`` (:class:`~otel_replay.replay.options.ReplayOptions`), with any
    of its fields given as keywords on top.  The session is what its tool
    stubs and pinned model report to (:class:`.observer.ReplayObserver`).
    """

    log: ReplayLog
    plan: LivePlan

    def __init__(self, run: Run, options: ReplayOptions | None = None, **changes: Any) -> None:
        opts = self.options = ReplayOptions.of(options, **changes)
        self.run = run
        #: What the replay will certainly ask for and the trace lacks (refused on entering).
        self.lacks: list[Unservable] = needed(run, opts)
        #: The refusal the replay ended with, if it did (see :class:`ReplayRefused`).
        self.refusal: ReplayRefused | None = None
        self.require_complete = opts.require_complete
        self.record_to = opts.record_to
        #: The run id of the replayed run written to ``record_to`` when the block ended.
        self.recorded_as: str | None = None
        #: What the replay did, step by step; :meth:`write` makes it a trace file.
        self.log = ReplayLog(run)
        self.divergence: ReplayDivergence | None = None
        self._replayed: list[tuple[int, str, str]] = []
        self._clock = FrozenClock(run.start_ns) if opts.freeze_clock and run.start_ns else None
        self._guard = None if opts.allow_network else NetworkGuard(opts.allow_hosts)
        #: What runs live, and the fork's state (see :mod:`.selective`).
        self.plan = LivePlan(
            model=opts.model,
            live=opts.live,
            live_from=opts.live_from,
            override=opts.override,
            live_tools=opts.live_tools,
        )
        for index in self.plan.override:
            if not 0 <= index < len(run.steps) or run.steps[index].kind not in ("model", "tool"):
                raise ReplayError(
                    f"override: step {index} of run {run.run_id} is no model or tool step"
                )
        #: The classes recorded objects may be rebuilt with (see :mod:`otel_replay.trusted_types`).
        self.types = TypeResolver(opts.type_trust, opts.trusted_types)
        #: Values handed back as plain JSON outside tool steps: (where, classes refused).
        self._untrusted: list[tuple[str, list[str]]] = []
        self.tools = ToolStubs(
            run,
            opts.tools,
            types=self.types,
            observer=self,
            from_messages=opts.results_from_messages,
        )
        self.model = PinnedModel(run, match=opts.model_match, observer=self)
        self._output_matched: bool | None = None
        self._previous: hooks.ToolInterceptor | None = None
        self._random_state: Any = None
        self._engine: ReplayEngine | None = None
        self._server: BackgroundServer | None = None
        #: The frameworks whose tool calls this session wraps (once the agent imports
        #: them) and unwraps at the end.
        self.frameworks: list[str] = []

    # --- ReplayObserver: what the stubs and the model report ------------------------------
    def step_started(self, step: Step) -> None:
        if self._clock is not None:
            self._clock.move_to(step.start_ns)

    def step_done(self, step: Step, how: str) -> None:
        if step.kind == "model":
            self.tools.model_answered()
        self._replayed.append((step.index, "model" if step.kind == "model" else "tool", how))
        if self._clock is not None:
            self._clock.move_to(step.end_ns)

    def diverged(self, err: ReplayDivergence) -> None:
        if self.divergence is None:
            self.divergence = err

    # --- public ---------------------------------------------------------------------
    def check_output(self, answer: str) -> bool:
        """Compare the replay's final answer with the recorded one; a difference diverges."""
        self.log.final_answer = answer
        recorded = self.run.final_output()
        if recorded is None:
            return True
        self._output_matched = answer == recorded
        if not self._output_matched:
            last = self.run.steps[-1] if self.run.steps else None
            err = ReplayDivergence(
                "final answer differs",
                last,
                expected=recorded,
                actual=answer,
                kind="output",
                name="final answer",
            )
            self.diverged(err)
        return self._output_matched

    @property
    def engine(self) -> ReplayEngine:
        """The wire engine over this session's pinned model (what the transports use)."""
        if self._engine is None:
            # The wire engine only for sessions served over HTTP or a transport.
            from .engine import ReplayEngine

            self._engine = ReplayEngine.for_model(self.model)
        return self._engine

    @property
    def base_url(self) -> str:
        """A loopback HTTP server serving this session's model calls: ``http://127.0.0.1:PORT``.

        For a model client that takes a base URL: OpenAI-style clients take
        ``session.base_url + "/v1"``, Anthropic's ``session.base_url``.  A
        request that does not match gets HTTP 409 naming the step, and the
        session diverges.  Started on first use, stopped when the session ends.
        """
        if self._server is None:
            # Started on first use; the adapters build on the session.
            from .adapters.uvicorn_server import BackgroundServer
            from .engine import ReplayEngine

            engine = ReplayEngine.for_model(self.model, raise_divergence=False)
            server = BackgroundServer(engine)
            server.start()
            self._server = server
        return self._server.url

    def transport(self) -> ReplayTransport:
        """An httpx (or httpx2) transport serving this session's model calls.

        ``openai.OpenAI(http_client=httpx2.Client(transport=session.transport()))``
        and the Anthropic equivalent: requests go through the pinned model (its
        cursor and matcher ladder), answers come back in the request's own wire
        format, a request that does not match raises :class:`ReplayDivergence`.
        """
        # httpx's transport on first use; the adapters build on the session.
        from .adapters.transport import ReplayTransport

        return ReplayTransport(self.engine)

    def async_transport(self) -> AsyncReplayTransport:
        """:meth:`transport` for ``httpx.AsyncClient`` / ``httpx2.AsyncClient``."""
        # httpx's transport on first use; the adapters build on the session.
        from .adapters.transport import AsyncReplayTransport

        return AsyncReplayTransport(self.engine)

    @property
    def tool_calls(self) -> list[tuple[str, Any]]:
        """``(tool name, arguments)`` of each tool call the agent made so far, as plain values."""
        return [
            (e.name, payload.plain(e.arguments))
            for e in self.log.entries
            if isinstance(e, ToolEntry)
        ]

    def state_at(self, ref: int | str) -> Any:
        """The agent state recorded by ``otel_replay.snapshot`` (a fresh, equal value).

        ``ref`` is a step index (the latest snapshot taken before that step
        started: the state to restart the run from, before a risky step) or a
        snapshot name (the last snapshot of that name).  Raises
        :class:`ReplayError` when there is none or it cannot be restored.
        """
        try:
            snap = self.run.snapshot_at(ref)
        except (KeyError, IndexError) as exc:
            raise ReplayError(str(exc.args[0]) if exc.args else str(exc)) from None
        before = len(self.types.refused)
        try:
            value = snap.value(self.types)
        except payload.PayloadError as exc:
            raise ReplayError(f"snapshot {snap.name!r} cannot be restored: {exc}") from exc
        if len(self.types.refused) > before:
            self._untrusted.append((f"snapshot {snap.name!r}", self.types.refused[before:]))
        return value

    def write(self, path: str | os.PathLike[str]) -> str:
        """Append the replayed run to ``path`` as spans (our file format); returns its run id.

        Each model request and tool call the agent made is a span in the GenAI
        shape capture writes, so ``otel-replay diff RECORDING PATH`` compares
        the replay with its recording (see :mod:`.recorder`).
        """
        return self.log.write(path)

    def unreplayed(self) -> list[Step]:
        """Recorded steps not replayed that had to be (not those after ``live_from`` or a fork)."""
        steps = self.tools.unreplayed() + self.model.unreplayed()
        return sorted((s for s in steps if self.plan.required(s)), key=lambda s: s.index)

    @property
    def drift(self) -> DriftReport:
        """With ``model="live"``: per recorded model step, the live answer against the recorded."""
        return DriftReport(self.run.run_id, list(self.plan.drift))

    def report(self) -> ReplayReport:
        notes = [
            f"step {i}: request parameters differ from the recording: "
            + ", ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in d.items())
            for i, d in self.model.param_drift.items()
        ]
        if self.model.tools_drift:
            notes.append(
                "tool definitions differ from the recording at step(s) "
                + ", ".join(map(str, self.model.tools_drift))
            )
        notes.extend(self.model.respelled[i] for i in sorted(self.model.respelled))
        notes.extend(self.model.cuts[i] for i in sorted(self.model.cuts))
        named = self.refusal.items if self.refusal is not None else []
        refused = {**self.model.refused, **self.tools.refused}
        notes.extend(
            f"refused: {refused[i].what}" for i in sorted(refused) if refused[i] not in named
        )
        for step in self.tools.live_unanswered:
            notes.append(f"{step.label()}: no result was recorded; the tool ran live (live_tools)")
        if self.tools.live_unmatched:
            notes.append(
                "live tool calls with no recorded match: " + ", ".join(self.tools.live_unmatched)
            )
        for step, how in self.tools.answered_from_messages:
            notes.append(
                f"{step.label()}: answered with "
                + ("the text" if how == "text" else "the value of the JSON text")
                + " the model was sent (no tool span records what the tool returned)"
            )
        for step in self.tools.redacted:
            notes.append(f"{step.label()}: the recorded result had secrets redacted at capture")
        for step, recorded in self.tools.stand_ins:
            notes.append(
                f"{step.label()}: recorded {recorded} raised as RecordedBaseException "
                "(an Exception): a replay does not raise what would stop it"
            )
        untrusted = [(s.label(), c) for s, c in self.tools.untrusted] + self._untrusted
        for where, classes in untrusted:
            notes.append(
                f"{where}: recorded {', '.join(classes)} handed back as plain JSON: "
                "the class is not trusted (register it with otel_replay.register_type, "
                "pass trusted_types=, or type_trust='imported')"
            )
        if self.plan.drift:
            drifted = [str(e.index) for e in self.plan.drift if not e.same]
            notes.append(
                f"live model: {len(drifted)} of {len(self.plan.drift)} model step(s) drifted"
                + (f" (step {', '.join(drifted)})" if drifted else "")
            )
        if self.plan.forked:
            notes.append(f"forked at step {', '.join(map(str, sorted(self.plan.override)))}")
        if self.plan.gone_live:
            notes.append(f"live from step {self.plan.live_from}")
        if self._guard is not None and self._guard.refused:
            notes.append("outbound connections refused: " + ", ".join(self._guard.refused))
        return ReplayReport(
            run_id=self.run.run_id,
            total=len(self.tools.steps) + len(self.model.steps),
            replayed=list(self._replayed),
            not_reached=self.unreplayed(),
            divergence=self.divergence,
            output_matched=self._output_matched,
            notes=notes,
            refusal=self.refusal,
        )

    def __enter__(self) -> ReplaySession:
        if self.lacks:
            # Before anything is patched or the agent runs: no side effect, no half run.
            self.refusal = ReplayRefused(self.run.run_id, self.lacks, before=True)
            raise self.refusal
        self._previous = hooks.install(self.tools)
        # Every framework's tools, answered by the replay once the agent imports it.
        already = frameworks.instrumented()
        self.frameworks = [name for name in frameworks.FRAMEWORKS if name not in already]
        for name in self.frameworks:
            frameworks.instrument(name, replay=True)
        seed = self.run.fingerprint.get("seed")
        if isinstance(seed, int):
            self._random_state = random.getstate()
            random.seed(seed)
        if self._guard is not None:
            self._guard.start()
        if self._clock is not None:
            self._clock.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        hooks.install(self._previous)
        for name in self.frameworks:
            frameworks.uninstrument(name)
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._clock is not None:
            self._clock.stop()
        if self._guard is not None:
            self._guard.stop()
        if self._random_state is not None:
            random.setstate(self._random_state)
        refusal = self.refusal = self._refusal(exc)
        self.log.refusal = refusal
        if exc is not None and not isinstance(exc, (ReplayDivergence, ReplayRefused)):
            self.log.raised = exc  # the replayed run ended so, as the recorded one may have
        if self.record_to is not None:
            self.recorded_as = self.write(self.record_to)  # a diverged replay most of all
        if refusal is not None and refusal is not exc:
            # The agent caught a refusal (a framework sends a tool's error to the model, an
            # SDK wraps the server's answer) and went on, or raised something else: what
            # the trace lacks, not how the replay went after it.
            raise refusal from exc
        if exc is not None:
            if (
                self.divergence is not None
                and exc is not self.divergence
                and _caused_by_divergence(exc)
            ):
                # A client library wrapped it (the Anthropic SDK's APIConnectionError,
                # after retrying: the cause is then a later, equal divergence).
                raise self.divergence from exc
            return  # the block's own exception (a divergence included) propagates
        if self.divergence is not None:
            raise self.divergence  # raised inside, swallowed by the agent code
        if self.require_complete:
            left = self.unreplayed()
            if left:
                self.divergence = ReplayDivergence(
                    f"the replayed run ended early: {len(left)} recorded step(s) not replayed",
                    left[0],
                )
                raise self.divergence

    def _refusal(self, exc: BaseException | None) -> ReplayRefused | None:
        """The refusal of the first step the model or a stub would not answer for lacking
        data, unless a divergence came before it (``exc`` itself when the block ended
        with it); else None."""
        kept = {**self.model.refused, **self.tools.refused}
        if not kept:
            return None
        index = min(kept)
        first = self.divergence.index if self.divergence is not None else None
        if first is not None and first < index:
            return None
        if isinstance(exc, ReplayRefused) and exc.items == [kept[index]]:
            return exc  # the block ended with it
        return ReplayRefused(self.run.run_id, [kept[index]], before=False)


def _caused_by_divergence(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ReplayDivergence):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def replay(
    run_or_path: Run | str | os.PathLike[str],
    run_id: str | None = None,
    tools: ToolPolicy | Mapping[str, ToolPolicy] | None = None,
    *,
    options: ReplayOptions | None = None,
    **changes: Any,
) -> ReplaySession:
    """Replay a recorded run (a :class:`Run`, or a trace file to load it from).

    The options are a :class:`~otel_replay.replay.options.ReplayOptions`:
    ``options=`` one, and/or any of its fields as keywords (``tools`` also as
    the third argument); an unknown keyword raises ``TypeError``.

    ``tools`` is a policy for every tool (``"stub"``, ``"live"``, ``"error"``)
    or a mapping from tool name to policy (``"*"`` for the rest).
    ``model_match`` is the loosest rung on which a model request still counts
    as the recorded one.  ``record_to`` names a trace file the replayed run
    is appended to when the block ends (diverged or not), for
    ``otel-replay diff RECORDING REPLAY``; :meth:`ReplaySession.write` does it
    on demand.

    Selective replay (see :mod:`.selective`): ``live`` is your own model
    callable, ``live(messages, *, system, tools, model, **params) -> message``;
    ``model="live"`` sends each recorded request to it, pinned to the
    recorded model id and parameters, and reports the drift
    (:attr:`ReplaySession.drift`); ``live_from=N`` replays the steps before
    ``N`` and runs the model and the tools live from there; ``override={N:
    value}`` forks the run at step ``N`` (a tool result, an exception to
    raise, or a model message), recording where it still matches, live
    where it does not.

    Recorded objects (dataclasses, pydantic models, enums, NamedTuples,
    exceptions) are rebuilt only with classes the replay trusts, since the
    trace file names them and a file may come from anyone: stdlib value types,
    classes registered with :func:`otel_replay.register_type`, those in
    ``trusted_types``, and with ``type_trust="imported"`` classes defined in
    modules already imported (nothing is ever imported).  Others are handed
    back as plain JSON, and the report says so.  A recorded exception whose
    type is not loaded is raised as a stand-in of the same name.
    """
    if tools is not None:
        changes["tools"] = tools
    opts = ReplayOptions.of(options, **changes)
    if isinstance(run_or_path, Run):
        runs, source = [run_or_path], f"run {run_or_path.run_id}"
    else:
        # The readers only for a path (a Run given needs none).
        from ..runs.load import load

        source = os.fspath(run_or_path)
        runs = list(load(source))
    try:
        run = pick_run(runs, run_id, where=source, how="run_id=")
    except RunNotPicked as exc:
        raise ReplayError(str(exc)) from None
    return ReplaySession(run, opts)
