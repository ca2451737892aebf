"""A fuzz campaign keeps what it found whatever stops it (issue 8): each new divergence's case
file is written as soon as it is shrunk, and SIGTERM or Ctrl-C (SIGINT) still write the summary
and the reports, with one process or with --jobs 2."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import PLANTED

from poolcheck.fuzz import session
from poolcheck.fuzz.session import FuzzOptions, request_stop, run_sessions


def _start(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "poolcheck", "fuzz", "--peers", str(PLANTED / "pads_swapped.py"), "--ops", "maxpool",
         "--oracles", "peers", "--time-budget", "300s", "--seed", "0", "--no-progress", "--no-bundled-known",
         "--save-cases", str(tmp_path / "finds"), "--report-dir", str(tmp_path / "report"), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path, preexec_fn=_default_sigint)


def _default_sigint() -> None:
    """A shell's background job inherits SIGINT as ignored, and Python then installs no
    KeyboardInterrupt handler: give the child the default, as an interactive terminal would."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_a_find(proc: subprocess.Popen[str], finds: Path, limit: float = 120.0) -> list[Path]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        files = sorted(finds.glob("*.yaml")) if finds.exists() else []
        if files:
            return files
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("no divergence was saved while the campaign ran")


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "jobs"), [(signal.SIGTERM, "1"), (signal.SIGINT, "2"), (signal.SIGTERM, "2")])
def test_a_stopped_campaign_keeps_its_finds_and_writes_reports(tmp_path: Path, sig: int, jobs: str) -> None:
    proc = _start(tmp_path, "--jobs", jobs)
    try:
        saved_while_running = _wait_for_a_find(proc, tmp_path / "finds")
        time.sleep(1.0)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (1, 130), out[-3000:]
    assert "Traceback" not in out
    # the case files written before the signal are still there and still valid, except one whose
    # group joined another's when the campaign regrouped its finds (fuzz/campaign.py removes it:
    # that group's own file holds the divergence)
    finds = sorted((tmp_path / "finds").glob("*.yaml"))
    assert saved_while_running and finds, "no case file left"
    for f in finds:
        assert "poolcheck.case/1" in f.read_text()
    data = json.loads((tmp_path / "report" / "result.json").read_text())
    assert data["interrupted"] is True
    assert data["fuzz"]["new"], "the interrupted result lists the divergences found"
    assert not list(tmp_path.glob(".hypothesis")) and not (tmp_path / "fuzz-cases").exists()


def test_a_stop_request_ends_the_campaign_even_when_its_interrupt_was_dropped() -> None:
    """Python drops a KeyboardInterrupt raised while a gc callback runs ("Exception ignored in:
    ... gc_callback", hypothesis installs one), which once left a SIGTERMed campaign running to
    its budget. The signal handler also records the stop; the session honours it at the next
    example. Here the stop is requested with no exception at all, as if it had been dropped."""
    requested_at: list[int] = []

    def on_progress(p: session.Progress) -> None:
        if not requested_at:
            requested_at.append(p.examples)
            request_stop()

    options = FuzzOptions(ops=("max",), seed=0, isolated=False, max_examples=2000, oracles=frozenset({"engines"}))
    try:
        result = run_sessions(options, on_progress=on_progress)[0]
    finally:
        session._STOP.clear()
    assert requested_at, "the session reported no progress"
    assert result.interrupted
    assert result.progress.examples <= requested_at[0] + 1


def test_a_signal_inside_a_gc_callback_records_the_stop_without_raising() -> None:
    """Python drops an exception raised inside a gc callback and prints a traceback ("Exception
    ignored in: ... gc_callback"), so there the handler only records the stop (which the
    session honours at its next example); anywhere else it also raises KeyboardInterrupt."""
    import gc

    from poolcheck.cli import fuzz as cli_fuzz
    from poolcheck.fuzz import session

    seen: list[str] = []

    def callback(phase: str, info: dict) -> None:  # type: ignore[type-arg]
        if phase == "start" and not seen:
            try:
                cli_fuzz._interrupt(signal.SIGTERM, sys._getframe())
                seen.append("returned")
            except KeyboardInterrupt:
                seen.append("raised")

    session._STOP.clear()
    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    try:
        assert seen == ["returned"]
        with pytest.raises(KeyboardInterrupt):
            session.raise_if_stopped()  # the stop was recorded all the same
        session._STOP.clear()
        with pytest.raises(KeyboardInterrupt):
            cli_fuzz._interrupt(signal.SIGTERM, sys._getframe())
        assert session._STOP.is_set()
    finally:
        session._STOP.clear()
