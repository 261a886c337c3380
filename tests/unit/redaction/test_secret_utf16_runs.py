"""UTF-16 text anywhere inside other bytes: its secrets never written.

A UTF-16 file in a multipart upload, after a binary header or long text, at an
odd offset, little- or big-endian, the secret starting the run or after a word:
sent through the real httpx client over ``RecordingTransport`` to a server on
127.0.0.1, and every byte written grepped for the secret (as text, and in UTF-16
either way).
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import otel_replay
from otel_replay.redaction import configure_redaction
from tests.fixtures.http import serving
from tests.fixtures.secrets import SECRET_SHAPES, WRITING, every_byte
from tests.unit.capture.test_http_recorder import recording

_ALNUM = string.ascii_letters + string.digits


@pytest.fixture(autouse=True)
def _default_redaction() -> Iterator[None]:
    configure_redaction()
    yield
    configure_redaction()


#: What stands before the UTF-16 text: nothing, a multipart part's head, binary, one byte.
_PREFIXES = st.one_of(
    st.just(b""),
    st.builds(
        lambda b: (
            f"--{b}\r\nContent-Disposition: form-data; name=file; "
            f'filename="notes.txt"\r\nContent-Type: text/plain\r\n\r\n'.encode()
        ),
        st.text(_ALNUM, min_size=8, max_size=24),
    ),
    st.binary(min_size=1, max_size=64),
    st.text(string.printable, min_size=1, max_size=64).map(str.encode),
    # Long text before it (past where the whole body is sampled for UTF-16).
    st.builds(
        lambda word, n: (word * n)[:n].encode(),
        st.text(string.ascii_letters + " ,.", min_size=1, max_size=12),
        st.integers(1, 6000),
    ),
)


@WRITING
@given(
    before=_PREFIXES,
    after=st.binary(max_size=32),
    codec=st.sampled_from(["utf-16-le", "utf-16-be"]),
    shape=SECRET_SHAPES,
    words=st.text(string.ascii_letters + " é", max_size=20),
    sep=st.sampled_from(["", " ", "\n"]),
)
def test_a_utf16_run_anywhere_in_a_body_never_reaches_disk(
    tmp_path_factory: pytest.TempPathFactory,
    before: bytes,
    after: bytes,
    codec: str,
    shape: tuple[str, str],
    words: str,
    sep: str,
) -> None:
    text, secret = shape
    assume(secret.encode() not in before + after)  # (drawn plain there, it is no secret)
    lead = words + sep if sep else ""  # (the secret starts the run, or a word ends before it)
    body = before + f"{lead}{text} ok".encode(codec) + after

    def answer(handler: Any) -> tuple[int, str, bytes]:
        handler.rfile.read(int(handler.headers["Content-Length"]))
        return 200, "application/json", b'{"ok": true}'

    path = tmp_path_factory.mktemp("utf16") / "run.otlp"
    with serving(answer) as url, recording(path):
        http = httpx.Client(transport=otel_replay.RecordingTransport(httpx.HTTPTransport()))
        http.post(url + "/upload", content=body, headers={"content-type": "text/plain"})
    written = b"".join(every_byte(path.parent).values())
    for spelled in (secret.encode(), secret.encode("utf-16-le"), secret.encode("utf-16-be")):
        assert spelled not in written, (codec, before[:40], text)
