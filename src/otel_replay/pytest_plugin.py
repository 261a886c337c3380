"""The pytest plugin (entry point ``pytest11``): replay a recorded run inside a test.

::

    @pytest.mark.otel_replay("recordings/wrong_order.otlp", run_id="4bf92f35")
    def test_order_support(otel_replay_session):
        answer = run_agent("Where is my order?", model=otel_replay_session.model)
        assert answer == "Order #4430 (Widget Mini) is processing."

The marker takes what :func:`otel_replay.replay` takes (a relative path is
looked up beside the test file first, then from the current directory); the
fixture is the entered session.  Tools are stubbed, the model is pinned, the
clock frozen, and outbound network other than loopback is refused unless the
marker says ``allow_network=True``.  When the agent leaves the recording, or
the test ends before the recorded run did, the test fails with the replay
report: the first divergence, expected vs actual, what was not reached.  A
recording that lacks what the replay needs fails the test as REFUSED, every
item named: before the test body runs when the replay will certainly need it.

``pytest --replay-isolate`` (or ``OTEL_REPLAY_ISOLATE=1``) runs the tests in a
network namespace with only loopback, where the agent's subprocesses and
native code cannot reach the network either (Linux; elsewhere a warning and
the in-process guard).
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import settings

if TYPE_CHECKING:
    from .replay.session import ReplaySession

# The replay machinery is imported when a test asks for a session: pytest loads
# this plugin in every run of an environment where otel-replay is installed.

MARKER = "otel_replay"
_SESSION = pytest.StashKey["ReplaySession"]()
_CLOSED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--replay-isolate",
        action="store_true",
        default=settings.current().isolate,
        help="otel-replay: run the tests in a network namespace with only loopback, so that "
        "no replayed agent (nor its subprocesses or native code) reaches the network "
        "(Linux; elsewhere the in-process guard only, with a warning)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if not config.getoption("replay_isolate", False):
        return None
    # The plugin loads in every pytest run: replay only for tests that ask.
    from .replay import isolation

    if isolation.isolated():
        isolation.loopback_up()
        return None
    reason = isolation.unavailable()
    if reason is not None:
        config.issue_config_time_warning(
            pytest.PytestWarning(
                f"--replay-isolate: {reason}; only the in-process network guard applies"
            ),
            stacklevel=2,
        )
        return None
    return isolation.run_isolated(["-m", "pytest", *config.invocation_params.args])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(path, run_id=None, **options): replay the recorded run at PATH in this "
        "test (fixture otel_replay_session); options as for otel_replay.replay()",
    )


def _resolve(path: str | os.PathLike[str], test_file: Path) -> str:
    candidate = Path(path)
    if not candidate.is_absolute():
        beside = test_file.parent / candidate
        if beside.exists():
            return str(beside)
    return os.fspath(path)


@pytest.fixture
def otel_replay_session(request: pytest.FixtureRequest) -> Iterator[ReplaySession]:
    """The replay session of the run named by the test's ``otel_replay`` marker, entered."""
    marker = request.node.get_closest_marker(MARKER)
    if marker is None or not marker.args:
        pytest.fail(
            "otel_replay_session needs @pytest.mark.otel_replay(PATH, run_id=None) on the test",
            pytrace=False,
        )
    # The plugin loads in every pytest run: replay only for tests that ask.
    from .replay.divergence import ReplayRefused
    from .replay.session import replay

    path, *rest = marker.args
    kwargs = dict(marker.kwargs)
    if rest:
        kwargs.setdefault("run_id", rest[0])
    session = replay(_resolve(path, Path(str(request.node.path))), **kwargs)
    try:
        session.__enter__()
    except ReplayRefused:
        # Before the test body: the agent never runs against a recording it cannot follow.
        pytest.fail(str(session.report()), pytrace=False)
    request.node.stash[_SESSION] = session
    request.node.stash[_CLOSED] = False
    try:
        yield session
    finally:
        # Normally closed right after the test body (see pytest_runtest_call);
        # here only when the test never ran (a failing fixture after this one).
        if not request.node.stash.get(_CLOSED, True):
            request.node.stash[_CLOSED] = True
            session.__exit__(None, None, None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    try:
        result = yield
    except BaseException as exc:
        failure = _close(item, exc)
        if failure is None:
            raise
        # The agent left the recording inside the test: say it with the whole report.
        raise pytest.fail.Exception(failure, pytrace=False) from None
    failure = _close(item, None)
    if failure is not None:
        raise pytest.fail.Exception(failure, pytrace=False)
    return result


def _close(item: pytest.Item, exc: BaseException | None) -> str | None:
    """End the test's replay session; the report when the replay diverged or was refused,
    else None."""
    session = item.stash.get(_SESSION, None)
    if session is None or item.stash.get(_CLOSED, True):
        return None
    item.stash[_CLOSED] = True
    # The plugin loads in every pytest run: replay only for tests that ask.
    from .replay.divergence import ReplayDivergence, ReplayRefused

    ended = (ReplayDivergence, ReplayRefused)
    try:
        session.__exit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None)
    except ended:
        return str(session.report())
    if isinstance(exc, ended):
        return str(session.report())
    return None
