"""Running a batch on Ray: one actor per worker, each holding one loaded pipeline.

``--ray local`` starts a Ray instance on this machine (``ray.init(num_cpus=N)``);
an address joins a running cluster. Workers are one per GPU where the cluster
has GPUs, else one per requested CPU with one torch thread each. Each worker
gets a few items at a time and more as it finishes them; the results (PNG bytes
and stats) come back here, where the files are written. A worker that dies
(killed, out of memory, its node lost) has its unfinished items handed to the
others, and a fresh worker takes its place while the spare budget lasts.

Ray is the optional ``[cluster]`` extra: nothing here imports it at module
level, and :func:`import_ray` turns its absence into one line saying what to
install. See docs/scale-out.md.
"""

from __future__ import annotations

import collections
import logging
import os
import socket
from typing import Callable, Optional

import torch

from .batch_plan import BatchError, WorkItem
from .batch_run import Renderer

INSTALL_HINT = "pip install 'lantern-studio[cluster]'"
IN_FLIGHT = 2  # items queued per worker: the next one is there when one finishes
MAX_ATTEMPTS = 3  # an item whose worker died this many times is given up (it may be what kills them)
CONNECT_TIMEOUT_S = 5.0


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster cannot be reached; the message is one line."""


def import_ray():
    try:
        import ray  # noqa: PLC0415 - Ray is optional (the [cluster] extra)
    except ImportError:
        raise RayUnavailable(f"--ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def _host_port(address: str) -> Optional[tuple[str, int]]:
    """(host, port) of a Ray address ("host:6379", "ray://host:10001"), or None for "auto"."""
    a = address.strip()
    if a in ("auto", ""):
        return None
    scheme, sep, rest = a.partition("://")
    if not sep:
        scheme, rest = "", a
    host, colon, port = rest.rstrip("/").rpartition(":")
    if not colon:
        return rest.rstrip("/"), (10001 if scheme == "ray" else 6379)
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        raise RayUnavailable(f"--ray {address}: expected HOST:PORT, ray://HOST:PORT or 'local'") from None


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Fail in seconds, with one line, where Ray itself would retry for minutes."""
    hp = _host_port(address)
    if hp is None:
        return
    try:
        socket.create_connection(hp, timeout=timeout).close()
    except OSError as e:
        raise RayUnavailable(f"--ray {address}: no Ray cluster answers there ({e.strerror or e}); "
                             "start one with `ray start --head`, or use --ray local") from None


class BatchWorker:
    """The actor: one pipeline, rendering the items it is sent (see batch_run.Renderer)."""

    def __init__(self, spec: Optional[str], precision: str, device: str, name: str):
        if device == "cpu":
            torch.set_num_threads(1)  # one worker per CPU: more threads only contend
        self.renderer = Renderer.load(spec, device, precision, name)

    def info(self) -> dict:
        return self.renderer.info()

    def check_prompts(self, prompts) -> dict:
        return self.renderer.check_prompts(prompts)

    def render(self, item: dict) -> dict:
        return self.renderer.render(item)


class RayExecutor:
    """Workers on a Ray cluster; ``run`` hands them items and reports each result."""

    kind = "ray"

    def __init__(self, address: str, workers: Optional[int], spec: Optional[str], precision: str):
        ray = self.ray = import_ray()
        local = address == "local"
        if not local:
            check_reachable(address)
        self._started = False
        try:
            if local:
                ray.init(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.WARNING, configure_logging=True)
            else:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise RayUnavailable(f"--ray {address}: could not start or join Ray ({str(e).splitlines()[0]})") from None
        self._started = True
        self.address = address
        res = ray.cluster_resources()
        gpus, cpus = int(res.get("GPU", 0)), int(res.get("CPU", 0))
        if gpus:
            n, self.device, self._opts = min(workers or gpus, gpus), "cuda", {"num_cpus": 1, "num_gpus": 1}
        else:
            n, self.device, self._opts = max(1, min(workers or cpus, cpus)), "cpu", {"num_cpus": 1}
        self.size = n
        self.resources = {"CPU": cpus, "GPU": gpus}
        self._spec, self._precision = spec, precision
        self._remote = ray.remote(BatchWorker)
        self._next = 0
        self.spares = n  # fresh workers allowed to replace dead ones
        self.actors: dict = {}
        self.dead: list = []
        for _ in range(n):
            self._spawn()
        names = list(self.actors)
        try:
            self.infos = dict(zip(names, ray.get([self.actors[w].info.remote() for w in names])))
        except ray.exceptions.RayError as e:
            self.close()
            raise BatchError(f"a Ray worker could not load the model: {_cause(e)}") from None
        first = self.infos[names[0]]
        for w, inf in self.infos.items():
            if (inf["model"], inf["precision"]) != (first["model"], first["precision"]):
                self.close()
                raise BatchError(f"workers disagree: {names[0]} has {first['model']} in {first['precision']}, "
                                 f"{w} has {inf['model']} in {inf['precision']} (pass --precision fp32 or bf16)")

    @property
    def workers(self) -> list:
        return list(self.actors)

    def _spawn(self) -> str:
        name = f"w{self._next}"
        self._next += 1
        self.actors[name] = self._remote.options(max_restarts=0, **self._opts).remote(
            self._spec, self._precision, self.device, name)
        return name

    def info(self) -> dict:
        first = next(iter(self.infos.values()))
        return {**first, "workers": {w: {k: i[k] for k in ("host", "pid", "device", "threads")}
                                     for w, i in self.infos.items()}}

    def check_prompts(self, prompts) -> dict:
        actor = next(iter(self.actors.values()))
        return self.ray.get(actor.check_prompts.remote(list(prompts)))

    def run(self, items, on_result: Callable[[dict], None]) -> None:
        ray = self.ray
        lost = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError, ray.exceptions.ObjectLostError)
        pending = collections.deque(items)
        attempts: collections.Counter = collections.Counter()
        inflight: dict = {}  # ObjectRef → (worker, WorkItem)

        def feed(worker):
            mine = sum(1 for w, _ in inflight.values() if w == worker)
            while pending and mine < IN_FLIGHT:
                it: WorkItem = pending.popleft()
                inflight[self.actors[worker].render.remote(it.to_dict())] = (worker, it)
                mine += 1

        for w in list(self.actors):
            feed(w)
        while inflight:
            ready, _ = ray.wait(list(inflight), num_returns=1)
            ref = ready[0]
            if ref not in inflight:  # dropped with its dead worker
                continue
            worker, it = inflight.pop(ref)
            try:
                result = ray.get(ref)
            except lost as e:
                self._lose(worker, it, e, inflight, pending, attempts)
                for w in list(self.actors):
                    feed(w)
                continue
            except ray.exceptions.RayTaskError as e:
                raise BatchError(f"{it.prompt!r} seed {it.seed}: {_cause(e)}") from None
            on_result(result)
            if worker in self.actors:
                feed(worker)

    def _lose(self, worker, it, error, inflight, pending, attempts) -> None:
        """A worker died: its unfinished items go back to the front of the queue."""
        back = [it] + [i for r, (w, i) in list(inflight.items()) if w == worker]
        for r in [r for r, (w, _) in inflight.items() if w == worker]:
            del inflight[r]
        if worker in self.actors:
            try:
                self.ray.kill(self.actors.pop(worker))
            except Exception:  # noqa: BLE001 - already gone
                pass
            self.dead.append(worker)
        for i in back:
            attempts[i.key] += 1
            if attempts[i.key] >= MAX_ATTEMPTS:
                raise BatchError(f"{i.prompt!r} seed {i.seed}: {MAX_ATTEMPTS} workers died rendering it "
                                 f"(last: {_cause(error)})")
        pending.extendleft(reversed(back))
        if self.spares > 0:
            self.spares -= 1
            self._spawn()
        if not self.actors:
            raise BatchError(f"every Ray worker died (last: {_cause(error)})")

    def close(self) -> None:
        if self._started:
            self._started = False
            self.ray.shutdown()


def _cause(error) -> str:
    """The first line of what went wrong inside Ray, without its traceback."""
    cause = getattr(error, "cause", None)
    text = str(cause) if cause is not None else str(error)
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else type(error).__name__
