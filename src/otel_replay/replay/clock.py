"""The frozen clock: time stands at each recorded step's start while it replays."""

from __future__ import annotations

import time_machine


class FrozenClock:
    """``time.time()``, ``datetime.now()``... answer the recorded time (monotonic clocks run)."""

    def __init__(self, start_ns: int) -> None:
        self._travel = time_machine.travel(start_ns / 1e9, tick=False)
        self._traveller: time_machine.Traveller | None = None
        self.now_ns = start_ns

    def start(self) -> None:
        self._traveller = self._travel.start()

    def move_to(self, ns: int) -> None:
        if ns and self._traveller is not None:
            # A plain timestamp: an aware datetime makes time-machine reset the
            # time zone (tzset) on every move.
            self._traveller.move_to(ns / 1e9)
            self.now_ns = ns

    def stop(self) -> None:
        if self._traveller is not None:
            self._travel.stop()
            self._traveller = None
