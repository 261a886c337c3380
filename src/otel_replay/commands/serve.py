"""What ``otel-replay serve`` does before it listens: the runs it can serve, and the engine
that serves them.

A run is left out when nothing of it can be served (no content recorded, no model
calls); a run some steps of which cannot be served is served, its reasons said.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from ..replay.adapters.forward import upstream as forwarder
from ..replay.engine import ReplayEngine
from ..replay.servable import Unservable, servable
from ..replay.server_limits import DEFAULT_LIMITS, ServerLimits
from ..runs.model import Run


def served(runs: Iterable[Run]) -> tuple[list[Run], list[Unservable]]:
    """The runs with model answers to serve, and every reason found, run by run: those
    of a run left out (:attr:`~otel_replay.replay.servable.Unservable.whole_run`) too."""
    good: list[Run] = []
    reasons: list[Unservable] = []
    for run in runs:
        found = servable(run)
        reasons += found
        if not any(reason.whole_run for reason in found):
            good.append(run)
    return good, reasons


@dataclasses.dataclass(frozen=True)
class ServeOptions:
    """How the engine serves: ``run_id`` (a prefix) pins one run; ``match``, the loosest
    matcher rung a request may match on; ``timing``, a speed factor to take as long as
    each recorded call took (None: at once); ``upstream``, where a diverging request is
    forwarded (None: answered 409); ``limits``, what one client may cost."""

    run_id: str | None = None
    match: str = "messages"
    timing: float | None = None
    upstream: str | None = None
    limits: ServerLimits = DEFAULT_LIMITS


def engine_for(
    runs: Sequence[Run], options: ServeOptions, log: Callable[[str], None]
) -> ReplayEngine:
    """The engine serving ``runs`` as ``options`` say, logging a line per request to
    ``log``; :class:`~otel_replay.replay.divergence.ReplayError` when ``run_id`` names no
    run of them."""
    limits = options.limits
    forward = None
    if options.upstream:
        forward = forwarder(options.upstream, limits.upstream_timeout, limits.max_upstream)
    return ReplayEngine(
        runs,
        run_id=options.run_id,
        match=options.match,
        timing=options.timing,
        forward=forward,
        log=log,
        max_conversations=limits.max_conversations,
    )
