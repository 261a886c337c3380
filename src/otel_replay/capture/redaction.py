"""Secrets never reach an attribute: scrub keys and patterns at capture time.

A value is hidden when its key looks like a credential (authorization,
api-key, cookie, token, secret, password...) or when a configured pattern
matches inside a string.  The hidden places are returned as paths so the span
can record them (``otel_replay.redacted``) and replay knows a value was hidden
rather than empty.

Configure with :func:`configure_redaction`, the ``ReplaySpanProcessor``
arguments, or ``OTEL_REPLAY_REDACT_KEYS`` / ``OTEL_REPLAY_REDACT_PATTERNS``
(comma-separated regular expressions).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Any

from .. import attributes as A

DEFAULT_KEY_PATTERN = (
    r"(^|[^a-z])(authorization|proxy[-_.]?authorization|api[-_.]?key|x[-_.]?api[-_.]?key"
    r"|cookie|set[-_.]?cookie|secret|client[-_.]?secret|password|passwd|private[-_.]?key"
    r"|bearer|credentials?)([^a-z]|$)"
    # "token" alone is a secret (access_token, x-auth-token) but token_count is not.
    r"|(^|[^a-z])((access|refresh|id|auth|session|api|bearer)[-_.]?)?token(?![a-z_])"
)
#: Credential shapes worth hiding wherever they appear in a string.
DEFAULT_VALUE_PATTERNS = (
    r"\bBearer\s+[A-Za-z0-9._~+/=-]{8,}",
    r"\bsk-[A-Za-z0-9_-]{16,}",
    r"\bsk-ant-[A-Za-z0-9_-]{16,}",
)

Hook = Callable[[str, Any], Any]


class Redactor:
    """Scrubs values by key and by pattern; returns the paths it hid."""

    def __init__(
        self,
        keys: Iterable[str] = (),
        patterns: Iterable[str] = (),
        hook: Hook | None = None,
    ) -> None:
        key_res = [DEFAULT_KEY_PATTERN, *keys]
        self._key_re = re.compile("|".join(f"(?:{k})" for k in key_res), re.IGNORECASE)
        pats = [*DEFAULT_VALUE_PATTERNS, *patterns]
        self._value_re = re.compile("|".join(f"(?:{p})" for p in pats))
        self._hook = hook
        # Keys repeat endlessly (attribute names, kwarg names): remember the verdict.
        self._keys: dict[str, bool] = {}

    def is_secret_key(self, key: str) -> bool:
        verdict = self._keys.get(key)
        if verdict is None:
            if len(self._keys) > 8192:
                self._keys.clear()
            verdict = self._keys[key] = bool(self._key_re.search(key))
        return verdict

    def scrub(self, value: Any, path: str, hidden: list[str]) -> Any:
        """``value`` with secrets replaced; appends each hidden path to ``hidden``."""
        return self._scrub(value, [path], hidden)

    def _scrub(self, value: Any, path: list[str], hidden: list[str]) -> Any:
        # The path is a stack of parts joined only when something is hidden:
        # most values hide nothing, and building paths for them all is waste.
        if self._hook is not None:
            hooked = self._hook("".join(path), value)
            if hooked is not value:
                hidden.append("".join(path))
                return hooked
        t = type(value)
        if t is str:
            if self._value_re.search(value) is None:
                return value
            hidden.append("".join(path))
            return self._value_re.sub(A.REDACTED_VALUE, value)
        if t is dict:
            out: dict[Any, Any] | None = None
            for k, v in value.items():
                tv = type(v)
                if type(k) is str and v is not None and self.is_secret_key(k):
                    new: Any = A.REDACTED_VALUE
                    hidden.append("".join(path) + "." + k)
                elif self._hook is None and (tv is int or tv is float or tv is bool or v is None):
                    continue
                else:
                    path.append(f".{k}")
                    new = self._scrub(v, path, hidden)
                    path.pop()
                if new is not v:
                    if out is None:
                        out = dict(value)
                    out[k] = new
            return value if out is None else out
        if t is list or t is tuple:
            changed: list[Any] | None = None
            for i, v in enumerate(value):
                path.append(f"[{i}]")
                new = self._scrub(v, path, hidden)
                path.pop()
                if new is not v:
                    if changed is None:
                        changed = list(value)
                    changed[i] = new
            return value if changed is None else t(changed)
        return value


def _env_list(name: str) -> list[str]:
    raw = os.environ.get(name, "")
    return [p.strip() for p in raw.split(",") if p.strip()]


_active = Redactor(_env_list("OTEL_REPLAY_REDACT_KEYS"), _env_list("OTEL_REPLAY_REDACT_PATTERNS"))


def configure_redaction(
    keys: Iterable[str] = (), patterns: Iterable[str] = (), hook: Hook | None = None
) -> Redactor:
    """Add key patterns, value patterns, or a hook ``(path, value) -> value``.

    The hook returns the value unchanged (the same object) to keep it, or a
    replacement to hide it.  Settings from the environment are kept.
    """
    global _active
    _active = Redactor(
        [*_env_list("OTEL_REPLAY_REDACT_KEYS"), *keys],
        [*_env_list("OTEL_REPLAY_REDACT_PATTERNS"), *patterns],
        hook,
    )
    return _active


def redactor() -> Redactor:
    return _active
