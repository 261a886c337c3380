"""Stitch client-only traces into runs.

Instrumentations that wrap only the model client (openai-v2, OpenLLMetry,
OpenInference, the Anthropic SDK's own tracing) write one trace per model call
and nothing for the agent or its tools.  Such traces ("pieces": model steps,
perhaps with HTTP children, but no agent or tool step) are joined into one run:

- by conversation id (``gen_ai.conversation.id``, else ``session.id``) when
  the pieces carry one;
- else by message continuity: the input of call k+1 starts with the input and
  the output of call k, and adds no assistant message of its own (that would
  be the answer of a call that is not there).  When call k's output was not
  recorded (some stacks drop it for streams), the input of call k+1 must
  start with the input of call k followed by one assistant message.  When the
  input of call k+1 records that answer without its tool calls (LiteLLM drops
  the calls of earlier turns from the messages it records: the turn is empty,
  or its text only, and tool results follow it), it must start with the input
  of call k followed by the answer's other parts; where it records the answer's
  calls alone (CrewAI sends an answer back with its calls and no content), with
  those.  Messages
  are compared by :func:`message_key`, which ignores call ids, whitespace,
  key order and how the system prompt was given.

A trace with an agent or tool span of its own is a run by itself.  Each piece
has at most one successor, so two conversations with the same messages (the
same scenario run twice) stay two runs; among equal candidates the earliest
one of the same process wins.  Candidates are found through a hash index of
message prefixes: linear in the number of messages, never pairwise over traces.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from .. import attributes as A
from .. import messages as M
from ..payload import codec as payload
from ..same_message import (
    ASSISTANT_KEY,
    message_key,
    spelled_value,
    turns,
    without_repeated_system,
)
from .model import PendingRun, Run, Step
from .stray_calls import failed_alone, join_strays
from .task_reruns import join_reruns

#: Attributes that name the conversation a model call belongs to, in order of preference.
CONVERSATION_KEYS = (A.CONVERSATION_ID, A.SESSION_ID)


def stitch(traces: Sequence[Run], keys: ConversationKeys | None = None) -> list[list[Run]]:
    """Group per-trace runs into runs: each group in start order, groups in input order."""
    pieces = sorted((t for t in traces if is_piece(t)), key=lambda t: (t.start_ns, t.run_id))
    hashes = _Hashes(keys or ConversationKeys())
    groups = group_pieces([piece_facts(p, hashes) for p in pieces])
    head_of: dict[int, list[Run]] = {}
    for group in groups:
        head_of[id(pieces[group[0]])] = [pieces[i] for i in group]
    grouped = {id(pieces[i]) for group in groups for i in group}
    out: list[list[Run]] = []
    for trace in traces:
        if id(trace) in head_of:
            out.append(head_of[id(trace)])
        elif id(trace) not in grouped:
            out.append([trace])
    return out


@dataclasses.dataclass(frozen=True)
class PieceFacts:
    """What stitching needs of one client-only trace: ids, times and message hashes.

    Small and picklable, so the pieces of a big dump can be grouped without
    holding their runs (see :mod:`.stream`).
    """

    run_id: str
    start_ns: int
    process: str
    conversation: str | None
    #: Hashes of the first call's conversation prefixes a previous call can end.
    prefixes: tuple[bytes, ...]
    #: The first call's input up to its last assistant message.
    before_answer: bytes | None
    #: What a next call would start with: the last call's input and one answer.
    successors: tuple[bytes, ...]
    #: The last call's whole input, when its output was not recorded.
    open: bytes | None
    #: The last call's input and answer without its calls (a next input may record it so).
    without_calls: tuple[bytes, ...] = ()
    #: Hashes of the first call's input up to each turn that lost its calls.
    lost_calls: tuple[bytes, ...] = ()
    #: The calls its model steps made: (the step's start, the call id or "", the call's hash).
    calls: tuple[tuple[int, str, bytes], ...] = ()
    #: A trace of one tool run alone: (its call id or "", its call's hash); None otherwise.
    tool: tuple[str, bytes] | None = None
    #: Its last model call asked for tools (the conversation waits for a next call).
    asks_tools: bool = False
    #: Every model call failed and none recorded its input (:mod:`.stray_calls`).
    failed_alone: bool = False
    #: The first call's whole input, when it begins a conversation (no answer in it).
    first_request: bytes | None = None
    #: Its last model call failed (:mod:`.task_reruns`).
    ends_failed: bool = False


def piece_facts(piece: Run, hashes: _Hashes | ConversationKeys) -> PieceFacts:
    """The :class:`PieceFacts` of a client-only trace (or of a trace of one tool run)."""
    if isinstance(hashes, ConversationKeys):
        hashes = _Hashes(hashes)
    if _is_tool_piece(piece):
        t = next(s.tool for s in piece.steps if s.tool is not None)
        return PieceFacts(
            run_id=piece.run_id,
            start_ns=piece.start_ns,
            process=process_key(piece),
            conversation=None,
            prefixes=(),
            before_answer=None,
            successors=(),
            open=None,
            tool=(t.call_id or "", call_hash(t.tool_name, t.arguments)),
        )
    models = _models(piece)
    calls = tuple(
        (s.start_ns, str(c.get("id") or ""), call_hash(c.get("name"), c.get("arguments")))
        for s in models
        for c in M.tool_calls((s.model.output_messages if s.model else None) or [])
    )
    last = models[-1].model if models else None
    return PieceFacts(
        calls=calls,
        asks_tools=last is not None and bool(M.tool_calls(last.output_messages or [])),
        failed_alone=failed_alone(piece),
        first_request=hashes.first_request_key(piece),
        ends_failed=bool(models) and models[-1].status == "ERROR",
        run_id=piece.run_id,
        start_ns=piece.start_ns,
        process=process_key(piece),
        conversation=conversation_id(piece),
        prefixes=tuple(hashes.prefix_keys(piece)),
        before_answer=hashes.before_answer_key(piece),
        successors=tuple(hashes.successor_keys(piece)),
        open=hashes.open_key(piece),
        without_calls=tuple(hashes.without_calls_keys(piece)),
        lost_calls=tuple(hashes.lost_calls_keys(piece)),
    )


def group_pieces(pieces: Sequence[PieceFacts]) -> list[list[int]]:
    """Pieces (in start order) grouped into conversations, as indices; each group in order.

    Groups come in the order of their first piece; a piece no other joins is
    a group of its own.
    """
    groups: dict[int, list[int]] = {}  # first piece -> pieces
    by_conversation: dict[str, int] = {}
    loose: list[int] = []
    tools: list[int] = []
    strays: list[int] = []
    for i, piece in enumerate(pieces):
        if piece.tool is not None:
            tools.append(i)
            continue
        if piece.conversation is None:
            (strays if piece.failed_alone else loose).append(i)
            continue
        first = by_conversation.setdefault(piece.conversation, i)
        groups.setdefault(first, []).append(i)
    for chain in _chains(pieces, loose):
        groups[chain[0]] = chain
    join_strays(pieces, groups, strays)
    join_reruns(pieces, groups)
    asked = _CallIndex(pieces, groups)
    for i in tools:
        home = asked.home(pieces[i])
        if home is None:
            groups[i] = [i]
        else:
            groups[home] = sorted([*groups[home], i], key=lambda k: (pieces[k].start_ns, k))
    return [groups[i] for i in sorted(groups)]


class _CallIndex:
    """The tool calls of conversations, to find the one a lone tool run answers."""

    def __init__(self, pieces: Sequence[PieceFacts], groups: Mapping[int, list[int]]) -> None:
        self._by_id: dict[tuple[str, str], set[int]] = collections.defaultdict(set)
        #: (process, call hash) -> (conversation, the call's start, the next call's start).
        self._by_call: dict[tuple[str, bytes], list[tuple[int, int, int | None]]] = (
            collections.defaultdict(list)
        )
        for head, members in groups.items():
            process = pieces[head].process
            starts = sorted(pieces[m].start_ns for m in members)
            for m in members:
                for asked_at, call_id, call in pieces[m].calls:
                    if call_id:
                        self._by_id[(process, call_id)].add(head)
                    after = bisect.bisect_right(starts, asked_at)
                    nxt = starts[after] if after < len(starts) else None
                    self._by_call[(process, call)].append((head, asked_at, nxt))

    def home(self, tool: PieceFacts) -> int | None:
        """The conversation a lone tool run answers a call of, when exactly one does.

        By the call's id when the tool span recorded one, else by tool name and
        arguments, the tool having started after the call's model step and before
        the conversation's next one (same process).
        """
        assert tool.tool is not None
        call_id, call = tool.tool
        found = self._by_id.get((tool.process, call_id), set()) if call_id else set()
        if not found:
            found = {
                head
                for head, asked_at, nxt in self._by_call.get((tool.process, call), [])
                if asked_at <= tool.start_ns and (nxt is None or tool.start_ns < nxt)
            }
        return next(iter(found)) if len(found) == 1 else None


def call_hash(name: Any, arguments: Any) -> bytes:
    """A tool call's name and arguments (as the value they spell), hashed."""
    value = json.dumps([name, spelled_value(arguments)], sort_keys=True, default=str)
    return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def conversation_id(run: Run) -> str | None:
    """The conversation id a run's steps carry, if any."""
    for key in CONVERSATION_KEYS:
        for step in run.steps:
            value = step.attributes.get(key)
            if isinstance(value, str) and value:
                return f"{key}={value}"
    return None


def is_piece(run: Run) -> bool:
    """A trace of model calls only (what a client-only instrumentation writes), or of one
    tool run alone (a traced tool with no span around it): it joins its conversation."""
    if isinstance(run, PendingRun):
        return False  # a trace that holds an agent's run, its steps not built yet
    kinds = {s.kind for s in run.steps}
    return ("model" in kinds and not kinds & {"agent", "tool"}) or _is_tool_piece(run)


def _is_tool_piece(run: Run) -> bool:
    tools = [s for s in run.steps if s.kind == "tool"]
    return (
        len(tools) == 1
        and len(run.roots) == 1
        and run.roots[0] is tools[0]
        and tools[0].tool is not None
        and not any(s.kind in ("model", "agent") for s in run.steps)
    )


# --- continuity ---------------------------------------------------------------------


def _chains(facts: Sequence[PieceFacts], loose: list[int]) -> list[list[int]]:
    """Link each piece to the piece whose conversation it continues; pieces in start order."""
    answered = _Candidates(facts)  # keyed by input + one answer
    unanswered = _Candidates(facts)  # output not recorded: keyed by the input alone
    stripped = _Candidates(facts)  # a next input recorded the answer without its calls
    for i in loose:
        for key in facts[i].successors:
            answered.add(key, i)
        open_key = facts[i].open
        if open_key is not None:
            unanswered.add(open_key, i)
        for key in facts[i].without_calls:
            stripped.add(key, i)
    after: dict[int, int] = {}  # piece -> its successor
    before: set[int] = set()
    for i in loose:
        found = None
        for key in reversed(facts[i].prefixes):  # the longest continued one wins
            found = answered.take(key, i, after)
            if found is not None:
                break
        stub = facts[i].before_answer
        if found is None and stub is not None:
            found = unanswered.take(stub, i, after)
        for key in reversed(facts[i].lost_calls) if found is None else ():
            found = stripped.take(key, i, after)
            if found is not None:
                break
        if found is not None:
            after[found] = i
            before.add(i)
    chains: list[list[int]] = []
    for i in loose:
        if i in before:
            continue
        chain = [i]
        while chain[-1] in after:
            chain.append(after[chain[-1]])
        chains.append(chain)
    return chains


class _Candidates:
    """Pieces by conversation hash, in start order; those of the asking process first."""

    def __init__(self, facts: Sequence[PieceFacts]) -> None:
        self._facts = facts
        self._any: dict[bytes, collections.deque[int]] = collections.defaultdict(collections.deque)
        self._here: dict[tuple[bytes, str], collections.deque[int]] = collections.defaultdict(
            collections.deque
        )

    def add(self, key: bytes, piece: int) -> None:
        self._any[key].append(piece)
        self._here[(key, self._facts[piece].process)].append(piece)

    def take(self, key: bytes, piece: int, after: Mapping[int, int]) -> int | None:
        found = _take(self._here.get((key, self._facts[piece].process)), piece, after)
        return found if found is not None else _take(self._any.get(key), piece, after)


def _take(queue: collections.deque[int] | None, piece: int, after: Mapping[int, int]) -> int | None:
    """The earliest candidate that started before ``piece`` and has no successor yet."""
    if not queue:
        return None
    while queue and queue[0] in after:
        queue.popleft()  # taken: never a candidate again
    if queue and queue[0] < piece:
        return queue[0]
    return None


class ConversationKeys:
    """Each model call's :func:`conversation` keys, computed once per call."""

    def __init__(self) -> None:
        self._done: dict[int, list[str]] = {}

    def __call__(self, step: Step) -> list[str]:
        found = self._done.get(id(step))
        if found is None:
            m = step.model
            assert m is not None
            found = self._done[id(step)] = list(
                conversation(m.input_messages, m.system_instructions)
            )
        return found


def process_key(run: Run) -> str:
    """Which process recorded the run (its resource), as a short key."""
    return process_key_of(run.resource)


def process_key_of(resource: Mapping[str, Any]) -> str:
    """A resource as a short key: what tells the processes of a dump apart."""
    return payload.canonical(payload.plain(dict(resource)))


def _models(run: Run) -> list[Step]:
    return sorted(
        (s for s in run.steps if s.kind == "model" and s.model is not None),
        key=lambda s: (s.start_ns, s.index),
    )


class _Hashes:
    """Prefix hashes of each model call's conversation, computed once per call.

    A one-call piece is both the head and the tail of its chain: its input is
    hashed once for both uses.
    """

    def __init__(self, keys: ConversationKeys) -> None:
        self._keys = keys
        self._done: dict[int, tuple[list[bytes], int]] = {}

    def _of(self, step: Step) -> tuple[list[bytes], int]:
        """(hash of each prefix, position of the last assistant message or -1)."""
        found = self._done.get(id(step))
        if found is None:
            keys = self._keys(step)
            last = max((i for i, k in enumerate(keys) if k.startswith(ASSISTANT_KEY)), default=-1)
            found = self._done[id(step)] = (_chain_hash(keys), last)
        return found

    def successor_keys(self, piece: Run) -> list[bytes]:
        """Hashes of the conversations a next call would start with: input + one answer."""
        models = _models(piece)
        last = models[-1] if models else None
        if last is None or last.model is None or not last.model.output_messages:
            return []
        base = self._of(last)[0]
        keys = []
        for message in last.model.output_messages:
            # A framework may send an answer back with its calls alone (CrewAI sends the
            # calls with no content): the text beside them is then in no later request.
            spelled = [message, only_calls(message)] if _calls_and_more(message) else [message]
            for key in map(message_key, spelled):
                if key is not None:
                    keys.append(_extend(base[-1] if base else b"", key))
        return keys

    def open_key(self, piece: Run) -> bytes | None:
        """For a last call whose output was not recorded: the hash of its whole input."""
        models = _models(piece)
        last = models[-1] if models else None
        if last is None or last.model is None or last.model.output_messages is not None:
            return None
        hashes = self._of(last)[0]
        return hashes[-1] if hashes else None

    def first_request_key(self, piece: Run) -> bytes | None:
        """The hash of the first call's whole input when it holds no answer (the first
        request of a conversation), else None."""
        models = _models(piece)
        if not models:
            return None
        hashes, last_answer = self._of(models[0])
        return hashes[-1] if hashes and last_answer < 0 else None

    def before_answer_key(self, piece: Run) -> bytes | None:
        """The hash of the first call's input up to (not with) its last assistant message."""
        models = _models(piece)
        if not models:
            return None
        hashes, last_answer = self._of(models[0])
        return hashes[last_answer - 1] if last_answer >= 1 else None

    def without_calls_keys(self, piece: Run) -> list[bytes]:
        """Hashes of the last call's input and each answer that calls tools, calls left out."""
        models = _models(piece)
        last = models[-1] if models else None
        if last is None or last.model is None or not last.model.output_messages:
            return []
        base = self._of(last)[0]
        start = base[-1] if base else b""
        keys = []
        for message in last.model.output_messages:
            if _calls(message):
                key = message_key(without_calls(message))
                keys.append(start if key is None else _extend(start, key))
        return keys

    def lost_calls_keys(self, piece: Run) -> list[bytes]:
        """Hashes of the first call's input up to and with each turn that lost its calls."""
        models = _models(piece)
        m = models[0].model if models else None
        inputs = turns((m.input_messages if m is not None else None) or [])
        if m is None or not any(lost_calls(inputs, j) for j in range(len(inputs))):
            return []
        out: list[bytes] = []
        h = b""
        for system in conversation([], m.system_instructions):  # the system prompt first
            h = _extend(h, system)
        for j, message in enumerate(inputs):
            key = message_key(message)
            if lost_calls(inputs, j) and h:
                out.append(h if key is None else _extend(h, key))
            if key is not None:
                h = _extend(h, key)
        return out

    def prefix_keys(self, piece: Run) -> list[bytes]:
        """Hashes of the prefixes of the first call's conversation a previous call can end.

        A previous call ends with its answer, the last assistant message; what
        follows is new input (tool results, the user's next turn).  Shorter
        prefixes would skip a call that is not in this conversation.
        """
        models = _models(piece)
        if not models:
            return []
        hashes, last_answer = self._of(models[0])
        return hashes[max(last_answer, 0) :]


def conversation(
    messages: Sequence[Mapping[str, Any]] | None, system: Sequence[Mapping[str, Any]] | None
) -> Iterator[str]:
    """The keys of a call's messages, the system prompt (however given, and given once) first."""
    if system:
        key = message_key({"role": "system", "parts": list(system)})
        if key is not None:
            yield key
    for message in turns(without_repeated_system(messages or [], system)):
        key = message_key(message)
        if key is not None:
            yield key


def lost_calls(messages: Sequence[Mapping[str, Any]], j: int) -> bool:
    """``messages[j]`` is an assistant turn recorded without the calls the next message answers.

    Tool results follow only a turn that called tools; a turn with no call
    before them lost its calls (it may still hold its text).
    """
    if messages[j].get("role") != "assistant" or _calls(messages[j]) or j + 1 >= len(messages):
        return False
    following = messages[j + 1]
    parts = following.get("parts") or []
    return following.get("role") == "tool" or (
        bool(parts)
        and all(isinstance(p, Mapping) and p.get("type") == "tool_call_response" for p in parts)
    )


def without_calls(message: Mapping[str, Any]) -> dict[str, Any]:
    """``message`` with its tool calls left out."""
    parts = [p for p in message.get("parts") or [] if not _is_call(p)]
    return {**message, "parts": parts}


def only_calls(message: Mapping[str, Any]) -> dict[str, Any]:
    """``message`` with its tool calls alone."""
    return {**message, "parts": [p for p in message.get("parts") or [] if _is_call(p)]}


def _calls_and_more(message: Mapping[str, Any]) -> bool:
    parts = message.get("parts") or []
    return _calls(message) and not all(_is_call(p) for p in parts)


def _calls(message: Mapping[str, Any]) -> bool:
    return any(_is_call(p) for p in message.get("parts") or [])


def _is_call(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "tool_call"


def _chain_hash(keys: Iterable[str]) -> list[bytes]:
    out: list[bytes] = []
    h = b""
    for key in keys:
        h = _extend(h, key)
        out.append(h)
    return out


def _extend(prefix: bytes, key: str) -> bytes:
    return hashlib.blake2b(prefix + key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
