"""Forwarding for ``otel-replay serve --on-divergence live``: a request the recording
does not answer goes upstream as it came, and the answer streams back."""

from __future__ import annotations

import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping

from ...redaction import redactor
from ..engine import Answer, error_answer
from ..server_limits import DEFAULT_LIMITS

#: Request headers not passed upstream (hop-by-hop, or set again by the client library).
_DROP = frozenset(
    {"host", "content-length", "connection", "accept-encoding", "transfer-encoding", "keep-alive"}
)
#: Upstream response headers not passed back (the server frames the body itself).
_DROP_BACK = frozenset({"content-length", "connection", "transfer-encoding", "keep-alive"})


def forward_target(base_url: str, path: str) -> str:
    """The URL a request for ``path`` (with its query) goes to upstream of ``base_url``.

    ``base_url`` may end in ``/v1`` or not, and may carry a query of its own
    (Azure's ``?api-version=...``): the path goes after the base's path, and
    both queries are kept, the base's first.
    """
    base = urllib.parse.urlsplit(base_url)
    asked = urllib.parse.urlsplit(path)
    base_path, asked_path = base.path.rstrip("/"), asked.path
    if base_path.endswith("/v1") and asked_path.startswith("/v1/"):
        asked_path = asked_path[3:]
    query = "&".join(q for q in (base.query, asked.query) if q)
    return urllib.parse.urlunsplit((base.scheme, base.netloc, base_path + asked_path, query, ""))


def upstream(
    base_url: str,
    timeout: float = DEFAULT_LIMITS.upstream_timeout,
    max_in_flight: int = DEFAULT_LIMITS.max_upstream,
) -> Callable[[str, bytes, Mapping[str, str]], Answer]:
    """A forwarder for ``--on-divergence live``: the request goes to ``base_url`` as it came.

    ``base_url`` may end in ``/v1`` or not; the response streams back as it
    arrives.  ``timeout`` bounds the connection and each wait for more of
    the answer; past ``max_in_flight`` calls at once, a request gets 503.
    """
    base = redactor().text(base_url.rstrip("/"))
    slots = threading.BoundedSemaphore(max_in_flight)

    def forward(path: str, body: bytes, headers: Mapping[str, str]) -> Answer:
        target = forward_target(base_url, path)
        # Named to the client (a 502, a header) as any URL is named: its credentials hidden.
        shown = redactor().text(target)
        if not slots.acquire(blocking=False):
            return error_answer(
                503, "upstream_busy", f"{max_in_flight} calls to {base} are already in flight"
            )
        sent = {k: v for k, v in headers.items() if k.lower() not in _DROP}
        request = urllib.request.Request(target, data=body, headers=sent, method="POST")
        try:
            response = urllib.request.urlopen(request, timeout=timeout)
        except urllib.error.HTTPError as err:
            response = err
        except OSError as exc:
            slots.release()
            return error_answer(502, "upstream_error", f"upstream {shown}: {exc}")
        back = [(k.lower(), v) for k, v in response.headers.items() if k.lower() not in _DROP_BACK]
        back.append(("x-otel-replay-forwarded", shown))

        def body_chunks() -> Iterator[bytes]:
            try:
                with response:
                    while True:
                        chunk = response.read1(65536) if hasattr(response, "read1") else b""
                        if not chunk:
                            break
                        yield chunk
            except OSError:  # the upstream stalled or went away: the answer ends here
                return
            finally:
                slots.release()

        return Answer(int(response.status), back, body_chunks())

    return forward
