"""The replay engine: request bytes and path in, status, headers and body chunks out.

What the HTTP server and the httpx transports share.  A request is parsed by
the wire format its path names (:mod:`otel_replay.wire`), routed to a
conversation, checked against the recorded step on the matcher ladder by that
conversation's :class:`~otel_replay.replay.pinned_model.PinnedModel`, and
answered with the recorded response rendered in the request's own format.

Conversations: each has its own run and cursor, so several clients replay at
once.  A request continues the conversation whose next recorded request it
matches on the ``messages`` rung (a dict lookup on the normalized messages,
so routing costs the same whatever the number of recorded calls), else
starts one on the run whose first recorded request it matches (or the run
``run_id`` names), else continues one whose next request has the same last
message.  An ``x-otel-replay-conversation`` header names a conversation
outright; a Responses request with ``previous_response_id`` continues the
conversation that answered it.

When nothing matches, the answer is HTTP 409 with a JSON body naming the step
and showing expected vs actual (``x-should-retry: false``, so SDKs do not
retry it); with ``upstream`` the request is forwarded there instead.

The conversations and their routing are in :mod:`otel_replay.replay.conversations`,
what the engine answers with in :mod:`otel_replay.replay.answers`; the names other
modules use of both are importable from here too.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence

from .. import wire as W
from ..runs.error_status import error_body, error_status
from ..runs.failed_calls import held_before_cut, request_missing
from ..runs.model import RawHttp, Run, Step
from ..runs.pick import RunNotPicked, pick_run
from .answers import (
    _FORWARD,
    _RAW_HEADERS,
    Answer,
    _raw_for,
    error_answer,
    error_envelope,
    header_text,
    in_wire,
    iter_chunks,
    json_bytes,
)
from .conversations import CONVERSATION_HEADER, Conversation, Router, _file, _unfile
from .divergence import Candidate, RecordedFailure, ReplayDivergence, ReplayError
from .matchers import RUNGS, first_difference
from .pinned_model import PinnedModel
from .server_limits import DEFAULT_LIMITS

__all__ = [
    "CONVERSATION_HEADER",
    "Answer",
    "Conversation",
    "ReplayEngine",
    "error_answer",
    "header_text",
    "iter_chunks",
    "json_bytes",
]


class ReplayEngine(Router):
    """Serves recorded model responses to requests in any supported wire format.

    ``runs``: the runs to serve; ``run_id`` (a prefix) pins one.  ``match``:
    the loosest accepted rung (see :data:`~otel_replay.replay.matchers.RUNGS`).
    ``timing``: a speed factor to reproduce each recorded call's duration
    (spread evenly over its chunks: chunk boundaries are not recorded), or None.
    ``forward``: called with the diverging request instead of answering 409.
    ``log``: called with one line per request served or refused.
    ``max_conversations``: conversations kept, and conversation names
    (``x-otel-replay-conversation``) kept; past it the least recently used
    are forgotten (a client coming back to one starts over).  Every table the
    engine keeps is bounded by it (and by the runs served).
    """

    def __init__(
        self,
        runs: Sequence[Run],
        *,
        run_id: str | None = None,
        match: str = "messages",
        timing: float | None = None,
        forward: Callable[[str, bytes, Mapping[str, str]], Answer] | None = None,
        log: Callable[[str], None] | None = None,
        raise_divergence: bool = False,
        model_factory: Callable[[Run], PinnedModel] | None = None,
        max_conversations: int = DEFAULT_LIMITS.max_conversations,
    ) -> None:
        if match not in RUNGS:
            raise ValueError(f"match must be one of {RUNGS}, not {match!r}")
        if not runs:
            raise ValueError("no runs to serve")  # every request would have nothing to match
        self.match = match
        self.timing = timing
        self.forward = forward
        self.log = log or (lambda line: None)
        self._lines: list[str] = []  # the lock holder's log lines
        #: The recorded steps whose re-spelled answer was logged (once each; by ``id``).
        self._respelled_steps: set[int] = set()
        self.raise_divergence = raise_divergence
        served = list(runs)
        pinned: Run | None = None
        if run_id is not None:
            try:
                pinned = pick_run(served, run_id, where="the runs served", how="run_id")
            except RunNotPicked as exc:
                raise ReplayError(str(exc)) from None
        self._lock = threading.Lock()
        super().__init__(
            served,
            pinned,
            model_factory or (lambda run: PinnedModel(run, match=match)),
            max(1, max_conversations),
        )

    @classmethod
    def for_model(
        cls, model: PinnedModel, *, timing: float | None = None, raise_divergence: bool = True
    ) -> ReplayEngine:
        """An engine with one conversation: ``model`` (a replay session's).

        ``raise_divergence``: raise a divergence to the caller (the in-process
        transports), else answer it with HTTP 409 (a server).
        """
        engine = cls(
            [model.run], timing=timing, raise_divergence=raise_divergence, match=model.match
        )
        conv = Conversation(0, model.run, model)
        engine.conversations[0] = conv
        engine._last = conv
        engine._single = conv
        return engine

    # --- the one entry point ------------------------------------------------------------
    def handle(
        self, method: str, path: str, body: bytes, headers: Mapping[str, str] | None = None
    ) -> Answer:
        """Answer one HTTP request (``headers`` with lower-case names)."""
        headers = headers or {}
        wire = W.for_path(path)
        if wire is None or method.upper() != "POST":
            known = ", ".join(f"POST {p}" for p in W.WIRES)
            return error_answer(404, "not_found", f"{method} {path} is not served here ({known})")
        answer = self._handle(wire, path, body, headers)
        if answer is _FORWARD and self.forward is not None:
            # Outside the lock: other conversations go on while upstream answers.
            return self.forward(path, body, headers)
        return in_wire(wire, answer)

    def _handle(self, wire: W.Wire, path: str, body: bytes, headers: Mapping[str, str]) -> Answer:
        try:
            doc = W.loads(body or b"null")
        except W.BadRequest as exc:
            return error_answer(400, "invalid_request_error", f"{wire.name} request: {exc}")
        except ValueError as exc:
            return error_answer(400, "invalid_request_error", f"the body is not JSON: {exc}")
        if not isinstance(doc, dict):
            return error_answer(400, "invalid_request_error", "the body is not a JSON object")
        try:
            request = W.parse(wire, doc, path)
        except W.BadRequest as exc:
            return error_answer(400, "invalid_request_error", f"{wire.name} request: {exc}")
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            # A shape the API's field types let through and the reader still trips on:
            # the client's mistake all the same, never the server's.
            return error_answer(
                400,
                "invalid_request_error",
                f"the body is not a {wire.name} request the server can read: "
                f"{type(exc).__name__}: {exc}",
            )
        lines: list[str] = []
        try:
            with self._lock:
                self._lines = lines
                answer = self._answer(wire, request, path, body, headers)
        finally:
            # Logged outside the lock: a slow log (a full pipe) holds up this request only.
            for line in lines:
                self.log(line)
        return answer

    def _answer(
        self,
        wire: W.Wire,
        request: W.WireRequest,
        path: str,
        body: bytes,
        headers: Mapping[str, str],
    ) -> Answer:
        previous = request.body.get("previous_response_id")
        conv, fresh = self._route(request, headers)
        if isinstance(previous, str) and conv.transcript:
            request.messages = [*conv.transcript, *request.messages]
        try:
            step, rung = conv.model.serve(
                request.messages, system=request.system, tools=request.tools, params=request.params
            )
        except ReplayDivergence as err:
            if fresh and not self._single:
                self._forget(conv)
            else:
                self._wait(conv)
            err = self._with_candidates(err, request, conv)
            said = str(err)
            if len(self.runs) > 1 and self.pinned is None:  # which run, of those served
                said = f"run {conv.run.run_id}: {said}"
            self._lines.append(f"conversation {conv.id}: {said.splitlines()[0]}")
            if self.raise_divergence:
                raise err from None
            if self.forward is not None:
                self._lines.append(f"conversation {conv.id}: forwarded upstream")
                return _FORWARD
            return error_answer(
                409,
                "replay_divergence",
                said,
                run_id=conv.run.run_id,
                conversation=conv.id,
                step=err.index,
                divergence=err.to_json(),
            )
        except RecordedFailure as err:
            # Failed again as it failed: on the error status the trace names; else the
            # headers of an answer, then what the trace holds of a stream cut partway (its
            # first deltas: the framework saw them, and some keep them), then the
            # connection closed.
            self._last = conv
            self._used(conv)
            self._wait(conv)
            held = request.stream and held_before_cut(err.step)
            status = None if held else error_status(err.step)
            cut = "" if status else conv.model.note_cut(err.step, streamed=request.stream)
            self._lines.append(f"conversation {conv.id}: {err}" + (f" ({cut})" if cut else ""))
            if status is not None:
                return self._error_again(conv, err.step, status, self._failed_meta(conv, err))
            ctype = wire.stream_type if request.stream else "application/json"
            meta = [("content-type", ctype), *self._failed_meta(conv, err)]
            begun: list[bytes] = []
            if held:
                begun = W.stream_begun(
                    wire.render_sse(W.reply_from_step(err.step, request), request)
                )
            return Answer(200, meta, begun, None, err.step, None, conv.id, cut=True)
        except ReplayError as err:
            self._lines.append(f"conversation {conv.id}: refused: {err}")
            if self.raise_divergence:
                raise
            return error_answer(500, "not_recorded", str(err), run_id=conv.run.run_id)
        self._last = conv
        self._used(conv)
        self._wait(conv)
        reply = W.reply_from_step(step, request)
        conv.transcript = [*request.messages, reply.message]
        if conv.answered is not None:  # it has moved on from the answer before
            _unfile(conv, *conv.answered)
            conv.answered = None
        if reply.response_id:
            conv.answered = _file(conv, self._by_response, reply.response_id)
        self._lines.append(f"conversation {conv.id}: {step.label()} served ({rung}) to {wire.name}")
        meta = [
            ("x-otel-replay-run", conv.run.run_id),
            ("x-otel-replay-step", str(step.index)),
            ("x-otel-replay-span", step.span_id),
            ("x-otel-replay-rung", rung),
            (CONVERSATION_HEADER, str(conv.id)),
        ]
        raw = _raw_for(step, wire, request)
        if raw is not None:
            # Recorded byte for byte from the same API: sent back verbatim, chunk for chunk.
            chunks = raw.chunks()
            kept = [
                (k, raw.response_headers[k].strip(" \t"))  # as HTTP reads it (h11 refuses it so)
                for k in _RAW_HEADERS
                if k in raw.response_headers
            ]
            meta.append(("x-otel-replay-body", "recorded"))
            return Answer(
                200,
                [*kept, *meta],
                chunks,
                self._raw_delays(step, raw),
                step,
                rung,
                conv.id,
            )
        meta.append(("x-otel-replay-body", "rendered"))
        spells = wire.spells_arguments(request)
        respelled = reply.spelled.respelled if spells else []
        doubtful = reply.spelled.doubtful if spells else []
        made_up, items = reply.spelled.made_up_ids, reply.spelled.item_ids
        if respelled or doubtful or made_up or items:
            named = ", ".join(dict.fromkeys([*respelled, *doubtful, *made_up, *items]))
            meta.append(("x-otel-replay-respelled", header_text(named)))
            self._respelled(conv, step, respelled, doubtful, made_up, items)
        if request.stream:
            chunks = list(wire.render_sse(reply, request))
            headers_out = [("content-type", wire.stream_type), *meta]
        else:
            data = json_bytes(wire.render_json(reply, request))
            chunks = [data]
            headers_out = [("content-type", "application/json"), *meta]
        return Answer(
            200, headers_out, chunks, self._delays(step, len(chunks)), step, rung, conv.id
        )

    @staticmethod
    def _failed_meta(conv: Conversation, err: RecordedFailure) -> list[tuple[str, str]]:
        """The headers that say which recorded call was failed again."""
        return [
            ("x-otel-replay-run", conv.run.run_id),
            ("x-otel-replay-step", str(err.step.index)),
            ("x-otel-replay-failed", "recorded"),
            (CONVERSATION_HEADER, str(conv.id)),
        ]

    def _error_again(
        self, conv: Conversation, step: Step, status: int, meta: list[tuple[str, str]]
    ) -> Answer:
        """A recorded call that failed on an error status, failed again: that status, and the
        body the server sent where the trace quotes it, else one of the recorded error's
        message (said so), so that the client raises the error it raised."""
        body = error_body(step)
        if body is None:
            message = step.status_message or f"the recorded call failed with status {status}"
            body = error_envelope("recorded_failure", message)
            self._lines.append(
                f"conversation {conv.id}: {step.label()}: the body of its error status "
                f"{status} is not in the trace: sent one holding the recorded error's message"
            )
        headers = [("content-type", "application/json"), *meta]
        return Answer(status, headers, [json_bytes(body)], None, step, None, conv.id)

    def _respelled(
        self,
        conv: Conversation,
        step: Step,
        calls: list[str],
        doubtful: list[str],
        made_up: Sequence[str] = (),
        items: Sequence[str] = (),
    ) -> None:
        """Say, once per step, that its answer's tool-call arguments were (or may have been)
        re-spelled: the trace holds them as parsed values only, not as the text the model
        sent, or as a text an instrumentation may have dumped itself; and its call ids, where
        the trace holds none or an item id in their place."""
        note = conv.model.note_respelled(step, calls, doubtful, made_up, items)
        if id(step) not in self._respelled_steps:
            self._respelled_steps.add(id(step))
            self._lines.append(f"conversation {conv.id}: {note}")

    def _with_candidates(
        self, err: ReplayDivergence, request: W.WireRequest, conv: Conversation
    ) -> ReplayDivergence:
        """The divergence, with the other places the request might have belonged (a few).

        A session's engine raises the session's own divergence, unchanged.
        """
        if self._single is not None:
            return err
        waiting = (
            (c.run, c.model.expected()) for c in self.conversations.values() if c is not conv
        )
        firsts = (
            (run, next((s for s in run.steps if s.kind == "model" and s.model), None))
            for run in self.runs
        )
        starting = ((run, s) for run, s in firsts if s is not err.step)
        # The first five only: a divergent request costs the same however many
        # conversations are kept and runs served.
        found = ((r, s) for r, s in itertools.chain(waiting, starting) if s is not None)
        candidates = [
            # A call recorded without its request: what the trace lacks, not a diff.
            Candidate(
                s,
                (
                    request_missing(r, s)
                    or first_difference(s.model.input_messages or [], request.messages),
                ),
            )
            for r, s in itertools.islice(found, 5)
            if s.model is not None
        ]
        if not candidates:
            return err
        return ReplayDivergence(
            err.what,
            err.step,
            expected=err.expected,
            actual=err.actual,
            candidates=candidates,
            kind=err.kind,
            name=err.name,
        )

    def _raw_delays(self, step: Step, raw: RawHttp) -> list[float] | None:
        """The recorded gaps between chunks (the first: the wait for the first byte)."""
        if self.timing is None or len(raw.chunk_offsets_ms) != len(raw.chunk_sizes):
            return None
        offsets = [0.0, *raw.chunk_offsets_ms]
        return [max(0.0, b - a) / 1e3 / self.timing for a, b in itertools.pairwise(offsets)]

    def _delays(self, step: Step, n: int) -> list[float] | None:
        if self.timing is None or not step.timed or n == 0:
            return None
        total = max(0.0, (step.end_ns - step.start_ns) / 1e9) / self.timing
        return [total / n] * n
