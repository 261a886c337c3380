"""The replay's options: one typed object for ``replay()``, ``ReplaySession``, the pytest
marker and ``otel-replay replay``.

Each mode is a ``Literal`` type, and its allowed values are read off that type
where a value comes from outside Python's type checking (a marker's keyword,
a command-line choice, a mapping of tool policies), so the choices are
written once.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, get_args

from ..trusted_types import TYPE_TRUSTS, TypeTrust

#: What a tool call does in a replay: answered from the recording, run for real, refused.
ToolPolicy = Literal["stub", "live", "error"]
#: How closely a model request must match the recorded one (loosest accepted rung).
MatchRung = Literal["exact", "messages", "last_message", "any"]
#: ``pinned``: the recording answers; ``live``: your model is asked too, for the drift;
#: ``candidate``: your model answers every request in the recording's place.
ModelMode = Literal["pinned", "live", "candidate"]
#: How a stub answers a call whose result the trace holds only as the text the model was
#: sent (a tool step derived from messages): refused when that text cannot say what the
#: tool returned, the text itself, or the value the text spells as JSON.
FromMessages = Literal["refuse", "text", "json"]

TOOL_POLICIES: tuple[str, ...] = get_args(ToolPolicy)
MATCH_RUNGS: tuple[str, ...] = get_args(MatchRung)
MODEL_MODES: tuple[str, ...] = get_args(ModelMode)
FROM_MESSAGES: tuple[str, ...] = get_args(FromMessages)


def policy_of(tools: str | Mapping[str, str], name: str) -> str:
    """The policy ``tools`` gives tool ``name``: its own, else ``"*"``'s, else ``"stub"``."""
    if isinstance(tools, Mapping):
        return tools.get(name, tools.get("*", "stub"))
    return tools


def _one_of(name: str, value: object, allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}")


@dataclasses.dataclass(frozen=True)
class ReplayOptions:
    """How a recorded run is replayed.

    ``tools``: a policy for every tool, or a mapping from tool name to policy
    (``"*"`` for the rest).  ``model_match``: the loosest rung on which a
    model request still counts as the recorded one.  ``freeze_clock``: the
    clock stands at each recorded step's start.  ``allow_network`` /
    ``allow_hosts``: outbound connections other than loopback (refused by
    default).  ``require_complete``: a run that ends before replaying every
    recorded step diverges.  ``record_to``: a trace file the replayed run is
    appended to when the session ends.  ``model`` / ``live`` / ``live_from`` /
    ``override``: selective replay (see :mod:`otel_replay.replay.selective`).
    ``live_tools``: tools whose calls the recording cannot answer run live
    (the real function) instead of diverging.
    ``trusted_types`` / ``type_trust``: the classes recorded objects may be
    rebuilt with (see :mod:`otel_replay.trusted_types`).
    ``results_from_messages``: how a stub answers a tool call whose result
    the trace holds only as the text the model was sent (a client-only
    instrumentation records no tool span): ``"refuse"`` (default) unless
    the text can only be one value, ``"text"`` (the agent sends its tool's
    text as is), ``"json"`` (it sends ``json.dumps(result)``); or a mapping
    from tool name to one of those (``"*"`` for the rest).
    """

    tools: ToolPolicy | Mapping[str, ToolPolicy] = "stub"
    model_match: MatchRung = "messages"
    freeze_clock: bool = True
    allow_network: bool = False
    allow_hosts: tuple[str, ...] = ()
    require_complete: bool = True
    record_to: str | os.PathLike[str] | None = None
    model: ModelMode = "pinned"
    live: Callable[..., Any] | None = None
    live_from: int | None = None
    override: Mapping[int, Any] | None = None
    trusted_types: tuple[type, ...] = ()
    type_trust: TypeTrust = "registered"
    results_from_messages: FromMessages | Mapping[str, FromMessages] = "refuse"
    live_tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Values from outside the type checker (a marker, a config) are checked here.
        policies = self.tools.values() if isinstance(self.tools, Mapping) else [self.tools]
        for policy in policies:
            _one_of("a tool policy", policy, TOOL_POLICIES)
        sent = self.results_from_messages
        for way in sent.values() if isinstance(sent, Mapping) else [sent]:
            _one_of("results_from_messages", way, FROM_MESSAGES)
        _one_of("model_match", self.model_match, MATCH_RUNGS)
        _one_of("model", self.model, MODEL_MODES)
        _one_of("type_trust", self.type_trust, TYPE_TRUSTS)
        if self.model != "pinned" and self.live is None:
            raise ValueError(f"model={self.model!r} needs live=: your model callable or client")
        # Sequences given as lists stay hashable and unshared.
        object.__setattr__(self, "allow_hosts", tuple(self.allow_hosts))
        object.__setattr__(self, "trusted_types", tuple(self.trusted_types))
        object.__setattr__(self, "live_tools", tuple(self.live_tools))

    def tool_policy(self, name: str) -> ToolPolicy:
        """The policy of tool ``name``: its own, else ``"*"``'s, else ``"stub"``."""
        return typing.cast(ToolPolicy, policy_of(self.tools, name))

    @classmethod
    def of(cls, options: ReplayOptions | None = None, **changes: Any) -> ReplayOptions:
        """``options`` (the defaults when None) with ``changes``; an unknown name raises
        ``TypeError`` listing the known ones."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(
                f"unknown replay option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return dataclasses.replace(options or cls(), **changes)
