"""``otel-replay report``: how long a run's page takes to open in a browser, by run length.

    python benchmarks/bench_report.py [--repeat 3]

Runs of 10 and 1,000 steps (agent runs of model calls and tool calls,
captured with the helpers, their messages growing as a real conversation's
do) are rendered to pages; headless Chromium (``chromium``, or the browser
``OTEL_REPLAY_BROWSER`` names) opens each and prints its DOM after its
script ran: the time from start to DOM, alternating the two pages, best of
``--repeat``.  The 10-step page is the baseline: what is left above it is
what the page's size costs.  Also the time to render each page.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT)]


def run_of(turns: int, path: Path) -> None:
    """An agent run of ``turns`` model calls, each but the last asking for a tool."""
    import json

    from tests.fixtures.recording import recording

    import otel_replay

    @otel_replay.tool
    def lookup(order: str) -> dict[str, str]:
        return {"order": order, "status": "shipped", "note": "left at the door " * 4}

    with recording(path), otel_replay.agent_run("support", input="Where are my orders?"):
        history: list[dict[str, object]] = [{"role": "user", "content": "Where are my orders?"}]
        for turn in range(turns):
            last = turn == turns - 1
            call = {"id": f"c{turn}", "function": {"name": "lookup", "arguments": "{}"}}
            reply: dict[str, object] = {"role": "assistant", "content": "Done." if last else ""}
            if not last:
                call["function"] = {"name": "lookup", "arguments": json.dumps({"order": str(turn)})}
                reply["tool_calls"] = [call]
            with otel_replay.model_call(
                provider="openai", model="gpt-4o", messages=list(history), temperature=0.0
            ) as recorder:
                recorder.record(reply, input_tokens=40, output_tokens=9)
            history.append(reply)
            if not last:
                with otel_replay.tool_call_id(f"c{turn}"):
                    result = lookup(str(turn))
                history.append({"role": "tool", "tool_call_id": f"c{turn}", "content": str(result)})


def opened(browser: str, page: Path, profile: Path) -> float:
    """Seconds from starting headless Chromium on ``page`` to its DOM, script run."""
    from tests.fixtures.browser import chromium

    t0 = time.perf_counter()
    chromium(browser, page, profile, "--dump-dom")
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    browser = os.environ.get("OTEL_REPLAY_BROWSER") or shutil.which("chromium")
    if browser is None:
        sys.exit("no chromium: apt-get install chromium (or set OTEL_REPLAY_BROWSER)")
    import otel_replay
    from otel_replay.report import render_run

    with tempfile.TemporaryDirectory() as tmp:
        pages = {}
        for steps, turns in ((10, 5), (1000, 500)):
            trace = Path(tmp) / f"run{steps}.otlp"
            run_of(turns, trace)
            (run,) = otel_replay.load(trace)
            t0 = time.perf_counter()
            html = render_run(run)
            rendered = time.perf_counter() - t0
            page = Path(tmp) / f"run{steps}.html"
            page.write_text(html, encoding="utf-8")
            pages[steps] = page
            print(
                f"{len(run.steps)}-step run: page {len(html) / 1e6:.2f} MB,"
                f" rendered in {rendered * 1000:.0f} ms"
            )
        best = {steps: float("inf") for steps in pages}
        for _ in range(args.repeat):
            for steps, page in pages.items():
                seconds = opened(browser, page, Path(tmp) / "profile")
                best[steps] = min(best[steps], seconds)
                print(f"  {steps}-step page opened in {seconds:.2f} s")
        print(
            f"opened in Chromium: 10 steps {best[10]:.2f} s, 1,000 steps {best[1000]:.2f} s"
            f" (best of {args.repeat}): {best[1000] / best[10]:.2f}x"
        )


if __name__ == "__main__":
    main()
