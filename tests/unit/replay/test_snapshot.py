"""State snapshots: ``otel_replay.snapshot(name, state)`` while recording, ``state_at`` in replay.

The agent of the snapshot example: it keeps memory and context
variables, snapshots them before the risky cancel, and the cancel fails.  The
replay restores the state from before the cancel and restarts from there.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from tests.fixtures.cli import cli_run
from tests.fixtures.recording import in_memory, recording


@otel_replay.register_type
@dataclasses.dataclass
class AgentState:
    step: int
    memory: list[dict[str, Any]]
    context: dict[str, Any]
    seen: frozenset[str] = frozenset()
    since: dt.datetime | None = None


class AlreadyDelivered(RuntimeError):
    pass


@otel_replay.tool
def lookup_order(order_id: str) -> dict[str, str]:
    return {"order_id": order_id, "status": "shipped"}


@otel_replay.tool
def cancel_order(order_id: str) -> dict[str, str]:
    raise AlreadyDelivered(f"order {order_id} was already delivered")


def stateful_agent(state: AgentState) -> AgentState:
    """Look the order up, snapshot, then try the risky cancel (from wherever ``state`` is)."""
    with otel_replay.agent_run("orderbot", input="cancel ORD-5521"):
        if state.step == 0:
            state.memory.append({"tool": "lookup_order", "result": lookup_order("ORD-5521")})
            state.step = 1
            state.seen = state.seen | {"ORD-5521"}
            otel_replay.snapshot("before_cancel", state)
        try:
            cancel_order("ORD-5521")
        except AlreadyDelivered as exc:
            state.memory.append({"tool": "cancel_order", "error": str(exc)})
        state.step += 1
        otel_replay.snapshot("after_cancel", state)
    return state


def fresh_state() -> AgentState:
    since = dt.datetime(2026, 3, 14, 15, 14, tzinfo=dt.timezone.utc)
    return AgentState(0, [], {"user_id": "u_7710", "locale": "de-DE"}, since=since)


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, AgentState]:
    path = tmp_path / "run.otlp"
    with recording(path):
        final = stateful_agent(fresh_state())
    return path, final


def test_replay_restores_the_state_before_the_risky_step(
    recorded: tuple[Path, AgentState],
) -> None:
    path, final = recorded
    (run,) = otel_replay.load(path)
    cancel = next(s for s in run.tool_steps() if s.tool and s.tool.tool_name == "cancel_order")
    with otel_replay.replay(path, require_complete=False) as session:
        before = session.state_at(cancel.index)
        assert isinstance(before, AgentState)
        assert before.step == 1 and before.seen == frozenset({"ORD-5521"})
        assert before.since == dt.datetime(2026, 3, 14, 15, 14, tzinfo=dt.timezone.utc)
        assert before.memory == [
            {"tool": "lookup_order", "result": {"order_id": "ORD-5521", "status": "shipped"}}
        ]
        assert session.state_at("before_cancel") == before
        # Restart from the state before the cancel: the lookup is not made again,
        # the stubbed cancel fails as it did, and the run ends where the recording did.
        again = stateful_agent(before)
    assert again == final
    assert session.state_at("after_cancel") == final
    assert session.state_at("after_cancel") is not session.state_at("after_cancel")  # fresh copies


def test_state_at_names_what_is_missing(recorded: tuple[Path, AgentState]) -> None:
    path, _ = recorded
    with otel_replay.replay(path, require_complete=False) as session:
        lookup = next(s for s in session.run.tool_steps() if s.tool.tool_name == "lookup_order")  # type: ignore[union-attr]
        with pytest.raises(otel_replay.ReplayError, match="no snapshot was taken before step"):
            session.state_at(lookup.index)
        with pytest.raises(
            otel_replay.ReplayError, match=r"no snapshot 'nope'.*before_cancel, after_cancel"
        ):
            session.state_at("nope")


def test_a_big_state_goes_to_the_blob_store_and_comes_back_exact(tmp_path: Path) -> None:
    path = tmp_path / "big.otlp"
    state = {"memory": ["x" * 1000] * 400, "raw": b"\x00\xff" * 10, "ids": (1, 2, 3)}
    with recording(path), otel_replay.agent_run("big"):
        otel_replay.snapshot("memory", state)
    blobs = list((tmp_path / "big.otlp.blobs").iterdir())
    assert len(blobs) == 1 and blobs[0].stat().st_size > 400_000
    assert b"x" * 100_000 not in path.read_bytes()  # only a preview is inline
    (run,) = otel_replay.load(path)
    (snap,) = run.snapshots()
    assert snap.payload is not None and snap.payload.status == "exact"
    assert snap.value() == state and type(snap.value()["ids"]) is tuple


def test_a_damaged_state_is_refused_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "big.otlp"
    with recording(path), otel_replay.agent_run("big", input="go"):
        lookup_order("ORD-1")
        otel_replay.snapshot("memory", {"m": "y" * 300_000})
    for blob in (tmp_path / "big.otlp.blobs").iterdir():
        blob.write_bytes(blob.read_bytes()[:-10])
    with otel_replay.replay(path, require_complete=False) as session:
        with pytest.raises(otel_replay.ReplayError, match="cannot be restored"):
            session.state_at("memory")


def test_snapshot_never_raises_into_the_app() -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr for you")

    with in_memory() as exporter:
        with otel_replay.agent_run("a"):
            otel_replay.snapshot("odd", Hostile())  # recorded as repr: not restorable
            otel_replay.snapshot("outside", {"k": 1})
        otel_replay.snapshot("no span", [1, 2])  # no current span: a span of its own
    spans = {s.name: s for s in exporter.get_finished_spans()}
    events = spans["invoke_agent a"].events
    assert [e.attributes["otel_replay.snapshot.name"] for e in events] == ["odd", "outside"]
    assert events[0].attributes["otel_replay.type.otel_replay.snapshot.state"] == "repr"
    own = spans["otel_replay.snapshot no span"]
    assert own.events[0].attributes["otel_replay.snapshot.state"] == "[1,2]"
    # Without any tracing configured it is a no-op.
    otel_replay.snapshot("untraced", {"k": 1})


def test_secrets_in_a_snapshot_are_scrubbed(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    with recording(path), otel_replay.agent_run("a"):
        otel_replay.snapshot("ctx", {"user": "u_1", "api_key": "sk-live-0123456789abcdef"})
    assert b"sk-live-0123456789abcdef" not in path.read_bytes()
    (run,) = otel_replay.load(path)
    assert run.snapshots()[0].value()["user"] == "u_1"


def test_show_lists_snapshots_in_the_tree_and_in_the_step(
    recorded: tuple[Path, AgentState],
) -> None:
    path, _ = recorded
    tree = cli_run("show", path)
    assert tree.returncode == 0, tree.stderr
    lines = tree.stdout.splitlines()
    where = {
        name: i
        for i, line in enumerate(lines)
        for name in ("before_cancel", "cancel_order(")
        if name in line
    }
    assert where["before_cancel"] < where["cancel_order("]  # placed by time among the steps
    assert "snapshot before_cancel (pyjson," in tree.stdout

    (run,) = otel_replay.load(path)
    cancel = next(s for s in run.tool_steps() if s.tool and s.tool.tool_name == "cancel_order")
    step = cli_run("show", path, "--step", str(cancel.index))
    assert "state before this step: snapshot before_cancel (on step 0" in step.stdout
    root = cli_run("show", path, "--step", "0")
    assert "snapshot after_cancel (pyjson, exact" in root.stdout
    assert '"already delivered' in root.stdout or "already delivered" in root.stdout

    doc = json.loads(cli_run("show", path, "--json").stdout)
    snaps = doc["runs"][0]["steps"][0]["snapshots"]
    assert [s["name"] for s in snaps] == ["before_cancel", "after_cancel"]
    assert snaps[0]["exact"] == "exact" and snaps[0]["state"]["step"] == 1
