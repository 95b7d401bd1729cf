"""Tiny models built in tests (nothing downloads), and their logits read through the KV cache."""

from __future__ import annotations

import torch

from lantern_studio.engine.drafters import EagleHead
from lantern_studio.engine.model import ModelArgs, Transformer


def tiny_args(model_type="c2i", vocab=16, grid=2, dim=32, layers=2, heads=4, cls_token_num=None, caption_dim=12, **kw):
    if cls_token_num is None:
        cls_token_num = 1 if model_type == "c2i" else 5
    return ModelArgs(
        dim=dim, n_layer=layers, n_head=heads, multiple_of=16, vocab_size=vocab, block_size=grid * grid,
        num_classes=10, caption_dim=caption_dim, model_type=model_type, cls_token_num=cls_token_num, **kw,
    )


def randomise(m: Transformer, output_std: float = 0.6) -> Transformer:
    """Weights drawn so the next-token distributions are far from uniform (norms kept at 1)."""
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.3)
        for layer in m.layers:
            layer.attention_norm.weight.fill_(1.0)
            layer.ffn_norm.weight.fill_(1.0)
        m.norm.weight.fill_(1.0)
        m.output.weight.normal_(0, output_std)
    return m


def tiny_gpt(model_type="c2i", seed=0, output_std=0.6, **kw) -> Transformer:
    """A random tiny GPT whose next-token distributions are far from uniform."""
    torch.manual_seed(seed)
    return randomise(Transformer(tiny_args(model_type, **kw)), output_std).eval()


def tiny_eagle(gpt: Transformer, seed=1) -> EagleHead:
    torch.manual_seed(seed)
    h = EagleHead(gpt.config)
    with torch.no_grad():
        for p in h.parameters():
            p.normal_(0, 0.2)
    return h.eval()


def caption(batch=1, length=5, dim=12, valid=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    emb = torch.randn(batch, length, dim, generator=g)
    mask = torch.zeros(batch, length, dtype=torch.bool)
    mask[:, length - valid :] = True
    return emb * mask[..., None], mask


def incremental_logits(gpt, idx, cond, mask=None, garbage_rollback=True, keep=False):
    """Logits for every image slot via the KV cache: prefill, a 1-token step, a
    multi-token verify call, a garbage call that is then rolled back. ``keep``:
    leave the caches allocated afterwards."""
    b, t = idx.shape
    gpt.start_sequence(b, mask)
    first, _ = gpt.prefill(cond)
    rows = [first[:, None]]
    l1, _ = gpt.step(idx[:, :1], 0)  # one token
    rows.append(l1)
    if garbage_rollback:
        gpt.step((idx[:, 1:4] + 1) % gpt.vocab_size, 1)  # wrong tokens, to be overwritten
    l2, _ = gpt.step(idx[:, 1:4], 1)  # verify 3 at once
    rows.append(l2)
    l3, _ = gpt.step(idx[:, 4:t], 4)
    rows.append(l3)
    if not keep:
        gpt.clear_cache()
    return torch.cat(rows, dim=1)


V3_NAMES = ("red square", "green circle", "blue star", "sun")


def tiny_v3_folder(folder, gpt=None, names=V3_NAMES, styles=("a", "b"), encoder_dim=64):
    """A factorised class model folder (identities, styles, tones; snap vectors from a hash encoder),
    with random weights unless ``gpt`` is given; → the folder."""
    from pathlib import Path

    from lantern_studio.engine.settings import GenerationSettings
    from lantern_studio.engine.text import HashEncoder
    from lantern_studio.engine.tokenizer import VQArgs, VQModel
    from lantern_studio.models.classes import TONES, ClassVocabulary
    from lantern_studio.models.local import save_model_dir
    from lantern_studio.training.ship import class_snap_files

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if gpt is None:
        torch.manual_seed(0)
        args = ModelArgs(**{**tiny_args("c2i", vocab=12, grid=4).to_dict(), "num_classes": len(names),
                            "num_styles": len(styles), "num_tones": len(TONES)})
        gpt = randomise(Transformer(args)).eval()
    torch.manual_seed(0)
    vq_args = VQArgs(codebook_size=gpt.vocab_size, codebook_embed_dim=4, z_channels=8, ch=8, encoder_ch_mult=[1, 1],
                     decoder_ch_mult=[1, 1], norm_groups=4)
    vq = VQModel(vq_args)
    vocab = ClassVocabulary([{"identity": f"X{i}", "name": n, "styles": list(styles), "tags": []}
                             for i, n in enumerate(names)], list(styles), list(TONES),
                            [{"identity": "Y", "name": "firefighter", "tags": []}])
    (folder / "identities.json").write_text(vocab.to_json())
    snap = class_snap_files(folder, vocab, HashEncoder(encoder_dim))
    cond = {"kind": "class", "factorised": True, "identities": "identities.json", "styles": list(styles),
            "tones": list(TONES), "default_style": styles[-1], "encoder": "hash", "dim": encoder_dim, "snap": snap}
    save_model_dir(folder, gpt, vq, vq_args, cond, GenerationSettings(temperature=0.3, cfg_scale=1.5, drafter="jacobi",
                                                                     draft_length=4, k=2, delta=0.1),
                   "tiny-v3", extra={"extra_files": ["identities.json", "snap_vectors.safetensors"]})
    return folder


def tiny_v3_model_and_pack(root):
    """A tiny factorised class model (12 codes, 4x4 tokens, 4 identities, 2 styles) in ``root/model`` and a pack
    of 24 rows of its kind in ``root/pack.pt`` (random tokens: heads learn the target's own distributions on
    them); → (the model folder, the pack's path)."""
    from pathlib import Path

    from lantern_studio.training.ar import write_pack
    from lantern_studio.training.prepared import ClassPrep

    root = Path(root)
    torch.set_num_threads(1)
    folder = tiny_v3_folder(root / "model")
    g = torch.Generator().manual_seed(0)
    n = 24
    cond = torch.stack([torch.arange(n) % 4, torch.arange(n) % 2, torch.zeros(n, dtype=torch.long)], 1)
    prep = ClassPrep(codes=torch.randint(0, 12, (1, n, 4, 4), generator=g).to(torch.int16), cond=cond,
                     train=torch.ones(n, dtype=torch.bool), weights=torch.ones(n, dtype=torch.float64), vocab_size=12,
                     grid=4, vocabulary=(folder / "identities.json").read_text(), identities=4, styles=["a", "b"],
                     tones=[])
    write_pack(prep, root / "pack.pt")
    return folder, root / "pack.pt"
