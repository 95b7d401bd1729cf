"""A model folder's proximity file: the neighbours LANTERN relaxes towards, ranked by how alike they decode.

LANTERN's neighbourhood of a drafted code is its latent nearest codes (:mod:`..engine.neighbours`). A folder may
name, in ``model.json``'s ``"proximity"``, a safetensors file that ranks some of them first: tensor ``ranked``
(V, A) integer, each code's codes that decode alike (most alike first; −1 for none), and metadata ``rest``:
``"latent"`` (the latent neighbours follow) or ``"none"`` (the list ends: LANTERN moves mass only among them).
``training/decoded_proximity.py`` makes one from a model's equivalence sets; ``lantern-studio train proximity``
installs it.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from ..engine.checkpoints import CheckpointError
from ..engine.files import atomic_write
from ..engine.neighbours import RESTS

FORMAT = "lantern-studio-proximity/1"
INTEGER = (torch.int16, torch.int32, torch.int64)


def read_proximity(path, vocab: int) -> tuple[torch.Tensor, str]:
    """``path`` → (ranked (V, A) long, rest); anything else is one :class:`CheckpointError` line naming the file."""
    path = Path(path)
    try:
        with safe_open(str(path), "pt") as fh:
            md = fh.metadata() or {}
            names = set(fh.keys())
            ranked = fh.get_tensor("ranked") if names == {"ranked"} else None
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such proximity file") from None
    except Exception as e:  # a damaged or hostile file
        raise CheckpointError(f"{path}: not a readable safetensors file ({type(e).__name__})") from None
    if md.get("format") != FORMAT or ranked is None:
        raise CheckpointError(f"{path}: not a proximity file ({FORMAT}: one tensor 'ranked')")
    rest = md.get("rest", "latent")
    if rest not in RESTS:
        raise CheckpointError(f"{path}: 'rest' must be one of {', '.join(RESTS)}, got {rest[:40]!r}")
    if ranked.dtype not in INTEGER or ranked.ndim != 2 or ranked.shape[0] != vocab or ranked.shape[1] > vocab:
        raise CheckpointError(f"{path}: 'ranked' must be integer ({vocab}, A), got {tuple(ranked.shape)} "
                              f"{str(ranked.dtype).replace('torch.', '')}")
    ranked = ranked.long()
    if ranked.numel() and (int(ranked.min()) < -1 or int(ranked.max()) >= vocab):
        raise CheckpointError(f"{path}: 'ranked' holds codes outside [-1, {vocab})")
    if bool((ranked == torch.arange(vocab)[:, None]).any()):
        raise CheckpointError(f"{path}: 'ranked' lists a code as its own neighbour")
    sorted_ = torch.sort(ranked, dim=1).values
    if bool(((sorted_[:, 1:] == sorted_[:, :-1]) & (sorted_[:, 1:] >= 0)).any()):
        raise CheckpointError(f"{path}: 'ranked' lists a neighbour twice in one row")
    return ranked, rest


def write_proximity(path, ranked: torch.Tensor, rest: str, meta: dict) -> None:
    """Write ``ranked`` (V, A) (int16) and ``rest`` with string ``meta`` atomically."""
    if rest not in RESTS:
        raise ValueError(f"rest must be one of {RESTS}, got {rest!r}")
    md = {**{k: str(v) for k, v in meta.items()}, "format": FORMAT, "rest": rest}
    atomic_write(Path(path), lambda p: save_file({"ranked": ranked.to(torch.int16).contiguous()}, str(p), md))
