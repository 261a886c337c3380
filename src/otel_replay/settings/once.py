"""Saying a thing once: :class:`Once` and the package's own :func:`warn_once`.

A setting with a value that cannot be read, a span that cannot be written, a
queue that is full: each is said the first time and then kept quiet, so that
trouble is said, never flooded.  Imports nothing of the package.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import Any

logger = logging.getLogger("otel_replay")

__all__ = ["Once", "warn_once"]


class Once:
    """Keys already said: each is logged the first time only.

    ``log`` is the logger it says them with; ``most`` bounds how many keys
    are remembered (and so said) when the keys come from input, such as
    attribute names.  No lock: a traced app's threads may call it, and must
    never wait on it (nor find it held in a forked child);
    ``dict.setdefault`` decides which caller is first.
    """

    def __init__(self, log: logging.Logger = logger, most: int | None = None) -> None:
        self._said: dict[Hashable, object] = {}
        self._log = log
        self._most = most

    def first(self, key: Hashable) -> bool:
        """Whether ``key`` is new (and is now remembered)."""
        if key in self._said or (self._most is not None and len(self._said) >= self._most):
            return False
        token = object()
        return self._said.setdefault(key, token) is token

    def warn(self, key: Hashable, message: str, *args: Any) -> bool:
        """Log ``message % args`` as a warning the first time ``key`` is seen; whether it did."""
        if not self.first(key):
            return False
        self._log.warning(message, *args)
        return True


_ONCE = Once()


def warn_once(key: Hashable, message: str, *args: Any) -> bool:
    """Log a warning once per ``key`` in this process: trouble is said, never flooded."""
    return _ONCE.warn(key, message, *args)
