"""Fuzz campaigns on Dask distributed: ``poolcheck fuzz --cluster tcp://HOST:8786``.

How a cluster campaign runs:

1. The client (the ``poolcheck fuzz`` process) connects to the scheduler and submits one *shard*
   per worker process, pinned to it: a :class:`~poolcheck.fuzz.session.Session` with its own seed
   stream (``--seed`` and the shard number, exactly as ``--jobs`` derives them) and its own peer
   workers. Budgets are split as ``--jobs`` splits them.
2. Every shard streams events through one ``distributed.Queue`` held by the scheduler: its machine
   fingerprint when it starts, every new signature when first seen (the unshrunk reproducer),
   every shrunk reproducer, and its counters four times a second. An event already put survives
   the worker's death: the queue lives on the scheduler, not on the worker.
3. Deduplication is central. The first shard to report a new signature *claims* it; the client
   publishes the claims (a ``distributed.Variable``) and the other shards treat a claimed signature
   as settled, so each divergence is shrunk once (two shards that meet a signature within the same
   half second may both shrink it; the smaller reproducer is kept). The client saves each
   signature once, through the same :func:`~poolcheck.fuzz.campaign.run_campaign` as one machine.
4. A worker that dies loses at most the example it was on: its shard's findings and counters
   streamed so far are kept, its claims are released for the others to shrink, and the report
   names the worker and when it was lost. Ctrl-C sets a stop flag that every shard polls; the
   shards return what they found and the reports are still written.

Why a queue on the scheduler rather than pub/sub or many small tasks: pub/sub is best-effort
(a message published just before a worker dies may never arrive), and one task per example
would pay a scheduler round trip per example and restart hypothesis (and its shrinking) each
time. A long-lived task per worker with a reliable queue keeps hypothesis' search state in one
process and costs one small message per event.

``--jobs N`` without ``--cluster`` keeps using the processes of :func:`run_sessions` (no Dask
needed on one machine, and no scheduler to start).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import multiprocessing
import pickle
import socket
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from poolcheck.errors import AttributeValueError, PoolcheckError
from poolcheck.fingerprint import machine_fingerprint, only_on
from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.campaign import Campaign, run_campaign
from poolcheck.fuzz.database import is_redis
from poolcheck.fuzz.session import (
    PROGRESS_INTERVAL,
    Divergence,
    FuzzOptions,
    Progress,
    Session,
    SessionResult,
    ends_exploration,
    raise_if_stopped,
    resolve_peer_list,
    share,
)
from poolcheck.peers.isolation import close_workers
from poolcheck.results import Signature

#: Seconds the client waits past the time budget (shrinking a last find, shutting peers down)
#: before it stops the shards, and again before it cancels them.
GRACE_S = 45.0
STOP_WAIT_S = 15.0
#: Seconds without an answer from the scheduler before the client gives the campaign up (and
#: still writes what was streamed).
SCHEDULER_LOST_S = 30.0
#: How often a shard re-reads the claims and the stop flag, and the client the worker list.
POLL_S = 0.5


def check_address(address: str) -> str:
    """``tcp://HOST:PORT`` (or ``tls://``, ``ws://``, ``inproc://``) with a port in [1, 65535],
    else a usage error."""
    text = address.strip()
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in ("tcp", "tls", "ws", "wss", "inproc", "ucx") or not rest:
        raise AttributeValueError("--cluster", f"expected a scheduler address like tcp://HOST:8786, got {address!r}")
    if scheme in NETWORK_SCHEMES:
        _host_port(text)
    return text


#: Address schemes that name a host and a TCP port.
NETWORK_SCHEMES = ("tcp", "tls", "ws", "wss")
#: The port of a scheduler address that names none (Dask's own default).
DEFAULT_SCHEDULER_PORT = 8786
#: Seconds a scheduler may take to accept a connection and send Dask's greeting (a scheduler
#: sends it at once; a port where something else listens never does).
PROBE_TIMEOUT_S = 5.0


def _host_port(address: str) -> tuple[str, int]:
    """The host and port of a ``tcp://HOST:PORT`` address (``[::1]:8786`` for IPv6)."""
    rest = address.partition("://")[2].split("/", 1)[0]
    host, port_text = rest, ""
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        port_text = tail[1:] if tail.startswith(":") else ""
    elif rest.count(":") == 1:
        host, _, port_text = rest.partition(":")
    if not host:
        raise AttributeValueError("--cluster", f"no host in {address!r}")
    if not port_text:
        return host, DEFAULT_SCHEDULER_PORT
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise AttributeValueError("--cluster", f"the port must be a number in [1, 65535], got {port_text!r}")
    return host, int(port_text)


def probe_scheduler(address: str, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Fail fast, in one line, unless a Dask scheduler answers at ``address`` within ``timeout``:
    nothing listening is said at once, and a port where something else listens (which Dask's own
    connect would wait on without end: its handshake read has no time limit) after ``timeout``."""
    scheme = address.partition("://")[0]
    if scheme not in NETWORK_SCHEMES:
        return
    host, port = _host_port(address)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise PoolcheckError(f"--cluster {address}: nothing answers at {host}:{port} "
                             f"({exc.strerror or type(exc).__name__})") from None
    if scheme != "tcp":
        return  # tls/ws need the cluster's security settings to greet: Client's own timeout applies
    from distributed.comm import connect

    async def greet() -> None:
        comm = await connect(address, timeout=timeout)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(greet(), timeout))
    except (OSError, ValueError, TypeError, EOFError) as exc:  # TimeoutError is an OSError
        why = f"no Dask greeting within {timeout:g} s" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
        raise PoolcheckError(f"--cluster {address}: not a Dask scheduler ({why})") from None
    except Exception as exc:  # distributed's own errors (a garbled greeting)
        raise PoolcheckError(f"--cluster {address}: not a Dask scheduler ({type(exc).__name__}: {exc})") from None


def _dask() -> Any:
    try:
        import distributed
    except ImportError:
        raise PoolcheckError("--cluster needs Dask distributed: pip install 'poolcheck[cluster]'") from None
    return distributed


# --------------------------------------------------------------------------- worker side


class _Channel:
    """A shard's line to the client: the event queue, the claims and the stop flag."""

    def __init__(self, name: str, job: int) -> None:
        d = _dask()
        self.job = job
        self.queue = d.Queue(name)
        self.claims_var = d.Variable(name + "-claims")
        self.stop_var = d.Variable(name + "-stop")
        self.claims: dict[str, int] = {}
        self.stop = ""  # "" | "finish" (wind down like at the deadline) | "interrupt" (Ctrl-C)
        self._polled = 0.0
        self.messages = 0  # round trips to the scheduler (events put, claims and stop read)
        self.seconds = 0.0  # time spent in them

    def emit(self, kind: str, payload: Any) -> None:
        t = time.perf_counter()
        self.queue.put(pickle.dumps((kind, self.job, payload, time.time())))
        self.messages += 1
        self.seconds += time.perf_counter() - t

    def poll(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._polled < POLL_S:
            return
        self._polled = now
        t = time.perf_counter()
        with contextlib.suppress(Exception):
            self.claims = dict(self.claims_var.get(timeout=5) or {})
            self.stop = str(self.stop_var.get(timeout=5) or "")
        self.messages += 2
        self.seconds += time.perf_counter() - t


class ShardSession(Session):
    """A session that streams its finds and honours the other shards' claims."""

    def __init__(self, channel: _Channel, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.channel = channel
        self.sent: set[str] = set()
        self.sent_shrunk: set[str] = set()
        self.mine: set[str] = set()  # signatures this shard is shrinking

    def _settle_claimed(self) -> None:
        for sig, job in self.channel.claims.items():
            if job != self.channel.job:
                self.settled.add(sig)

    def _begin_example(self) -> None:
        self.channel.poll()
        if self.channel.stop == "interrupt":
            raise KeyboardInterrupt  # Session.run turns it into an interrupted result
        self._settle_claimed()

    def _end_example(self) -> None:
        self._stream_new()
        for sig in sorted(self.shrunk - self.sent_shrunk):
            self.sent_shrunk.add(sig)
            self.channel.emit("shrunk", (sig, self.findings[sig], self.shrunk_at.get(sig, 0.0)))

    def _claim(self, key: str) -> bool:
        """Shrink ``key`` unless another shard claimed it meanwhile."""
        if key in self.mine:
            return True
        self.channel.poll(force=True)
        if self.channel.claims.get(key, self.channel.job) != self.channel.job:
            self.settled.add(key)
            self.findings.pop(key, None)
            return False
        self.mine.add(key)  # ours: the shrinking steps that follow ask no more
        return True

    def _example(self, batch: list[Any]) -> None:
        """While shrinking: another new divergence met on the way is shrunk here only if no
        other shard claimed it."""
        self.channel.poll()
        if self.channel.stop == "interrupt":
            raise KeyboardInterrupt
        self._settle_claimed()
        try:
            super()._example(batch)
        except Divergence as d:
            sig = str(getattr(type(d), "signature", d.finding.signature))  # the group key
            if not self._claim(sig):
                return
            raise
        finally:
            self._stream_new()

    def _out_of_budget(self) -> bool:
        return self.channel.stop == "finish" or super()._out_of_budget()

    def _stream_new(self) -> None:
        for sig, f in list(self.findings.items()):
            if sig not in self.sent:
                self.sent.add(sig)
                self.channel.emit("found", (sig, f, self.detected_at.get(sig, 0.0)))


@contextlib.contextmanager
def _may_have_children() -> Iterator[None]:
    """Dask starts worker processes as daemons (``distributed.worker.daemon``), and a daemon may
    not start processes; the isolated peers run in child processes, which end with the shard."""
    proc = multiprocessing.current_process()
    was = proc.daemon
    if was:
        proc._config["daemon"] = False  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if was:
            proc._config["daemon"] = True  # type: ignore[attr-defined]


def _peer_refs(peers: Sequence[Any]) -> dict[str, str]:
    return {p.name: str(getattr(p, "ref", p.name)) for p in peers}


def shard_main(options: FuzzOptions, job: int, budget: float | None, max_examples: int | None, name: str) -> bytes:
    """One shard on one Dask worker; returns the pickled :class:`SessionResult` and the shard's
    messaging counters."""
    from distributed import get_worker


    # The worker's own threads (heartbeats, retries with jitter) draw from the ``random`` module
    # while hypothesis generates; hypothesis would blame the strategies for it.
    warnings.filterwarnings("ignore", message="Do not use the `random` module inside strategies")
    channel = _Channel(name, job)
    address = get_worker().address
    try:
        with _may_have_children():
            peers = resolve_peer_list(options.peers)
            session = ShardSession(channel, options, peers, job=job,
                                   on_progress=lambda p: channel.emit("progress", p),
                                   deadline=time.time() + budget if budget else None, max_examples=max_examples)
            fp = machine_fingerprint(session.versions, _peer_refs(session.peers))
            channel.emit("hello", (address, fp.to_dict()))
            result = session.run()
            for f in result.findings.values():
                f.extra["fingerprint"] = fp.id
            return pickle.dumps((result, {"messages": channel.messages, "messaging_s": channel.seconds}))
    finally:
        close_workers()
        with contextlib.suppress(Exception):
            channel.queue.close()


# --------------------------------------------------------------------------- client side


@dataclass
class Shard:
    """What the client knows of one shard."""

    job: int
    worker: str  # the worker's address
    name: str = ""  # the worker's name (``dask worker --name``)
    state: str = "submitted"  # submitted | running | done | lost | failed | cancelled
    fingerprint: str | None = None
    progress: Progress = field(default_factory=Progress)
    started: float | None = None  # client clock
    lost_at_s: float | None = None  # seconds into the campaign
    lost_at: str = ""  # UTC time, ISO 8601
    error: str = ""
    found: dict[str, O.Finding] = field(default_factory=dict)
    shrunk: set[str] = field(default_factory=set)
    detected_at: dict[str, float] = field(default_factory=dict)
    shrunk_at: dict[str, float] = field(default_factory=dict)
    result: SessionResult | None = None
    stats: dict[str, Any] = field(default_factory=dict)  # the shard's messaging: count and seconds

    def rate(self) -> float:
        return self.progress.cases / self.progress.elapsed if self.progress.elapsed > 0 else 0.0


@dataclass
class ClusterRun:
    """The client's record of one cluster campaign (``result.extra["cluster"]``)."""

    address: str
    shards: list[Shard] = field(default_factory=list)
    fingerprints: dict[str, dict[str, Any]] = field(default_factory=dict)
    owner: dict[str, int] = field(default_factory=dict)  # signature -> shard that claimed it
    started: float = 0.0
    interrupted: bool = False

    def lost(self) -> list[Shard]:
        return [s for s in self.shards if s.state == "lost"]


def _utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _portable(options: FuzzOptions) -> FuzzOptions:
    """The options as a worker sees them: a peer file and a database folder named relative to
    this process's folder become absolute (a worker's folder is its own)."""

    peers = tuple(str(Path(p).resolve()) if isinstance(p, str) and Path(p).is_file() else p for p in options.peers)
    database = options.database
    if database and not is_redis(database):
        database = str(Path(database).resolve())
    return replace(options, peers=peers, database=database)


def _workers(client: Any) -> dict[str, dict[str, Any]]:
    """Every connected worker: address -> info (newer Dask lists only the first few unless asked)."""
    try:
        return client.scheduler_info(n_workers=-1)["workers"]
    except TypeError:  # Dask before n_workers
        return client.scheduler_info()["workers"]


class ClusterDriver:
    """Runs the sessions of a campaign on a Dask cluster (``sessions=`` of ``run_campaign``)."""

    def __init__(self, address: str, *, connect_timeout: float = 30.0, workers: int | None = None,
                 on_event: Callable[[str], None] | None = None) -> None:
        self.address = check_address(address)
        self.connect_timeout = connect_timeout
        self.max_workers = workers
        self.on_event = on_event or (lambda _s: None)
        self.run = ClusterRun(self.address)

    # ------------------------------------------------------------------ events

    def _handle(self, raw: bytes, claims: dict[str, int]) -> bool:
        kind, job, payload, _t = pickle.loads(raw)
        shard = self.run.shards[job]
        changed = False
        if kind == "hello":
            _address, fp = payload
            shard.fingerprint = fp["id"]
            self.run.fingerprints[fp["id"]] = fp
            shard.state = "running"
            shard.started = time.monotonic()
        elif kind == "progress":
            shard.progress = payload
        elif kind == "found":
            sig, f, t = payload
            f.extra["fingerprint"] = shard.fingerprint
            f.extra["worker"] = shard.worker
            shard.found[sig] = f
            shard.detected_at[sig] = t
            if sig not in claims:
                claims[sig] = job
                self.run.owner[sig] = job
                changed = True
        elif kind == "shrunk":
            sig, f, t = payload
            f.extra["fingerprint"] = shard.fingerprint
            f.extra["worker"] = shard.worker
            shard.found[sig] = f
            shard.shrunk.add(sig)
            shard.shrunk_at[sig] = t
        return changed

    def _merged_progress(self) -> Progress:
        total = Progress()
        for s in self.run.shards:
            total.merge(s.progress)
        rates = ", ".join(
            f"{s.name or s.job} LOST" if s.state == "lost"
            else f"{s.name or s.job} {s.rate():,.0f}/s {len(set(s.progress.divergent) | set(s.found))} div"
            for s in self.run.shards)
        total.phase = f"{len(self.run.shards)} workers: {rates}"
        return total

    # ------------------------------------------------------------------ the run

    def sessions(self, options: FuzzOptions, on_progress: Callable[[Progress], None] | None = None
                 ) -> list[SessionResult]:
        """Submit one shard per worker, stream their events, and return one result per shard (a
        lost shard's result is rebuilt from what it streamed)."""
        d = _dask()
        try:
            client = d.Client(self.address, timeout=self.connect_timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise PoolcheckError(f"--cluster {self.address}: cannot reach the scheduler ({exc})") from None
        name = f"poolcheck-{uuid.uuid4().hex[:12]}"
        queue = d.Queue(name, client=client)
        claims_var = d.Variable(name + "-claims", client=client)
        stop_var = d.Variable(name + "-stop", client=client)
        try:
            claims: dict[str, int] = {}
            claims_var.set({})
            stop_var.set("")
            client.wait_for_workers(1, timeout=self.connect_timeout)
            info = _workers(client)
            workers = sorted(info)
            if self.max_workers:
                workers = workers[: self.max_workers]
            n = len(workers)
            options.jobs = n  # the shards are exactly ``--jobs n``'s sessions: the replay says so
            budget = options.time_budget
            self.run.started = time.monotonic()
            self.run.shards = [Shard(job, w, str(info[w].get("name", w))) for job, w in enumerate(workers)]
            futures = {}
            portable = _portable(options)
            for job, w in enumerate(workers):
                fut = client.submit(shard_main, portable, job, budget,
                                    share(options.max_examples, n, job), name, key=f"{name}-shard-{job}",
                                    workers=[w], allow_other_workers=False, pure=False, retries=0)
                futures[job] = fut
            self.on_event(f"submitted {n} shard(s) to {self.address}")
            self._loop(client, queue, claims_var, stop_var, claims, futures, budget, on_progress, options)
        finally:
            with contextlib.suppress(Exception):
                queue.close()  # release the campaign's queue and variables on the scheduler
                claims_var.delete()
                stop_var.delete()
            with contextlib.suppress(Exception):
                client.close(timeout=5)
        failed = [s for s in self.run.shards if s.state == "failed"]
        if failed and len(failed) == len(self.run.shards) and not self.run.interrupted:
            # every shard raised (as with --jobs): an error, not a partial result
            errors = "\n".join(f"shard {s.job} on {s.worker}: {s.error}" for s in failed)
            raise PoolcheckError(f"every shard of the cluster campaign failed:\n{errors}")
        results = []
        for s in self.run.shards:
            if s.result is not None:
                results.append(s.result)
            elif s.found or s.progress.examples:
                # rebuilt from what the shard streamed; its examples so far stand for its rounds
                # (the replay command counts examples)
                results.append(SessionResult(dict(s.found), set(s.shrunk), dict(s.detected_at), dict(s.shrunk_at),
                                             s.progress, {}, {}, False, rounds=[(-1, s.progress.examples)]))
        if not results:
            errors = "; ".join(f"shard {s.job} on {s.worker}: {s.state} {s.error}".strip() for s in self.run.shards)
            raise PoolcheckError(f"no shard of the cluster campaign returned anything ({errors})")
        for s in self.run.lost():
            results[0].warnings.append(f"worker {s.name} at {s.worker} (shard {s.job}) lost {s.lost_at_s:.1f} s "
                                       f"into the campaign ({s.lost_at}); its findings streamed before then are kept")
        for s in self.run.shards:
            if s.state == "failed":
                results[0].warnings.append(f"shard {s.job} on {s.worker} failed: {s.error}")
        if self.run.interrupted:
            for r in results:
                r.interrupted = True
        return results

    def _loop(self, client: Any, queue: Any, claims_var: Any, stop_var: Any, claims: dict[str, int],
              futures: dict[int, Any], budget: float | None, on_progress: Callable[[Progress], None] | None,
              options: FuzzOptions) -> None:
        shards = self.run.shards
        hard_deadline = self.run.started + budget + GRACE_S if budget else None
        stopping_since: float | None = None
        interrupts = 0
        last_poll = last_progress = 0.0
        last_contact = time.monotonic()
        pending = set(futures)

        def drain() -> None:
            nonlocal last_progress
            changed = False
            with contextlib.suppress(Exception):
                for raw in queue.get(batch=True, timeout=5):
                    changed |= self._handle(raw, claims)
            if changed:
                with contextlib.suppress(Exception):
                    claims_var.set(dict(claims))
            now = time.monotonic()
            if on_progress is not None and now - last_progress >= PROGRESS_INTERVAL:
                last_progress = now
                p = self._merged_progress()
                p.elapsed = now - self.run.started
                on_progress(p)

        def stop(how: str = "finish") -> None:
            nonlocal stopping_since
            if stopping_since is None or how == "interrupt":
                stopping_since = stopping_since or time.monotonic()
                with contextlib.suppress(Exception):
                    stop_var.set(how)

        while pending:
            try:
                if interrupts == 0:  # a stop whose KeyboardInterrupt was dropped (see session._STOP)
                    raise_if_stopped()
                drain()
                for job in sorted(pending):
                    fut = futures[job]
                    if fut.status == "finished":
                        drain()  # the shard's last events precede its result
                        try:
                            result, shards[job].stats = pickle.loads(fut.result(timeout=60))
                            shards[job].result = result
                            shards[job].progress = result.progress
                            shards[job].state = "done"
                        except Exception as exc:  # the result could not be fetched: keep what streamed
                            shards[job].state = "failed"
                            shards[job].error = f"its result could not be fetched: {type(exc).__name__}: {exc}"
                        pending.discard(job)
                    elif fut.status in ("error", "cancelled", "lost"):
                        failure = fut.exception() if fut.status == "error" else None
                        shards[job].state = "failed" if failure is not None else "lost"
                        shards[job].error = f"{type(failure).__name__}: {failure}" if failure is not None else fut.status
                        if shards[job].state == "lost" and shards[job].lost_at_s is None:
                            shards[job].lost_at_s = time.monotonic() - self.run.started
                            shards[job].lost_at = _utc_now()
                        pending.discard(job)
                now = time.monotonic()
                if now - last_poll >= POLL_S:
                    last_poll = now
                    try:
                        alive = set(_workers(client))
                        last_contact = now
                    except Exception as exc:  # the scheduler is gone (or the network to it)
                        alive = None
                        if now - last_contact > SCHEDULER_LOST_S:
                            self.run.interrupted = True
                            self.on_event(f"lost the scheduler {self.address}: {exc}")
                            for job in sorted(pending):
                                shards[job].error = f"the scheduler was unreachable for {SCHEDULER_LOST_S:g} s"
                                self._lose(shards[job], now, claims)
                            pending.clear()
                    for job in sorted(pending) if alive is not None else ():
                        s = shards[job]
                        if alive is not None and s.worker not in alive:
                            self._lose(s, now, claims)
                            with contextlib.suppress(Exception):
                                claims_var.set(dict(claims))
                                futures[job].cancel()
                            pending.discard(job)
                if hard_deadline is not None and now > hard_deadline:
                    stop()
                # --exit-first: one shrunk find of a --fail-on severity ends all shards
                if any(ends_exploration(s.found[sig], options) for s in shards for sig in s.shrunk
                                      if sig in s.found):
                    stop()
                if stopping_since is not None and now - stopping_since > STOP_WAIT_S:
                    for job in sorted(pending):
                        with contextlib.suppress(Exception):
                            futures[job].cancel()
                        shards[job].state = "cancelled"
                    pending.clear()
                time.sleep(0.05)
            except KeyboardInterrupt:
                self.run.interrupted = True
                interrupts += 1
                if interrupts > 1:  # a second Ctrl-C: do not wait for the shards
                    stopping_since = (stopping_since or time.monotonic()) - STOP_WAIT_S
                else:
                    self.on_event("interrupted: stopping the shards (Ctrl-C again to cancel them)")
                stop("interrupt")
        drain()

    def _lose(self, shard: Shard, now: float, claims: dict[str, int]) -> None:
        shard.state = "lost"
        shard.lost_at_s = now - self.run.started
        shard.lost_at = _utc_now()
        for sig in [s for s, j in claims.items() if j == shard.job and s not in shard.shrunk]:
            del claims[sig]  # someone else may shrink it now
        self.on_event(f"lost worker {shard.name} at {shard.worker} (shard {shard.job}) after {shard.lost_at_s:.1f} s")

    # ------------------------------------------------------------------ the report

    def summary(self) -> dict[str, Any]:
        """``result.extra["cluster"]``: scheduler, shards (worker, fingerprint, state, counters),
        lost workers, and per signature who found it and which machines saw it."""
        run = self.run
        seen: dict[str, set[str]] = {}
        ran: dict[str, set[str]] = {}  # subject -> fingerprints whose shard ran it
        for s in run.shards:
            if s.fingerprint is None:
                continue
            for sig in list(s.progress.divergent) + list(s.found):
                seen.setdefault(sig, set()).add(s.fingerprint)
            for peer in s.progress.peer_status:
                ran.setdefault(peer, set()).add(s.fingerprint)
        findings: dict[str, Any] = {}
        for sig, fps in sorted(seen.items()):
            subject = Signature.parse(sig).subject
            owner = run.owner.get(sig)
            unseen = ran.get(subject, set()) - fps
            note = only_on(subject, [run.fingerprints[f] for f in sorted(fps)],
                           [run.fingerprints[f] for f in sorted(unseen)])
            findings[sig] = {"shard": owner, "worker": run.shards[owner].worker if owner is not None else None,
                             "fingerprints": sorted(fps), **({"only_on": note} if note else {})}
        return {
            "scheduler": run.address,
            "shards": [{"shard": s.job, "worker": s.worker, "name": s.name, "state": s.state,
                        "fingerprint": s.fingerprint,
                        "examples": s.progress.examples, "cases": s.progress.cases,
                        "cases_per_s": round(s.rate(), 1), "elapsed_s": round(s.progress.elapsed, 2),
                        "messages": s.stats.get("messages"),
                        "messaging_s": round(s.stats["messaging_s"], 3) if "messaging_s" in s.stats else None,
                        "lost_at_s": None if s.lost_at_s is None
                        else round(s.lost_at_s, 1), **({"error": s.error} if s.error else {})}
                       for s in run.shards],
            "lost": [{"worker": s.worker, "name": s.name, "shard": s.job, "at_s": round(s.lost_at_s or 0.0, 1),
                      "at": s.lost_at} for s in run.lost()],
            "findings": findings,
        }

    def annotate(self, result: Any) -> None:
        """Fingerprints and the cluster record into a result: ``extra["fingerprints"]`` (id ->
        fingerprint), ``extra["cluster"]``, and ``fingerprint:ID`` / ``worker:ADDR`` tags on each find."""
        summary = self.summary()
        result.extra["fingerprints"] = dict(self.run.fingerprints)
        result.extra["cluster"] = summary
        for case in result.cases:
            sig = case.signature
            info = summary["findings"].get(sig.key) if sig is not None else None
            if not info:
                continue
            case.tags += [f"fingerprint:{fp}" for fp in info["fingerprints"]]
            if info.get("worker"):
                case.tags.append(f"worker:{info['worker']}")
            if info.get("only_on"):
                case.tags.append(f"only-on:{info['only_on']}")


def run_cluster_campaign(options: FuzzOptions, address: str, *, on_event: Callable[[str], None] | None = None,
                         connect_timeout: float = 30.0, max_workers: int | None = None, **campaign: Any) -> Any:
    """:func:`~poolcheck.fuzz.campaign.run_campaign` with the sessions on a Dask cluster
    (``max_workers``: use at most this many of the scheduler's workers; 1 or None: all)."""
    driver = ClusterDriver(address, connect_timeout=connect_timeout, on_event=on_event,
                           workers=max_workers if max_workers and max_workers > 1 else None)
    _dask()
    probe_scheduler(driver.address)  # before any work: a wrong address is said in seconds
    result = run_campaign(options, sessions=driver.sessions, **campaign)
    driver.annotate(result.result)
    return result


def annotate_fingerprint(result: Any, options: FuzzOptions, session: SessionResult | None = None) -> None:
    """This machine's fingerprint into a one-machine fuzz result (``extra["fingerprint"]`` and
    ``extra["fingerprints"]``, a ``fingerprint:ID`` tag on every find); a cluster result already
    carries every shard's own and is left alone."""
    if "fingerprints" in result.extra:
        return  # a cluster result: every shard's own
    versions = dict(session.versions) if session is not None else {}
    refs = {}
    for p in options.peers:
        ref = p if isinstance(p, str) else str(getattr(p, "ref", getattr(p, "name", p)))
        name = getattr(p, "name", None)
        if name is None:
            try:
                name = resolve_peer_list([p])[0].name
            except PoolcheckError:
                name = ref
        refs[str(name)] = ref
    fp = machine_fingerprint(versions, refs).to_dict()
    result.extra["fingerprint"] = fp
    result.extra["fingerprints"] = {fp["id"]: fp}
    for case in result.cases:
        if any(t.startswith("signature:") for t in case.tags):
            case.tags.append(f"fingerprint:{fp['id']}")


def run_fuzz(options: FuzzOptions, *, cluster: str | None = None, max_workers: int | None = None,
             **campaign: Any) -> Campaign:
    """One ``poolcheck fuzz`` campaign, on this machine or (``cluster``: a Dask scheduler's
    address) on a cluster, with the machine fingerprints recorded in its result."""
    if cluster:
        done = run_cluster_campaign(options, cluster, on_event=campaign.get("on_phase"), max_workers=max_workers,
                                    **campaign)
    else:
        done = run_campaign(options, **campaign)
    annotate_fingerprint(done.result, options, done.session)
    return done


__all__ = [
    "ClusterDriver",
    "ClusterRun",
    "Shard",
    "ShardSession",
    "annotate_fingerprint",
    "check_address",
    "run_cluster_campaign",
    "run_fuzz",
    "shard_main",
]
