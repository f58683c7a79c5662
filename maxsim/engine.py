"""Where independent predictions run: this process, or the workers of a Dask cluster.

Every parallel job of maxsim (``maxsim compare``, ``maxsim validate``, ``maxsim sweep``) hands its
independent tasks to an :class:`Engine`. With one job and no scheduler the tasks run here, one after
the other; otherwise they are submitted to a Dask distributed cluster: a ``LocalCluster`` of
``jobs`` single-threaded worker processes started for the run (the default: one per CPU), or an
existing cluster at ``scheduler`` (``tcp://HOST:PORT``, e.g. started by ``dask scheduler`` and
``dask worker`` on other machines, or by dask-jobqueue on a batch system). Its workers need the
same maxsim installed. A task whose worker dies is run again on another (Dask reschedules it), so a
lost worker costs time, not results. Every prediction is deterministic: the results do not depend
on where they ran.

The cluster is started only when a task must run (a job whose results all come from the result
cache, :mod:`maxsim.cache`, starts none).
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import threading

from .errors import MaxsimError

SCHEDULER_ENV = "MAXSIM_SCHEDULER"
CONNECT_TIMEOUT_S = 3.0  # a scheduler that does not answer within this is reported as unreachable


class EngineError(MaxsimError):
    pass


_frozen = False


def _call(fn, args):
    """Run one task in a worker: the garbage collector first leaves alone what the process has
    imported (the simulator's modules and compiled code, over 100,000 objects a full collection
    would otherwise walk again at every collection)."""
    global _frozen
    if not _frozen:
        gc.freeze()
        _frozen = True
    return fn(*args)


def _check_reachable(address):
    """Fail fast, before Dask starts its event loop (whose shutdown after a failed connection takes
    seconds), when nothing listens at a tcp:// address."""
    import socket
    from urllib.parse import urlsplit
    if not address.startswith("tcp://"):
        return  # other protocols (tls://, ucx://, inproc://): Dask's own connection reports them
    try:
        parts = urlsplit(address)
        host, port = parts.hostname, parts.port
    except ValueError as e:
        raise EngineError(f"bad Dask scheduler address {address!r}: {e}") from None
    if not host or port is None:
        raise EngineError(f"bad Dask scheduler address {address!r}: expected tcp://HOST:PORT")
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        raise EngineError(f"cannot reach the Dask scheduler at {address}: {reason}") from None


def _quiet_failed_client():
    """A Dask client whose connection failed complains from its destructor when it is collected
    (its event loop is gone): that is the error already reported, once."""
    import sys
    previous = sys.unraisablehook

    def hook(unraisable):
        if type(unraisable.object).__module__.startswith("distributed") or \
                getattr(unraisable.object, "__module__", "").startswith("distributed"):
            return
        previous(unraisable)
    sys.unraisablehook = hook


class Engine:
    """Runs tasks ``fn(*args)`` and hands back their results as they complete.

    ``jobs``: worker processes of the local cluster (default: the number of CPUs; 1 with no
    ``scheduler``: this process). ``scheduler``: the address of an existing Dask scheduler (default:
    the environment variable ``MAXSIM_SCHEDULER``, else a local cluster). ``in_process=False``: a
    local cluster even of one worker (to measure the engine itself). Use as a context manager (the
    cluster it started is shut down on leaving)."""

    def __init__(self, jobs=None, scheduler=None, in_process=None):
        self.jobs = jobs if jobs is not None else (os.cpu_count() or 1)
        self.scheduler = scheduler if scheduler is not None else (os.environ.get(SCHEDULER_ENV) or None)
        self._in_process = in_process
        self._client = None
        self._cluster = None

    @property
    def local(self) -> bool:
        """Tasks run in this process."""
        if self._in_process is not None:
            return self._in_process and self.scheduler is None
        return self.scheduler is None and self.jobs <= 1

    def describe(self) -> str:
        """Where the tasks run, as a phrase: "in this process", "on a local Dask cluster of ..."."""
        if self.scheduler is not None:
            return f"on the Dask cluster at {self.scheduler}"
        if self.local:
            return "in this process"
        return f"on a local Dask cluster of {self.jobs} worker processes"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def client(self):
        """The Dask client (connecting, or starting the local cluster, on first use)."""
        if self._client is not None:
            return self._client
        try:
            from distributed import Client, LocalCluster
        except ImportError as e:  # pragma: no cover - a dependency
            raise EngineError(f"parallel runs need Dask distributed (pip install 'dask[distributed]'): {e}") from None
        for name in ("distributed", "distributed.nanny", "distributed.worker", "distributed.scheduler",
                     "distributed.core", "distributed.comm", "distributed.client", "tornado"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        if self.scheduler is not None:
            _check_reachable(self.scheduler)
            try:
                self._client = Client(self.scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
            except Exception as e:  # noqa: BLE001 - refused, timed out, or not a Dask scheduler at all
                _quiet_failed_client()
                reason = str(e).splitlines()[0] if str(e) else type(e).__name__
                if not isinstance(e, (OSError, TimeoutError)):
                    reason = f"no Dask scheduler answers there ({type(e).__name__}: {reason})"
                raise EngineError(f"cannot reach the Dask scheduler at {self.scheduler}: {reason}") from None
            return self._client
        # one single-threaded worker process per job; no memory limit (a big prediction must not be
        # killed by the nanny's default share of the machine's memory); no dashboard
        self._cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1, processes=True,
                                     memory_limit=0, dashboard_address=None, silence_logs=logging.CRITICAL)
        self._client = Client(self._cluster, set_as_default=False)
        return self._client

    def run(self, fn, tasks):
        """Yield ``(index, fn(*tasks[index]))`` for every task, in the order they complete. The
        tasks are submitted in the order given (the costliest first is the caller's choice)."""
        tasks = list(tasks)
        if not tasks:
            return
        if self.local:
            for i, args in enumerate(tasks):
                yield i, fn(*args)
            return
        client = self.client()
        futures = {}
        for i, args in enumerate(tasks):
            # priority: earlier tasks first; pure=False: every task runs (no deduplication by Dask)
            f = client.submit(_call, fn, args, pure=False, priority=len(tasks) - i)
            futures[f] = i
        # Ctrl-C: the handler only takes note, and the loop below raises KeyboardInterrupt between
        # two waits (an interrupt raised inside Dask's own code, e.g. a future's __del__, would be
        # swallowed there and the sweep would run on)
        interrupted = []
        old_handler = None
        if threading.current_thread() is threading.main_thread():
            old_handler = signal.signal(signal.SIGINT, lambda *_: interrupted.append(True))
        try:
            for f in _completed(futures, interrupted):
                try:
                    result = f.result()
                except MaxsimError:
                    raise
                except Exception as e:  # a task that failed on its worker (e.g. killed too often)
                    if isinstance(e, (KeyboardInterrupt, SystemExit)):
                        raise
                    raise EngineError(f"a task failed {self.describe()}: {type(e).__name__}: {e}") from None
                yield futures.pop(f), result
        finally:
            if old_handler is not None:
                signal.signal(signal.SIGINT, old_handler)
            if futures:
                try:
                    client.cancel(list(futures))
                except Exception:  # noqa: BLE001 - the cluster may already be gone
                    pass

    def close(self):
        client, cluster = self._client, self._cluster
        self._client = self._cluster = None
        for thing in (client, cluster):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # noqa: BLE001 - closing a cluster that failed or was interrupted
                    pass



def _completed(futures, interrupted, poll=0.05):
    """The futures as they complete; KeyboardInterrupt as soon as ``interrupted`` is set."""
    import time

    from distributed import as_completed
    ac = as_completed(list(futures), loop=next(iter(futures)).client.loop)
    while not ac.is_empty():
        if interrupted:
            raise KeyboardInterrupt
        batch = ac.next_batch(block=False)
        if not batch:
            time.sleep(poll)
        yield from batch
    if interrupted:
        raise KeyboardInterrupt
