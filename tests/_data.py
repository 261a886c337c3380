"""Test helper: where the recorded test data lives (``tests/data/``, see its README).

Every test reads its data from inside the repository, and every glob over it
goes through :func:`found`, so that a test whose data is missing fails instead
of being parametrized over nothing and passing.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data"
#: Third-party recordings of the order-support scenario, one directory per stack and variant.
THIRDPARTY = DATA / "thirdparty"
#: Five third-party runs, each written as OTLP/JSON lines, varint-delimited protobuf and one
#: protobuf request, with the fake model server's log.
THIRDPARTY_FORMATS = DATA / "thirdparty_formats"
#: OTLP/JSON from public OpenTelemetry repositories.
COLLECTOR = DATA / "collector"
#: The order-support scenario every third-party case ran (prompts, tools, answers).
SCENARIO_SCRIPT = THIRDPARTY / "scripts" / "scenario.py"


def found(root: Path, pattern: str) -> list[Path]:
    """The paths under ``root`` that match the glob ``pattern``, sorted.

    Raises :class:`FileNotFoundError` when none match: missing data must fail
    the test run, not leave a parametrized test with no cases.
    """
    paths = sorted(root.glob(pattern))
    if not paths:
        raise FileNotFoundError(f"no test data matches {pattern!r} under {root}")
    return paths
