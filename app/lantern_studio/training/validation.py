"""Free-running validation of a class model while it trains: samples, scored by the judge.

A low teacher-forced loss does not make pictures (model v3 drew blobs at 0.16 nats/token), so a
class run can also, every ``--validate-every`` steps, *draw*: a fixed set of validation classes (the
repertoire's own emoji, spread over its class list, never the evaluation prompts), each at a few
seeds and at one or more samplings, decoded by the tokenizer and scored by the identity judge of a
model folder. It reports identity and subgroup top-5, how different two seeds of one class are (the
variety measure), the CPU seconds it took, and writes the grid of pictures beside the run's log.
"""

from __future__ import annotations

import copy
import sys
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from ..engine.checkpoints import CheckpointError, load_gpt
from ..engine.decode import generate_tokens
from ..engine.model import Transformer
from ..engine.pipeline import ImagePipeline
from ..engine.settings import GenerationSettings
from ..engine.tokenizer import load_vq
from ..models import bundled_dir
from ..models.classes import styles_tones_of
from ..models.quality import variety
from ..models.recogniser import Recogniser, top_k_hits

class ValidationError(ValueError):
    """The validation set-up cannot run (a folder without a judge, a bad sampling)."""


@dataclass(frozen=True)
class Sampling:
    """One way of drawing: temperature, top-k and guidance (``greedy`` ignores the first two)."""

    name: str
    temperature: float
    top_k: int
    cfg_scale: float
    greedy: bool = False

    @classmethod
    def parse(cls, text: str) -> "Sampling":
        """``T/K/CFG`` (``0.3/5/1.5``) or ``greedy/CFG``."""
        parts = [p.strip() for p in text.split("/")]
        try:
            if parts[0] == "greedy" and len(parts) == 2:
                return cls(text, 1.0, 0, float(parts[1]), greedy=True)
            if len(parts) == 3:
                return cls(text, float(parts[0]), int(parts[1]), float(parts[2]))
        except ValueError:
            pass
        raise ValidationError(f"sampling {text!r}: write T/K/CFG (e.g. 0.3/5/1.5) or greedy/CFG")

    def applied(self, base: GenerationSettings) -> GenerationSettings:
        """``base`` drawn this way: its temperature, top-k, guidance and greedy replaced, all else kept."""
        return replace(base, temperature=self.temperature, top_k=self.top_k, cfg_scale=self.cfg_scale,
                       greedy=self.greedy)

    def settings(self, base: GenerationSettings, seed: int) -> GenerationSettings:
        """Validation's settings: vanilla decoding (no drafter) at ``seed``, drawn this way."""
        return replace(self.applied(base), drafter="none", seed=seed)


def pick_classes(classes: list[dict], styles: list[str], judge_classes: set, n: int,
                 prefer_style: str | None = None) -> list[tuple[int, int, dict]]:
    """``n`` validation classes spread evenly over the class list: (class row, style index, row), each
    drawn in ``prefer_style`` where the identity has art in it, else its first style; only identities
    the judge knows count."""
    usable = [(i, r) for i, r in enumerate(classes) if r.get("identity") in judge_classes]
    if not usable:
        raise ValidationError("no class of this model is an identity the judge knows")
    n = min(n, len(usable))
    picked = [usable[int(j * len(usable) / n)] for j in range(n)]
    out = []
    for i, r in picked:
        have = [s for s in (r.get("styles") or styles) if s in styles] or list(styles)
        style = prefer_style if prefer_style in have else have[0]
        out.append((i, styles.index(style), r))
    return out


def grid_png(images: np.ndarray, path: Path, scale: int = 2) -> None:
    """(classes, seeds, H, W, 3) → one PNG: a row per class, a column per seed, wrapped 8 classes wide."""
    c, s, h, w, _ = images.shape
    cols = 8
    rows = (c + cols - 1) // cols
    canvas = np.full((rows * s * h, cols * w, 3), 255, np.uint8)
    for i in range(c):
        for j in range(s):
            y, x = ((i // cols) * s + j) * h, (i % cols) * w
            canvas[y:y + h, x:x + w] = images[i, j]
    img = Image.fromarray(canvas)
    img.resize((img.width * scale, img.height * scale), Image.NEAREST).save(path)


class SampleValidation:
    """Draws the validation classes with the model in training and scores them with a model folder's
    judge (its tokenizer decodes the tokens unless the model is taught on another one, ``vq``; its sampling
    defaults fill in what a Sampling leaves out)."""

    def __init__(self, folder: Path, vocabulary_json: str, styles: list[str], samplings: list[Sampling],
                 names: int = 32, seeds: int = 2, out: Path | None = None, prefer_style: str | None = None,
                 vq: Path | None = None):
        folder = Path(folder)
        try:
            man = json.loads((folder / "model.json").read_text(encoding="utf-8"))
            vq_file, judge_file = folder / man["vq"], folder / man["recogniser"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValidationError(f"--validate-model {folder}: needs a model.json naming vq and recogniser "
                                  f"({type(e).__name__}: {e})") from None
        if not samplings:
            raise ValidationError("--validate-sampling: give at least one sampling")
        self.vq = load_vq(vq or vq_file)
        self.judge = Recogniser.load(judge_file)
        if "identity" not in self.judge.levels:
            raise ValidationError(f"{judge_file}: not an identity judge")
        self.base = GenerationSettings.from_dict(man.get("defaults") or {})
        prefer = prefer_style or (man.get("conditioning") or {}).get("default_style")
        classes = json.loads(vocabulary_json)["classes"]
        self.classes = pick_classes(classes, list(styles), set(self.judge.classes), names, prefer)
        self.samplings, self.seeds, self.out = list(samplings), int(seeds), out

    def draw(self, model: Transformer, sampling: Sampling) -> np.ndarray:
        """→ (classes, seeds, H, W, 3) uint8 pictures of the validation classes."""
        pipe = ImagePipeline(copy.deepcopy(model).cpu(), self.vq, conditioner=None, defaults=self.base)
        pipe.set_precision("auto")
        pics = []
        for row, style, _ in self.classes:
            cond = torch.tensor([[row, style, 0]])
            pics.append([pipe.decode_image(generate_tokens(pipe.runner, cond, sampling.settings(self.base, seed))[0])
                         for seed in range(self.seeds)])
        return np.asarray(pics, dtype=np.uint8)

    def score(self, images: np.ndarray) -> dict:
        """Identity / subgroup top-5 (pooled over seeds) and the variety of ``images`` (classes, seeds, ...)."""
        flat = images.reshape(-1, *images.shape[2:])
        ids = [r["identity"] for _, _, r in self.classes for _ in range(images.shape[1])]
        subgroups = set(self.judge.classes_at("subgroup"))
        subs = [r.get("subgroup") if r.get("subgroup") in subgroups else None
                for _, _, r in self.classes for _ in range(images.shape[1])]
        out = {"identity_top5": top_k_hits(self.judge, flat, ids, (5,), level="identity")[5],
               "identity_top1": top_k_hits(self.judge, flat, ids, (1,), level="identity")[1]}
        if any(subs):
            out["subgroup_top5"] = top_k_hits(self.judge, flat, subs, (5,), level="subgroup")[5]
        out["seed_distance"], out["different_pictures"] = variety(images)
        return out

    def __call__(self, model: Transformer, step: int) -> tuple[dict, str]:
        """Draw and score at every sampling → (metrics keyed ``val/<sampling>/<measure>``, one log line)."""
        was = model.training
        metrics, parts = {}, []
        try:
            for s in self.samplings:
                t0 = time.process_time()
                images = self.draw(model, s)
                got = self.score(images)
                got["cpu_seconds"] = time.process_time() - t0
                metrics.update({f"val/{s.name}/{k}": v for k, v in got.items()})
                parts.append(f"[{s.name}] identity top-5 {got['identity_top5']:.0%}"
                             + (f", subgroup {got['subgroup_top5']:.0%}" if "subgroup_top5" in got else "")
                             + f", seeds differ {got['different_pictures']:.0%} ({got['cpu_seconds']:.0f} CPU-s)")
                if self.out is not None:
                    self.out.mkdir(parents=True, exist_ok=True)
                    grid_png(images, self.out / f"validation-{step:06d}-{s.name.replace('/', '_')}.png")
        finally:
            model.train(was)
        n = len(self.classes) * self.seeds
        return metrics, f"validation ({n} samples): " + "; ".join(parts)


# --------------------------------------------------------------------------- the command


def add_arguments(p) -> None:
    p.add_argument("--gpt", required=True, help="a class model's weights: a run's gpt.safetensors (its identities.json "
                   "and metrics.json beside it name the classes) or a model folder's")
    p.add_argument("--model", default=None, help="the model folder whose judge, tokenizer and sampling defaults are "
                   "used (default: the bundled model)")
    p.add_argument("--vq", default=None, help="the tokenizer the model is taught on (default: the model folder's)")
    p.add_argument("--names", type=int, default=48, help="validation classes (default 48)")
    p.add_argument("--seeds", type=int, default=2, help="seeds per class (default 2)")
    p.add_argument("--sampling", nargs="+", default=["0.5/10/2", "0.3/5/1.5"], help="T/K/CFG or greedy/CFG, each drawn")
    p.add_argument("--style", default=None, help="draw in this style where the identity has it (default: the folder's)")
    p.add_argument("--out", default=None, help="write each sampling's grid here")
    p.add_argument("--json", default=None, help="write the figures here")
    p.add_argument("--threads", type=int, default=2)


def run(args) -> int:
    torch.set_num_threads(args.threads)
    gpt_path, folder = Path(args.gpt), Path(args.model) if args.model else bundled_dir()
    try:
        gpt = load_gpt(gpt_path)
        vocabulary = (gpt_path.parent / "identities.json").read_text(encoding="utf-8")
        styles, _tones = styles_tones_of(gpt_path)
        v = SampleValidation(folder, vocabulary, list(styles), [Sampling.parse(t) for t in args.sampling],
                             names=args.names, seeds=args.seeds, out=Path(args.out) if args.out else None,
                             prefer_style=args.style, vq=Path(args.vq) if args.vq else None)
    except (OSError, ValueError, CheckpointError) as e:
        print(f"error: train validate: {e}", file=sys.stderr)
        return 2
    metrics, line = v(gpt, 0)
    print(f"{gpt_path}: {len(v.classes)} validation classes x {v.seeds} seeds, judged by {folder}")
    print(f"{'sampling':<12} {'id top-1':>8} {'id top-5':>8} {'subgroup':>8} {'seeds differ':>12} {'CPU s':>6}")
    for s in v.samplings:
        g = {k.split("/")[-1]: val for k, val in metrics.items() if k.startswith(f"val/{s.name}/")}
        print(f"{s.name:<12} {g['identity_top1']:>8.3f} {g['identity_top5']:>8.3f} {g.get('subgroup_top5', 0):>8.3f} "
              f"{g['different_pictures']:>12.2f} {g['cpu_seconds']:>6.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"gpt": str(gpt_path), "model": str(folder), "names": len(v.classes),
                                               "seeds": v.seeds, "metrics": metrics}, indent=2), encoding="utf-8")
    return 0
