"""A tiny, randomly initialised model folder: for tests, demos of the GUI
without trained weights, and CI. Its pictures are noise by design."""

from __future__ import annotations

from pathlib import Path

import torch

from ..engine.drafters import EagleHead
from ..engine.model import ModelArgs, Transformer
from ..engine.settings import GenerationSettings
from ..engine.tokenizer import VQArgs, VQModel
from .local import save_model_dir


def build_tiny_model_dir(folder, seed: int = 0, vocab: int = 64, grid: int = 8, dim: int = 64, layers: int = 2,
                         model_type: str = "t2i", eagle: bool = True) -> Path:
    torch.manual_seed(seed)
    levels = {4: 5, 8: 4, 16: 3}[grid]  # 64 px / 2**(levels-1) = grid
    vq_args = VQArgs(codebook_size=vocab, codebook_embed_dim=4, encoder_ch_mult=[1] * levels,
                     decoder_ch_mult=[1] * levels, z_channels=16, ch=16, num_res_blocks=1, norm_groups=8)
    vq = VQModel(vq_args).eval()
    caption_dim, length = 16, 6
    args = ModelArgs(dim=dim, n_layer=layers, n_head=4, multiple_of=32, vocab_size=vocab, block_size=grid * grid,
                     model_type=model_type, cls_token_num=length if model_type == "t2i" else 1,
                     caption_dim=caption_dim, num_classes=4)
    gpt = Transformer(args)
    with torch.no_grad():
        gpt.output.weight.normal_(0, 0.05)
    head = EagleHead(args) if eagle else None
    if model_type == "t2i":
        cond = {"kind": "caption", "encoder": "hash", "dim": caption_dim, "length": length}
    else:
        cond = {"kind": "class", "names": ["red", "green", "blue", "white"]}
    defaults = GenerationSettings(cfg_scale=2.0, temperature=1.0, top_k=0, drafter="jacobi", draft_length=8,
                                  k=8, delta=0.1)
    save_model_dir(folder, gpt, vq, vq_args, cond, defaults, name=f"tiny-{model_type}", eagle=head,
                   dtype=torch.float32)
    return Path(folder)
