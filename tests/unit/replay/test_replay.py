"""Replay: stubs return the recorded values, the model is pinned, the first divergence is named."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import decimal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from tests.fixtures.recording import recording

#: What the "world" answers; tests change it between recording and replay.
WORLD: dict[str, Any] = {}


@otel_replay.register_type
@dataclasses.dataclass
class Shipment:
    order_id: str
    eta: dt.date
    legs: tuple[str, ...]


class OrderGone(LookupError):
    pass


@otel_replay.tool
def fetch(kind: str) -> Any:
    if WORLD.get("fail") == kind:
        raise OrderGone(f"{kind} is gone", 410)
    return WORLD[kind]


@otel_replay.tool
def clock_probe() -> dict[str, float]:
    return {"time": time.time(), "now": dt.datetime.now(dt.timezone.utc).timestamp()}


def fresh_world() -> None:
    WORLD.clear()
    WORLD.update(
        raw=b"\x00\xff\xfe binary \x80",
        big="0123456789abcdef" * (5 * 1024 * 1024 // 16),
        text="naïve café — 東京 🚚",
        nested={"orders": [{"id": 1, "items": [{"sku": "W", "qty": 2}]}], "next": None},
        shipment=Shipment("4421", dt.date(2025, 3, 14), ("DE", "FR")),
    )


def stale_world() -> None:
    """Everything changed since the recording: live calls would see this."""
    WORLD.clear()
    WORLD.update(raw=b"new", big="small", text="changed", nested={}, shipment=None, fail=None)


KINDS = ["raw", "big", "text", "nested", "shipment"]


def record_run(path: Path, kinds: list[str] = KINDS, fail: str | None = None) -> dict[str, Any]:
    fresh_world()
    if fail:
        WORLD["fail"] = fail
    out: dict[str, Any] = {}
    with recording(path):
        with otel_replay.agent_run("fetcher", input="go") as run:
            for kind in kinds:
                try:
                    out[kind] = fetch(kind)
                except OrderGone as exc:
                    out[kind] = exc
            run.record("done")
    return out


def test_stubs_return_recorded_values_exactly(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    original = record_run(path)
    stale_world()
    with otel_replay.replay(path) as session:
        replayed = {kind: fetch(kind) for kind in KINDS}
    for kind in KINDS:
        assert replayed[kind] == original[kind], kind
        assert type(replayed[kind]) is type(original[kind]), kind
    assert replayed["raw"] == b"\x00\xff\xfe binary \x80"
    assert len(replayed["big"]) == 5 * 1024 * 1024
    report = session.report()
    assert report.matched and len(report.replayed) == len(KINDS)


@dataclasses.dataclass
class Parcel:  # not registered
    parcel_id: str
    weight: decimal.Decimal


@otel_replay.tool
def parcel(parcel_id: str) -> Parcel:
    return Parcel(parcel_id, decimal.Decimal("1.25"))


@otel_replay.tool(name="parcel")
def parcel_untyped(parcel_id: str) -> Any:
    return Parcel(parcel_id, decimal.Decimal("9.99"))


def record_parcel(path: Path) -> None:
    with recording(path):
        with otel_replay.agent_run("parcels", input="go") as run:
            run.record(repr(parcel("P-1")))


def test_a_tool_s_return_annotation_trusts_its_class(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    record_parcel(path)
    with otel_replay.replay(path) as session:
        got = parcel("P-1")
    assert got == Parcel("P-1", decimal.Decimal("1.25")) and type(got) is Parcel
    assert session.report().notes == []


def test_an_untrusted_recorded_class_comes_back_as_plain_json_and_the_report_says_so(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.otlp"
    record_parcel(path)
    with otel_replay.replay(path) as session:
        got = parcel_untyped("P-1")  # same tool name, no annotation to trust the class by
    assert got == {"parcel_id": "P-1", "weight": "1.25"}
    (note,) = session.report().notes
    assert "test_replay:Parcel (dataclass) handed back as plain JSON" in note
    assert "register_type" in note
    with otel_replay.replay(path, trusted_types=[Parcel]):
        assert parcel_untyped("P-1") == Parcel("P-1", decimal.Decimal("1.25"))
    with otel_replay.replay(path, type_trust="imported"):  # this module is imported
        assert parcel_untyped("P-1") == Parcel("P-1", decimal.Decimal("1.25"))


def test_big_payload_lives_in_the_blob_store(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    record_run(path, ["big"])
    assert path.stat().st_size < 1024 * 1024  # the 5 MB went beside the file
    blobs = list((tmp_path / "run.otlp.blobs").iterdir())
    assert len(blobs) == 1 and blobs[0].stat().st_size == 5 * 1024 * 1024


def test_recorded_exception_is_reraised_with_same_type_and_args(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    original = record_run(path, ["text", "raw"], fail="raw")
    stale_world()
    with otel_replay.replay(path):
        assert fetch("text") == original["text"]
        with pytest.raises(OrderGone) as info:
            fetch("raw")
    assert info.value.args == ("raw is gone", 410)
    assert str(info.value) == str(original["raw"])


def test_changed_arguments_diverge_at_the_right_step(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    record_run(path, ["text", "nested"])
    run = otel_replay.load(path)[0]
    nested_step = next(
        s for s in run.tool_steps() if s.tool and s.tool.arguments == {"kind": "nested"}
    )
    with pytest.raises(otel_replay.ReplayDivergence) as info:
        with otel_replay.replay(run):
            fetch("text")
            fetch("shipment")  # the recording has "nested" here
    d = info.value
    assert (d.kind, d.name, d.index, d.span_id) == (
        "tool",
        "fetch",
        nested_step.index,
        nested_step.span_id,
    )
    assert '"nested"' in d.diff and '"shipment"' in d.diff
    assert d.candidates and d.candidates[0].step is nested_step
    assert "arguments differ" in str(d) and nested_step.label() in str(d)


def test_call_ids_match_before_arguments(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    fresh_world()
    with recording(path), otel_replay.agent_run("a"):
        for i, kind in enumerate(["text", "text"]):
            WORLD["text"] = f"answer {i}"
            with otel_replay.tool_call_id(f"call_{i}"):
                fetch(kind)
    stale_world()
    with otel_replay.replay(path):
        with otel_replay.tool_call_id("call_1"):
            assert fetch("text") == "answer 1"
        with otel_replay.tool_call_id("call_0"):
            assert fetch("text") == "answer 0"


def test_same_calls_without_ids_replay_in_recorded_order(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    fresh_world()
    with recording(path), otel_replay.agent_run("a"):
        for i in range(3):
            WORLD["text"] = f"poll {i}"
            fetch("text")
    stale_world()
    with otel_replay.replay(path):
        assert [fetch("text") for _ in range(3)] == ["poll 0", "poll 1", "poll 2"]


def test_tool_policies(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    record_run(path, ["text", "raw"])
    stale_world()
    with otel_replay.replay(path, tools={"text": "stub", "fetch": "live"}):
        assert fetch("text") == "changed"  # live: the real function ran
        assert fetch("raw") == b"new"
    with pytest.raises(otel_replay.ReplayError, match="policy 'error'"):
        with otel_replay.replay(path, tools="error"):
            fetch("text")


def test_options_are_one_typed_object_checked_where_they_come_in(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    record_run(path, ["text"])
    stale_world()
    options = otel_replay.ReplayOptions(tools={"fetch": "live"}, freeze_clock=False)
    with otel_replay.replay(path, options=options) as session:
        assert fetch("text") == "changed"
    assert session.options == options
    # Keywords go on top of the object; the object is not changed.
    with otel_replay.replay(path, options=options, tools="stub") as session:
        assert fetch("text") == "naïve café — 東京 🚚"
    assert session.options.tools == "stub" and options.tools == {"fetch": "live"}
    with pytest.raises(TypeError, match=r"unknown replay option.*tool_policy"):
        otel_replay.replay(path, tool_policy="stub")
    with pytest.raises(ValueError, match="model_match must be one of 'exact'"):
        otel_replay.replay(path, model_match="fuzzy")
    with pytest.raises(ValueError, match="a tool policy must be one of"):
        otel_replay.ReplayOptions(tools={"fetch": "sometimes"})  # type: ignore[dict-item]


def test_clock_is_frozen_at_each_recorded_step(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    with recording(path), otel_replay.agent_run("a"):
        recorded = clock_probe()
        time.sleep(0.05)
        second = clock_probe()
    run = otel_replay.load(path)[0]
    starts = [s.start_ns / 1e9 for s in run.tool_steps()]
    time.sleep(0.2)
    with otel_replay.replay(run, tools="live"):
        live1 = clock_probe()
        assert time.time() == pytest.approx(run.tool_steps()[0].end_ns / 1e9, abs=1e-6)
        live2 = clock_probe()
    assert live1["time"] == pytest.approx(starts[0], abs=1e-6)
    assert live1["now"] == pytest.approx(starts[0], abs=1e-6)
    assert live2["time"] == pytest.approx(starts[1], abs=1e-6)
    # The recorded body ran just after its span started; replay shows that start.
    assert -1e-3 <= recorded["time"] - live1["time"] < 1.0
    assert -1e-3 <= second["time"] - live2["time"] < 1.0
    assert time.time() > starts[1] + 0.2  # the clock runs again after the session


def test_outbound_network_refused_loopback_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.otlp"
    record_run(path, ["text"])
    attempted: list[Any] = []
    real_connect = socket.socket.connect

    def fake_connect(sock: socket.socket, address: Any) -> None:
        # Stand-in for the kernel: no packet ever leaves this test for a remote host.
        if sock.family == socket.AF_INET and not str(address[0]).startswith("127."):
            attempted.append(address)
            raise AssertionError("the guard let a remote connection through")
        real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", fake_connect)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    acceptor = threading.Thread(target=lambda: server.accept()[0].close(), daemon=True)
    acceptor.start()
    with otel_replay.replay(path) as session:
        fetch("text")
        with pytest.raises(otel_replay.NetworkBlocked, match=r"203\.0\.113\.9:443"):
            with socket.socket() as remote:
                remote.connect(("203.0.113.9", 443))
        with socket.socket() as ok:
            ok.connect(server.getsockname())  # loopback is fine
    acceptor.join(5)
    server.close()
    assert attempted == []
    assert "203.0.113.9:443" in " ".join(session.report().notes)
    assert socket.socket.connect is fake_connect  # the guard is gone


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this machine")
def test_loopback_through_a_dual_stack_socket_is_allowed(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    record_run(path, ["text"])
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    acceptor = threading.Thread(target=lambda: server.accept()[0].close(), daemon=True)
    acceptor.start()
    port = server.getsockname()[1]
    with otel_replay.replay(path):
        fetch("text")
        with socket.socket(socket.AF_INET6) as dual:
            dual.connect(("::ffff:127.0.0.1", port))  # IPv4 loopback, mapped into IPv6
        with pytest.raises(otel_replay.NetworkBlocked):
            with socket.socket(socket.AF_INET6) as remote:
                remote.connect(("::ffff:203.0.113.9", 443))
    acceptor.join(5)
    server.close()


def test_run_that_ends_early_diverges_at_first_unreplayed_step(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    record_run(path, ["text", "nested"])
    with pytest.raises(otel_replay.ReplayDivergence, match="ended early") as info:
        with otel_replay.replay(path):
            fetch("text")
    assert info.value.name == "fetch" and info.value.step is not None
    with otel_replay.replay(path, require_complete=False) as session:
        fetch("text")
    assert [s.name for s in session.report().not_reached] == ["execute_tool fetch"]


def test_divergence_swallowed_by_agent_code_is_raised_at_exit(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    record_run(path, ["text"])
    with pytest.raises(otel_replay.ReplayDivergence, match="not recorded"):
        with otel_replay.replay(path):
            with contextlib.suppress(Exception):  # an agent that turns tool errors into messages
                fetch("raw")
            fetch("text")


def test_attribute_length_limit_never_gives_a_silently_wrong_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "100")
    path = tmp_path / "run.otlp"
    original = record_run(path, ["text", "nested"])
    with otel_replay.replay(path):  # capture saw the limit and kept exact bytes
        assert fetch("text") == original["text"] and fetch("nested") == original["nested"]

    # A limit capture could not see (e.g. applied further down the pipeline).
    monkeypatch.setattr("otel_replay.capture.spans.length_limit", lambda span: None)
    path2 = tmp_path / "truncated.otlp"
    WORLD["nested"] = {"long": "x" * 500}
    with recording(path2), otel_replay.agent_run("a"):
        fetch("nested")
    run = otel_replay.load(path2)[0]
    assert not run.replayable and any(
        "not byte-exact" in p or "digest" in p for p in run.kit.problems
    )
    with pytest.raises(otel_replay.ReplayError, match="cannot be replayed"):
        with otel_replay.replay(run):
            fetch("nested")


def test_inspect_only_run_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "NO_CONTENT")
    path = tmp_path / "run.otlp"
    record_run(path, ["text"])
    session, entered = otel_replay.replay(path), []
    with pytest.raises(otel_replay.ReplayRefused, match="inspect-only") as refused, session:
        entered.append(True)
    assert not entered and refused.value.before
    assert session.report().verdict == "refused"


# --- the pinned model -------------------------------------------------------------


def chat_agent(model: Any, question: str) -> str:
    with otel_replay.agent_run("chat", input=question):
        return _chat_loop(model, question)


def _chat_loop(model: Any, question: str) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": question}]}
    ]
    while True:
        with otel_replay.model_call(
            provider="test", model="m-1", messages=messages, system="sys"
        ) as call:
            reply = model.respond(messages, system="sys")
            call.record(reply)
        messages.append(reply)
        calls = [p for p in reply["parts"] if p["type"] == "tool_call"]
        if not calls:
            return str(reply["parts"][0]["content"])
        for c in calls:
            with otel_replay.tool_call_id(c["id"]):
                result = fetch(**c["arguments"])
            messages.append(
                {
                    "role": "tool",
                    "parts": [{"type": "tool_call_response", "id": c["id"], "response": result}],
                }
            )


class ScriptModel:
    def respond(self, messages: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
        if messages[-1]["role"] == "user":
            return {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": "c1",
                        "name": "fetch",
                        "arguments": {"kind": "text"},
                    }
                ],
            }
        return {
            "role": "assistant",
            "parts": [{"type": "text", "content": f"got {messages[-1]['parts'][0]['response']}"}],
        }


def test_pinned_model_replays_the_conversation(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    fresh_world()
    with recording(path):
        answer = chat_agent(ScriptModel(), "hello")
    stale_world()
    with otel_replay.replay(path) as session:
        replayed = chat_agent(session.model, "hello")
        assert session.check_output(replayed)
    assert replayed == answer == "got naïve café — 東京 🚚"
    report = session.report()
    assert (
        report.matched
        and [h for _, k, h in report.replayed if k == "model"] == ["pinned:exact"] * 2
    )


def test_pinned_model_diverges_on_a_different_prompt(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    fresh_world()
    with recording(path):
        chat_agent(ScriptModel(), "hello")
    run = otel_replay.load(path)[0]
    first_model = run.model_steps()[0]
    with pytest.raises(otel_replay.ReplayDivergence) as info:
        with otel_replay.replay(run) as session:
            chat_agent(session.model, "HELLO?")
    assert info.value.kind == "model" and info.value.index == first_model.index
    assert "message 1 (user) differs" in str(info.value)
    assert "-" in info.value.diff and "HELLO?" in info.value.diff


def test_model_asked_more_often_than_recorded_diverges(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    fresh_world()
    with recording(path):
        chat_agent(ScriptModel(), "hello")
    with pytest.raises(otel_replay.ReplayDivergence, match="model call 3 was not recorded"):
        with otel_replay.replay(path, require_complete=False) as session:
            chat_agent(session.model, "hello")
            session.model.respond([{"role": "user", "content": "again"}])


def test_fingerprint_reaches_the_loaded_run(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    with recording(path, flags={"beta_lookup": True}, seed=3):
        with otel_replay.agent_run("a"):
            pass
    run = otel_replay.load(path)[0]
    assert run.fingerprint["seed"] == 3
    assert '"beta_lookup": true' in run.fingerprint["flags"]
    assert any(p.startswith("otel-replay==") for p in run.fingerprint["packages"])


def test_replay_says_when_a_result_was_redacted(tmp_path: Path) -> None:
    @otel_replay.tool
    def get_token(service: str) -> str:
        return "use Bearer abcdefghijklmnopqrstuvwxyz"

    path = tmp_path / "run.otlp"
    with recording(path), otel_replay.agent_run("a"):
        get_token("billing")
    with otel_replay.replay(path) as session:
        assert get_token("billing") == "use Bearer [REDACTED]"
    assert any("redacted" in n for n in session.report().notes)


@otel_replay.tool
async def fetch_async(kind: str) -> Any:
    await asyncio.sleep(0)
    return WORLD[kind]


def test_async_tools_replay_from_stubs(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    fresh_world()

    async def agent() -> list[Any]:
        with otel_replay.agent_run("a"):
            return list(await asyncio.gather(fetch_async("raw"), fetch_async("shipment")))

    with recording(path):
        original = asyncio.run(agent())
    stale_world()
    with otel_replay.replay(path):
        replayed = asyncio.run(agent())
    assert replayed == original and isinstance(replayed[1], Shipment)


def test_changed_tool_schemas_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    tools = [{"type": "function", "name": "fetch", "parameters": {"type": "object"}}]
    with recording(path), otel_replay.agent_run("a"):
        with otel_replay.model_call(
            provider="p", model="m", messages=[{"role": "user", "content": "hi"}], tools=tools
        ) as call:
            call.record("hello")
    with otel_replay.replay(path) as session:
        session.model.respond([{"role": "user", "content": "hi"}], tools=tools)
    assert not any("tool definitions" in n for n in session.report().notes)
    changed = [
        {
            "type": "function",
            "function": {"name": "fetch", "parameters": {"type": "object", "required": ["kind"]}},
        }
    ]
    with otel_replay.replay(path) as session:
        session.model.respond([{"role": "user", "content": "hi"}], tools=changed)
    assert any("tool definitions differ" in n for n in session.report().notes)


async def _asyncio_datagrams() -> list[Exception]:
    """asyncio's datagram endpoints: connected to a remote peer, or sending to one."""
    loop = asyncio.get_running_loop()
    with pytest.raises(otel_replay.NetworkBlocked):
        await loop.create_datagram_endpoint(
            asyncio.DatagramProtocol, remote_addr=("203.0.113.9", 53)
        )
    errors: list[Exception] = []

    class Protocol(asyncio.DatagramProtocol):
        def error_received(self, exc: Exception) -> None:
            errors.append(exc)  # where asyncio puts a send's error

    transport, _ = await loop.create_datagram_endpoint(Protocol, local_addr=("127.0.0.1", 0))
    transport.sendto(b"x", ("203.0.113.9", 53))
    transport.close()
    return errors


def test_datagrams_dns_and_sockets_opened_before_are_guarded_too(tmp_path: Path) -> None:
    import _socket

    path = tmp_path / "run.otlp"
    record_run(path, ["text"])
    # A connection opened before the session, to a "remote" peer: a loopback listener the
    # guard is told nothing about stands in for it (no packet leaves this test).
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    before = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with otel_replay.replay(path) as session:
        fetch("text")
        with pytest.raises(otel_replay.NetworkBlocked, match=r"203\.0\.113\.9:53"):
            udp.sendto(b"x", ("203.0.113.9", 53))
        udp.sendto(b"x", ("127.0.0.1", 9))  # loopback datagrams go
        with pytest.raises(socket.gaierror, match=r"DNS lookup of example\.com"):
            socket.getaddrinfo("example.com", 443)
        assert socket.getaddrinfo("localhost", 443)  # loopback names resolve
        raw = _socket.socket()  # the C socket type, not socket.socket
        with pytest.raises(otel_replay.NetworkBlocked, match=r"203\.0\.113\.9:443"):
            raw.connect(("203.0.113.9", 443))
        raw.close()
        before.sendall(b"ok")  # its peer is loopback: it goes
        assert peer.recv(2) == b"ok"
        refused = asyncio.run(_asyncio_datagrams())
    assert _socket.socket is socket.socket.__mro__[1]  # the raw type is back
    assert refused and all(isinstance(e, otel_replay.NetworkBlocked) for e in refused)
    notes = " ".join(session.report().notes)
    assert "203.0.113.9:53" in notes and "example.com" in notes
    for s in (before, peer, udp, server):
        s.close()
