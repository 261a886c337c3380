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
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import itertools
import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from .. import messages as M
from .. import wire as W
from ..runs.model import RawHttp, Run, Step
from ..runs.pick import RunNotPicked, pick_run
from ..same_message import ASSISTANT_KEY, conversation_keys
from .divergence import Candidate, ReplayDivergence, ReplayError
from .matchers import RUNGS, first_difference, messages_key, request_keys, split_system
from .pinned_model import PinnedModel
from .server_limits import DEFAULT_LIMITS

CONVERSATION_HEADER = "x-otel-replay-conversation"


@dataclasses.dataclass
class Answer:
    """What to send back: status, headers, and the body as chunks (one for JSON)."""

    status: int
    headers: list[tuple[str, str]]
    chunks: Iterable[bytes]
    #: Seconds to wait before each chunk (recorded timing), or None for no waiting.
    delays: list[float] | None = None
    step: Step | None = None
    rung: str | None = None
    #: The conversation that served (or refused) the request.
    conversation: int | None = None


def _json(status: int, body: Mapping[str, Any], extra: Sequence[tuple[str, str]] = ()) -> Answer:
    data = json_bytes(body, default=repr)
    headers = [("content-type", "application/json"), *extra]
    return Answer(status, headers, [data])


def json_bytes(value: Any, **options: Any) -> bytes:
    """JSON as UTF-8.  A lone surrogate (a recording may hold one: JSON read from a trace
    can) is written as the escape JSON has for it, ``\\ud800``: no UTF-8 spells it."""
    return json.dumps(value, ensure_ascii=False, **options).encode("utf-8", "backslashreplace")


#: What :meth:`ReplayEngine._answer` gives for a request to forward upstream.
_FORWARD = Answer(0, [], [])


def error_answer(status: int, kind: str, message: str, **details: Any) -> Answer:
    # Anthropic's error envelope, which the OpenAI SDK reads too (``error.message``).
    body = {"type": "error", "error": {"type": kind, "message": message, **details}}
    return _json(status, body, [("x-should-retry", "false")])


#: A routing index: key -> the conversations filed under it (by id, oldest first), each
#: with the cursor it had when filed.  A dict, not a list: filing again replaces.
Index = dict[str, dict[int, tuple["Conversation", int]]]


class Conversation:
    """One client conversation: a run and a cursor in it."""

    def __init__(self, cid: int, run: Run, model: PinnedModel) -> None:
        self.id = cid
        self.run = run
        self.model = model
        #: The conversation so far (Responses ``previous_response_id`` continues it).
        self.transcript: list[dict[str, Any]] = []
        #: Where the engine has it filed (index, key): taken out when it moves on or
        #: is forgotten, so no index holds it twice or after it is gone.
        self.waiting: list[tuple[Index, str]] = []
        self.answered: tuple[Index, str] | None = None
        #: The ``x-otel-replay-conversation`` names that route to it.
        self.names: set[str] = set()


class ReplayEngine:
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
        self.runs = list(runs)
        self.match = match
        self.timing = timing
        self.forward = forward
        self.log = log or (lambda line: None)
        self._lines: list[str] = []  # the lock holder's log lines
        #: The recorded steps whose re-spelled answer was logged (once each; by ``id``).
        self._respelled_steps: set[int] = set()
        self.raise_divergence = raise_divergence
        self.max_conversations = max(1, max_conversations)
        self._model_factory = model_factory or (lambda run: PinnedModel(run, match=match))
        self.pinned: Run | None = None
        if run_id is not None:
            try:
                self.pinned = pick_run(self.runs, run_id, where="the runs served", how="run_id")
            except RunNotPicked as exc:
                raise ReplayError(str(exc)) from None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        #: Least recently used first.
        self.conversations: dict[int, Conversation] = {}
        # Conversation names, least recently used first.
        self._named: dict[str, Conversation] = {}
        # Response id -> the conversations that sent it last, at the cursor they had then.
        # Recorded ids repeat: every client replaying a run gets the same ones.
        self._by_response: Index = {}
        self._last: Conversation | None = None
        # Routing indexes: normalized messages -> conversations waiting for them / runs.
        self._waiting: Index = {}
        self._waiting_last: Index = {}
        self._first: dict[str, list[Run]] = collections.defaultdict(list)
        #: :func:`request_keys` of recorded model steps, by ``id`` (the runs hold the steps).
        self._recorded_keys: dict[int, tuple[str, str | None]] = {}
        self._first_last: dict[str, list[Run]] = collections.defaultdict(list)
        #: The conversation keys of recorded model steps, by ``id``, weighed for a request
        #: that matches nothing (see :meth:`_closest`).
        self._conversation_keys: dict[int, list[str]] = {}
        for run in [self.pinned] if self.pinned else self.runs:
            first = next((s for s in run.steps if s.kind == "model" and s.model), None)
            if first is None or first.model is None or not first.model.input_messages:
                continue
            key, last = request_keys(first.model.input_messages)
            self._first[key].append(run)
            if last is not None:
                self._first_last[last].append(run)

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

    _single: Conversation | None = None

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
        try:
            doc = W.loads(body or b"null")
        except W.BadRequest as exc:
            return error_answer(400, "invalid_request_error", f"{wire.name} request: {exc}")
        except ValueError as exc:
            return error_answer(400, "invalid_request_error", f"the body is not JSON: {exc}")
        if not isinstance(doc, dict):
            return error_answer(400, "invalid_request_error", "the body is not a JSON object")
        try:
            request = wire.parse(doc)
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
        if answer is _FORWARD and self.forward is not None:
            # Outside the lock: other conversations go on while upstream answers.
            return self.forward(path, body, headers)
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
            self._lines.append(f"conversation {conv.id}: {str(err).splitlines()[0]}")
            if self.raise_divergence:
                raise err from None
            if self.forward is not None:
                self._lines.append(f"conversation {conv.id}: forwarded upstream")
                return _FORWARD
            return error_answer(
                409,
                "replay_divergence",
                str(err),
                run_id=conv.run.run_id,
                conversation=conv.id,
                step=err.index,
                divergence=err.to_json(),
            )
        except ReplayError as err:
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
        respelled = reply.spelled.respelled if wire.spells_arguments(request) else []
        if respelled:
            meta.append(("x-otel-replay-respelled", header_text(", ".join(respelled))))
            self._respelled(conv, step, respelled)
        if request.stream:
            chunks = list(wire.render_sse(reply, request))
            headers_out = [("content-type", "text/event-stream; charset=utf-8"), *meta]
        else:
            data = json_bytes(wire.render_json(reply, request))
            chunks = [data]
            headers_out = [("content-type", "application/json"), *meta]
        return Answer(
            200, headers_out, chunks, self._delays(step, len(chunks)), step, rung, conv.id
        )

    def _respelled(self, conv: Conversation, step: Step, calls: list[str]) -> None:
        """Say, once per step, that its answer's tool-call arguments were re-spelled: the
        trace holds them as parsed values only, not as the text the model sent."""
        note = conv.model.note_respelled(step, calls)
        if id(step) not in self._respelled_steps:
            self._respelled_steps.add(id(step))
            self._lines.append(f"conversation {conv.id}: {note}")

    # --- routing ------------------------------------------------------------------------
    def _route(
        self, request: W.WireRequest, headers: Mapping[str, str]
    ) -> tuple[Conversation, bool]:
        """The conversation a request belongs to, and whether it was made for it."""
        if self._single is not None:
            return self._single, False
        named = _name_key(headers.get(CONVERSATION_HEADER))
        if named:
            conv = self._named.pop(named, None)
            if conv is not None:
                self._named[named] = conv  # most recently used last
                self._used(conv)
                return conv, False
        previous = request.body.get("previous_response_id")
        if isinstance(previous, str) and previous in self._by_response:
            conv = self._answered(self._by_response[previous], request.messages)
            if conv is not None:
                return conv, False
        key, last = self._recorded_as_sent(request.messages) or request_keys(request.messages)
        conv = _first_of(self._waiting.get(key))
        if conv is None and key in self._first:
            conv = self._start(self._first[key][0])
        if conv is None and last is not None:
            conv = _first_of(self._waiting_last.get(last))
            if conv is None and last in self._first_last:
                conv = self._start(self._first_last[last][0])
        fresh = False
        if conv is None:
            # Nothing matches: it diverges where it most likely belongs.
            conv, fresh = self._closest(request)
        if named:
            self._name(named, conv)
        return conv, fresh

    def _recorded_as_sent(self, messages: list[dict[str, Any]]) -> tuple[str, str | None] | None:
        """The :func:`request_keys` of ``messages`` without keying them, when they are the
        recorded request the last conversation served expects next (a client replaying
        its run), else None.

        Those keys were made when the conversation was filed.  The same JSON values
        have the same keys; ``==`` alone would take ``1`` for ``1.0`` or ``True``, and
        ``repr`` tells them apart (and takes the same keys in another order for other
        messages: keyed, then, as any other request).
        """
        conv = self._last
        step = conv.model.expected() if conv is not None else None
        if step is None or step.model is None:
            return None
        keys = self._recorded_keys.get(id(step))
        recorded = step.model.input_messages
        if keys is None or recorded != messages or repr(recorded) != repr(messages):
            return None
        return keys

    def _closest(self, request: W.WireRequest) -> tuple[Conversation, bool]:
        """Where a request that matches nothing most likely belongs, to diverge there.

        The place whose recorded request shares the longest beginning with it: a
        conversation kept (the request went on from where it stands) or a run's
        first request (a conversation started anew).  A request that answers
        nothing yet (no assistant turn) is a new conversation when the two tie, one
        that does goes on the most recent conversation; with nothing in common at
        all, the same.  Only the most recent conversations and the first runs are
        weighed, so a divergent request costs the same however many are kept.
        """
        sent = self._keys(request.messages)
        new = not any(k.startswith(ASSISTANT_KEY) for k in sent)
        best: tuple[int, int, int] | None = None
        found: Conversation | Run | None = None
        recent = itertools.islice(reversed(self.conversations.values()), _WEIGHED)
        for order, conv in enumerate(recent):
            step = conv.model.expected()
            if step is not None and step.model is not None:
                score = (_shared(sent, self._step_keys(step)), not new, -order)
                if best is None or score > best:
                    best, found = score, conv
        for order, run in enumerate(itertools.islice(self._starts(), _WEIGHED)):
            step = next((s for s in run.steps if s.kind == "model" and s.model), None)
            if step is not None:
                score = (_shared(sent, self._step_keys(step)), new, -order)
                if best is None or score > best:
                    best, found = score, run
        if isinstance(found, Conversation):
            return found, False
        if found is None and self._last is not None and not new and not self.pinned:
            return self._last, False
        return self._start(found or self.pinned or self.runs[0]), True

    def _starts(self) -> Iterator[Run]:
        """The runs a conversation may start in."""
        return iter([self.pinned] if self.pinned else self.runs)

    def _keys(self, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        return conversation_keys(split_system(M.normalize(messages))[1], hidden=True)

    def _step_keys(self, step: Step) -> list[str]:
        """The keys of a recorded step's conversation (kept: the runs hold the steps)."""
        keys = self._conversation_keys.get(id(step))
        if keys is None:
            assert step.model is not None
            keys = self._keys(step.model.input_messages or [])
            self._conversation_keys[id(step)] = keys
        return keys

    def _answered(
        self, entries: Mapping[int, tuple[Conversation, int]], messages: list[dict[str, Any]]
    ) -> Conversation | None:
        """Of the conversations that sent a response id (and have not moved on since: they
        are taken out when they do), the first whose next recorded request is their
        transcript plus ``messages``."""
        for conv, _ in entries.values():
            step = conv.model.expected()
            if step is not None and step.model is not None:
                key = messages_key([*conv.transcript, *messages])
                if key == messages_key(step.model.input_messages or []):
                    return conv
        return next((conv for conv, _ in entries.values()), None)

    def _start(self, run: Run) -> Conversation:
        conv = Conversation(next(self._ids), run, self._model_factory(run))
        self.conversations[conv.id] = conv
        if len(self.conversations) > self.max_conversations:
            self._forget(next(iter(self.conversations.values())))  # the least recently used
        return conv

    def _used(self, conv: Conversation) -> None:
        """``conv`` becomes the most recently used conversation."""
        if self.conversations.get(conv.id) is conv:
            del self.conversations[conv.id]
            self.conversations[conv.id] = conv

    def _name(self, name: str, conv: Conversation) -> None:
        """Route requests that give ``name`` to ``conv`` (the least recently used name
        goes past ``max_conversations`` names)."""
        self._named[name] = conv
        conv.names.add(name)
        while len(self._named) > self.max_conversations:
            oldest = next(iter(self._named))
            self._named.pop(oldest).names.discard(oldest)

    def _forget(self, conv: Conversation) -> None:
        """Forget ``conv``: its entry, its names and where it is filed."""
        self.conversations.pop(conv.id, None)
        for name in conv.names:
            if self._named.get(name) is conv:
                del self._named[name]
        conv.names.clear()
        for index, key in conv.waiting:
            _unfile(conv, index, key)
        conv.waiting.clear()
        if conv.answered is not None:
            _unfile(conv, *conv.answered)
            conv.answered = None
        if self._last is conv:
            self._last = None

    def _wait(self, conv: Conversation) -> None:
        """File ``conv`` under the request it expects next (and nowhere it was before)."""
        for index, key in conv.waiting:
            _unfile(conv, index, key)
        conv.waiting.clear()
        step = conv.model.expected()
        if step is None or step.model is None or not step.model.input_messages:
            return
        keys = self._recorded_keys.get(id(step))
        if keys is None:  # a recorded request's keys never change: once per step
            keys = self._recorded_keys[id(step)] = request_keys(step.model.input_messages)
        key, last = keys
        conv.waiting.append(_file(conv, self._waiting, key))
        if last is not None:
            conv.waiting.append(_file(conv, self._waiting_last, last))

    def _with_candidates(
        self, err: ReplayDivergence, request: W.WireRequest, conv: Conversation
    ) -> ReplayDivergence:
        """The divergence, with the other places the request might have belonged (a few).

        A session's engine raises the session's own divergence, unchanged.
        """
        if self._single is not None:
            return err
        waiting = (c.model.expected() for c in self.conversations.values() if c is not conv)
        firsts = (
            next((s for s in run.steps if s.kind == "model" and s.model), None) for run in self.runs
        )
        starting = (s for s in firsts if s is not err.step)
        # The first five only: a divergent request costs the same however many
        # conversations are kept and runs served.
        found = (s for s in itertools.chain(waiting, starting) if s is not None)
        steps = itertools.islice(found, 5)
        candidates = [
            Candidate(s, (first_difference(s.model.input_messages or [], request.messages),))
            for s in steps
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


#: A conversation name past this many characters is kept as its digest.
NAME_CHARS = 64


def _name_key(name: str | None) -> str | None:
    """How a conversation name is kept: as it is, or (a long one) as its digest, so that
    what the names kept hold does not grow with the names clients send."""
    if name is None or len(name) <= NAME_CHARS:
        return name
    return "sha256:" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def _file(conv: Conversation, index: Index, key: str) -> tuple[Index, str]:
    """File ``conv`` at its cursor under ``key`` (once: filing again replaces)."""
    index.setdefault(key, {})[conv.id] = (conv, conv.model.cursor)
    return index, key


def _unfile(conv: Conversation, index: Index, key: str) -> None:
    entries = index.get(key)
    if entries is not None and entries.pop(conv.id, None) is not None and not entries:
        del index[key]


#: How many conversations, and how many runs, a request that matches nothing is weighed
#: against.
_WEIGHED = 64


def _shared(a: Sequence[str], b: Sequence[str]) -> int:
    """How many keys two conversations share from their beginning."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _first_of(entries: Mapping[int, tuple[Conversation, int]] | None) -> Conversation | None:
    """The conversation filed first (the longest waiting), if any."""
    return next(iter(entries.values()))[0] if entries else None


#: Recorded response headers sent back with recorded bytes (what the client decodes by).
_RAW_HEADERS = ("content-type", "content-encoding")


def _raw_for(step: Step, wire: W.Wire, request: W.WireRequest) -> RawHttp | None:
    """The recorded HTTP answer to send verbatim, if the client speaks the API it came from.

    Same API (the recorded request path is served by the same wire format),
    same mode (a stream for a stream request, JSON otherwise), a 200, and
    bytes whose digest checks: else the answer is rendered from GenAI messages.
    """
    raw = step.model.raw if step.model is not None else None
    if raw is None or not raw.usable or raw.status not in (None, 200) or raw.path is None:
        return None
    if W.for_path(raw.path) is not wire:
        return None
    if not all(_sendable(raw.response_headers.get(k, "")) for k in _RAW_HEADERS):
        return None  # a header HTTP cannot carry: the answer is rendered instead
    streamed = "text/event-stream" in raw.response_headers.get("content-type", "")
    return raw if streamed == request.stream else None


#: What an HTTP header value may hold (RFC 9110's field-value): tab, visible ASCII and
#: the rest of Latin-1.  A recording may hold anything: a CR LF, a NUL or U+2603 in a
#: header made the server fail the request with a traceback.
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


def _sendable(value: str) -> bool:
    return _FIELD_VALUE.fullmatch(value) is not None


def header_text(text: str) -> str:
    """``text`` (recorded: anything) as an HTTP header value may carry it: what it may not
    hold written as its Python escape, white space around it left out."""
    text = text.strip(" \t")
    if _sendable(text):
        return text
    return "".join(
        c if _sendable(c) else c.encode("unicode_escape", "backslashreplace").decode("ascii")
        for c in text
    )


def iter_chunks(answer: Answer) -> Iterator[tuple[float, bytes]]:
    """``(seconds to wait, chunk)`` pairs of an answer."""
    delays = answer.delays
    for i, chunk in enumerate(answer.chunks):
        yield (delays[i] if delays and i < len(delays) else 0.0), chunk
