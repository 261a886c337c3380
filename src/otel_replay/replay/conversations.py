"""The conversations of a replay engine, and the routing of a request to one.

Each conversation has its own run and cursor (a :class:`Conversation`), filed in
routing indexes under the request it expects next, so that finding the
conversation a request continues is a dict lookup; a :class:`Router` keeps them,
bounded, and routes each request (the rules are :mod:`otel_replay.replay.engine`'s).
"""

from __future__ import annotations

import collections
import hashlib
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .. import messages as M
from .. import wire as W
from ..runs.model import Run, Step
from ..same_message import ASSISTANT_KEY, conversation_keys
from .matchers import messages_key, request_keys, same_json, split_system, strict_text
from .pinned_model import PinnedModel

CONVERSATION_HEADER = "x-otel-replay-conversation"


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
        #: The cursor it was last filed (or set to be filed) at, None before, and the
        #: step it then expected.
        self.filed_at: int | None = None
        self.filed_for: Step | None = None
        #: The ``x-otel-replay-conversation`` names that route to it.
        self.names: set[str] = set()


class Router:
    """The conversations a :class:`~otel_replay.replay.engine.ReplayEngine` keeps, and
    which of them a request goes to (see :mod:`otel_replay.replay.engine` for the rules):
    ``runs`` served (``pinned``: the one a conversation starts in, if any), each
    conversation's model made by ``model_factory``, at most ``max_conversations`` kept."""

    #: The one conversation of an engine made for one model (``for_model``), else None.
    _single: Conversation | None = None

    def __init__(
        self,
        runs: list[Run],
        pinned: Run | None,
        model_factory: Callable[[Run], PinnedModel],
        max_conversations: int,
    ) -> None:
        self.runs = runs
        self.pinned = pinned
        self.max_conversations = max_conversations
        self._model_factory = model_factory
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
        # Conversations to file under the request they expect next, in the order they
        # came to expect it: filed when an index is next read (see _wait).
        self._pending: dict[int, Conversation] = {}
        self._first: dict[str, list[Run]] = collections.defaultdict(list)
        #: :func:`request_keys` of recorded model steps, by ``id`` (the runs hold the steps).
        self._recorded_keys: dict[int, tuple[str, str | None]] = {}
        #: :func:`strict_text` of recorded model steps' messages, by ``id`` ("": none).
        self._recorded_texts: dict[int, str] = {}
        self._first_last: dict[str, list[Run]] = collections.defaultdict(list)
        #: How many conversations were started in each run (by ``id``: the runs are kept).
        self._started_runs: collections.Counter[int] = collections.Counter()
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
        conv = self._only_continued(request.messages)
        if conv is not None:
            if named:
                self._name(named, conv)
            return conv, False
        self._file_pending()
        key, last = self._recorded_as_sent(request.messages) or request_keys(request.messages)
        conv = _first_of(self._waiting.get(key))
        if conv is None and key in self._first:
            conv = self._start(self._next_of(self._first[key]))
        if conv is None and last is not None:
            conv = _first_of(self._waiting_last.get(last))
            if conv is None and last in self._first_last:
                conv = self._start(self._next_of(self._first_last[last]))
        fresh = False
        if conv is None:
            # Nothing matches: it diverges where it most likely belongs.
            conv, fresh = self._closest(request)
        if named:
            self._name(named, conv)
        return conv, fresh

    def _only_continued(self, messages: list[dict[str, Any]]) -> Conversation | None:
        """The one conversation kept, when ``messages`` are, as recorded, the request it
        waits for (a client replaying its run), else None.

        Keying the request would find it alone under those keys: it is the only one
        filed, and filed under the keys of the request it expects.  So it is not keyed,
        nor is that request's recorded one.
        """
        conv = self._last
        if conv is None or len(self.conversations) != 1 or conv.filed_at != conv.model.cursor:
            return None
        step = conv.model.expected()
        if step is None or step.model is None or not step.model.input_messages:
            return None  # not filed: keyed, the request goes elsewhere
        recorded = step.model.input_messages
        text = self._recorded_texts.get(id(step))
        if text is None:  # a recorded request's text never changes: once per step
            text = self._recorded_texts[id(step)] = strict_text(recorded) or ""
        if not text or not same_json(recorded, messages, text):
            return None
        conv.model.sent_as_recorded(messages, step)
        return conv

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
        if keys is None or not same_json(step.model.input_messages, messages):
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
        turns = _turns(request.messages)
        sent = conversation_keys(turns, hidden=True)
        # An answer whose text is blank has no key (it says nothing), but a request that
        # sends it back goes on from it all the same.
        new = not any(k.startswith(ASSISTANT_KEY) for k in sent) and not any(
            m.get("role") == "assistant" for m in turns
        )
        best: tuple[int, int, int] | None = None
        found: Conversation | Run | None = None
        recent = itertools.islice(reversed(self.conversations.values()), _WEIGHED)
        for order, conv in enumerate(recent):
            step = conv.model.expected()
            if step is not None and step.model is not None:
                # A next step whose request is not in the trace: weighed by the
                # conversation so far, which such a request goes on from.
                keys = (
                    self._step_keys(step)
                    if step.model.input_messages is not None
                    else self._keys(conv.transcript)
                )
                score = (_shared(sent, keys), not new, -order)
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
        return conversation_keys(_turns(messages), hidden=True)

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

    def _next_of(self, runs: Sequence[Run]) -> Run:
        """Of ``runs`` (in recorded order, their first requests alike), the one a new
        conversation starts in: the first of those started the fewest times.  The same
        question asked twice, or a task its framework ran again after a failed call
        (CrewAI does), replays as recorded, each run in turn; a client replaying the
        whole recording again goes round once more."""
        if len(runs) == 1:
            return runs[0]
        started = self._started_runs
        return min(runs, key=lambda r: started[id(r)])

    def _start(self, run: Run) -> Conversation:
        conv = Conversation(next(self._ids), run, self._model_factory(run))
        self._started_runs[id(run)] += 1
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
        self._pending.pop(conv.id, None)
        for index, key in conv.waiting:
            _unfile(conv, index, key)
        conv.waiting.clear()
        if conv.answered is not None:
            _unfile(conv, *conv.answered)
            conv.answered = None
        if self._last is conv:
            self._last = None

    def _wait(self, conv: Conversation) -> None:
        """File ``conv`` under the request it expects next (and nowhere it was before).

        Filed when an index is next read: a client replaying its run alone is routed
        without them (see :meth:`_only_continued`), and keying the recorded request
        is most of what answering it costs.  The order conversations are filed in
        is the order they came to wait in, as if each were filed at once.
        """
        for index, key in conv.waiting:
            _unfile(conv, index, key)
        conv.waiting.clear()
        conv.filed_at, conv.filed_for = conv.model.cursor, conv.model.expected()
        self._pending.pop(conv.id, None)  # filed last, as if filed now
        self._pending[conv.id] = conv

    def _file_pending(self) -> None:
        """File the conversations :meth:`_wait` left to file, in the order they came."""
        pending = list(self._pending.values())
        self._pending.clear()
        for conv in pending:
            self._file_now(conv)

    def _file_now(self, conv: Conversation) -> None:
        step = conv.filed_for
        if step is None or step.model is None or not step.model.input_messages:
            return
        keys = self._recorded_keys.get(id(step))
        if keys is None:  # a recorded request's keys never change: once per step
            keys = self._recorded_keys[id(step)] = request_keys(step.model.input_messages)
        key, last = keys
        conv.waiting.append(_file(conv, self._waiting, key, conv.filed_at))
        if last is not None:
            conv.waiting.append(_file(conv, self._waiting_last, last, conv.filed_at))


#: A conversation name past this many characters is kept as its digest.
NAME_CHARS = 64


def _name_key(name: str | None) -> str | None:
    """How a conversation name is kept: as it is, or (a long one) as its digest, so that
    what the names kept hold does not grow with the names clients send."""
    if name is None or len(name) <= NAME_CHARS:
        return name
    return "sha256:" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def _file(
    conv: Conversation, index: Index, key: str, cursor: int | None = None
) -> tuple[Index, str]:
    """File ``conv`` at ``cursor`` (None: its cursor) under ``key`` (once: filing again
    replaces)."""
    index.setdefault(key, {})[conv.id] = (conv, conv.model.cursor if cursor is None else cursor)
    return index, key


def _unfile(conv: Conversation, index: Index, key: str) -> None:
    entries = index.get(key)
    if entries is not None and entries.pop(conv.id, None) is not None and not entries:
        del index[key]


#: How many conversations, and how many runs, a request that matches nothing is weighed
#: against.
_WEIGHED = 64


def _turns(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as GenAI messages, the system instructions apart."""
    return split_system(M.normalize(messages))[1]


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
