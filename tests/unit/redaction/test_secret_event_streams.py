"""Secrets split across the frames of an AWS event stream never reach disk.

Bedrock streams its answers as ``application/vnd.amazon.eventstream``: binary
frames whose payload is, for InvokeModelWithResponseStream, ``{"bytes": "<base64
of the provider's event JSON>"}`` and, for ConverseStream, the event JSON
itself.  A secret split across two events' base64 is in no byte run the
scrubber sees, yet the client decoding the frames reads it whole.

A fake Bedrock on 127.0.0.1 answers in that format, one HTTP chunk per frame
(frames built by the spec with ``zlib.crc32`` and checked against botocore's
own decoder, the one the SDKs use).  The real ``anthropic.AnthropicBedrock``
client streams through ``RecordingTransport``; secrets are drawn from a public
scanner's catalogue (``tests/data/gitleaks``) and split inside the secret
across events; every byte written is searched for the secret, its base64 and
the base64 payloads that carried its parts.  Streams with no secret are kept
byte for byte.  The frame reader itself is fuzzed with corrupt frames.
"""

from __future__ import annotations

import base64
import functools
import json
import random
import struct
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from botocore.eventstream import EventStreamBuffer
from hypothesis import example, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay import attributes as A
from otel_replay import event_stream
from otel_replay.capture import http_recorder as H
from otel_replay.capture.body_text import shows_secret
from otel_replay.redaction import configure_redaction, redactor
from otel_replay.sources.reader import SpanReader
from tests.fixtures.secrets import WRITING, every_byte
from tests.unit.capture.test_http_recorder import recording
from tests.unit.redaction.test_secret_catalogue import (
    IN_ITS_LINE,
    _excused,
    _named,
    draw_secret,
    rules,
)
from tests.unit.redaction.test_secret_streams import StreamServer, split

EVENT_STREAM = "application/vnd.amazon.eventstream"
MODEL = "anthropic.claude-3-5-sonnet-20241022-v2:0"


# --- frames, by the spec ----------------------------------------------------------------


def _header(name: str, value: str) -> bytes:
    raw = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: prelude and its CRC, string headers, payload, message CRC."""
    head = b"".join(_header(k, v) for k, v in headers.items())
    prelude = struct.pack(">II", 16 + len(head) + len(payload), len(head))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + head + payload
    return message + struct.pack(">I", zlib.crc32(message))


def _event(kind: str, payload: Any) -> bytes:
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(payload).encode())


def bedrock_chunk(event: dict[str, Any]) -> tuple[bytes, str]:
    """An InvokeModelWithResponseStream ``chunk`` frame carrying ``event``, and its base64."""
    b64 = base64.b64encode(json.dumps(event).encode()).decode()
    return _event("chunk", {"bytes": b64, "p": "abcdefgh"}), b64


def anthropic_stream(pieces: list[str], tool: bool = False) -> tuple[list[bytes], list[str]]:
    """The frames of an Anthropic Messages stream on Bedrock whose text (or, with ``tool``,
    a tool's input JSON) comes in ``pieces``; and the base64 payload of each piece."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }
    if tool:
        block = {"type": "tool_use", "id": "toolu_1", "name": "login", "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    else:
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in pieces]
    events: list[dict[str, Any]] = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": block},
        *({"type": "content_block_delta", "index": 0, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]
    built = [bedrock_chunk(e) for e in events]
    return [f for f, _ in built], [b64 for _, b64 in built[2 : 2 + len(pieces)]]


def converse_stream(pieces: list[str], tool: bool = False) -> list[bytes]:
    """The frames of a ConverseStream answer whose text (or tool input) comes in ``pieces``."""
    delta = (lambda p: {"toolUse": {"input": p}}) if tool else (lambda p: {"text": p})
    start: dict[str, Any] = {"contentBlockIndex": 0}
    if tool:
        start["start"] = {"toolUse": {"toolUseId": "t1", "name": "login"}}
    return [
        _event("messageStart", {"role": "assistant", "p": "ab"}),
        *([_event("contentBlockStart", start)] if tool else []),
        *(_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": delta(p)}) for p in pieces),
        _event("contentBlockStop", {"contentBlockIndex": 0}),
        _event("messageStop", {"stopReason": "end_turn"}),
        _event("metadata", {"usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8}}),
    ]


def decoded(body: bytes) -> list[tuple[dict[str, Any], bytes]]:
    """The frames of ``body`` as botocore reads them (the oracle): headers and payload."""
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    return [(dict(m.headers), m.payload) for m in buffer]


def converse_text(body: bytes) -> str:
    """What a ConverseStream client joins: the deltas' text and tool input, via botocore."""
    out = []
    for headers, payload in decoded(body):
        if headers.get(":event-type") == "contentBlockDelta":
            delta = json.loads(payload)["delta"]
            out.append(delta.get("text") or delta.get("toolUse", {}).get("input", ""))
    return "".join(out)


def test_the_frames_built_here_are_read_by_botocore_as_sent() -> None:
    frames, _ = anthropic_stream(["Hel", "lo"])
    got = decoded(b"".join(frames))
    assert len(got) == len(frames)
    assert got[0][0][":event-type"] == "chunk"
    inner = json.loads(base64.b64decode(json.loads(got[0][1])["bytes"]))
    assert inner["type"] == "message_start"
    assert converse_text(b"".join(converse_stream(["Hel", "lo"]))) == "Hello"


# --- the fake Bedrock -------------------------------------------------------------------


@pytest.fixture(scope="module")
def bedrock() -> Iterator[tuple[StreamServer, str]]:
    """A fake Bedrock: each POST answered with ``parts`` (frames), one HTTP chunk each."""
    configure_redaction()
    fake = StreamServer()
    fake.content_type = EVENT_STREAM
    with fake.serving() as url:
        yield fake, url
    configure_redaction()


def _span(path: Path) -> dict[str, Any]:
    (span,) = SpanReader(path)
    return dict(span.attributes)


def plain_transport() -> httpx2.HTTPTransport:
    """A transport for plain HTTP to 127.0.0.1: it loads no certificates (20 ms a
    transport, one per drawn example)."""
    return httpx2.HTTPTransport(verify=False)


def record_bedrock(url: str, path: Path, tool: bool = False) -> tuple[str, dict[str, Any]]:
    """One streamed Messages call through ``AnthropicBedrock`` over a recording transport:
    the text (or tool input) the client joined, and the recorded span's attributes."""
    with recording(path):
        http = httpx2.Client(transport=otel_replay.RecordingTransport(plain_transport()))
        client = anthropic.AnthropicBedrock(
            aws_access_key="x",
            aws_secret_key="y",
            aws_region="us-east-1",
            base_url=url,
            http_client=http,
            max_retries=0,
        )
        out = []
        stream = client.messages.create(
            model=MODEL,
            max_tokens=64,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
        )
        for event in stream:
            if event.type == "content_block_delta":
                if event.delta.type == "text_delta":
                    out.append(event.delta.text)
                elif event.delta.type == "input_json_delta":
                    out.append(event.delta.partial_json)
        http.close()
    return "".join(out), _span(path)


def record_converse(url: str, path: Path) -> tuple[bytes, dict[str, Any]]:
    """One streamed POST to ConverseStream through the recording transport: the bytes the
    client read, and the recorded span's attributes."""
    with recording(path):
        http = httpx2.Client(transport=otel_replay.RecordingTransport(plain_transport()))
        with http.stream("POST", f"{url}/model/{MODEL}/converse-stream", json={}) as response:
            read = b"".join(response.iter_bytes())
        http.close()
    return read, _span(path)


# --- secrets of the catalogue -----------------------------------------------------------


def _planted() -> list[tuple[dict[str, Any], bool]]:
    """The rules of the catalogue planted here, each with whether its secret is known by
    its name (written ``NAME=value``) or by its shape alone (in prose)."""
    out = []
    for rule in rules():
        if rule["id"] in IN_ITS_LINE:
            continue
        named = _named(rule)
        if not _excused(rule["id"], "env" if named else "prose"):
            out.append((rule, named))
    return out


#: The rules planted, by id: the tests are drawn per rule when collected.
PLANTED = [rule["id"] for rule, _ in _planted()]


# Drawn when a test first asks (not when the module is collected: every test worker
# collects every module, one runs these tests).
@functools.cache
def plantings() -> list[tuple[str, str, str]]:
    """(rule id, text carrying the secret, the secret) for each rule planted: a secret
    known by its shape alone in prose, one known by its name as ``NAME=value``."""
    rng = random.Random(33)
    out = []
    for rule, named in _planted():
        secret, whole = draw_secret(rule, rng)
        text = f"{rule['id'].upper().replace('-', '_')}={secret}" if named else whole
        out.append((rule["id"], text, secret))
    return out


def _b64_forms(secret: str) -> set[bytes]:
    """The secret's base64 at each of the three alignments it can take inside a longer
    run of base64 (the whole of one alignment's groups that hold only secret bytes)."""
    raw = secret.encode()
    out = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\x00" * shift + raw)
        # Drop the groups that hold a padding byte, and the last (maybe padded) group.
        out.add(encoded[4 if shift else 0 : -4])
    return {form for form in out if len(form) >= 8}


def leaked(root: Path, secret: str, parts: list[str], payloads: list[str]) -> list[str]:
    """Which forms of ``secret`` some byte written under ``root`` holds."""
    written = b"".join(every_byte(root).values())
    forms = {
        "secret": {secret.encode()},
        "secret base64": _b64_forms(secret),
        "part base64": {f for p in parts if len(p) >= 6 for f in _b64_forms(p)},
        "event payload": {p.encode() for p in payloads},
    }
    return [name for name, fs in forms.items() if any(f in written for f in fs)]


def _pieces(text: str, secret: str, cuts: list[int]) -> tuple[str, list[str], list[str]]:
    whole = f"use {text} now"
    at = whole.index(secret)
    pieces = split(whole, at, len(secret), cuts)
    bounds = sorted({c for c in cuts if 0 < c < len(secret)})
    parts = [secret[a:b] for a, b in zip([0, *bounds], [*bounds, len(secret)], strict=True)]
    return whole, pieces, parts


def test_a_secret_split_across_bedrock_events_never_reaches_disk(
    bedrock: tuple[StreamServer, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """InvokeModelWithResponseStream through ``AnthropicBedrock``, and ConverseStream."""
    fake, url = bedrock

    @settings(WRITING, max_examples=24)
    @given(
        converse=st.booleans(),
        planting=st.sampled_from(plantings()),
        tool=st.booleans(),
        cuts=st.lists(st.integers(1, 80), min_size=1, max_size=3),
    )
    def check(converse: bool, planting: tuple[str, str, str], tool: bool, cuts: list[int]) -> None:
        rule, text, secret = planting
        carried = json.dumps({"note": text}) if tool else text
        shown = json.dumps(secret)[1:-1] if tool else secret  # as the input JSON spells it
        whole, pieces, parts = _pieces(carried, shown, cuts)
        path = tmp_path_factory.mktemp("bedrock") / "run.otlp"
        payloads: list[str] = []
        if converse:
            fake.parts = converse_stream(pieces, tool)
            read, attrs = record_converse(url, path)
            assert read == b"".join(fake.parts)
            joined = converse_text(read)
        else:
            fake.parts, payloads = anthropic_stream(pieces, tool)
            joined, attrs = record_bedrock(url, path, tool)
        assert joined == whole  # the client read the secret whole
        assert not leaked(path.parent, secret, parts, payloads), (rule, converse, pieces)
        kept = A.HTTP_RESPONSE_BODY in attrs or A.BYTES + A.HTTP_RESPONSE_BODY in attrs
        assert kept or attrs.get(H.RESPONSE_BODY_DROPPED)

    check()


def _cut_everywhere(
    fake: StreamServer, url: str, root: Path, planting: tuple[str, str, str], step: int
) -> None:
    """``planting``'s secret cut at every ``step``-th place, each a stream through the client."""
    rule, text, secret = planting
    for cut in range(1, len(secret), step):
        _, pieces, parts = _pieces(text, secret, [cut])
        fake.parts, payloads = anthropic_stream(pieces)
        path = root / str(cut) / "run.otlp"
        path.parent.mkdir()
        _, attrs = record_bedrock(url, path)
        assert not leaked(path.parent, secret, parts, payloads), (rule, cut)
        assert attrs.get(H.RESPONSE_BODY_DROPPED)


def test_a_catalogue_secret_split_at_many_places_is_never_kept(
    bedrock: tuple[StreamServer, str], tmp_path: Path
) -> None:
    """A token known by its shape, cut at every eighth place, through the real client (the
    slow tier cuts every rule's secret at four places through the client, and at every
    place through the reader alone)."""
    fake, url = bedrock
    (planting,) = (p for p in plantings() if p[0] == "anthropic-api-key")
    _cut_everywhere(fake, url, tmp_path, planting, 8)


@pytest.mark.slow
@pytest.mark.parametrize("rule", PLANTED)
def test_every_catalogue_secret_split_is_never_kept(
    bedrock: tuple[StreamServer, str], tmp_path: Path, rule: str
) -> None:
    # Four places per rule through the client (every place of every rule takes some 12
    # minutes here); every place is the reader-alone test's below.
    fake, url = bedrock
    (planting,) = (p for p in plantings() if p[0] == rule)
    _cut_everywhere(fake, url, tmp_path, planting, max(1, len(planting[2]) // 4))


def _seen_by_the_reader(plantings: list[tuple[str, str, str]], step: int) -> None:
    for rule, text, secret in plantings:
        for cut in range(1, len(secret), step):
            _, pieces, _ = _pieces(text, secret, [cut])
            for body in (b"".join(anthropic_stream(pieces)[0]), b"".join(converse_stream(pieces))):
                clean = redactor().data(body)
                assert shows_secret(body, clean, ""), (rule, cut)


def test_catalogue_secrets_split_are_seen_by_the_reader() -> None:
    """Rules' secrets cut at many places, both Bedrock framings: the body is held to show
    a secret (the reader alone, without the client: many places are cheap)."""
    _seen_by_the_reader(plantings()[::6], 5)


@pytest.mark.slow
def test_every_catalogue_secret_split_at_every_place_is_seen_by_the_reader() -> None:
    _seen_by_the_reader(plantings(), 1)


@pytest.mark.parametrize("tool", [False, True])
def test_a_bedrock_stream_with_no_secret_is_kept_byte_for_byte(
    bedrock: tuple[StreamServer, str], tmp_path: Path, tool: bool
) -> None:
    """The reading leaves out only what would show a secret: an ordinary answer, its
    words split across events, is recorded whole (both framings)."""
    fake, url = bedrock
    words = "the answer is forty two, see https://example.com/docs?page=2 for more"
    text = json.dumps({"note": words}) if tool else words
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    fake.parts, _ = anthropic_stream(pieces, tool)
    joined, attrs = record_bedrock(url, tmp_path / "a" / "run.otlp", tool)
    assert joined == text
    assert H.RESPONSE_BODY_DROPPED not in attrs
    assert b"".join(fake.parts) in b"".join(every_byte(tmp_path / "a").values())
    fake.parts = converse_stream(pieces, tool)
    _, attrs = record_converse(url, tmp_path / "b" / "run.otlp")
    assert H.RESPONSE_BODY_DROPPED not in attrs
    assert b"".join(fake.parts) in b"".join(every_byte(tmp_path / "b").values())


# --- the frame reader on corrupt frames ---------------------------------------------------


def _valid_streams() -> st.SearchStrategy[bytes]:
    pieces = st.lists(st.text(max_size=12), min_size=1, max_size=4)
    return st.one_of(
        pieces.map(lambda p: b"".join(anthropic_stream(p)[0])),
        pieces.map(lambda p: b"".join(converse_stream(p))),
        st.lists(
            st.tuples(
                st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=8), max_size=5),
                st.binary(max_size=40),
            ).map(lambda hp: frame(*hp)),
            max_size=4,
        ).map(b"".join),
    )


@st.composite
def corrupt(draw: st.DrawFn) -> bytes:
    """A valid stream with bytes flipped, cut, inserted or overwritten with big lengths."""
    data = bytearray(draw(_valid_streams()))
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["flip", "cut", "insert", "length", "refit"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif how == "cut":
            del data[at:]
        elif how == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif how == "length" and len(data) >= at + 4:
            data[at : at + 4] = struct.pack(">I", draw(st.sampled_from([0, 15, 2**31, 2**32 - 1])))
        elif how == "refit" and len(data) >= 16:
            # A prelude whose CRC holds over lengths that lie: the reader must still check.
            total = draw(st.integers(0, 2**32 - 1))
            headers = draw(st.integers(0, 2**32 - 1))
            prelude = struct.pack(">II", total, headers)
            data[0:12] = prelude + struct.pack(">I", zlib.crc32(prelude))
    return bytes(data)


def _botocore(data: bytes) -> list[tuple[dict[str, Any], bytes]] | None:
    """botocore's reading of a whole body, or None where it refuses or waits for more."""
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    out = []
    try:
        for m in buffer:
            out.append((dict(m.headers), m.payload))
    except Exception:
        return None
    return out if not buffer._data else None


@settings(max_examples=250, deadline=None)
@given(data=st.one_of(corrupt(), _valid_streams(), st.binary(max_size=200)))
# A UUID header of 4 bytes where 16 are due, which botocore reads as 4 bytes.
@example(
    data=b"\x00\x00\x00\x1a\x00\x00\x00\n\xaf\xa7\xb9T\x04\xc2\x80\xc2\x80\t0\x07\x00\x00\x87\x12rl"
)
def test_the_frame_reader_never_raises_never_hangs_and_agrees_with_botocore(data: bytes) -> None:
    started = time.perf_counter()
    refusal = ""
    try:
        ours: list[event_stream.Frame] | None = event_stream.frames(data)
    except event_stream.EventStreamError as exc:
        ours, refusal = None, str(exc)
    assert time.perf_counter() - started < 0.5
    theirs = _botocore(data)
    if ours is not None:  # what we read, the client reads the same
        assert theirs is not None
        assert [(dict(f.headers), f.payload) for f in ours] == theirs
    elif theirs is not None:  # refused only past our header bound, or a header cut short
        # botocore slices a header's value without checking its length: a UUID or a string
        # running past its headers' end reads as shorter bytes there, and is refused here.
        cut_short = refusal.startswith("a header of the message at") and "cut short" in refusal
        assert any(len(h) > event_stream.MAX_HEADERS for h, _ in theirs) or not data or cut_short
    # Whatever the bytes, the body check answers, and a body it cannot read is left out.
    clean = redactor().data(data)
    answer = shows_secret(data, clean, EVENT_STREAM)
    if ours is None and data:
        assert answer is True


def test_a_huge_header_count_or_a_frame_past_the_body_is_left_out() -> None:
    many = frame({f"h{i}": "v" for i in range(event_stream.MAX_HEADERS + 1)}, b"{}")
    assert len(decoded(many)) == 1  # botocore reads it; we are in doubt
    past = frame({":event-type": "chunk"}, b"{}")[:-1]
    bad_crc = bytearray(frame({":event-type": "chunk"}, b'{"a": "b"}'))
    bad_crc[-6] ^= 1
    for body in (many, past, bytes(bad_crc)):
        assert shows_secret(body, body, EVENT_STREAM)
        assert shows_secret(body, body, "")  # told by its bytes too (the prelude's CRC holds)
