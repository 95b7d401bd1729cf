"""One timed generation: a method decodes one prompt with one seed, end to end."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from .methods import Method

@dataclass
class Sample:
    method: str
    prompt_index: int
    prompt: str
    seed: int
    seconds: float  # end to end: conditioning + decode loop + VQ decode
    stats: dict
    image: np.ndarray


def _sync(pipe) -> None:
    try:
        if pipe.device.type == "cuda":
            torch.cuda.synchronize(pipe.device)
    except Exception:  # noqa: BLE001 - timing helper, never fatal
        pass


def generate_one(pipe, method: Method, prompt: str, seed: int, prompt_index: int = 0) -> Sample:
    """Decode one image with ``method`` and time it end to end (module-level so
    tests can wrap it, e.g. to slow one method down)."""
    settings = method.settings(pipe.defaults, seed)
    _sync(pipe)
    t0 = time.perf_counter()
    result = pipe.generate(prompt, settings)
    _sync(pipe)
    seconds = time.perf_counter() - t0
    return Sample(method.name, prompt_index, prompt, int(seed), seconds, result.stats.to_dict(), result.image)
