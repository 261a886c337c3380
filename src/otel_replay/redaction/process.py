"""The process's redactor: the one every capture path, exporter and replay shares."""

from __future__ import annotations

from collections.abc import Iterable

from .. import settings
from .engine import Hook, Redactor


def redactor_from_settings(
    keys: Iterable[str] = (),
    patterns: Iterable[str] = (),
    hook: Hook | None = None,
    personal_data: bool | None = None,
) -> Redactor:
    """A new :class:`Redactor`: the ``OTEL_REPLAY_REDACT_*`` settings plus these.

    ``keys`` and ``patterns`` are added to those of the environment; ``personal_data``
    None takes ``OTEL_REPLAY_REDACT_PERSONAL_DATA``.  Nothing is installed: pass it
    where it is to be used (``RedactionProcessor(redactor=...)``), or make it the
    process's with :func:`install_redactor`.
    """
    env = settings.current()
    return Redactor(
        [*env.redact_keys, *keys],
        [*env.redact_patterns, *patterns],
        hook,
        personal_data=env.redact_personal_data if personal_data is None else personal_data,
    )


# Made on first use: compiling the patterns costs more than importing the OTel SDK.
_active: Redactor | None = None


def configure_redaction(
    keys: Iterable[str] = (),
    patterns: Iterable[str] = (),
    hook: Hook | None = None,
    *,
    personal_data: bool | None = None,
) -> Redactor:
    """Add key patterns, value patterns, a hook ``(path, value) -> value``, personal data.

    ``keys`` and ``patterns`` are regular expressions added to the defaults
    (:mod:`otel_replay.redaction.keys`, :mod:`otel_replay.redaction.patterns`); a
    value pattern with a group named ``v`` hides only that group.  The hook
    returns the value unchanged (the same object) to keep it, or a replacement
    to hide it.  ``personal_data``
    also hides e-mail addresses and phone numbers.  Settings from the
    environment are kept.
    """
    made = redactor_from_settings(keys, patterns, hook, personal_data)
    install_redactor(made)
    return made


def install_redactor(r: Redactor | None) -> Redactor | None:
    """Make ``r`` the process's redactor; return the one it replaces.

    One redactor is shared on purpose: the capture helpers hide secrets before
    a value becomes an attribute, the exporters hide them in what they write or
    resend, and replay hides them in what the live app sends before comparing it
    with the recording, so all must hide the same.  ``None`` goes back to the one
    made from the environment on next use.  Reversible: installing the returned
    value puts back what was in force (None: nothing had been made yet).
    """
    global _active
    previous, _active = _active, r
    return previous


def redactor() -> Redactor:
    """The redactor every capture path and exporter uses."""
    global _active
    active = _active
    if active is None:
        active = _active = redactor_from_settings()
    return active
