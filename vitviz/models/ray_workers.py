"""Model work on a Ray cluster: each cost class as Ray actors that keep their models loaded.

:class:`RayWorkers` is the same kind of ``submit`` as :class:`vitviz.models.workers.Workers` (what
:func:`vitviz.models.runner.install_dispatch` takes), with Ray actors in place of local processes: the
view class is ``VITVIZ_VIEW_WORKERS`` actors taking calls in turn, the heavy class one actor at the lowest OS
priority, the live class one actor on one thread. A call crosses exactly as it does to a local worker --
the same payload (:func:`~vitviz.models.workers.prepare`: models named by
:class:`~vitviz.models.workers.ModelRef`, arrays by value) run by the same function
(:func:`~vitviz.models.workers._work`) -- so its results are the same, bit for bit, given the same
intra-op thread count. Several app replicas can share one cluster: each replica starts its own actors
(a replica's visitors never wait on another replica's queue), and the cluster places them on its nodes.

Where: ``address`` ``None`` joins the cluster ``RAY_ADDRESS`` names, or starts a local one
(``ray.init()``); ``"auto"`` or ``"ray://host:10001"`` joins that one. When this process already called
``ray.init``, its cluster is used. The nodes need vitviz installed (``pip install vitviz[ray]``) and the
same weights (the host's weight file is checked, as for local workers). Ray is optional (``vitviz[ray]``):
it is imported when the first actor starts, never at import.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from .. import settings
from .workers import COSTS, HEAVY_NICE, _start, _work, crashed, finish, prepare, shape


#: Environment variables that set the thread pools of torch's OpenMP and numpy's BLAS.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")


def thread_environment() -> dict[str, str]:
    """This process's thread settings, for an actor: Ray gives an actor ``OMP_NUM_THREADS`` = its reserved
    cores (1 with none), which sizes numpy's BLAS pool too, and a product summed over another number of
    threads differs in its last bits (a rollout map did). Unset here means all the cores here."""
    import os

    env = {k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ}
    env.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))
    return env


class _ModelActor:
    """One worker on the cluster: its OS priority and threads set once; then one call at a time."""

    def __init__(self, nice: int, threads: int) -> None:
        import os

        _start(nice, threads, os.getppid())

    def work(self, payload: bytes) -> bytes:
        """:func:`vitviz.models.workers._work` here."""
        return _work(payload)

    def ping(self) -> int:
        import os

        return os.getpid()


class RayWorkers:
    """Ray actors by cost class (see the module docstring); a class's actors start at its first call.

    Args:
        address: the Ray cluster (``None``: ``RAY_ADDRESS`` or a local one; ``auto``; ``ray://host:port``).
        views: actors of the view class (default ``VITVIZ_VIEW_WORKERS``).
        threads: intra-op threads of a view or heavy actor (default ``VITVIZ_THREADS``; live runs on one).
        heavy_nice: OS priority added to the heavy actor.
        actor_options: Ray options of every actor (default ``{"num_cpus": 0}``: the actors are placed
            without reserving cores; ``{"num_gpus": 1}`` puts each on a GPU of the cluster). Without a
            ``runtime_env`` the actors get this process's thread settings (:func:`thread_environment`).
    """

    def __init__(self, address: str | None = None, views: int | None = None, threads: int | None = None,
                 heavy_nice: int = HEAVY_NICE, actor_options: dict[str, Any] | None = None) -> None:
        self.address = address
        self.views = views if views is not None else settings.get("VITVIZ_VIEW_WORKERS")
        self.threads = threads if threads is not None else settings.threads()
        self.heavy_nice = heavy_nice
        self.actor_options = dict(actor_options) if actor_options is not None else {"num_cpus": 0}
        self.actor_options.setdefault("runtime_env", {"env_vars": thread_environment()})
        self._lock = threading.Lock()
        self._actors: dict[str, list[Any]] = {}
        self._turns: dict[str, itertools.count] = {}
        self._closed = False

    def _shape(self, cost: str) -> tuple[int, int, int]:
        """``(actors, nice, threads)`` of a class."""
        return shape(cost, self.views, self.threads, self.heavy_nice)

    def connect(self) -> None:
        """Join the cluster (or start a local one) now, in this thread. A local Ray's processes are ended by Linux
        when the *thread* that started them ends (Ray sets ``PR_SET_PDEATHSIG`` on them): a server calls this
        from its main thread, never from a short-lived one (its actors died a second after their first call)."""
        import ray

        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)

    def actors(self, cost: str) -> list[Any]:
        """The actor handles of a class (started now if it has none)."""
        import ray

        with self._lock:
            if self._closed:
                raise RuntimeError("the model workers were closed")
            found = self._actors.get(cost)
            if found is None:
                if not ray.is_initialized():
                    ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
                n, nice, threads = self._shape(cost)
                actor = ray.remote(_ModelActor).options(**self.actor_options)
                found = self._actors[cost] = [actor.remote(nice, threads) for _ in range(n)]
                self._turns[cost] = itertools.count()
            return found

    def start(self, costs: tuple[str, ...] = COSTS) -> None:
        """Start the actors of ``costs`` now and wait until each answers (each imports torch: seconds)."""
        import ray

        ray.get([a.ping.remote() for cost in costs for a in self.actors(cost)])

    def submit(self, fn: Callable[..., Any], args: tuple, kwargs: dict, cost: str = "view") -> Any:
        """Run the marked call ``fn(*args, **kwargs)`` on an actor of class ``cost``; returns its result.

        A call whose model no :class:`~vitviz.models.workers.ModelRef` can name runs here
        (:func:`vitviz.models.runner.run_here`). Exceptions of the call are raised here as they were raised there.

        Raises:
            vitviz.models.workers.WorkerCrashed: the actor died while running the call (its node went away,
                or it ran out of memory); the next call of its class starts fresh actors.
        """
        import ray
        from ray.exceptions import RayActorError, RayTaskError

        from . import runner

        prepared = prepare(fn, args, kwargs, cost)
        if prepared is None:
            return runner.run_here(fn, args, kwargs)
        payload, cost = prepared
        actors = self.actors(cost)
        with self._lock:
            actor = actors[next(self._turns[cost]) % len(actors)]
        try:
            reply = ray.get(actor.work.remote(payload))
        except RayTaskError as e:  # the call raised: raise it here as it was raised there
            raise e.as_instanceof_cause() if not isinstance(e.cause, BaseException) else e.cause from None
        except RayActorError:
            with self._lock:
                if self._actors.get(cost) is actors:
                    del self._actors[cost]
            raise crashed(cost, fn) from None
        return finish(reply, args, kwargs)

    def close(self) -> None:
        """End every actor (calls still running fail). Idempotent; leaves the cluster (and a local one) up."""
        with self._lock:
            self._closed = True
            found, self._actors = [a for actors in self._actors.values() for a in actors], {}
        if found:
            import ray

            for actor in found:
                ray.kill(actor)
