"""Assemble the bundled model folder from trained runs, with its model card.

``lantern-studio train ship [--out resources/models/emoji-64] [--vq …] [--gpt …] [--eagle …] [--recogniser …]``

Writes fp16 safetensors for the tokenizer, AR model, drafter and recogniser,
the caption list (with each caption's subgroup) and its pooled sentence
vectors for the prompt → nearest-caption aid, the held-out prompts for the
benchmark, ``model.json`` with file hashes, a sample grid, and
``MODEL_CARD.md`` filled from the runs' ``metrics.json`` files.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from PIL import Image
from safetensors.torch import save_file

from ..engine.checkpoints import load_gpt, load_weights, save_weights
from ..engine.settings import GenerationSettings
from ..engine.text import encoder_spec, make_text_encoder
from ..engine.tokenizer import load_vq
from ..models import BUNDLED_NAME, bundled_dir
from ..models.dataset import load_dataset
from ..models.classes import VocabularyError, read_vocabulary
from ..models.local import copy_or_save, load_eagle, load_model_dir, read_manifest, save_model_dir
from ..paths import data_dir, runs_dir
from .captions import short_caption
from .validation import Sampling
from .model_card import GRID_PROMPTS, write_card
from .recipe import read_recipe, repo_root
from .errors import TrainingError, command


# Sampling defaults: a validation sweep on 32 training captions (the held-out prompts snap to training
# captions) gave top-5 fidelity 0.59 for (cfg 4, T 0.9, top-k 100) and (cfg 4, T 0.8, top-k 50), 0.59 / 0.50 /
# 0.38 for cfg 6 / 6 (T 0.8) / 8. Draft length 10: Jacobi + LANTERN (64, 0.2) gave 2.56 / 3.35 / 3.59 / 3.73
# tokens per target forward at lengths 6 / 10 / 14 / 20 and the best wall-clock speed-up at 10 (8 prompts).
# Drafter, k and δ: Jacobi + LANTERN k=64, δ=0.2. On 76 held-out prompts (docs/bench/reports/bench-fidelity-emoji64.json) the
# bench's rule picked k=256, δ=0.4 (2.23x, fidelity +2.6 points), but its sample grid beside a vanilla one shows
# speckled textures the recogniser does not score; k=64, δ=0.2 keeps 3.08 tokens/forward (1.90x), fidelity +6.6
# points and the lowest Fréchet distance of the run (62 vs vanilla 86), and its grid is closer to vanilla's.
# Session 3: coupled (MC-SJD) Jacobi windows converge, so the window grows 10 → 24 (24 common prompts,
# docs/bench/reports/bench-common-emoji64.json: k64 δ0.2 2.29× at 10, 2.45× and 5.74 tokens/forward at 24, the lowest Fréchet
# distance of the run). The bench's rule picks k256 δ0.4 window 24 (3.22×, fidelity equal to vanilla's), but its
# grid beside vanilla's shows the speckled textures seen in session 2 too: it stays one slider move away.
DEFAULTS = GenerationSettings(temperature=0.9, top_k=100, top_p=1.0, cfg_scale=4.0, drafter="jacobi", draft_length=24,
                              k=64, delta=0.2)
# The factorised class model (v3): a memorising model stays on its memorised path with a low temperature, a
# small top-k and mild guidance (FEASIBILITY's prototype: judge top-5 9 % at T 0.9 / top-k 100 / CFG 3, 47 % at
# T 0.3 / top-k 5 / CFG 1.5 on the same weights); the values here are re-chosen on validation prompts (the card says how)
# Session 6 validation (48 names of the repertoire's emoji, vanilla, judge identity top-5 / top-1): T 0.5 / top-k 10 /
# CFG 2 25.0 % / 10.4 %; T 0.3 / 5 / 3 10.4 %; T 0.7 / 20 / 1.5 8.3 %; T 1 / off / 1 8.3 %; T 0.1 / 3 / 1.5 12.5 %;
# T 0.3 / 5 / 1.5 6.2 % (48 images each: ±6 points of noise)
# Session 7, the window (bench on 24 validation names × 2 seeds, 1 thread, bf16, docs/bench/reports/bench-val-emoji64-v3-window.json):
# a verify's cost grows with its width on this CPU (bf16: width 13 ≈ 1.3× a vanilla step, width 25 ≈ 1.6×), and
# tokens per round grow slowly past 12 (k64 δ0.2: 2.46 / 2.89 / 3.18 / 3.24 at windows 8 / 12 / 16 / 24), so
# window 12 is fastest: 2.07× against 1.79× at 24 (exact: 1.95× against 1.67×). δ tightening along the draft
# (δ0.4·0.7^i, δ0.4·0.5^i, k256 δ0.6·0.5^i at window 12) measured 2.01× / 1.97× / 2.06×: no faster, so δ stays flat.
CLASS_DEFAULTS = GenerationSettings(temperature=0.5, top_k=10, top_p=1.0, cfg_scale=1.0, drafter="jacobi",
                                    draft_length=12, k=64, delta=0.2)


def class_defaults(sampling: Sampling | None) -> GenerationSettings:
    """A class model's shipped settings: CLASS_DEFAULTS with the sampling (temperature, top-k, guidance) a
    validation sweep picked for it (``train ship --sampling``); the decoding method stays."""
    return CLASS_DEFAULTS if sampling is None else sampling.applied(CLASS_DEFAULTS)


def _load_json(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def tag_text(caption: str, tags) -> str:
    """A caption with its emojibase keywords, the second text a prompt is matched against
    ("ewe: animal, baa, farm, fluffy, lamb, sheep, wool"); numeric tags ("143") are left out."""
    words = [t for t in (tags or []) if isinstance(t, str) and t and not t.isdigit()]
    return f"{caption}: {', '.join(words)}" if words else caption


def snap_files(folder: Path, meta: list, encoder) -> dict:
    """captions.json ([{caption, subgroup}] of training captions, short form), their
    pooled vectors and their name-and-keyword vectors (:func:`tag_text`) → the
    conditioning's ``snap`` entry."""
    seen, rows, tagged = set(), [], []
    for m in meta:
        if m["split"] != "train":
            continue
        c = short_caption(m["caption"])
        if c not in seen:
            seen.add(c)
            rows.append({"caption": c, "subgroup": m["subgroup"]})
            tagged.append(tag_text(c, m.get("tags")))

    def pooled(texts):
        return torch.cat([encoder.pooled(texts[s : s + 256]) for s in range(0, len(texts), 256)])

    (folder / "captions.json").write_text(json.dumps(rows, ensure_ascii=False, indent=0))
    save_file({"vectors": pooled([r["caption"] for r in rows]).half().contiguous(),
               "tag_vectors": pooled(tagged).half().contiguous()}, str(folder / "caption_vectors.safetensors"))
    return {"captions": "captions.json", "vectors": "caption_vectors.safetensors"}


def class_snap_files(folder: Path, vocab, encoder) -> dict:
    """The snap vectors of a factorised class model: each class's name and name-with-keywords
    vectors, and the same for the identities the repertoire left out (so a prompt that matches
    one of those best is told so) → the conditioning's ``snap`` entry."""
    def pooled(texts):
        if not texts:
            return torch.zeros(0, 1)
        return torch.cat([encoder.pooled(texts[s : s + 256]) for s in range(0, len(texts), 256)]).half().contiguous()

    tensors = {"vectors": pooled([r["name"] for r in vocab.identities]),
               "tag_vectors": pooled([tag_text(r["name"], r.get("tags")) for r in vocab.identities])}
    if vocab.outside:
        tensors["outside_vectors"] = pooled([r["name"] for r in vocab.outside])
        tensors["outside_tag_vectors"] = pooled([tag_text(r["name"], r.get("tags")) for r in vocab.outside])
    save_file(tensors, str(folder / "snap_vectors.safetensors"))
    return {"vectors": "snap_vectors.safetensors"}


#: the emoji every style preview shows (the studio's style selector), the first that has art in the style
PREVIEW_IDENTITIES = ("1F600", "1F436", "2764-FE0F", "2764")


def style_previews(folder: Path, images: np.ndarray, meta: list, styles) -> list:
    """styles/<style>.png: one emoji from the dataset in each style, 32 px, for the style selector (the
    previews of styles no longer offered are removed)."""
    (folder / "styles").mkdir(exist_ok=True)
    for old in (folder / "styles").glob("*.png"):
        if old.stem not in styles:
            old.unlink()
    names = []
    for style in styles:
        rows = {m["identity"]: i for i, m in enumerate(meta) if m["style"] == style and not m.get("skin_tone")}
        row = next((rows[c] for c in PREVIEW_IDENTITIES if c in rows), next(iter(rows.values()), None))
        if row is None:
            continue
        Image.fromarray(images[row]).resize((32, 32), Image.LANCZOS).save(folder / "styles" / f"{style}.png")
        names.append(f"styles/{style}.png")
    return names


def heldout_prompts(meta: list) -> list:
    seen, out = set(), []
    for m in meta:
        if m["split"] == "heldout" and m["vendor"] == "google" and not m.get("skin_tone"):
            c = short_caption(m["caption"])
            if c not in seen:
                seen.add(c)
                out.append({"prompt": c, "subgroup": m["subgroup"], "identity": m["identity"]})
    return out


def sample_grid(pipe, settings, path: Path, prompts=GRID_PROMPTS, seeds=(0, 1, 2, 3), cols: int = 8) -> dict:
    """An 8×8 grid: each prompt in ``prompts`` with each seed, ``cols`` tiles a row; → timing and stats."""
    tiles, t0, forwards, tokens = [], time.time(), 0, 0
    for seed in seeds:
        for p in prompts:
            r = pipe.generate(p, settings.with_(seed=seed))
            tiles.append(r.image)
            forwards += r.stats.target_forwards + 1
            tokens += r.stats.tokens
    rows = (len(tiles) + cols - 1) // cols
    grid = np.full((rows * 66, cols * 66, 3), 255, np.uint8)
    for i, t in enumerate(tiles):
        r, c = divmod(i, cols)
        grid[r * 66 + 1 : r * 66 + 65, c * 66 + 1 : c * 66 + 65] = t
    Image.fromarray(grid).resize((grid.shape[1] * 2, grid.shape[0] * 2), Image.NEAREST).save(path)
    return {"seconds": time.time() - t0, "images": len(tiles), "tokens_per_forward": tokens / max(1, forwards)}


def ship(args) -> dict:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpt = load_gpt(args.gpt)
    if gpt.factorised:  # its vocabulary first: a missing or broken one is named before the slow parts
        classes = _load_json(Path(args.gpt).parent / "metrics.json").get("classes") or {}
        try:
            vocab = read_vocabulary(Path(args.gpt).parent / "identities.json", classes.get("styles"),
                                    classes.get("tones"))
        except VocabularyError as e:
            raise TrainingError(f"train ship --gpt {args.gpt}: a class model ships with the identities.json of its "
                                f"run folder, beside the weights ({e})") from None
    vq = load_vq(args.vq)
    eagle = load_eagle(args.eagle, gpt.config) if args.eagle and Path(args.eagle).exists() else None
    images, meta, manifest = load_dataset(args.data)
    encoder = make_text_encoder(args.encoder)
    if gpt.factorised:
        for old in ("captions.json", "caption_vectors.safetensors", "heldout_prompts.json"):
            (out / old).unlink(missing_ok=True)  # a text model's files, left from an earlier ship
        (out / "identities.json").write_text(vocab.to_json(), encoding="utf-8")
        snap = class_snap_files(out, vocab, encoder)
        # a run trained on some styles only (train ar --styles) offers just those; the others keep their rows
        offered = classes.get("trained_styles") or vocab.styles
        extra_files = ["identities.json", "snap_vectors.safetensors", *style_previews(out, images, meta, offered)]
        conditioning = {"kind": "class", "factorised": True, "identities": "identities.json", "styles": vocab.styles,
                        "tones": vocab.tones, "default_style": args.style, "repertoire": classes.get("repertoire"),
                        "snap": snap, **encoder_spec(args.encoder)}
        if offered != vocab.styles:
            conditioning["offered_styles"] = list(offered)
        defaults = class_defaults(getattr(args, "sampling", None))
    else:
        snap = snap_files(out, meta, encoder)
        held = heldout_prompts(meta)
        (out / "heldout_prompts.json").write_text(json.dumps(held, ensure_ascii=False, indent=1))
        extra_files = ["captions.json", "caption_vectors.safetensors", "heldout_prompts.json"]
        conditioning = {"kind": "caption", "length": gpt.cls_token_num, "snap": snap, **encoder_spec(args.encoder)}
        defaults = DEFAULTS
    if eagle is None:
        (out / "eagle.safetensors").unlink(missing_ok=True)  # an earlier ship's drafter, for another GPT
    if (out / "common_prompts.json").is_file():  # the plain-language evaluation set (written by hand, kept)
        extra_files.append("common_prompts.json")
    if args.recogniser and Path(args.recogniser).exists():
        sd, cfg = load_weights(args.recogniser, "recogniser")  # checked before it ships
        copy_or_save(Path(args.recogniser), out / "recogniser.safetensors", torch.float16,
                     lambda p: save_weights(sd, p, cfg, "recogniser"))
        extra_files.append("recogniser.safetensors")
    defaults = defaults.with_(k=min(defaults.k, gpt.vocab_size - 1), top_k=min(defaults.top_k, gpt.vocab_size))
    man = save_model_dir(out, gpt, vq, vq.args, conditioning, defaults, getattr(args, "name", None) or BUNDLED_NAME, eagle=eagle, vq_file=Path(args.vq),
                         extra={"extra_files": extra_files, "recogniser": "recogniser.safetensors" if "recogniser.safetensors" in extra_files else None})
    return man


def _sampling_arg(text: str) -> Sampling:
    try:
        return Sampling.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    r = runs_dir()
    p.add_argument("--out", default=str(bundled_dir()))
    p.add_argument("--name", default=BUNDLED_NAME, help="the model's name in model.json (another bundled model: "
                   "its folder's name under resources/models)")
    p.add_argument("--data", default=str(data_dir() / "emoji64"))
    p.add_argument("--vq", default=str(r / "vq" / "vq.safetensors"))
    p.add_argument("--gpt", default=str(r / "ar" / "gpt.safetensors"))
    p.add_argument("--eagle", default=str(r / "drafter" / "eagle.safetensors"))
    p.add_argument("--recogniser", default=str(r / "recogniser" / "recogniser.safetensors"),
                   help="the recogniser (or identity judge) that ships for quality measures")
    p.add_argument("--encoder", default="minilm", help="text encoder the AR model was trained with (a class "
                   "model: the one its prompts are snapped with)")
    p.add_argument("--style", default="fluent-flat", help="a class model's default art style")
    p.add_argument("--sampling", default=None, type=_sampling_arg, metavar="T/K/CFG", help="a class model's default sampling "
                   "(default 0.5/10/1; pick it with `train validate --sampling`)")
    p.add_argument("--grid", action="store_true", help="also generate the 8×8 sample grid (samples.png)")
    p.add_argument("--recipe", default=None, help="the recipe that made the model, named in its card (default: "
                   "recipes/NAME.toml of this checkout, when there)")
    p.add_argument("--card-only", action="store_true", help="only (re)write MODEL_CARD.md from the folder and its "
                   "recipe (and the grid with --grid)")


def recipe_for(folder: Path) -> Path | None:
    """The recipe of this checkout whose model folder is ``folder`` (a bundled model's), or None."""
    for path in sorted((repo_root() / "recipes").glob("*.toml")):
        try:
            if (repo_root() / read_recipe(path).model).resolve() == Path(folder).resolve():
                return path
        except TrainingError:
            continue
    return None


@command
def run(args) -> int:
    out = Path(args.out)
    man = read_manifest(out) if args.card_only else ship(args)
    if args.grid:
        pipe = load_model_dir(out)
        print(f"sample grid: {sample_grid(pipe, pipe.defaults, out / 'samples.png')}")
    recipe = Path(args.recipe) if args.recipe else recipe_for(out)
    if recipe is not None and recipe.is_file():
        print(f"model card: {write_card(out, recipe)}")
    elif args.recipe or args.card_only:
        raise TrainingError(f"train ship --recipe {recipe}: no such recipe file (the card names the recipe that "
                            "made the model)")
    else:
        print(f"no recipe in {repo_root() / 'recipes'} names {out}: no model card written (--recipe FILE)")
    print(json.dumps({k: v for k, v in man.items() if k != "conditioning"}, indent=1))
    return 0
