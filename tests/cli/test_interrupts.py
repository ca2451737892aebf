"""Ctrl-C in the commands that wait on peers (poolcheck/cli/common.py ``interrupts_outside_gc``).

A KeyboardInterrupt raised inside a gc callback is dropped by Python ("Exception ignored in:"
and a traceback), and the command runs on. JAX installs such a callback in every process that
imports it: `poolcheck run --peers` with every built-in lost one Ctrl-C in five runs that way.
"""

from __future__ import annotations

import gc
import os
import signal
import time
from collections.abc import Iterator

import pytest

from poolcheck.cli.common import interrupts_outside_gc


@pytest.fixture(autouse=True)
def _python_sigint_handler() -> Iterator[None]:
    """Python's own SIGINT handler during each test (an in-process `poolcheck fuzz` of another
    test leaves the campaign's handler installed), the previous one put back after."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _ctrl_c_inside_a_gc_callback(seconds: float) -> None:
    """A SIGINT delivered while a gc callback runs, then ``seconds`` of waiting for it."""
    sent: list[bool] = []

    def callback(phase: str, _info: dict[str, int]) -> None:
        if phase == "start" and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # Python runs the signal's handler here, inside the callback
                pass

    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    assert sent
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_ctrl_c_that_lands_in_a_gc_callback_is_raised_after_it() -> None:
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), interrupts_outside_gc():
        _ctrl_c_inside_a_gc_callback(5.0)
    assert time.monotonic() - started < 2.0
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_pythons_own_handler_drops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The behaviour the context replaces: the interrupt is lost, reported as unraisable (Python
    prints it as "Exception ignored in: ...")."""
    import sys

    dropped: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: dropped.append(info.exc_type))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    _ctrl_c_inside_a_gc_callback(0.3)  # no KeyboardInterrupt
    assert dropped == [KeyboardInterrupt]


def test_a_ctrl_c_elsewhere_is_raised_at_once_and_an_ignored_sigint_stays_ignored() -> None:
    with pytest.raises(KeyboardInterrupt), interrupts_outside_gc():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts_outside_gc():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
