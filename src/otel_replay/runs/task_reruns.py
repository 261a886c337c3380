"""A task its framework ran again after a model call failed, joined to the attempt before.

CrewAI runs a task again from its first request when a model call of it raises (an
answer cut partway, say).  Traced by instrumentations of the client and the tools alone,
with no span around the crew (OpenInference's CrewAI instrumentation makes none for
``akickoff``), the attempt and the rerun are two conversations that begin with the same
request, and nothing else in the trace joins them.  They are one run of the agent: run
once, its code makes both, as the trace of the same agent with a span around the crew
shows them.

The rule: a conversation whose last model call failed, and the next conversation of the
same process that begins with the same request and started after that call, are one
run.  The rerun may fail too and be run again; each is joined in turn.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .stitch import PieceFacts


def join_reruns(pieces: Sequence[PieceFacts], groups: dict[int, list[int]]) -> None:
    """Join each group of ``groups`` (first piece -> its pieces, in start order) that ends
    in a failed model call with the next group of its process that begins with the same
    request, in place.  Linear in the groups."""
    by_start: dict[tuple[str, bytes], collections.deque[int]] = collections.defaultdict(
        collections.deque
    )
    for head in sorted(groups):
        first = pieces[head].first_request
        if first is not None and pieces[head].conversation is None:  # an id says otherwise
            by_start[(pieces[head].process, first)].append(head)
    for head in sorted(groups):
        if head not in groups:
            continue  # joined to an attempt before it
        first = pieces[head].first_request if pieces[head].conversation is None else None
        members = groups[head]
        while first is not None and pieces[members[-1]].ends_failed:
            later = by_start[(pieces[head].process, first)]
            while later and (later[0] <= head or later[0] not in groups):
                later.popleft()
            if not later or pieces[later[0]].start_ns <= pieces[members[-1]].start_ns:
                break
            members.extend(groups.pop(later.popleft()))
