"""Rendering batch items: one loaded pipeline turning work items into PNG bytes
(the same code in-process and inside each Ray worker, commands/batch_ray.py),
and the in-process executor.

A worker returns the PNG's bytes and the item's stats; the CLI's process writes
the files (commands/batch_plan.commit), so workers on other machines need no
shared disk. The PNG embeds the settings as the studio's do (export.save_png),
but only the decode's counts, not its timings: the same item then gives the
same bytes on any worker, and the manifest's sha256 says so. The timings go to
the manifest line.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

import torch

from .. import fidelity
from ..engine.settings import GenerationSettings
from ..export import save_png
from ..models import load_pipeline
from .batch_plan import BatchError, WorkItem, model_id

#: Stats that depend only on the tokens decided (embedded in the PNG); the rest are timings.
COUNT_STATS = ("tokens", "target_forwards", "drafter_forwards", "drafted", "accepted", "accepted_relaxed",
               "mean_accepted_length", "acceptance_rate", "step_tv_slots", "cancelled")
#: Float diagnostics, embedded rounded (their last bits may depend on the BLAS a machine has).
ROUNDED_STATS = ("tv_budget_total", "tv_budget_max", "step_tv_sum", "step_tv_max", "step_tv_mean")


def png_stats(stats: dict) -> dict:
    out = {k: stats[k] for k in COUNT_STATS if k in stats}
    for k in ROUNDED_STATS:
        v = stats.get(k)
        if v is not None:
            out[k] = float(f"{float(v):.6g}")
    return out


def _sync(pipe) -> None:
    if pipe.device.type == "cuda":
        torch.cuda.synchronize(pipe.device)


class Renderer:
    """One loaded pipeline and the work items it renders."""

    def __init__(self, pipe, worker: str = "local"):
        self.pipe = pipe
        self.worker = worker
        src = pipe.source
        self.model = model_id(pipe.name, src.manifest, src.catalogue)
        self._tmp = Path(tempfile.mkdtemp(prefix="lantern-batch-"))

    @classmethod
    def load(cls, spec: Optional[str], device: str, precision: str, worker: str = "local",
             warm: bool = True) -> "Renderer":
        pipe = load_pipeline(spec, device=device, precision=precision)
        if warm:  # text encoder, neighbour table, first-call allocations: not inside the first item's time
            pipe.warm_up()
        return cls(pipe, worker)

    def info(self) -> dict:
        p = self.pipe
        return {"model": self.model, "name": p.name, "precision": p.precision, "device": str(p.device),
                "vocab_size": p.vocab_size, "grid": p.grid, "drafters": list(p.drafters),
                "defaults": p.defaults.to_dict(), "folder": str(p.source.folder) if p.source.folder else None,
                "catalogue": p.source.catalogue, "worker": self.worker, "host": socket.gethostname(),
                "pid": os.getpid(), "threads": _threads()}

    def check_prompts(self, prompts: Iterable[str]) -> dict:
        """{prompt: the conditioner's complaint} for the prompts this model cannot take."""
        bad = {}
        for p in prompts:
            try:
                self.pipe.conditioner(p)
            except ValueError as e:  # PromptError and friends
                bad[p] = str(e)
        return bad

    def _subgroup(self, prompt: str):
        find = getattr(self.pipe.scorer, "subgroup_for_prompt", None)
        return find(prompt) if find is not None else None

    def render(self, item: dict) -> dict:
        """A WorkItem's dict → {"key", "png" (bytes), "entry" (the manifest line's worker part)}."""
        it = WorkItem.from_dict(item)
        pipe = self.pipe
        settings = GenerationSettings.from_dict(it.settings)
        _sync(pipe)
        t0 = time.perf_counter()
        result = pipe.generate(it.prompt, settings)
        _sync(pipe)
        seconds = time.perf_counter() - t0
        stats = result.stats.to_dict()
        stats.pop("settings", None)
        record = {"prompt": it.prompt, "understood_as": result.note, "model": pipe.name, "settings": it.settings,
                  "stats": png_stats(stats), "precision": pipe.precision,
                  "batch": {"key": it.key, "model": self.model}}
        tmp = self._tmp / f"{it.key}.png"
        save_png(tmp, result.image, record, overwrite=True)
        try:
            png = tmp.read_bytes()
        finally:
            tmp.unlink(missing_ok=True)
        entry = {"model": pipe.name, "model_id": self.model, "precision": pipe.precision,
                 "understood_as": result.note, "stats": stats, "seconds": seconds, "worker": self.worker,
                 "host": socket.gethostname(), "finished": time.time()}
        if it.subgroup is None:
            entry["subgroup"] = self._subgroup(it.prompt)
        if pipe.scorer is not None:  # the meter's probability: the report's mean and interval per setting
            entry[fidelity.KEY] = pipe.scorer(result.image, it.prompt)
        return {"key": it.key, "png": png, "entry": entry}


def _threads() -> int:
    return torch.get_num_threads()


class LocalExecutor:
    """Every item in this process, one after another, on one pipeline."""

    kind = "in-process"
    size = 1

    def __init__(self, spec: Optional[str], device: str, precision: str):
        self.renderer = Renderer.load(spec, device, precision, "local")
        self.workers = ["local"]

    def info(self) -> dict:
        return self.renderer.info()

    def check_prompts(self, prompts) -> dict:
        return self.renderer.check_prompts(prompts)

    def run(self, items, on_result: Callable[[dict], None]) -> None:
        for it in items:
            try:
                result = self.renderer.render(it.to_dict())
            except ValueError as e:  # SettingsError, PromptError, DistributionError: the engine's word on the item
                raise BatchError(f"{it.prompt!r} seed {it.seed}: {e}") from None
            on_result(result)

    def close(self) -> None:
        pass
