"""What the tool stubs and the pinned model tell the replay they serve: one small interface.

A :class:`~otel_replay.replay.session.ReplaySession` is one: it moves the
frozen clock to each step, keeps the report, and remembers the first
divergence.  The base class does nothing, for a pinned model or stubs on
their own (the replay server's conversations).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..runs.model import Step
    from .divergence import ReplayDivergence
    from .recorder import ReplayLog
    from .selective import LivePlan


class ReplayObserver:
    """Told of each recorded step as it is replayed; holds the log and the live plan."""

    #: Where each call is logged, for the replayed run's trace (None: not logged).
    log: ReplayLog | None = None
    #: What runs live (``model="live"``, ``live_from``, overrides); None: nothing.
    plan: LivePlan | None = None

    def step_started(self, step: Step) -> None:
        """``step`` is about to be answered."""

    def step_done(self, step: Step, how: str) -> None:
        """``step`` was answered: ``how`` is a tool policy or ``pinned:<rung>``."""

    def diverged(self, err: ReplayDivergence) -> None:
        """A call did not match the recording (``err`` is raised next)."""


#: The observer of stubs and models that replay for no session.
NO_OBSERVER = ReplayObserver()


class Observed:
    """What replays for an observer (the tool stubs, the pinned model): its log and plan."""

    observer: ReplayObserver = NO_OBSERVER

    @property
    def plan(self) -> LivePlan | None:
        """What runs live (``model="live"``, ``live_from``, overrides); see :mod:`.selective`."""
        return self.observer.plan

    @property
    def _log(self) -> ReplayLog | None:
        return self.observer.log
