"""Test helper: secrets of every family the redactor knows, and a grep of every byte written.

Shared by the tests that plant secrets on a writing path (span paths, raw HTTP
bodies, converting and re-sending stored spans) and grep what comes out.
"""

from __future__ import annotations

import contextlib
import string
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import zstandard
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from _http import serving

_ALNUM = string.ascii_letters + string.digits


def _body(alphabet: str, size: int, most: int | None = None) -> st.SearchStrategy[str]:
    # Varied enough that the body is found only where the secret went: not "AAAA...",
    # which could stand in a protobuf by chance, nor a word of the code (Hypothesis
    # draws those too) that stands in every JSON line.
    return st.text(alphabet=alphabet, min_size=size, max_size=most or size + 16).filter(
        lambda b: len(set(b)) >= 6 and sum(c.isdigit() for c in b) >= 2 and not b.isdigit()
    )


#: (the secret as it appears in text, the part of it that must never be written)
SECRET_SHAPES: st.SearchStrategy[tuple[str, str]] = st.one_of(
    _body(_ALNUM, 20).map(lambda b: (f"sk-proj-{b}", b)),
    _body(_ALNUM, 40).map(lambda b: (f"sk-ant-api03-{b}", b)),
    _body(string.ascii_uppercase + string.digits, 16, 16).map(lambda b: (f"AKIA{b}", b)),
    _body(_ALNUM, 36).map(lambda b: (f"ghp_{b}", b)),
    _body(_ALNUM, 24).map(lambda b: (f"xoxb-{b}", b)),
    _body(_ALNUM + "_-", 35, 35).map(lambda b: (f"AIza{b}", b)),
    _body(_ALNUM, 32).map(lambda b: (f"hf_{b}", b)),
    _body(_ALNUM, 24).map(lambda b: (f"sk_live_{b}", b)),
    _body(_ALNUM, 16).map(lambda b: (f"eyJhbGciOiJIUzI1NiJ9.eyJ{b}.c2lnbmF0dXJl", b)),
    _body(_ALNUM, 20).map(lambda b: (f"Bearer {b}", b)),
    _body(_ALNUM, 20).map(lambda b: (f"https://api.example.com/v1/models?api_key={b}&q=1", b)),
    _body(_ALNUM, 20).map(lambda b: (f"https://example.com/download?sig={b}", b)),
    _body(_ALNUM, 20).map(lambda b: (f"postgres://app:{b}@db.internal:5432/app", b)),
    _body(_ALNUM, 20).map(lambda b: (f"password={b}", b)),
)


#: Hypothesis settings of the tests that write real files for each example: a failure
#: is shown with the secrets drawn, not shrunk (each example costs real I/O).
WRITING = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)


def decompressed(data: bytes) -> bytes:
    """``data`` and the decompressed form of every zstd frame and gzip member found in it."""
    out = [data]
    for magic in (b"\x28\xb5\x2f\xfd", b"\x1f\x8b"):
        at = data.find(magic)
        while at >= 0:
            with contextlib.suppress(Exception):
                if magic == b"\x1f\x8b":
                    out.append(zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[at:]))
                else:
                    out.append(zstandard.ZstdDecompressor().decompressobj().decompress(data[at:]))
            at = data.find(magic, at + 1)
    return b"".join(out)


def every_byte(root: Path) -> dict[str, bytes]:
    """Each file under ``root`` (blobs, indexes, caches too), compressed bytes decompressed."""
    return {
        str(p.relative_to(root)): decompressed(p.read_bytes())
        for p in root.rglob("*")
        if p.is_file()
    }


@contextlib.contextmanager
def collector() -> Iterator[tuple[str, list[bytes]]]:
    """An OTLP/HTTP collector on 127.0.0.1: its traces URL, and each request body it got."""
    received: list[bytes] = []

    def answer(handler: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        received.append(handler.rfile.read(int(handler.headers["Content-Length"])))
        return 200, "application/x-protobuf", b""

    with serving(answer) as url:
        yield url + "/v1/traces", received
