"""Concurrent tool calls record without a lost or crossed span."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import otel_replay
from tests.fixtures.recording import recording


@otel_replay.tool
def square(n: int, who: str) -> dict[str, object]:
    return {"n": n, "square": n * n, "who": who}


@otel_replay.tool
async def slow_echo(n: int) -> str:
    await asyncio.sleep(0.001 * (n % 7))  # interleave the tasks
    return f"echo-{n}"


def test_eight_threads(tmp_path: Path) -> None:
    path = tmp_path / "threads.otlp"
    per_thread = 250

    def worker(t: int) -> None:
        for i in range(per_thread):
            with otel_replay.agent_run(f"thread-{t}"):
                square(t * 10_000 + i, f"thread-{t}")

    with recording(path):
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    runs = otel_replay.load(path)
    assert len(runs) == 8 * per_thread
    seen = set()
    for run in runs:
        (tool,) = run.tool_steps()
        assert tool.tool is not None
        n, who = tool.tool.arguments["n"], tool.tool.arguments["who"]
        assert tool.tool.result == {"n": n, "square": n * n, "who": who}
        assert run.roots[0].name == f"invoke_agent {who}"  # parented to its own run
        seen.add(n)
    assert len(seen) == 8 * per_thread


def test_thousand_concurrent_asyncio_calls(tmp_path: Path) -> None:
    path = tmp_path / "tasks.otlp"

    async def one(i: int) -> str:
        with otel_replay.agent_run(f"task-{i}"):
            return await slow_echo(i)

    async def main() -> list[str]:
        return await asyncio.gather(*(one(i) for i in range(1000)))

    with recording(path):
        results = asyncio.run(main())
    assert results == [f"echo-{i}" for i in range(1000)]
    runs = otel_replay.load(path)
    assert len(runs) == 1000
    for run in runs:
        (tool,) = run.tool_steps()
        assert tool.tool is not None
        i = tool.tool.arguments["n"]
        assert tool.tool.result == f"echo-{i}"
        assert run.roots[0].name == f"invoke_agent task-{i}"
        assert tool.parent_span_id == run.roots[0].span_id
