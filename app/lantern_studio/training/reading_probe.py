"""How a class model reads re-tokenised pictures: ``lantern-studio train reading``.

Teacher-forced on a sample of its training rows, a model's next-token NLL and accuracy (argmax = the picture's
code, at the positions without an equivalence set and with one) on three contexts of the same pictures:

* **clean**: the tokenisation it was taught;
* **re-tokenised**: every position with a set picks among its code and its members at once (the sets' compose
  draw: the decoded picture the same within τ), what sampling among equivalents feeds a model;
* **read as centres**: every code replaced by its reading class's centre (:mod:`.reading_classes`), what a model
  trained with ``train ar --reading-classes`` reads.

Then, at the positions whose set holds classmates, where its mass goes (the picture's own code, the classmates,
the largest probability: what LANTERN's relaxation can move), and what each reading class costs it alone (NLL when
only that class is read as its centre): a model taught one tokenisation shows which ambiguity it leans on.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from ..engine.checkpoints import CheckpointError, load_gpt
from ..paths import data_dir, runs_dir
from .ar_rows import parse_styles, prepare_classes
from .equivalence import compose, read_sets
from .equivalent_targets import check_rows
from .errors import TrainingError, command
from .reading_classes import classes_of, classmates, read_as, summary_line


@torch.no_grad()
def read(model, tok: torch.Tensor, cond: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
    """Teacher-forced next-token probabilities (B, T, V) for targets ``tok`` read from ``inputs``."""
    return model(inputs[:, :-1], cond, None).float().softmax(-1)


def scores(probs: torch.Tensor, tok: torch.Tensor, has_set: torch.Tensor) -> dict:
    """NLL of ``tok`` and argmax accuracy at positions without (``has_set`` False) and with a set."""
    nll = -probs.gather(-1, tok[..., None]).squeeze(-1).clamp(min=1e-12).log()
    hit = probs.argmax(-1) == tok
    return {"nll": float(nll.mean()), "no_set": float(hit[~has_set].float().mean()),
            "set": float(hit[has_set].float().mean()) if has_set.any() else float("nan")}


def spread(probs: torch.Tensor, tok: torch.Tensor, neighbours: torch.Tensor, mates: torch.Tensor) -> dict:
    """At positions with classmates: mean mass on the picture's code, on its classmates, and the largest."""
    where = mates.any(-1)
    own = probs.gather(-1, tok[..., None]).squeeze(-1)
    on_mates = (probs.gather(-1, neighbours[tok]) * mates).sum(-1)
    top = probs.max(-1).values
    return {"share": float(where.float().mean()), "own": float(own[where].mean()),
            "classmates": float(on_mates[where].mean()), "largest": float(top[where].mean())}


def class_costs(model, tok: torch.Tensor, cond: torch.Tensor, centre: torch.Tensor) -> list[tuple[int, int, float]]:
    """(centre, class size, NLL increase) for every class, when only that class is read as its centre."""
    base = scores(read(model, tok, cond, tok), tok, torch.zeros_like(tok, dtype=torch.bool))["nll"]
    out = []
    for c in torch.unique(centre[centre != torch.arange(len(centre))]).tolist():
        one = torch.arange(len(centre))
        one[centre == c] = c
        nll = scores(read(model, tok, cond, one[tok]), tok, torch.zeros_like(tok, dtype=torch.bool))["nll"]
        out.append((c, int((centre == c).sum()), nll - base))
    return sorted(out, key=lambda r: -r[2])


def line(name: str, s: dict) -> str:
    return f"{name:<22} NLL {s['nll']:.3f}   argmax = picture's code: no set {s['no_set']:.3f}, set {s['set']:.3f}"


@command
def run(args) -> int:
    if args.rows < 1 or not 0 < args.share <= 1:
        raise TrainingError("train reading: --rows >= 1 and --share in (0, 1]")
    torch.set_num_threads(args.threads)
    try:
        model = load_gpt(args.gpt)
    except (CheckpointError, OSError) as e:
        raise TrainingError(f"train reading --gpt: {e}") from None
    sets = read_sets(args.equivalents)
    prep = prepare_classes(Path(args.data), Path(args.vq), Path(args.run), args.repertoire, shifts=[(0, 0)],
                           log=lambda *a: None, grow_from=Path(args.grow_from) if args.grow_from else None,
                           styles=parse_styles(args.styles))
    check_rows(sets, prep.codes[0], args.equivalents)
    if int(prep.cond[:, 0].max()) >= model.config.num_classes or sets.neighbours.shape[0] != model.config.vocab_size:
        raise TrainingError(f"train reading --gpt {args.gpt}: not a model of these rows' classes and codes")
    gen = torch.Generator().manual_seed(args.seed)
    rows = torch.randperm(len(prep.cond), generator=gen)[: args.rows]
    tok, cond = prep.codes[0, rows].flatten(1).long(), prep.cond[rows]
    members, nb = sets.members[rows], sets.neighbours
    centre = classes_of(sets, args.share)
    has_set = members.any(-1)
    retok = compose(tok.reshape(len(rows), prep.grid, prep.grid), nb, members, 1, gen).reshape(tok.shape)
    print(summary_line(centre, sets.grids, nb, sets.members))
    print(f"{args.gpt}: {len(rows)} training rows teacher-forced ({float(has_set.float().mean()):.0%} of positions "
          f"with a set; re-tokenised: {float((retok != tok).float().mean()):.0%} of tokens changed)")
    clean = read(model, tok, cond, tok)
    print(line("clean", scores(clean, tok, has_set)))
    print(line("re-tokenised", scores(read(model, tok, cond, retok), tok, has_set)))
    print(line("read as centres", scores(read(model, tok, cond, read_as(tok, centre)), tok, has_set)))
    s = spread(clean, tok, nb, classmates(tok, nb, members, centre))
    print(f"at the {s['share']:.0%} of positions with classmates in their set: mass on the picture's code "
          f"{s['own']:.3f}, on its classmates {s['classmates']:.3f}, largest probability {s['largest']:.3f}")
    if args.costs:
        print(f"what reading one class as its centre costs (NLL increase), the {args.costs} costliest:")
        for c, size, cost in class_costs(model, tok, cond, centre)[: args.costs]:
            print(f"  class of code {c:>4} ({size:>2} codes): +{cost:.3f}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpt", required=True, help="a class model's gpt.safetensors")
    p.add_argument("--equivalents", required=True, help="the sets of its rows (`train equivalents`)")
    p.add_argument("--vq", required=True, help="the tokenizer the rows are tokenized with")
    p.add_argument("--data", default=str(data_dir() / "emoji64"))
    p.add_argument("--run", default=str(runs_dir() / "equivalents"), help="a folder for the tokenized rows' cache")
    p.add_argument("--repertoire", default="everyday")
    p.add_argument("--styles", default=None, help="comma-separated art styles, as train ar --styles")
    p.add_argument("--grow-from", default=None, help="as train ar --grow-from: the class order the rows follow")
    p.add_argument("--share", type=float, default=0.5, help="the reading classes' share (train ar --reading-classes)")
    p.add_argument("--rows", type=int, default=96, help="training rows teacher-forced (default 96)")
    p.add_argument("--costs", type=int, default=8, help="reading classes listed by cost (0: none)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lantern-studio train reading", description=__doc__.split("\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
