"""A failed model call traced without its request, joined to the conversation it ended.

A client that traces each call twice (an instrumentation's span, and the SDK's own
metadata span: the Anthropic SDK with OpenLLMetry's Anthropic instrumentation) may export
only the metadata span of a call that failed: OpenLLMetry exports no span for a stream
cut partway, while the SDK's span of it ends in error, with no messages.  Alone, that span
is a trace of its own with nothing to join it by (no input, so no conversation prefix).

Such a piece (every model call in it failed, none recorded its input) joins the one
conversation of the same process that was waiting for a model call when it started: its
last piece started before it and asked for tools (an app's loop sends their results
next), and no other conversation of that process was waiting.  With two waiting (runs
interleaved in one process), or none, it stays a run of its own.  Joined, it is the run's
last model call: one that failed, whose request is not in the trace (the verdict says so).
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Run
    from .stitch import PieceFacts


def failed_alone(piece: Run) -> bool:
    """Whether every model call of ``piece`` failed and none recorded its input."""
    models = [s for s in piece.steps if s.kind == "model" and s.model is not None]
    return bool(models) and all(
        s.status == "ERROR" and s.model is not None and not s.model.input_messages for s in models
    )


def join_strays(
    pieces: Sequence[PieceFacts], groups: dict[int, list[int]], strays: Sequence[int]
) -> None:
    """Put each of ``strays`` (indices of failed-alone pieces, in start order) into the one
    group of ``groups`` (first piece -> its pieces, in order) waiting for it, else into a
    group of its own.  Linear in the groups, then in the strays times the groups of their
    process that wait."""
    waiting: dict[str, list[int]] = collections.defaultdict(list)  # process -> heads
    for head, members in groups.items():
        if pieces[members[-1]].asks_tools:
            waiting[pieces[head].process].append(head)
    for i in strays:
        stray = pieces[i]
        heads = waiting[stray.process]
        found = [h for h in heads if _last(pieces, groups[h]).start_ns < stray.start_ns]
        if len(found) != 1:
            groups[i] = [i]
            continue
        groups[found[0]].append(i)  # strays come in start order: it is the last piece
        heads.remove(found[0])  # the call it waited for came, and failed


def _last(pieces: Sequence[PieceFacts], members: list[int]) -> PieceFacts:
    return pieces[members[-1]]
