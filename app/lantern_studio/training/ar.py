"""Train the bundled emoji AR models (LlamaGen architecture): a class model (identity, style, tone; the default,
its defaults the default model's final stage) or a text-conditional one (``--condition caption``, the history's
first stages).

``lantern-studio train ar --vq VQ.safetensors [--data DIR] [--run DIR] [--steps N] [--budget-minutes M]``

1. Prepare (once, cached in the run folder): every dataset image is tokenized
   by the VQ tokenizer (optionally at small shifts on white, and as jittered
   copies), each image's class is named (or every caption variant is embedded
   by the sentence encoder into left-padded token embeddings with a mask).
2. Train: teacher-forced next-token cross-entropy (or against the jittered
   copies' mixture, ``--mixture-targets``), condition dropout for CFG (the
   model's ``class_dropout_prob``), AdamW with warm-up and cosine decay.
   Progress is printed; a resumable checkpoint is written every few minutes;
   re-running the same command resumes; ``--budget-minutes`` stops cleanly.
3. Export: fp16 safetensors ``gpt.safetensors`` + ``metrics.json`` (held-out NLL, or for a class run the NLL on sampled training rows).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

import torch

from ..engine.checkpoints import load_gpt, load_state_strict, save_gpt
from ..engine.model import ModelArgs, Transformer
from ..engine.snap import ANY_STYLE
from ..models.classes import (ClassVocabulary, VocabularyError, read_vocabulary, vocabulary_from_json)
from ..models.dataset import DatasetError
from ..paths import data_dir, runs_dir
from . import distributed
from .common import cosine_lr, write_json
from .jitter import KINDS as JITTER_KINDS, Jitter
from .errors import TrainingError
from .lifecycle import Outcome, Plan, entry_points, run_log, run_trainer
from .loop import CHECKPOINT_NAME, LoopDefaults, LoopSettings, check_loop_arguments, loop_arguments
from .step import optimizer_step
from .prepared import ClassPrep, Prep, as_prep, batch_from
from .ar_objective import drop_styles, neighbour_table, nll, substitute_neighbours
from .ar_rows import (SHIFT_SETS, load_pack, parse_styles, prepare, prepare_classes, write_pack)
from .validation import Sampling, SampleValidation, ValidationError

#: caption tokens in a text model's prefix (every text-conditional stage used 24)
CAPTION_TOKENS = 24
#: rows each evaluation measures the NLL on (held out, or for a class run sampled training rows), and the first
#: training rows it measures beside them
EVAL_IMAGES = 128
#: ``--validate-model``: validation classes drawn at each evaluation, and seeds per class (what the recorded stages
#: drew but one, which drew 24 classes; ``train validate`` measures more)
VALIDATE_NAMES, VALIDATE_SEEDS = 16, 2


def model_args(vocab: int, grid: int, length: int, caption_dim: int, dim: int, layers: int, heads: int) -> ModelArgs:
    return ModelArgs(dim=dim, n_layer=layers, n_head=heads, multiple_of=64, vocab_size=vocab,
                     block_size=grid * grid, cls_token_num=length, caption_dim=caption_dim, model_type="t2i",
                     class_dropout_prob=0.1, token_dropout_p=0.1, resid_dropout_p=0.1, ffn_dropout_p=0.1)


def class_model_args(vocab: int, grid: int, identities: int, styles: int, tones: int, dim: int, layers: int,
                     heads: int, dropout: float) -> ModelArgs:
    """A factorised class model (engine/class_embedding.py); ``dropout`` for tokens, residuals and
    feed-forwards (low while the model under-fits); 10 % of rows train the null class for CFG."""
    return ModelArgs(dim=dim, n_layer=layers, n_head=heads, multiple_of=64, vocab_size=vocab,
                     block_size=grid * grid, cls_token_num=1, model_type="c2i", num_classes=identities,
                     num_styles=styles, num_tones=tones, class_dropout_prob=0.1, token_dropout_p=dropout,
                     resid_dropout_p=dropout, ffn_dropout_p=dropout)


def warm_start(model: Transformer, path, log) -> int:
    """Copy every tensor of the weights at ``path`` whose name and shape this model shares, except
    the condition's embedding (a text model's caption projection warm-starts a class model's
    transformer); → how many tensors were copied."""
    src = load_gpt(path).state_dict()
    own = model.state_dict()
    take = {k: v for k, v in src.items()
            if not k.startswith("cls_embedding.") and k in own and tuple(own[k].shape) == tuple(v.shape)}
    model.load_state_dict(take, strict=False)
    log(f"warm start: {len(take)} of {len(own)} tensors from {path}")
    return len(take)


def check_grows(old: ClassVocabulary, new: ClassVocabulary, where: Path) -> None:
    """A grown model keeps its old class rows: the new vocabulary must list the old identities first, in order
    (a pack made from another repertoire or order would silently relabel them)."""
    old_ids, new_ids = [c["identity"] for c in old.identities], [c["identity"] for c in new.identities]
    if new_ids[: len(old_ids)] != old_ids:
        raise TrainingError(f"train ar --grow-from: the training data's classes do not start with the "
                            f"{len(old_ids)} classes of {where} in their order; prepare it with --grow-from")


def on_device(batch, device):
    """A batch from :func:`batch_from` (tokens, condition, mask or None) on ``device``."""
    return tuple(None if t is None else t.to(device, non_blocking=True) for t in batch)


def pad_style_rows(state: dict, model: Transformer, log) -> dict:
    """Weights of a class model with fewer style rows than ``model`` (e.g. before the style ``any``):
    the missing rows appended as the mean of its styles, every other tensor as it is."""
    key = "cls_embedding.style_table.weight"
    own = model.state_dict().get(key)
    src = state.get(key)
    if own is None or src is None or src.shape[0] >= own.shape[0] or src.shape[1:] != own.shape[1:]:
        return state
    extra = own.shape[0] - src.shape[0]
    log(f"style table: {src.shape[0]} rows given, {extra} appended (their mean) for the new styles")
    return {**state, key: torch.cat([src, src.mean(0, keepdim=True).expand(extra, -1)])}


@torch.no_grad()
def evaluate(model: Transformer, prep: Prep, idx: torch.Tensor, batch: int = 64) -> float:
    was = model.training
    model.eval()
    tot, n = 0.0, 0
    g = torch.Generator().manual_seed(0)
    for s in range(0, len(idx), batch):
        b = idx[s : s + batch]
        rows = on_device(batch_from(prep, b, g, augment=False), next(model.parameters()).device)
        tot += float(nll(model, *rows)) * len(b)
        n += len(b)
    model.train(was)
    return tot / max(n, 1)


class Rows:
    """Which dataset rows train and which measure the NLL (held out, or for a class run sampled training
    rows), and each training row's weight."""

    def __init__(self, prep: Prep):
        self.train = torch.nonzero(prep.train).flatten()
        self.held = torch.nonzero(~prep.train).flatten()
        self.train_w = prep.weights[self.train]  # every identity weighs the same, however many variants it has
        self.label = "held-out NLL"  # what the NLL on ``held`` is, in the log
        if isinstance(prep, ClassPrep):
            # a class model holds no identity out: its NLL is measured on a fixed sample of unshifted training rows
            self.held = self.train[torch.randperm(len(self.train), generator=torch.Generator().manual_seed(0))]
            self.label = "NLL on sampled training rows"


class ArTrainer:
    """The AR model's trainer on the one loop driver (:mod:`.loop`): identity-balanced batches,
    teacher-forced cross-entropy (optionally against the jittered copies' mixture, on neighbour-substituted
    contexts), an optional EMA of the weights."""

    kind = "ar"

    def __init__(self, args, prep: Prep, model: Transformer, group, device: torch.device,
                 neighbours: torch.Tensor | None, rows: Rows, log):
        self.a, self.data, self.model, self.device, self.neighbours = args, prep, model, device, neighbours
        self.group, self.log = group, log
        self.train_idx, self.train_w, self.held_idx, self.held_label = rows.train, rows.train_w, rows.held, rows.label
        self.opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.05)
        self.gen = torch.Generator().manual_seed(args.seed + group.rank)  # each rank its own batches
        self.step = 0
        self.ema = None
        self.start_ema()
        self.step_model = distributed.wrap(model, group)
        self.autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bool(args.bf16))
        self.validation = None  # a validation.SampleValidation (class runs with --validate-model)

    def start_ema(self) -> None:
        if self.a.ema and self.ema is None:
            self.ema = {k: v.detach().float().clone() for k, v in self.model.state_dict().items()}

    def train_step(self) -> dict[str, float]:
        a = self.a
        lr = cosine_lr(self.step, a.steps, a.lr, a.warmup)
        b = self.train_idx[torch.multinomial(self.train_w, a.batch, replacement=True, generator=self.gen)]
        rows = on_device(batch_from(self.data, b, self.gen), self.device)
        inputs = (substitute_neighbours(rows[0], self.neighbours, a.substitute, self.gen)
                  if a.substitute > 0 else None)
        if a.style_dropout > 0:
            rows = (rows[0], drop_styles(rows[1], self.data.styles.index(ANY_STYLE), a.style_dropout, self.gen),
                    rows[2])
        copies = (self.data.codes[:, b.cpu()].flatten(2).permute(1, 0, 2).long().to(self.device)
                  if a.mixture_targets else None)
        with self.autocast:
            loss = nll(self.step_model, *rows, inputs=inputs, copies=copies)
        optimizer_step(self.opt, loss, self.model.parameters(), lr=lr, clip=1.0)
        if self.ema is not None:
            with torch.no_grad():
                for k, v in self.model.state_dict().items():
                    self.ema[k].mul_(a.ema).add_(v.detach().float(), alpha=1 - a.ema)
        self.step += 1
        return {"loss": float(loss.detach()), "lr": lr}

    def evaluate(self) -> tuple[dict, str]:
        h = evaluate(self.model, self.data, self.held_idx[:EVAL_IMAGES])
        tr = evaluate(self.model, self.data, self.train_idx[:EVAL_IMAGES])
        metrics, line = {"heldout_nll": h, "train_nll": tr}, (
            f"{self.held_label} {h:.3f} nats/token, train NLL (first rows) {tr:.3f}")
        if self.validation is not None:  # free-running samples scored by the judge, beside the NLL
            drawn, said = self.validation(self.model, self.step)
            metrics.update(drawn)
            line += "; " + said
        return metrics, line

    def extra_state(self) -> dict:
        return {"model_args": self.model.config.to_dict(), "ema": self.ema}

    def load_extra_state(self, extra: dict) -> None:
        ema = extra.get("ema")
        if ema is not None:  # a checkpoint is untrusted input: the average must be this model's tensors
            own = self.model.state_dict()
            if not isinstance(ema, dict) or set(ema) != set(own) or any(
                    not isinstance(v, torch.Tensor) or tuple(v.shape) != tuple(own[k].shape) for k, v in ema.items()):
                raise TrainingError(f"{Path(self.a.run) / CHECKPOINT_NAME}: its weight average (ema) does not fit "
                                    "this model; use another --run folder")
        self.ema = None if ema is None else {k: v.to(self.device) for k, v in ema.items()}
        self.start_ema()  # --ema on a run that kept none: the average starts from the resumed weights

    def export(self, out: Path, history: list, wall: float) -> dict:
        """Rank 0 writes ``gpt.safetensors`` + ``metrics.json`` into ``out``'s folder; every rank of a
        distributed run first logs a digest of its weights (they must agree)."""
        if self.group.active:
            self.log(f"rank {self.group.rank} final weights sha256 {distributed.state_digest(self.model)}")
            if not self.group.main:
                return {"step": self.step, "rank": self.group.rank}
        return export_weights(self.model, self.ema, out.parent, history, self.model.config, self.a, self.step, wall,
                              self.log, prep=self.data)


def _run(args) -> Outcome:
    """Train (or resume); under torchrun every rank runs this, rank 0 logs, saves and exports (the exported
    metrics; ``{"pack": FILE}`` for ``--pack-out``; ``{"step", "stopped_by"}`` when a signal stopped it,
    checkpointed)."""
    group = distributed.setup()
    try:
        return _train(args, group)
    finally:
        distributed.teardown(group)


def _train(args, group) -> Outcome:
    """Check the options, prepare the data (or write it as a pack and stop), then the lifecycle."""
    check_loop_arguments(args, min_steps=0)
    check_args(args)
    folder = Path(args.run)
    log = run_log(folder, group.rank)  # rank 0 writes the run's log; other ranks keep their own beside it
    styles = parse_styles(args.styles) if args.condition == "class" else None
    prep = prepared_data(args, folder, group, log, styles)
    if args.pack_out:
        return Outcome(0, 0, write_pack_once(prep, Path(args.pack_out), group, log))

    def build(resumed: dict | None) -> ArTrainer:
        return build_trainer(args, prep, folder, group, log, resumed)

    def describe(t: ArTrainer) -> str:
        n_params = sum(p.numel() for p in t.model.parameters())
        return (f"AR model: {n_params / 1e6:.2f} M params, {len(t.train_idx)} train / {len(t.held_idx)} held-out "
                f"images, target {args.steps} steps, batch {args.batch}"
                + (f" per rank × {group.world} ranks (DDP)" if group.active else ""))

    plan = Plan(kind=ArTrainer.kind, settings=LoopSettings.from_args(args), out=folder / "gpt.safetensors", log=log,
                folder=folder, threads=args.threads, export_only=bool(getattr(args, "export_only", False)),
                main=group.main, agree=lambda flag: distributed.any_rank(group, flag))
    return run_trainer(plan, build, describe)


def check_args(args) -> None:
    """The options that cannot work together, named before any data is read."""
    tokenizes = args.prepared is None and not args.pack
    if tokenizes and not args.vq:
        raise TrainingError("train ar: --vq is needed to tokenize the dataset (or give --pack)")
    if args.substitute > 0 and not args.vq:
        raise TrainingError("train ar: --substitute needs --vq (the codebook's neighbours)")
    if not 0 <= args.substitute < 1:
        raise TrainingError(f"train ar --substitute: must be in [0, 1), got {args.substitute}")
    if args.substitute_k < 1:
        raise TrainingError(f"train ar --substitute-k: must be >= 1, got {args.substitute_k}")
    if not 0 <= args.style_dropout < 1:
        raise TrainingError(f"train ar --style-dropout: must be in [0, 1), got {args.style_dropout}")
    if args.style_dropout > 0 and args.condition != "class":
        raise TrainingError("train ar --style-dropout: only class runs (--condition class) have styles")
    if args.mixture_targets and not args.jitter:
        raise TrainingError("train ar --mixture-targets: needs --jitter (the copies whose codes are mixed)")
    if args.jitter and args.condition != "class":
        raise TrainingError("train ar --jitter: only class runs (--condition class) take jittered copies")
    if (tokenizes or args.substitute > 0) and not Path(args.vq).is_file():
        raise TrainingError(f"train ar --vq {args.vq}: no such file")


def prepared_data(args, run: Path, group, log, styles: list[str] | None) -> Prep:
    """The run's training data: given (``args.prepared``), from a pack, or the dataset tokenized (once, cached)."""
    if args.prepared is not None:
        return as_prep(args.prepared, trained_styles=styles)
    if args.pack:
        prep = replace(load_pack(Path(args.pack)), trained_styles=styles)
        log(f"training data from the pack {args.pack}: {len(prep.cond)} images")
        return prep
    return tokenized_data(args, run, group, log, styles)


def tokenized_data(args, run: Path, group, log, styles: list[str] | None) -> Prep:
    """The dataset tokenized (and captions embedded) by rank 0, once, with every core; the others read its cache."""
    torch.set_num_threads(max(args.threads, (os.cpu_count() or 1) // group.world))
    if not group.main:
        distributed.barrier(group)
    try:
        if args.condition == "class":
            prep = prepare_classes(Path(args.data), Path(args.vq), run, args.repertoire, log=log,
                                   grow_from=Path(args.grow_from) if args.grow_from else None,
                                   shifts=SHIFT_SETS[args.shifts], styles=styles,
                                   jitter=Jitter(args.jitter, args.jitter_copies, args.seed) if args.jitter else None,
                                   any_style=args.style_dropout > 0)
        else:
            prep = prepare(Path(args.data), Path(args.vq), run, encoder=args.encoder, length=CAPTION_TOKENS, log=log)
    except TrainingError:
        raise
    except (DatasetError, FileNotFoundError, ValueError) as e:  # the dataset's, the tokenizer's or a vocabulary's
        raise TrainingError(f"train ar: {e}") from None
    if group.main:
        distributed.barrier(group)
    return prep


def write_pack_once(prep: Prep, path: Path, group, log) -> dict:
    """``--pack-out``: rank 0 writes the prepared data as a pack; nothing trains."""
    if group.main:
        write_pack(prep, path)
        log(f"wrote the training pack {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    return {"pack": str(path)}


def model_args_for(args, prep: Prep) -> ModelArgs:
    if isinstance(prep, ClassPrep):
        return class_model_args(prep.vocab_size, prep.grid, prep.identities, len(prep.styles), len(prep.tones),
                                args.dim, args.layers, args.heads, args.dropout)
    return model_args(prep.vocab_size, prep.grid, CAPTION_TOKENS, prep.emb.shape[-1], args.dim, args.layers,
                      args.heads)


def build_trainer(args, prep: Prep, run: Path, group, log, resumed: dict | None) -> ArTrainer:
    """The model (initialised from --init-from / --grow-from / --warm-start when the run starts) and its
    trainer; a checkpoint of other model settings is refused."""
    margs = model_args_for(args, prep)
    if resumed is not None and resumed["extra"]["model_args"] != margs.to_dict():
        raise TrainingError(f"{run / CHECKPOINT_NAME}: was trained with other model settings; use another --run folder")
    if resumed is not None and resumed["extra"].get("objective", "nll") != "nll":
        raise TrainingError(f"{run / CHECKPOINT_NAME}: was trained with another objective than next-token "
                            "cross-entropy; use another --run folder")
    # a new run's first weights and the draws its model makes while training (the condition's dropout) follow
    # --seed, not whatever used torch's global generator before: the same command trains the same weights
    torch.manual_seed(args.seed + group.rank)
    model = Transformer(margs)
    start_step = 0 if resumed is not None else initialise(model, args, prep, log)
    device = torch.device(args.device)
    neighbours = neighbour_table(args.vq, args.substitute_k).to(device) if args.substitute > 0 else None
    model.to(device)  # before the trainer: its optimizer (and a resumed optimizer's state) follows the parameters
    trainer = ArTrainer(args, prep, model, group, device, neighbours, Rows(prep), log)
    trainer.step = start_step
    if getattr(args, "validate_model", None) and group.main:
        trainer.validation = sample_validation(args, prep, run)
    model.train()
    return trainer


def initialise(model: Transformer, args, prep: Prep, log) -> int:
    """A new run's first weights (→ the step its schedule starts at)."""
    if args.init_from:
        # A new machine has no optimizer checkpoint (it stays outside git); continue
        # from the committed fp16 weights with a fresh optimizer at --start-step.
        load_state_strict(model, pad_style_rows(load_gpt(args.init_from).state_dict(), model, log), args.init_from)
        log(f"initialised from {args.init_from}; schedule continues at step {args.start_step}")
        return args.start_step
    if args.grow_from:
        grow(model, Path(args.grow_from), prep, args.seed, log)
    elif args.warm_start:
        warm_start(model, args.warm_start, log)
    return 0


def grow(model: Transformer, grow_from: Path, prep: Prep, seed: int, log) -> None:
    """A trained class model with identity rows appended for the classes the repertoire adds."""
    old = load_gpt(grow_from)
    where = grow_from.parent / "identities.json"
    if where.is_file() and isinstance(prep, ClassPrep) and prep.vocabulary:
        try:
            old_vocab = read_vocabulary(where, prep.styles, prep.tones)
        except VocabularyError as e:
            raise TrainingError(f"train ar --grow-from: {e}") from None
        check_grows(old_vocab, vocabulary_from_json(prep.vocabulary, prep.styles, prep.tones), where)
    added = model.config.num_classes - old.config.num_classes
    old.grow_identities(added, generator=torch.Generator().manual_seed(seed))
    load_state_strict(model, pad_style_rows(old.state_dict(), model, log), grow_from)
    log(f"grown from {grow_from}: {old.config.num_classes - added} classes kept, {added} added")


def sample_validation(args, prep: Prep, run: Path) -> SampleValidation:
    """The free-running validation of ``--validate-model`` for a class run (its grids go to run/validation)."""
    if not isinstance(prep, ClassPrep):
        raise TrainingError("train ar --validate-model: only class runs (--condition class) validate by drawing")
    try:
        samplings = [Sampling.parse(t) for t in args.validate_sampling]
        return SampleValidation(Path(args.validate_model), prep.vocabulary, list(prep.styles), samplings,
                                names=VALIDATE_NAMES, seeds=VALIDATE_SEEDS, out=run / "validation",
                                prefer_style=(prep.trained_styles or [None])[0],
                                vq=Path(args.vq) if getattr(args, "vq", None) else None)
    except ValidationError as e:
        raise TrainingError(f"train ar: {e}") from None


def ambiguity_record(args, prep: Prep | None) -> dict:
    """What a run taught of latent-neighbour ambiguity, for metrics.json and the model card: the jittered
    copies (kind, count, strengths) and the share of tokens each moved from the clean ones, the mixture targets,
    the neighbour substitution and style dropout."""
    out = {"mixture_targets": bool(getattr(args, "mixture_targets", False)),
           "substitute": getattr(args, "substitute", 0.0), "substitute_k": getattr(args, "substitute_k", 0),
           "style_dropout": getattr(args, "style_dropout", 0.0), "jitter": None}
    kind = getattr(args, "jitter", None)
    if kind and prep is not None:
        spec = Jitter(kind, args.jitter_copies, args.seed)
        codes = prep.codes
        moved = [round(float((codes[i] != codes[0]).float().mean()), 4) for i in range(len(codes) - spec.copies, len(codes))]
        out["jitter"] = {**spec.key(), "tokens_moved": moved}
    return out


def export_weights(model: Transformer, ema, run: Path, history, margs: ModelArgs, args, step: int, wall: float, log,
                   prep: Prep | None = None) -> dict:
    """Write ``gpt.safetensors`` (the EMA weights when the run keeps them) and ``metrics.json``."""
    if ema is not None:
        model.load_state_dict({k: v.to(model.state_dict()[k].dtype) for k, v in ema.items()})
    metrics = {"step": step, "target_steps": args.steps, "params": sum(p.numel() for p in model.parameters()),
               "wall_seconds": wall, "history": history, "model_args": margs.to_dict(), "batch": args.batch,
               "lr": args.lr, "ema": args.ema if ema is not None else None}
    if history:
        metrics["heldout_nll"] = history[-1]["heldout_nll"]
        metrics["train_nll"] = history[-1]["train_nll"]
    metrics["ambiguity"] = ambiguity_record(args, prep)
    if prep is not None and ema is not None:
        rows = Rows(prep)  # the rows the run's own evaluation measured (a class run holds none out)
        metrics["heldout_nll_ema"] = evaluate(model, prep, rows.held[:EVAL_IMAGES])
        log(f"EMA weights: {rows.label} {metrics['heldout_nll_ema']:.3f} nats/token")
    save_gpt(model.eval(), run / "gpt.safetensors")
    if isinstance(prep, ClassPrep):  # what a model folder needs to name the classes
        (run / "identities.json").write_text(prep.vocabulary, encoding="utf-8")
        metrics["classes"] = {"styles": prep.styles, "tones": prep.tones, "repertoire": args.repertoire,
                              "identities": prep.identities, "images": len(prep.cond)}
        if prep.trained_styles:  # the styles its images came from (ship offers only those)
            metrics["classes"]["trained_styles"] = prep.trained_styles
    write_json(run / "metrics.json", metrics)
    log(f"exported {run / 'gpt.safetensors'} (step {step}{', EMA' if ema is not None else ''})")
    return metrics


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags, grouped; the defaults are the default model's (emoji-64, v4.1) final stage."""
    g = p.add_argument_group("data")
    g.add_argument("--vq", default=None, help="the trained tokenizer (vq.safetensors); needed unless the run trains from a pack")
    g.add_argument("--data", default=str(data_dir() / "emoji64"), help="the dataset folder (train data)")
    g.add_argument("--pack", default=None, help="train from a training pack (--pack-out) instead of the dataset")
    g.add_argument("--pack-out", default=None, help="write the prepared data of a class run to this file and stop")
    g.add_argument("--condition", choices=("caption", "class"), default="class",
                   help="class: factorised (identity, style, tone) classes (default); caption: text-conditional "
                        "(sentence-encoder tokens, the first stages of the history)")
    g.add_argument("--repertoire", default="everyday", help="with --condition class: which identities to teach "
                   "(models/classes.py REPERTOIRES: everyday, all; default everyday)")
    g.add_argument("--styles", default="fluent-flat,google", help="with --condition class: comma-separated art "
                   "styles whose images train, or 'all' for every style of the data (default %(default)s)")
    g.add_argument("--shifts", choices=sorted(SHIFT_SETS), default="none",
                   help="with --condition class: train on the unshifted tokens only (none, the default) or on "
                   "three copies shifted by 0 and ±2 px (three, as model v3)")
    g.add_argument("--encoder", default="minilm", help="with --condition caption: the text encoder, minilm or "
                   "hash:N for tests")

    g = p.add_argument_group("model")
    g.add_argument("--dim", type=int, default=256, help="width (default %(default)s)")
    g.add_argument("--layers", type=int, default=6, help="transformer layers (default %(default)s)")
    g.add_argument("--heads", type=int, default=8, help="attention heads (default %(default)s)")
    g.add_argument("--dropout", type=float, default=0.0, help="with --condition class: token, residual and "
                   "feed-forward dropout (default %(default)s)")
    g.add_argument("--init-from", default=None, help="start from these weights of the same shape (e.g. the shipped "
                   "gpt.safetensors) when the run folder has no checkpoint")
    g.add_argument("--start-step", type=int, default=0, help="with --init-from: the step the weights were taken at")
    g.add_argument("--grow-from", default=None, help="with --condition class: a trained class model's "
                   "gpt.safetensors (identities.json beside it); its classes keep their rows and the identities "
                   "the repertoire adds get new ones")
    g.add_argument("--warm-start", default=None, help="copy the transformer (not the condition embedding) from "
                   "these weights when the run folder has no checkpoint, e.g. a text model's gpt.safetensors")

    g = p.add_argument_group("schedule and loop")
    loop_arguments(g, LoopDefaults(steps=1500, batch=32, lr=5e-4, warmup=50, threads=2, log_every=25,
                                   eval_every=400, checkpoint_seconds=180.0))
    g.add_argument("--device", default="cpu", help="cpu or cuda (a GPU: packaging/gpu/train_v3_gpu.sh)")
    g.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True, help="bf16 autocast (default "
                   "on; faster only on CPUs with native bf16, AVX512_BF16/AMX, several times slower on AVX2-only "
                   "CPUs: there give --no-bf16)")
    g.add_argument("--ema", type=float, default=0.0, help="keep an exponential moving average of the weights with "
                   "this decay (e.g. 0.999) and export it instead of the raw weights; 0 = off")

    g = p.add_argument_group("ambiguity (model v5, the preview)")
    g.add_argument("--jitter", choices=JITTER_KINDS, default=None, help="class runs: also train on jittered copies "
                   "of every image (global: brightness/contrast/saturation/sharpen per picture; pixel: light noise per "
                   "pixel; training/jitter.py)")
    g.add_argument("--jitter-copies", type=int, default=4, help="with --jitter: copies per image (default 4)")
    g.add_argument("--mixture-targets", action="store_true", help="with --jitter: soft targets, the target at each "
                   "place is the mixture of the codes every copy of the picture has there (the context is one copy)")
    g.add_argument("--substitute", type=float, default=0.0, metavar="SHARE", help="share of context tokens "
                   "replaced by one of their nearest codes (the targets stay): the contexts a relaxed acceptance "
                   "creates; 0 = off")
    g.add_argument("--substitute-k", type=int, default=8, help="with --substitute: how many nearest codes a "
                   "replacement is drawn from (default 8)")
    g.add_argument("--style-dropout", type=float, default=0.0, help="class runs: share of rows whose style is "
                   "replaced by the "
                   "learned style 'any' (added to the vocabulary), so a prompt without a style draws any of the "
                   "identity's designs")

    g = p.add_argument_group("validation (class runs)")
    g.add_argument("--validate-model", default=None, help=f"at every evaluation, draw {VALIDATE_NAMES} validation "
                   f"classes × {VALIDATE_SEEDS} seeds and score them with this model folder's judge (its tokenizer "
                   "decodes); the NLL is measured either way")
    g.add_argument("--validate-sampling", nargs="+", default=["0.5/10/2", "0.3/5/1.5"],
                   help="samplings drawn at each validation, T/K/CFG or greedy/CFG (default 0.5/10/2 0.3/5/1.5)")

    g = p.add_argument_group("output")
    g.add_argument("--run", default=str(runs_dir() / "ar"), help="the run folder (checkpoint, log, exported "
                   "gpt.safetensors and metrics.json)")
    g.add_argument("--export", dest="export_only", action="store_true",
                   help="write gpt.safetensors + metrics.json from the run's checkpoint without training")
    p.set_defaults(prepared=None)


train, run, main = entry_points("train ar", __doc__, add_arguments, _run)
