"""Serve each case's recorded requests back from its own trace: how far does replay get?

    PYTHONPATH=src python -m tests.conformance.serve_requests [STACK ...]

For every case with content, the run(s) its trace rebuilds are served by
:class:`~otel_replay.replay.engine.ReplayEngine` (the default ``messages``
rung), and the exact request bodies the agent sent the model server
(``server.jsonl``) are sent to it in order, one conversation per agent run,
through the in-process transport.  A case passes when every request is
answered; otherwise the first refusal is printed (``test_serve_requests.py``
asserts it).  The agent's own code is not run: this measures the matching of
what an unchanged agent would send again, the first half of replaying it.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable

import httpx

from otel_replay.replay.adapters.transport import ReplayTransport
from otel_replay.replay.engine import CONVERSATION_HEADER, ReplayEngine
from tests.conformance.checks import Case, check, find_cases


def serve_case(case: Case, sent: Callable[[bytes], bytes] = bytes) -> str | None:
    """None when every recorded request of ``case`` is served; else the first refusal.

    ``sent``: what is sent for each recorded body (the body itself by default).
    """
    engine = ReplayEngine(check(case).runs)  # the runs the conformance check loaded
    with httpx.Client(transport=ReplayTransport(engine), base_url="http://127.0.0.1") as http:
        for requests in case.conversations().values():
            conversation: dict[str, str] = {}
            for r in requests:
                path = r["path"].split("?", 1)[0]
                path = path if path.startswith("/v1/") else "/v1" + path
                headers = {"content-type": "application/json", **conversation}
                answer = http.post(path, content=sent(r["body_raw"].encode()), headers=headers)
                if answer.status_code != 200:
                    return f"{answer.status_code} at turn {r['turn']}: {answer.text}"
                conversation = {CONVERSATION_HEADER: answer.headers[CONVERSATION_HEADER]}
    return None


def main(argv: list[str]) -> int:
    cases = [c for c in find_cases() if c.meta["content"]]
    if argv:
        cases = [c for c in cases if c.path.parent.name in argv]
    counts: Counter[str] = Counter()
    for case in cases:
        refused = serve_case(case)
        counts["served" if refused is None else "refused"] += 1
        print(f"{case.id}: {'served' if refused is None else refused}")
    print(f"{counts['served']} of {len(cases)} cases served to the end")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
