"""Shared fixtures: spans made by the real SDK."""

from __future__ import annotations

import compileall
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    Link,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)


def pytest_configure(config: pytest.Config) -> None:
    """Bytecode kept, for the library and the tests, even where the environment asks for
    none (``PYTHONDONTWRITEBYTECODE``, set on some machines): the hundreds of CLI processes
    the tests start would each compile the library again (about 0.2 s of CPU each), and
    each test worker, and each later session, rewrite every test module's assertions."""
    sys.dont_write_bytecode = False
    compileall.compile_dir(Path(__file__).parents[1] / "src" / "otel_replay", quiet=2)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with the modules that check recorded cases on one worker, which
    checks each case once (``tests/fixtures/worker_scopes.py``)."""
    from tests.fixtures.worker_scopes import make_scheduler  # only where xdist runs

    return make_scheduler(config, log)


# No property test is timed: speed is measured by the benchmarks, and a deadline of a few
# hundred milliseconds fails a test on a busy machine for nothing it checks.
hypothesis.settings.register_profile("otel-replay", deadline=None)
hypothesis.settings.load_profile("otel-replay")

#: The default tier draws this share of each property test's examples (at least
#: ``QUICK_FLOOR``, or all of them where it asks for fewer); ``--thorough`` draws them all,
#: as CI does after the default tier.
QUICK_SHARE = 4
QUICK_FLOOR = 25


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--thorough",
        action="store_true",
        help="every property test draws the number of examples it asks for (the default "
        "tier draws a quarter of them; the slow tier always draws them all)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Property tests outside the slow tier draw fewer examples unless ``--thorough``: they
    are a quarter of the default tier's time, and CI runs them all again in full."""
    if config.getoption("thorough"):
        return
    done: set[int] = set()
    for item in items:
        test = getattr(item, "obj", None)
        if id(test) in done or item.get_closest_marker("slow") is not None:
            continue
        done.add(id(test))
        # Where hypothesis keeps a test's settings (set by ``@given``/``@settings``).
        drawn = getattr(test, "_hypothesis_internal_use_settings", None)
        if isinstance(drawn, hypothesis.settings):
            quick = max(min(drawn.max_examples, QUICK_FLOOR), drawn.max_examples // QUICK_SHARE)
            test._hypothesis_internal_use_settings = hypothesis.settings(  # type: ignore[union-attr]
                drawn, max_examples=quick
            )


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI and Anthropic SDKs retry as they do, without their pauses between tries
    (half a second, then a second): for tests that check what was sent and raised."""
    monkeypatch.setattr("openai._base_client.INITIAL_RETRY_DELAY", 0.001)
    monkeypatch.setattr("anthropic._base_client.INITIAL_RETRY_DELAY", 0.001)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Captured output written as UTF-8 can hold what some library logged as it was given (the
    SDK's encoder logs an attribute key with a lone surrogate as it is): escaped here, since
    parallel test workers send their reports as UTF-8."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    report.sections = [(name, _encodable(text)) for name, text in report.sections]


def _encodable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.fixture(autouse=True)
def _cache_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key sealing indexes and ls summaries lives under the user's cache directory:
    point it at a directory of the test session, never at the real home (CLI
    processes the tests start inherit it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))


#: One attribute of every value type the SDK keeps (>= 1.45), edge cases included.
VARIED_ATTRIBUTES: dict[str, Any] = {
    "s": "text",
    "empty": "",
    "uni": "日本語 ✓ 🚀",
    "long": "x" * 70_000,  # a length that needs a 3-byte varint
    "t": True,
    "f": False,
    "zero": 0,
    "neg": -42,
    "big": 2**63 - 1,
    "small": -(2**63),
    "d": 1.5,
    "negzero": -0.0,
    "inf": float("inf"),
    "b": b"\x00\xff\xfenon-utf8",
    "b_empty": b"",
    "arr_s": ["a", "", "c"],
    "arr_b": [True, False],
    "arr_i": [1, -2, 3],
    "arr_d": [0.5, 2.0],
    "arr_empty": [],
    "mixed": [1, "a", 2.5, None, b"\xff"],
    "nested": [[1, 2], ["x"]],
    "kv": {"a": 1, "b": [1, "x", None], "n": {"z": b"\xfe", "e": {}}},
    "kv_empty": {},
}


def make_varied_spans(**limits: Any) -> list[ReadableSpan]:
    """Spans over 2 resources x 2 scopes: remote parents, links, events, every status and kind."""
    exporter = InMemorySpanExporter()
    remote = SpanContext(
        0xABC,
        0xDEF,
        is_remote=True,
        trace_flags=TraceFlags(1),
        trace_state=TraceState([("k", "v"), ("vendor", "a=b")]),
    )
    for service in ("svc-a", "svc-b"):
        provider = TracerProvider(
            resource=Resource.create({"service.name": service, "n": 3}, schema_url="https://r/1"),
            span_limits=SpanLimits(**limits) if limits else None,
        )
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        for scope in ("scope-1", "scope-2"):
            tracer = provider.get_tracer(
                scope, "0.1", schema_url="https://s/1", attributes={"scope.attr": 1}
            )
            ctx = trace.set_span_in_context(trace.NonRecordingSpan(remote))
            with tracer.start_as_current_span(
                "remote child", context=ctx, kind=SpanKind.SERVER
            ) as root:
                root.set_attributes(VARIED_ATTRIBUTES)
                # The same key/value on span, event and link: caches must keep them apart.
                root.set_attribute("k", "v")
                root.add_event("bare")
                root.add_event("ev", {"k": "v", "n": 1, "kv": {"x": [1]}}, timestamp=123)
                with tracer.start_as_current_span(
                    "linked",
                    kind=SpanKind.CLIENT,
                    links=[Link(root.get_span_context()), Link(remote, {"k": "v", "n": 1})],
                ) as child:
                    child.set_status(Status(StatusCode.ERROR, "boom"))
                    child.set_attribute("n", 1)
                with tracer.start_as_current_span("ok", kind=SpanKind.PRODUCER) as ok:
                    ok.set_status(Status(StatusCode.OK))
                with tracer.start_as_current_span("", kind=SpanKind.CONSUMER):
                    pass
        # Not shutdown(): that would stop the shared in-memory exporter.
        provider.force_flush()
    return list(exporter.get_finished_spans())


@pytest.fixture(scope="session")
def varied_spans() -> list[ReadableSpan]:
    return make_varied_spans()


@pytest.fixture(scope="session")
def make_spans() -> Callable[..., list[ReadableSpan]]:
    """:func:`make_varied_spans`, for tests that set span limits."""
    return make_varied_spans


@pytest.fixture(autouse=True)
def _no_framework_left_patched() -> Iterator[None]:
    """A test that patches a framework's tool calls puts it back (replay sessions do)."""
    from otel_replay.capture import frameworks

    before = set(frameworks.instrumented())
    yield
    left = set(frameworks.instrumented()) - before
    frameworks.uninstrument_framework(*left)
    assert not left, f"a test left {sorted(left)} patched"
