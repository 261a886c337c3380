"""What one client may cost ``otel-replay serve``: the server's limits and their defaults.

Apart from the server so that the command line names the same defaults
without importing the server.
"""

from __future__ import annotations

import dataclasses
from typing import Final


@dataclasses.dataclass(frozen=True)
class ServerLimits:
    """What one client may cost the server.

    ``max_body_bytes``: a larger request body is answered 413 (not read).
    ``header_timeout``: seconds a connection may take to send a request's
    headers (a new connection, or the next request on a kept-alive one).
    ``body_timeout``: seconds between two pieces of a request body.
    ``keep_alive``: seconds an idle keep-alive connection stays open.
    ``max_connections``: connections and requests at once; past it, 503.
    ``upstream_timeout``: seconds to connect to the upstream and between two
    pieces of its answer; ``max_upstream``: forwarded calls in flight (503
    past it).  ``max_conversations``: conversations the engine keeps; past
    it the least recently used are forgotten.
    """

    max_body_bytes: int = 32 * 1024 * 1024
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keep_alive: int = 5
    max_connections: int = 1024
    upstream_timeout: float = 60.0
    max_upstream: int = 16
    max_conversations: int = 4096


DEFAULT_LIMITS: Final = ServerLimits()
