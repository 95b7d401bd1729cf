"""A trained AR model carried over to a new tokenizer's codes: ``lantern-studio train retoken``.

A new tokenizer (model v5's keeps green, the shipped one turns it blue) numbers its codes afresh, so an AR model
taught on the old codes reads the new ones as noise. Everything else it learnt (the identities, styles, layout,
which patch follows which) still holds, and both tokenizers cut a picture into the same grid of patches. So the
same pictures are encoded by both, and each new code's token rows (its input embedding and its output-head row)
become the mean of the old codes' rows it stood in for on the same patches, weighted by how often. A new code
never seen in the sample takes the mean over every patch. The model then starts near what it knew, and training on
the new codes (``train ar --init-from``) moves the rows apart where the new codes split an old one (a green patch
and a blue one that shared a code).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from ..engine.checkpoints import CheckpointError, load_gpt, save_gpt
from ..engine.tokenizer import load_vq
from ..paths import data_dir
from .ar_rows import tokenize_images
from .errors import TrainingError, command
from .sample import dataset_sample

TOKEN_ROWS = ("tok_embeddings.weight", "output.weight")  # the weights a code's number indexes


def code_overlap(new_codes: np.ndarray, old_codes: np.ndarray, new_size: int, old_size: int) -> np.ndarray:
    """How often each new code (row) stood on the same patch as each old code (column): two code grids of the
    same pictures (N, h, w) → counts (new_size, old_size)."""
    if new_codes.shape != old_codes.shape:
        raise TrainingError(f"train retoken: the tokenizers cut a picture differently ({new_codes.shape[1:]} "
                            f"codes against {old_codes.shape[1:]})")
    flat = new_codes.reshape(-1).astype(np.int64) * old_size + old_codes.reshape(-1).astype(np.int64)
    return np.bincount(flat, minlength=new_size * old_size).reshape(new_size, old_size)


def carried_rows(old_rows: torch.Tensor, overlap: np.ndarray) -> torch.Tensor:
    """Each new code's row: the overlap-weighted mean of the old codes' rows (V_old, D) → (V_new, D); a new code
    the sample never used gets the mean weighted by every patch."""
    w = torch.from_numpy(overlap).double()
    unseen = w.sum(1) == 0
    w[unseen] = w.sum(0)
    w = w / w.sum(1, keepdim=True)
    return (w @ old_rows.double()).to(old_rows.dtype)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpt", required=True, help="the AR model taught on --from-vq's codes (gpt.safetensors)")
    p.add_argument("--from-vq", required=True, help="the tokenizer that model was taught on")
    p.add_argument("--to-vq", required=True, help="the new tokenizer")
    p.add_argument("--out", required=True, help="where to write the carried model (gpt.safetensors)")
    p.add_argument("--data", default=str(data_dir() / "emoji64-v5"), help="dataset whose pictures both encode")
    p.add_argument("--images", type=int, default=2048, help="dataset pictures sampled (default 2048)")
    p.add_argument("--seed", type=int, default=0)


@command
def run(args) -> int:
    try:
        gpt = load_gpt(args.gpt)
        old_vq, new_vq = load_vq(args.from_vq).float(), load_vq(args.to_vq).float()
    except (CheckpointError, OSError) as e:
        raise TrainingError(f"train retoken: {e}") from None
    vocab = gpt.config.vocab_size
    if old_vq.args.codebook_size != vocab:
        raise TrainingError(f"train retoken: {args.gpt} has {vocab} token rows but {args.from_vq} "
                            f"{old_vq.args.codebook_size} codes: not the tokenizer it was taught on")
    if new_vq.args.codebook_size != vocab:
        raise TrainingError(f"train retoken: {args.to_vq} has {new_vq.args.codebook_size} codes, the model "
                            f"{vocab} token rows; only a tokenizer of the same size carries over")
    sample = dataset_sample(args.data, args.images, args.seed, "train retoken", 20000)
    old = tokenize_images(old_vq, sample).numpy()
    new = tokenize_images(new_vq, sample).numpy()
    overlap = code_overlap(new, old, vocab, vocab)
    sd = gpt.state_dict()
    with torch.no_grad():
        for name in TOKEN_ROWS:
            sd[name].copy_(carried_rows(sd[name].float(), overlap))
    gpt.load_state_dict(sd)
    save_gpt(gpt, args.out)
    used = overlap.sum(1) > 0
    agree = overlap.max(1)[used].sum() / overlap.sum()
    print(f"{len(sample)} pictures ({overlap.sum()} patches) encoded by both tokenizers: {int(used.sum())} of "
          f"{vocab} new codes seen; a new code's most frequent old code covers {agree:.1%} of its patches")
    print(f"wrote {args.out}: {args.gpt} with its token rows carried to {args.to_vq}'s codes")
    return 0
