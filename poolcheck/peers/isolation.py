"""Calling peers safely: a warm worker process per peer, or in-process for trusted built-ins.

A peer that raises is recorded as ``rejects``, one that kills its process (segfault,
``os._exit``) as ``crash``, one that does not answer within the timeout as ``timeout``; the
worker is then restarted on the next call and the run goes on.

Workers are started with ``spawn`` (no inherited threads or runtime state) and kept warm: a
worker serves every call to its peer until it dies, is killed after a timeout, or
:func:`close_workers` runs (also at interpreter exit). Not thread-safe: call from one thread.
"""

from __future__ import annotations

import atexit
import importlib.util
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

from poolcheck.errors import PoolcheckError
from poolcheck.files import stdout_to_stderr
from poolcheck.peers._convert import short_message
from poolcheck.peers.base import (
    BatchItem,
    FamilyItem,
    InvalidPeerOutput,
    Peer,
    PeerDeclined,
    PeerFacts,
    PeerOutput,
    PeerResult,
    UnavailablePeer,
    declared_types,
    family_declined,
    run_family_item,
    validate_output,
)
from poolcheck.spec.family import FamilySpec

#: Seconds a peer call may take before it is recorded as ``timeout``.
DEFAULT_TIMEOUT = 30.0
#: Seconds a new worker may take to import its peer (torch, openvino) before it counts as a crash.
STARTUP_TIMEOUT = 120.0


# --------------------------------------------------------------------------- in-process calls


def _read_only(x: np.ndarray) -> np.ndarray:
    """A private read-only copy of ``x``: a peer that writes into its input raises (and is
    reported) instead of changing what the engines and the other peers see."""
    arr = np.array(x, copy=True)
    arr.setflags(write=False)
    return arr


#: One item of a call: a MaxPool/AveragePool configuration and its input, or a family item.
Item = BatchItem | FamilyItem


def _private(item: Item) -> Item:
    """``item`` with read-only copies of its input tensors. The spec decides the kind: a
    ``FamilySpec`` makes a family item ``(spec, x, indices or None)`` (given as ``(spec, x)``
    too; it never reaches ``run_many``), a ``PoolSpec`` a pooling item ``(spec, x)``."""
    if isinstance(item[0], FamilySpec):
        indices = item[2] if len(item) == 3 else None
        return (item[0], _read_only(item[1]), None if indices is None else _read_only(indices))
    return (item[0], _read_only(item[1]))


def run_in_process(peer: Peer, items: Sequence[Item]) -> list[PeerResult]:
    """Check availability and support, then run every item on a read-only copy of its input,
    with stdout sent to stderr; exceptions become ``rejects``, malformed answers ``invalid``.
    Family items (``(FamilySpec, x, indices)``) go to the peer one by one, and only when its
    ``family_ops`` lists the op (see :class:`~poolcheck.peers.base.Peer`)."""
    items = [_private(item) for item in items]
    with stdout_to_stderr():
        family = [i for i, item in enumerate(items) if isinstance(item[0], FamilySpec)]
        if not family:
            return _run_in_process(peer, items)  # type: ignore[arg-type]
        results: list[PeerResult | None] = [None] * len(items)
        pooling = [i for i in range(len(items)) if not isinstance(items[i][0], FamilySpec)]
        for i, r in zip(pooling, _run_in_process(peer, [items[i] for i in pooling])):  # type: ignore[misc]
            results[i] = r
        for i in family:
            results[i] = _run_family(peer, items[i])  # type: ignore[arg-type]
        return [r for r in results if r is not None]


def _availability(peer: Peer) -> str | None:
    try:
        ok, why = peer.available()
    except Exception as exc:
        ok, why = False, f"available() raised {short_message(exc)}"
    return None if ok else why


def describe_in_process(peer: Peer, ops: Sequence[str] = ()) -> PeerFacts:
    """``peer``'s :class:`~poolcheck.peers.base.PeerFacts`, asked in this process: its
    availability, its version when available (None when it cannot say or raises), and the
    types it declares for each of ``ops``."""
    why = _availability(peer)
    version = None
    if why is None:
        try:
            found = peer.version()
            version = None if found is None else str(found)
        except Exception:
            version = None
    types = tuple((op, declared_types(peer, op)) for op in ops)
    return PeerFacts(why is None, why or "", version, types)


def _run_family(peer: Peer, item: FamilyItem) -> PeerResult:
    """One family item: declined unless the peer lists the op and ``supports`` says yes."""
    spec, x, _ = item
    why = family_declined(peer, spec)
    if why is not None:
        return PeerResult("declined", None, why)
    unavailable = _availability(peer)
    if unavailable is not None:
        return PeerResult("unavailable", None, unavailable)
    try:
        ok, why = peer.supports(spec, tuple(x.shape), x.dtype)  # type: ignore[arg-type]
    except Exception as exc:
        ok, why = False, f"supports() raised {short_message(exc)}"
    if not ok:
        return PeerResult("declined", None, why)
    try:
        out = run_family_item(peer, item)
    except Exception as exc:
        out = exc
    return _as_result(out, x)


def _run_in_process(peer: Peer, items: Sequence[BatchItem]) -> list[PeerResult]:
    if not items:
        return []
    why_not = _availability(peer)
    if why_not is not None:
        return [PeerResult("unavailable", None, why_not) for _ in items]
    results: list[PeerResult | None] = [None] * len(items)
    runnable: list[int] = []
    for i, (spec, x) in enumerate(items):
        arr = np.asarray(x)
        try:
            ok, why = peer.supports(spec, tuple(arr.shape), arr.dtype)
        except Exception as exc:
            ok, why = False, f"supports() raised {short_message(exc)}"
        if ok:
            runnable.append(i)
        else:
            results[i] = PeerResult("declined", None, why)
    if runnable:
        run_many = getattr(peer, "run_many", None)
        if callable(run_many) and len(runnable) > 1:
            try:
                outs: list[Any] = list(run_many([items[i] for i in runnable]))
            except Exception as exc:  # a batch-level failure is every item's rejection
                outs = [exc] * len(runnable)
        else:
            outs = []
            for i in runnable:
                spec, x = items[i]
                try:
                    outs.append(peer.run(spec, x))
                except Exception as exc:
                    outs.append(exc)
        for i, out in zip(runnable, outs):
            results[i] = _as_result(out, items[i][1])
    return [r if r is not None else PeerResult("rejects", None, "internal: no result") for r in results]


def _as_result(out: Any, x: np.ndarray) -> PeerResult:
    if isinstance(out, PeerDeclined):
        return PeerResult("declined", None, out.reason)
    if isinstance(out, InvalidPeerOutput):
        return PeerResult("invalid", None, str(out))
    if isinstance(out, BaseException):
        return PeerResult("rejects", None, short_message(out))
    if not isinstance(out, PeerOutput):
        return PeerResult("invalid", None, f"run() returned {type(out).__name__}, not a PeerOutput")
    try:
        return PeerResult("ok", validate_output(out, x), "")
    except InvalidPeerOutput as exc:
        return PeerResult("invalid", None, f"the peer's output is not a pooling result: {exc}")


# --------------------------------------------------------------------------- the worker process


def _peer_reference(peer: Peer) -> tuple[Any, ...]:
    """How a worker makes ``peer`` again: by calling the picklable ``rebuild`` the peer carries
    (every peer resolved by name does, see :class:`~poolcheck.peers.base.Peer`), else by
    unpickling the peer object itself."""
    rebuild = getattr(peer, "rebuild", None)
    if callable(rebuild):
        return ("rebuild", rebuild)
    return ("object", peer)


def _worker_main(conn: Connection, reference: tuple[Any, ...]) -> None:
    """Worker loop: build the peer once, then answer ``("run", items)`` until ``("stop",)``.

    The worker's stdout is stderr for its whole life (a peer that prints, at import or when
    called, never reaches the parent's machine-readable output)."""
    try:
        os.dup2(2, 1)
    except OSError:
        pass
    sys.stdout = sys.stderr
    conn.send(("booted", None))
    try:
        peer = reference[1]() if reference[0] == "rebuild" else reference[1]
    except SystemExit as exc:
        conn.send(("failed", f"the plugin called sys.exit({exc.code!r}) while loading"))
        return
    except BaseException as exc:
        conn.send(("failed", short_message(exc), _portable(exc)))
        return
    load = getattr(peer, "load_runtime", None)
    if callable(load):  # the runtime's import is loading time, not the first call's (RuntimePeer.load_runtime)
        try:
            load()
        except Exception:  # the first call reports what is wrong, as it would have
            pass
    conn.send(("ready", None))
    while True:
        try:
            message = conn.recv()
            if message[0] == "facts":
                with stdout_to_stderr():
                    conn.send(("done", describe_in_process(peer, message[1])))
                continue
            if message[0] != "run":
                return
            conn.send(("done", run_in_process(peer, message[1])))
        except (EOFError, OSError):  # the caller is gone (stopped or killed): leave quietly
            return


def _portable(exc: BaseException) -> PoolcheckError | None:
    """``exc`` when it is one of poolcheck's own errors and survives pickling (so the parent can
    raise it again: a peer name that names nothing, a module that is no peer), else None."""
    if not isinstance(exc, PoolcheckError):
        return None
    try:
        copy = pickle.loads(pickle.dumps(exc))
    except Exception:
        return None
    return copy if isinstance(copy, PoolcheckError) and str(copy) == str(exc) else None


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "worker process stopped answering"
    if code < 0:
        try:
            return f"worker process killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"worker process killed by signal {-code}"
    return f"worker process exited with code {code}"


class _Outcome(Exception):
    """Internal: a worker call ended in ``crash``, ``timeout`` or ``unavailable``."""

    def __init__(self, status: str, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(message)


#: A pickled batch up to this long is written at once (it fits the pipe's buffer: the write
#: does not wait for the worker); a longer one by a thread (:class:`_Sending`).
PIPE_BUFFER = 60_000


class _Sending(threading.Thread):
    """One batch on its way to a worker. A batch of long inputs may outgrow the connection's
    buffer, and the write then waits for the worker to drain it, so a long one is written by a
    thread of its own while the caller computes (the write releases the GIL); a worker that never
    reads it is killed at the call's timeout (:meth:`PeerWorker.receive`). No throughput gain was
    measurable on a loaded 2-core machine (docs/fuzzing.md, "Batches")."""

    def __init__(self, conn: Connection, message: Any) -> None:
        super().__init__(name="poolcheck-peer-send", daemon=True)
        self.conn = conn
        self.error: BaseException | None = None
        try:
            self.data: bytes | None = bytes(ForkingPickler.dumps(message))
            if len(self.data) <= PIPE_BUFFER:
                self.run()
            else:
                self.start()
        except BaseException as exc:  # raised again by the caller's receive (PeerWorker.receive)
            self.error, self.data = exc, None

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the write to end; whether it has."""
        if self.ident is not None:  # written by the thread
            self.join(timeout)
        return not self.is_alive()

    def run(self) -> None:
        try:
            if self.data is not None:
                self.conn.send_bytes(self.data)
        except BaseException as exc:  # raised again by the caller's receive (PeerWorker.receive)
            self.error = exc
        self.data = None


class PeerWorker:
    """One warm worker process serving one peer."""

    def __init__(self, peer: Peer, load_timeout: float = STARTUP_TIMEOUT) -> None:
        self.peer = peer
        #: Seconds the worker may take to build its peer once Python and poolcheck are up.
        self.load_timeout = load_timeout
        self.reference = _peer_reference(peer)
        self._ctx = multiprocessing.get_context("spawn")
        self._proc: Any = None
        self._conn: Connection | None = None
        self.starts = 0
        #: (monotonic deadline, timeout) of a batch sent and not yet received.
        self._due: tuple[float, float] | None = None
        #: The batch being written to the worker (see :class:`_Sending`), until it is received.
        self._sender: _Sending | None = None
        # A worker that could not start or load its peer will not do better next time: the
        # failure is kept and returned at once (close_workers() forgets it).
        self._startup_failure: _Outcome | None = None
        #: The poolcheck error the worker raised while building its peer, if any.
        self.load_error: PoolcheckError | None = None
        #: What the worker's peer said of itself, per tuple of operators asked (:func:`peer_facts`).
        self.facts: dict[tuple[str, ...], PeerFacts] = {}

    @property
    def restarts(self) -> int:
        """How often the worker was started again after a crash, timeout or stop."""
        return max(0, self.starts - 1)

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def connection(self) -> Connection | None:
        """The parent's end of the pipe to the worker (None while no worker runs)."""
        return self._conn

    def _start(self) -> None:
        if self._startup_failure is not None:
            raise self._startup_failure
        try:
            self._spawn()
        except _Outcome as outcome:
            self._startup_failure = outcome
            raise

    def _spawn(self) -> None:
        self._launch()
        self._await_ready()

    def _launch(self) -> None:
        """Start the worker process and return at once (:meth:`_await_ready` waits for it to
        have loaded its peer)."""
        self.starts += 1
        parent, child = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(
            target=_worker_main, args=(child, self.reference), name=f"poolcheck-peer-{self.peer.name}", daemon=True
        )
        try:
            proc.start()
        except Exception as exc:  # e.g. the peer object cannot be pickled
            parent.close()
            child.close()
            why = short_message(exc)
            if "bootstrapping phase" in why:
                why = ("the calling script has no `if __name__ == '__main__':` guard, and spawned workers "
                       "re-import it (or call with isolated=False)")
            raise _Outcome("unavailable", f"cannot start a worker for {self.peer.name}: {why}") from exc
        child.close()
        self._proc, self._conn = proc, parent

    def _await_ready(self) -> None:
        """Wait for the launched worker to boot and load its peer; raises :class:`_Outcome`
        (the worker stopped) when it does not within the timeouts, or cannot load it."""
        parent = self._conn
        assert parent is not None
        kind, detail = "", None
        for stage, limit in (("booted", STARTUP_TIMEOUT), ("ready", self.load_timeout)):
            if not parent.poll(limit):
                self.stop()
                what = "start" if stage == "booted" else "load"
                raise _Outcome("timeout", f"worker for {self.peer.name} did not {what} it within {limit:g} s")
            try:
                kind, detail, *error = parent.recv()
            except (EOFError, OSError):
                code = self._reap()
                raise _Outcome("crash", f"{_describe_exit(code)} while loading {self.peer.name}") from None
            if kind != "booted":
                break
        if kind != "ready":
            self.load_error = error[0] if error else None
            self._reap()
            raise _Outcome("unavailable", f"worker could not load {self.peer.name}: {detail}")

    def _reap(self) -> int | None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        self._due = None
        sender, self._sender = self._sender, None
        if sender is not None and proc is not None and sender.is_alive():
            proc.kill()  # the write ends (broken pipe) before the connection closes under it
            sender.wait(2.0)
        if conn is not None:
            conn.close()
        if proc is None:
            return None
        proc.join(2.0)
        if proc.is_alive():
            proc.kill()
            proc.join(2.0)
        return proc.exitcode

    def stop(self) -> None:
        """Stop the worker (killing it if it does not exit at once)."""
        self._ask_to_stop()
        self._await_stop(0.5)

    def _await_stop(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for a worker told to stop to exit, then kill it."""
        proc = self._proc
        if proc is not None and proc.is_alive():
            proc.join(grace)
            if proc.is_alive():
                proc.kill()
        self._reap()

    def _ask_to_stop(self) -> None:
        """Tell the worker to exit, without waiting for it (:meth:`stop` waits)."""
        proc, conn = self._proc, self._conn
        sender, self._sender = self._sender, None
        if sender is not None:  # a batch still being written: the stop message must not cut into it
            if not sender.wait(0.5) and proc is not None:
                proc.kill()
        if proc is not None and conn is not None and proc.is_alive():
            try:
                conn.send(("stop",))
            except (OSError, ValueError):
                pass

    def call(self, items: Sequence[Item], timeout: float) -> list[PeerResult]:
        """Run ``items`` in the worker; raises :class:`_Outcome` on crash/timeout/startup failure."""
        self.send(items, timeout)
        return self.receive()

    def send(self, items: Sequence[Item], timeout: float) -> None:
        """Hand ``items`` to the worker (starting it if needed) and return at once; the answer
        is due within ``timeout`` seconds from now (:meth:`receive`). Raises :class:`_Outcome`
        when the worker cannot start or the batch cannot be sent."""
        self._post(("run", list(items)), timeout)

    def ask_facts(self, ops: tuple[str, ...], timeout: float) -> None:
        """Ask the worker (starting it if needed) for its peer's facts about ``ops``; the answer
        (:meth:`receive_facts`) is due within ``timeout`` seconds."""
        self._post(("facts", ops), timeout)

    def receive_facts(self) -> PeerFacts:
        """The answer to :meth:`ask_facts`; raises :class:`_Outcome` as :meth:`receive` does."""
        facts = self._collect()
        assert isinstance(facts, PeerFacts)
        return facts

    def _post(self, message: tuple[Any, ...], timeout: float) -> None:
        if self._due is not None:  # an answer nobody collected (its caller raised): drop it
            self._drain()
        if not self.alive:
            if self._proc is not None:
                self._reap()
            self._start()
        conn = self._conn
        assert conn is not None
        self._sender = _Sending(conn, message)
        self._due = (time.monotonic() + timeout, timeout)

    def receive(self) -> list[PeerResult]:
        """The answer to the batch :meth:`send` handed over; raises :class:`_Outcome` when the
        worker died or gave no answer within the timeout (counted from the send)."""
        return list(self._collect())

    def _collect(self) -> Any:
        due, conn = self._due, self._conn
        if due is None or conn is None:  # stopped since the send
            raise _Outcome("crash", _describe_exit(None))
        (deadline, timeout), self._due = due, None
        try:
            return self._answer(conn, deadline, timeout)
        except _Outcome:
            raise
        except BaseException:
            # interrupted (Ctrl-C, SIGTERM) while the answer was due: it may still come, or come
            # half read, and the next batch would read it as its own (a campaign's last questions
            # to the peer, asked as it stops, got a batch of answers for one item): the worker goes
            if self._proc is not None:
                self._proc.kill()
            self._reap()
            raise

    def _answer(self, conn: Any, deadline: float, timeout: float) -> Any:
        sender, self._sender = self._sender, None
        if sender is not None:
            if not sender.wait(max(0.0, deadline - time.monotonic())):  # the worker never read it all
                self._proc.kill()
                self._reap()
                raise _Outcome("timeout", f"no answer within {timeout:g} s; worker killed")
            if isinstance(sender.error, OSError | ValueError):  # the worker is gone
                code = self._reap()
                raise _Outcome("crash", f"{_describe_exit(code)} ({short_message(sender.error)})") from None
            if sender.error is not None:
                raise sender.error
        if not conn.poll(max(0.0, deadline - time.monotonic())):
            self._proc.kill()
            self._reap()
            raise _Outcome("timeout", f"no answer within {timeout:g} s; worker killed")
        try:
            kind, payload = conn.recv()
        except (EOFError, OSError):
            code = self._reap()
            raise _Outcome("crash", _describe_exit(code)) from None
        assert kind == "done"
        return payload

    def _drain(self) -> None:
        """Read and drop an answer that was sent for but never received, so the next answer
        read is the next batch's (a worker that does not give it in time is stopped)."""
        try:
            self._collect()
        except _Outcome:
            pass


_WORKERS: dict[Any, PeerWorker] = {}


def worker_key(peer: Peer) -> tuple[str, Any]:
    """Which warm worker serves ``peer``: one per name it was resolved from (``ref``), else one
    per object. Peers with the same key share a worker, which holds one call at a time."""
    ref = getattr(peer, "ref", None)
    return ("ref", ref) if isinstance(ref, str) else ("id", id(peer))


def _worker_for(peer: Peer) -> PeerWorker:
    key = worker_key(peer)
    worker = _WORKERS.get(key)
    if worker is None or (key[0] == "id" and worker.peer is not peer):
        worker = PeerWorker(peer)
        _WORKERS[key] = worker
    return worker


def start_workers(peers: Sequence[Peer]) -> None:
    """Start the warm workers of ``peers`` side by side: every process is launched before any
    is waited for, so the runtimes load at once (their imports are seconds each: torch, OpenVINO,
    JAX) rather than one after the other at each peer's first call. A worker that is running
    already, or failed to start before, is left as it is; one that fails now keeps its failure,
    which its first call reports (:meth:`PeerWorker._start`), as it would have without this."""
    launched: list[PeerWorker] = []
    try:
        for peer in peers:
            if isinstance(peer, UnavailablePeer):
                continue
            worker = _worker_for(peer)
            if worker.alive or worker._startup_failure is not None or worker in launched:
                continue
            if worker._proc is not None:
                worker._reap()
            try:
                worker._launch()
            except _Outcome as outcome:
                worker._startup_failure = outcome
                continue
            launched.append(worker)
        while launched:
            worker = launched[0]
            try:
                worker._await_ready()
            except _Outcome as outcome:
                worker._startup_failure = outcome
            launched.pop(0)
    finally:
        # interrupted (Ctrl-C) while some were loading: those are killed at once (a loading
        # worker reads no message), and a later call starts them afresh (a launched worker's
        # first message is its boot, not an answer)
        _stop_all(launched, grace=0.0)


def peer_facts(peers: Sequence[Peer], ops: Sequence[str] = (), *, isolated: bool = True,
               timeout: float = STARTUP_TIMEOUT) -> list[PeerFacts]:
    """Each of ``peers``' :class:`~poolcheck.peers.base.PeerFacts` about ``ops``, asked where it
    runs: in its warm worker (started side by side with the others', as :func:`start_workers`
    does; the answer is kept for the worker's life) unless ``isolated`` is false, so a campaign
    or run never imports a runtime into poolcheck's own process. A runtime that is not
    installed is told in this process (its import fails at once: no worker is started for it);
    a worker that cannot start or answer makes its peer unavailable, with the reason. Ask before
    handing the peer a batch: a worker holds one question at a time."""
    ops = tuple(ops)
    if not isolated:
        return [describe_in_process(p, ops) for p in peers]
    out: list[PeerFacts | None] = [None] * len(peers)
    remote: list[int] = []
    for i, peer in enumerate(peers):
        if isinstance(peer, UnavailablePeer) or _not_installed(peer):
            out[i] = describe_in_process(peer, ops)
        else:
            remote.append(i)
    start_workers([peers[i] for i in remote])
    asked: dict[int, PeerWorker] = {}  # worker id -> the worker asked (peers sharing one ask once)
    for i in remote:
        worker = _worker_for(peers[i])
        if ops in worker.facts or id(worker) in asked:
            continue
        if worker._due is not None:  # asking would drop the answer a caller still waits for
            raise RuntimeError(f"peer_facts: {peers[i].name} has a batch out; ask before handing it one")
        try:
            worker.ask_facts(ops, timeout)
            asked[id(worker)] = worker
        except _Outcome as outcome:
            worker.facts[ops] = _unavailable(outcome)
    for worker in asked.values():
        try:
            worker.facts[ops] = worker.receive_facts()
        except _Outcome as outcome:
            worker.facts[ops] = _unavailable(outcome)
    for i in remote:
        out[i] = _worker_for(peers[i]).facts[ops]
    return [f for f in out if f is not None]


def _unavailable(outcome: _Outcome) -> PeerFacts:
    """A peer whose worker could not start, load or answer (as :class:`UnavailablePeer` says it)."""
    why = outcome.message if outcome.status == "unavailable" else f"{outcome.status}: {outcome.message}"
    return PeerFacts(False, why)


def _not_installed(peer: Peer) -> bool:
    """``peer`` wraps a runtime module (its ``module``) that is not installed here."""
    module = getattr(peer, "module", None)
    if not isinstance(module, str) or not module:
        return False
    try:
        return importlib.util.find_spec(module.split(".")[0]) is None
    except (ImportError, ValueError):
        return False


def close_workers() -> None:
    """Stop every warm worker (registered to run at interpreter exit): all are told at once and
    share one grace period (a runtime's teardown takes a while: stopped one at a time, eight
    workers took 2 s)."""
    workers = list(_WORKERS.values())
    _WORKERS.clear()
    _stop_all(workers, grace=0.5)


def _stop_all(workers: Sequence[PeerWorker], grace: float) -> None:
    """Tell every one of ``workers`` to stop, then wait for them within one shared ``grace``
    period, killing those still running."""
    for worker in workers:
        worker._ask_to_stop()
    deadline = time.monotonic() + grace
    for worker in workers:
        worker._await_stop(max(0.0, deadline - time.monotonic()))


atexit.register(close_workers)


# --------------------------------------------------------------------------- public API


def call_peer_many(
    peer: Peer,
    items: Sequence[Item],
    *,
    isolated: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[PeerResult]:
    """Run several (spec, input) items (or family items, see :func:`run_in_process`) on ``peer``;
    one :class:`PeerResult` per item, in order.

    Isolated, the batch is one call to the peer's warm worker with ``timeout`` seconds for the
    whole batch. If a batch of several items crashes or times out, each item is re-run alone
    so the crash or hang is pinned on the items that cause it.
    """
    items = list(items)
    if not items:
        return []
    if isinstance(peer, UnavailablePeer):  # e.g. a plugin that crashed, exited or hung while loading
        return [PeerResult(peer.status, None, peer.reason) for _ in items]
    if not isolated:
        return run_in_process(peer, items)
    worker = _worker_for(peer)
    try:
        return worker.call(items, timeout)
    except _Outcome as outcome:
        return _after_failure(worker, items, outcome, timeout)


def _after_failure(worker: PeerWorker, items: Sequence[Item], outcome: _Outcome,
                   timeout: float) -> list[PeerResult]:
    """A batch ended in ``outcome``: every item's result, each item re-run alone when the
    batch had several (the crash or hang is pinned on the items that cause it)."""
    if len(items) == 1 or outcome.status == "unavailable":
        return [PeerResult(outcome.status, None, outcome.message) for _ in items]
    results: list[PeerResult] = []
    for item in items:
        try:
            results.extend(worker.call([item], timeout))
        except _Outcome as outcome:
            results.append(PeerResult(outcome.status, None, outcome.message))
    return results


class Submitted:
    """A batch handed to a peer (:func:`submit_peer_many`): call it once for one
    :class:`PeerResult` per item. ``connection`` is the worker's end that becomes readable when
    the answer is in (for :func:`multiprocessing.connection.wait`), ``due`` the monotonic time by
    which it must be; both are None when the answer is computed by the call itself (in-process,
    or a worker that could not take the batch)."""

    def __init__(self, results: Callable[[], list[PeerResult]], connection: Connection | None = None,
                 due: float | None = None) -> None:
        self._results = results
        self.connection = connection
        self.due = due

    def __call__(self) -> list[PeerResult]:
        return self._results()


def submit_peer_many(
    peer: Peer,
    items: Sequence[Item],
    *,
    isolated: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> Submitted:
    """:func:`call_peer_many`, started now and finished by calling the returned
    :class:`Submitted`: an isolated batch goes to the peer's warm worker at once, so the worker
    computes while the caller does other work (the engines' side of the same batch, or other
    peers' answers); the timeout counts from now. In-process (``isolated=False``) the whole call
    happens when it is called. Call each one once, before the next call to the same peer."""
    items = list(items)
    if not isolated or not items or isinstance(peer, UnavailablePeer):
        return Submitted(lambda: call_peer_many(peer, items, isolated=isolated, timeout=timeout))
    worker = _worker_for(peer)
    failed: _Outcome | None = None
    try:
        worker.send(items, timeout)
    except _Outcome as outcome:
        failed = outcome

    def results() -> list[PeerResult]:
        outcome = failed
        if outcome is None:
            try:
                return worker.receive()
            except _Outcome as exc:
                outcome = exc
        return _after_failure(worker, items, outcome, timeout)

    if failed is not None:
        return Submitted(results)
    return Submitted(results, worker.connection, time.monotonic() + timeout)


class _Loading:
    """A stand-in peer for :func:`probe_load`: a name and how to build the real one."""

    def __init__(self, name: str, rebuild: Callable[[], Peer]) -> None:
        self.name = name
        self.rebuild = rebuild


def probe_load(name: str, rebuild: Callable[[], Peer], timeout: float, *,
               raise_errors: bool = False) -> tuple[str, str] | None:
    """Build a plugin with ``rebuild`` (picklable) in a throw-away worker first: None if it
    loads (or raises an ordinary error, reported again by the in-process load), else
    ``(status, reason)`` when it killed its process (``crash``), called ``sys.exit`` (``crash``)
    or hung (``timeout``) while loading. With ``raise_errors``, a poolcheck error raised while
    loading (no such module, not a peer) is raised here, so the caller need not load the module
    itself to learn it."""
    worker = PeerWorker(_Loading(name, rebuild), load_timeout=timeout)  # type: ignore[arg-type]
    try:
        worker._spawn()
    except _Outcome as outcome:
        if outcome.status == "unavailable" and "sys.exit(" not in outcome.message:
            if raise_errors and worker.load_error is not None:
                raise worker.load_error from None
            return None
        status = "crash" if outcome.status == "unavailable" else outcome.status
        return status, f"loading the plugin: {outcome.message}"
    finally:
        worker.stop()
    return None


def call_peer(
    peer: Peer,
    spec: Any,
    x: np.ndarray,
    *,
    isolated: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> PeerResult:
    """Run one configuration on ``peer``: ``ok`` with its output, or why not."""
    return call_peer_many(peer, [(spec, x)], isolated=isolated, timeout=timeout)[0]


def call_peer_family(
    peer: Peer,
    items: Sequence[FamilyItem],
    *,
    isolated: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[PeerResult]:
    """Run family items ``(FamilySpec, x, indices or None)`` on ``peer`` (declined, without
    calling it, where its ``family_ops`` lacks the op); one :class:`PeerResult` per item."""
    return submit_peer_family(peer, items, isolated=isolated, timeout=timeout)()


def submit_peer_family(
    peer: Peer,
    items: Sequence[FamilyItem],
    *,
    isolated: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> Submitted:
    """:func:`call_peer_family`, started now and finished by calling the returned
    :class:`Submitted` (as :func:`submit_peer_many`)."""
    declined: dict[int, PeerResult] = {}
    asked: list[int] = []
    for i, (spec, _, _) in enumerate(items):
        why = None if isinstance(peer, UnavailablePeer) else family_declined(peer, spec)
        if why is None:
            asked.append(i)
        else:
            declined[i] = PeerResult("declined", None, why)
    answer = submit_peer_many(peer, [items[i] for i in asked], isolated=isolated, timeout=timeout)

    def results() -> list[PeerResult]:
        answers = dict(zip(asked, answer(), strict=True))
        return [answers[i] if i in answers else declined[i] for i in range(len(items))]

    return Submitted(results, answer.connection, answer.due)
