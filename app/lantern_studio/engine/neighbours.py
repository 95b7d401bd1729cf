"""The codebook's nearest-neighbour table: each code's k nearest codes by Euclidean
distance (self excluded, nearest first, ties by index), built once per codebook and
cached on disk; the acceptance rules (:mod:`.acceptance`, :mod:`.step_bound`) read
their neighbourhoods from it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from .files import atomic_write


def _nearest_chunk(codebook: torch.Tensor, rows: torch.Tensor, k: int) -> torch.Tensor:
    """k nearest codes of each code in ``rows`` (self excluded), ties broken by index."""
    cb = codebook.double()
    q = cb[rows]
    d = (q * q).sum(1, keepdim=True) + (cb * cb).sum(1)[None] - 2.0 * q @ cb.T
    d[torch.arange(len(rows)), rows] = float("inf")
    return torch.sort(d, dim=1, stable=True).indices[:, :k]


def compute_neighbours(codebook: torch.Tensor, k: int, chunk: int = 256) -> torch.Tensor:
    """(V, k) int64 table of each code's k nearest codes by Euclidean distance.

    Works through the codebook ``chunk`` rows at a time, so a 16384-entry
    codebook never needs a dense 16384² matrix at once.
    """
    v = codebook.shape[0]
    k = min(k, v - 1)
    out = torch.empty(v, k, dtype=torch.int64)
    for s in range(0, v, chunk):
        rows = torch.arange(s, min(s + chunk, v))
        out[s : s + len(rows)] = _nearest_chunk(codebook.cpu(), rows, k)
    return out


def codebook_hash(codebook: torch.Tensor) -> str:
    arr = codebook.detach().float().cpu().contiguous().numpy()
    return hashlib.sha256(arr.tobytes() + str(arr.shape).encode()).hexdigest()[:16]


class ProximityTable:
    """Nearest-neighbour lists over a codebook, cached for the first ``k_cached``
    neighbours; larger k is computed on demand for just the drafted tokens."""

    def __init__(self, codebook: torch.Tensor, k_cached: int = 512, cache_dir: Optional[Path] = None):
        self.codebook = codebook.detach().float().cpu()
        self.vocab_size = self.codebook.shape[0]
        self.k_cached = min(k_cached, self.vocab_size - 1)
        self.table = self._load_or_compute(cache_dir)
        self._device_tables: dict = {}

    def _load_or_compute(self, cache_dir: Optional[Path]) -> torch.Tensor:
        path = None
        if cache_dir is not None:
            path = Path(cache_dir) / f"neighbours-{codebook_hash(self.codebook)}-k{self.k_cached}.npy"
            if path.exists():
                try:
                    arr = np.load(path)
                    if arr.shape == (self.vocab_size, self.k_cached):
                        return torch.from_numpy(arr.astype(np.int64))
                except (OSError, ValueError):
                    pass  # unreadable cache: recompute below
        table = compute_neighbours(self.codebook, self.k_cached)
        if path is not None:
            try:
                arr = table.numpy().astype(np.int32 if self.vocab_size > 32767 else np.int16)
                atomic_write(path, lambda tmp: np.save(tmp, arr))
            except OSError:
                pass  # a read-only or full cache folder only costs recomputation
        return table

    def neighbours(self, tokens: torch.Tensor, k: int) -> torch.Tensor:
        """(n,) token ids -> (n, k) neighbour ids on the tokens' device."""
        dev = tokens.device
        if k <= self.k_cached:
            t = self._device_tables.get(dev)
            if t is None:
                t = self._device_tables[dev] = self.table.to(dev)
            return t[tokens, :k]
        rows = tokens.cpu()
        return _nearest_chunk(self.codebook, rows, min(k, self.vocab_size - 1)).to(dev)
