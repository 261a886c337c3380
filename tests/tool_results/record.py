"""Record the tool-result traces of ``tests/data/tool_results/`` by running the real packages.

    python -m tests.tool_results.record strands PYTHON     # a Python with strands-agents
    python -m tests.tool_results.record vercel_ai NODE_DIR  # a folder with ai's node_modules
                                                            # (ai 7 with @ai-sdk/otel, or ai 6)

Run it from the repository root, the stack's install inside it (``.cache/``):
the stack traces of the raised errors name files relative to the root.  The
ai 7 install is the conformance stack's (``.cache/conformance/vercel_ai/node``);
the ai 6 one is ``npm install`` of ``vercel_ai6/package.json`` (exact pins)
copied to a folder of ``.cache/``.

Each case is a folder: ``traces.binpb`` / ``traces.jsonl`` (what the stack
exported, through the conformance OTLP receiver), ``server.jsonl`` (every
request as the fake model server received it, and its answer) and
``versions.txt``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conformance.generate import scrub
from tests.conformance.receiver import TRACE_FILES, OtlpReceiver
from tests.tool_results.model import ModelServer

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "tool_results"

STRANDS = {
    "strands_legacy": ({}, []),
    "strands_latest": ({"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}, []),
    "strands_image": ({}, ["--image"]),
}
#: ``ai`` before 7 has one telemetry, its ``ai.*`` spans.
VERCEL_6 = {
    "vercel_ai6_chat": ["--api", "chat"],
    "vercel_ai6_responses": ["--api", "responses"],
    "vercel_ai6_chat_stream": ["--api", "chat", "--stream"],
}
VERCEL = {
    "vercel_ai_chat": ["--api", "chat", "--telemetry", "current"],
    "vercel_ai_chat_legacy": ["--api", "chat", "--telemetry", "legacy"],
    "vercel_ai_responses": ["--api", "responses", "--telemetry", "current"],
    "vercel_ai_responses_legacy": ["--api", "responses", "--telemetry", "legacy"],
    "vercel_ai_chat_stream": ["--api", "chat", "--telemetry", "current", "--stream"],
    "vercel_ai_chat_legacy_stream": ["--api", "chat", "--telemetry", "legacy", "--stream"],
}


def _run(case: str, command: list[str], env: dict[str, str], versions: str) -> None:
    out = DATA / case
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with ModelServer(out / "server.jsonl") as server, OtlpReceiver(out) as receiver:
        full = {"PATH": os.environ["PATH"], "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, **env}
        done = subprocess.run(
            [*command, "--base-url", server.url + "/v1"],
            env=full,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    if done.returncode:
        sys.exit(f"{case}: exit {done.returncode}\n{done.stderr[-3000:]}")
    for name in TRACE_FILES:  # stack traces name this machine's files: relative to the repository
        if (out / name).exists():
            scrub(out / name, out / name)
    (out / "versions.txt").write_text(versions, encoding="utf-8")
    print(case, done.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("stack", choices=("strands", "vercel_ai"))
    ap.add_argument("where", help="the stack's Python, or the folder holding its node_modules")
    a = ap.parse_args()
    if a.stack == "strands":
        versions = subprocess.run(
            [a.where, "-m", "pip", "freeze"], capture_output=True, text=True, check=True
        ).stdout
        keep = [
            line
            for line in versions.splitlines()
            if line.split("==")[0]
            .lower()
            .startswith(("strands-agents", "openai", "opentelemetry-sdk"))
        ]
        python = subprocess.run(
            [a.where, "-c", "import platform; print(platform.python_version())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        keep.insert(0, f"python=={python.strip()}")
        for case, (env, args) in STRANDS.items():
            command = [a.where, str(HERE / "strands_agent.py"), *args]
            _run(case, command, env, "\n".join(keep) + "\n")
    else:
        node_dir = Path(a.where).resolve()
        script = node_dir / "tool_results_agent.mjs"
        shutil.copy(HERE / "vercel_ai_agent.mjs", script)
        listed = subprocess.run(
            ["npm", "ls", "--depth=0"], cwd=node_dir, capture_output=True, text=True, check=False
        ).stdout
        # The first line names the folder (a path of this machine): the packages only.
        versions = "".join(listed.splitlines(keepends=True)[1:])
        try:
            major = re.search(r"\bai@(\d+)\.", versions)
            cases = VERCEL if major and int(major.group(1)) >= 7 else VERCEL_6
            for case, args in cases.items():
                _run(
                    case,
                    ["node", str(script), *args],
                    {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
                    versions,
                )
        finally:
            script.unlink()


if __name__ == "__main__":
    main()
