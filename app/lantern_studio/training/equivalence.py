"""Which latent neighbours of a picture's codes decode to the same picture: ``lantern-studio train equivalents``.

LANTERN relaxes acceptance towards a drafted code's latent neighbours. On the shipped tokenizer many of them are
interchangeable *in context*: replacing one position's code by a neighbour moves the decoded picture by a few
levels of 255 only. A model taught one token sequence per picture never learns that ambiguity; a model taught the
whole set of sequences that decode alike (model v6) does, at no cost to the picture.

A position's **equivalence set** at tolerance τ: the codes among its k latent-nearest that, put in place of the
image's own code with every other code kept, change the decoded pixels of the 3×3-patch window around the position
by at most τ/255 (max abs difference over all channels).

Measuring it naively decodes 256 × k whole grids per picture (~5 minutes a picture on one core). Here:

1. **Windows** (:func:`measure_sets`): the decoder is convolutional with a small attention over the latent grid,
   so a position's patch depends mostly on the codes near it. Each candidate is decoded in a ``window`` × ``window``
   crop of the grid around the position, not the whole grid; crops that repeat (flat fills, the white background)
   are decoded once, and everything runs in batches.
2. **A code-pair table** (:class:`PairTable`) from a sample of pictures: for each code, each neighbour rank and
   whether the position is flat (its 8 neighbours share its code), how often that neighbour was equivalent and how
   far it moved the window. Every training picture's sets then come from the table (:func:`sets_from_table`) with
   no decoding at all.
3. **A check on held-out pictures** (:func:`check_sets`): the table's sets decoded on the *whole* grid, one
   member at a time, and every position picking a member at once (the compose line): how far the picture moves.

The sets are stored beside the prepared data as a safetensors file (:func:`write_sets`) whose contents' sha256
(:func:`contents_hash`) the model card names; ``train ar --equivalents FILE`` teaches them
(:mod:`.equivalent_targets`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from ..engine.files import sha256_file
from ..engine.neighbours import compute_neighbours
from ..engine.tokenizer import load_vq
from ..paths import data_dir, runs_dir
from .ar_rows import parse_styles, prepare_classes  # the one row rule and tokenization cache of train ar
from .errors import TrainingError, command

#: the levels of 255 the measuring command reports and the defaults it measures at
TAU = 6.0
K = 32
WINDOW = 6
#: pixels per 255 of the decoder's [-1, 1] output
LEVELS = 127.5
FORMAT = "lantern-studio equivalence sets v1"


def window_start(i: int, grid: int, window: int) -> int:
    """First row (or column) of the ``window``-wide crop that holds position ``i`` and its two neighbours, ``i``
    as near the middle as the grid allows."""
    return int(min(max(i - (window - 1) // 2, 0), grid - window))


def patch_slice(i: int, start: int, grid: int, patch: int) -> slice:
    """Pixel rows (or columns), within a crop starting at latent ``start``, of the patches ``i``-1 … ``i``+1."""
    lo, hi = max(i - 1, 0), min(i + 1, grid - 1)
    return slice((lo - start) * patch, (hi - start + 1) * patch)


def flat_positions(codes: torch.Tensor) -> torch.Tensor:
    """(N, h, w) codes → (N, h, w) bool: the positions whose 8 neighbours (those inside the grid) share their code."""
    c = codes.long()
    pad = torch.nn.functional.pad(c, (1, 1, 1, 1), value=-1)
    h, w = c.shape[1:]
    same = torch.ones_like(c, dtype=torch.bool)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dy or dx:
                nb = pad[:, 1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w]
                same &= (nb == c) | (nb == -1)
    return same


@torch.no_grad()
def decode(vq, codes: torch.Tensor, batch: int = 256) -> torch.Tensor:
    """Code grids (B, h, w) → pixels (B, 3, H, W) float32 in [-1, 1], decoded in batches."""
    out = [vq.decode_codes(codes[s : s + batch]).float() for s in range(0, len(codes), batch)]
    return torch.cat(out) if out else torch.empty(0)


@torch.no_grad()
def measure_sets(vq, grids: torch.Tensor, neighbours: torch.Tensor, window: int = WINDOW,
                 batch: int = 512) -> torch.Tensor:
    """For each picture's code grid (N, h, w) and each position, how far each of its code's k nearest codes
    (``neighbours`` (V, k)) moves the decoded 3×3-patch window, decoded in a ``window`` crop around the position:
    → (N, h·w, k) float32, in levels of 255. Crops that repeat (flat fills, background) are decoded once."""
    n, gh, gw = grids.shape
    window = min(window, gh, gw)
    k = neighbours.shape[1]
    g = grids.long()
    starts = [(window_start(i, gh, window), window_start(j, gw, window)) for i in range(gh) for j in range(gw)]
    crops = torch.stack([g[:, r0:r0 + window, c0:c0 + window] for r0, c0 in starts], 1)  # (N, T, W, W)
    centre = torch.tensor([(t // gw - r0) * window + (t % gw - c0) for t, (r0, c0) in enumerate(starts)])
    flat = crops.reshape(n * gh * gw, window * window)
    pos = torch.arange(gh * gw).repeat(n)  # each row's position
    own = g.reshape(-1)
    cand = torch.cat([own[:, None], neighbours[own]], 1)  # (M, 1 + k): the crop itself, then each neighbour
    variants = flat[:, None, :].repeat(1, 1 + k, 1)
    variants[torch.arange(len(flat))[:, None], torch.arange(1 + k)[None], centre[pos][:, None]] = cand
    keyed = torch.cat([variants.reshape(-1, window * window), pos.repeat_interleave(1 + k)[:, None]], 1)
    unique, inverse = torch.unique(keyed, dim=0, return_inverse=True)  # the position decides the window compared
    ref = inverse.reshape(-1, 1 + k)[:, 0]  # each row's unchanged crop
    ref_of = torch.empty(len(unique), dtype=torch.long)
    ref_of[inverse] = ref.repeat_interleave(1 + k)  # every unique variant's reference (the same for all its rows)
    upos = unique[:, -1]
    f = None
    masks = None
    refs = torch.unique(ref)
    ref_px: dict[int, torch.Tensor] = {}
    for s in range(0, len(refs), batch):
        ids = refs[s:s + batch]
        img = vq.decode_codes(unique[ids, :-1].reshape(-1, window, window)).float()
        for u, im in zip(ids.tolist(), img):
            ref_px[u] = im
    errors = torch.zeros(len(unique))
    for s in range(0, len(unique), batch):
        ids = torch.arange(s, min(s + batch, len(unique)))
        img = vq.decode_codes(unique[ids, :-1].reshape(-1, window, window)).float()
        if masks is None:
            f = img.shape[-1] // window
            masks = torch.zeros(gh * gw, window * f, window * f, dtype=torch.bool)
            for t, (r0, c0) in enumerate(starts):
                i, j = divmod(t, gw)
                masks[t, patch_slice(i, r0, gh, f), patch_slice(j, c0, gw, f)] = True
        base = torch.stack([ref_px[int(r)] for r in ref_of[ids]])
        d = (img - base).abs().amax(1) * masks[upos[ids]]
        errors[ids] = d.flatten(1).amax(1) * LEVELS
    return errors[inverse].reshape(n, gh * gw, 1 + k)[..., 1:]


@dataclass
class PairTable:
    """How often each (code, neighbour rank, flat?) was equivalent in the measured sample, and how far it moved the
    window on average: ``hits``/``tries`` (V, k, 2) and ``error`` (V, k, 2) mean levels of 255."""

    hits: torch.Tensor
    tries: torch.Tensor
    error: torch.Tensor
    tau: float

    @classmethod
    def from_measured(cls, grids: torch.Tensor, moved: torch.Tensor, vocab: int, tau: float) -> "PairTable":
        n, gh, gw = grids.shape
        k = moved.shape[-1]
        code = grids.reshape(n, -1).long()
        flat = flat_positions(grids).reshape(n, -1).long()
        cell = ((code * k)[..., None] + torch.arange(k)) * 2 + flat[..., None]  # (N, T, k)
        cells = vocab * k * 2
        idx = cell.reshape(-1)
        tries = torch.bincount(idx, minlength=cells).float()
        hits = torch.bincount(idx, weights=(moved <= tau).reshape(-1).float(), minlength=cells)
        err = torch.bincount(idx, weights=moved.reshape(-1).double(), minlength=cells).float()
        shape = (vocab, k, 2)
        return cls(hits.reshape(shape), tries.reshape(shape), (err / tries.clamp(min=1)).reshape(shape), tau)

    def rates(self, min_tries: int) -> torch.Tensor:
        """(V, k, 2) share equivalent where the cell was tried at least ``min_tries`` times, else the (code, rank)
        cell pooled over flat and not flat, else 0 (never seen: not a member)."""
        pooled_t = self.tries.sum(-1, keepdim=True)
        pooled = self.hits.sum(-1, keepdim=True) / pooled_t.clamp(min=1)
        own = self.hits / self.tries.clamp(min=1)
        out = torch.where(self.tries >= min_tries, own, pooled.expand_as(own))
        return torch.where((self.tries >= min_tries) | (pooled_t >= min_tries), out, torch.zeros_like(out))


def sets_from_table(table: PairTable, grids: torch.Tensor, neighbours: torch.Tensor, share: float = 0.5,
                    min_tries: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """Every picture's sets from the table, no decoding: a neighbour is a member where the table saw it equivalent
    at least ``share`` of the times it tried it (at least ``min_tries`` tries). → (members (N, T, k) bool,
    expected error (N, T, k) uint8, levels of 255)."""
    n = grids.shape[0]
    code = grids.reshape(n, -1).long()
    flat = flat_positions(grids).reshape(n, -1).long()
    k = neighbours.shape[1]
    rates = table.rates(min_tries)
    ranks = torch.arange(k)
    r = rates[code[..., None], ranks, flat[..., None]]
    e = table.error[code[..., None], ranks, flat[..., None]]
    return r >= share, e.round().clamp(0, 255).to(torch.uint8)


@torch.no_grad()
def check_sets(vq, grids: torch.Tensor, neighbours: torch.Tensor, members: torch.Tensor, tau: float,
               draws: int, gen: torch.Generator, batch: int = 128) -> dict:
    """The sets decoded on the whole grid: every member of every position put in place alone (the share within
    ``tau`` and the worst), then ``draws`` re-tokenisations per picture where every position picks uniformly
    among its own code and its members at once (tokens changed; how far the picture moves: mean, 99th
    percentile, max, levels of 255)."""
    n, gh, gw = grids.shape
    f = gh and vq.decode_codes(grids[:1].long()).shape[-1] // gh
    base = decode(vq, grids.long(), batch)
    single: list[float] = []
    for p in range(n):
        g = grids[p].reshape(-1).long()
        pos, rank = torch.nonzero(members[p], as_tuple=True)
        if len(pos) == 0:
            continue
        variants = g[None].repeat(len(pos), 1)
        variants[torch.arange(len(pos)), pos] = neighbours[g[pos], rank]
        img = decode(vq, variants.reshape(-1, gh, gw), batch)
        for v, t in enumerate(pos.tolist()):
            i, j = divmod(t, gw)
            rs = slice(max(i - 1, 0) * f, (min(i + 1, gh - 1) + 1) * f)
            cs = slice(max(j - 1, 0) * f, (min(j + 1, gw - 1) + 1) * f)
            single.append(float((img[v][:, rs, cs] - base[p][:, rs, cs]).abs().max()) * LEVELS)
    composed, changed = [], []
    for p in range(n):
        drawn = compose(grids[p:p + 1], neighbours, members[p:p + 1], draws, gen)
        img = decode(vq, drawn, batch)
        composed.append(((img - base[p:p + 1]).abs().amax(1) * LEVELS).reshape(-1))
        changed.append((drawn != grids[p:p + 1].long()).float().mean())
    moved = torch.cat(composed) if composed else torch.zeros(1)
    s = torch.tensor(single) if single else torch.zeros(0)
    return {"members": len(single), "within": float((s <= tau).float().mean()) if len(s) else 1.0,
            "worst": float(s.max()) if len(s) else 0.0,
            "changed": float(torch.stack(changed).mean()) if changed else 0.0,
            "mean": float(moved.mean()), "p99": float(moved.quantile(0.99)), "max": float(moved.max())}


def compose(grids: torch.Tensor, neighbours: torch.Tensor, members: torch.Tensor, draws: int,
            gen: torch.Generator) -> torch.Tensor:
    """``draws`` re-tokenisations of each grid (N, h, w): every position picks uniformly among its own code and its
    members, all positions at once → (N·draws, h, w) long."""
    n, gh, gw = grids.shape
    g = grids.reshape(n, -1).long()
    k = members.shape[-1]
    choices = torch.cat([g[..., None], neighbours[g]], -1)  # (N, T, 1 + k)
    allowed = torch.cat([torch.ones_like(members[..., :1]), members], -1).float()
    out = []
    for _ in range(draws):
        pick = torch.multinomial(allowed.reshape(-1, 1 + k), 1, generator=gen).reshape(n, -1)
        out.append(choices.gather(-1, pick[..., None]).squeeze(-1))
    return torch.stack(out, 1).reshape(n * draws, gh, gw)


def summary(counts: torch.Tensor) -> dict:
    """Counts of equivalent codes per position (any shape) → the table's figures."""
    c = counts.reshape(-1).float()
    return {"positions": int(c.numel()), "at_least_1": float((c >= 1).float().mean()),
            "at_least_3": float((c >= 3).float().mean()), "at_least_7": float((c >= 7).float().mean()),
            "mean": float(c.mean())}


def summary_line(name: str, s: dict) -> str:
    return (f"{name}: {s['positions']} positions; with >= 1 / >= 3 / >= 7 equivalents {s['at_least_1']:.0%} / "
            f"{s['at_least_3']:.0%} / {s['at_least_7']:.0%}; mean count {s['mean']:.1f}")


def grids_hash(grids: torch.Tensor) -> str:
    """sha256 of code grids as int16 bytes: what a training run checks its rows against."""
    return hashlib.sha256(grids.to(torch.int16).contiguous().numpy().tobytes()).hexdigest()


#: the meta keys that say how the sets were made (the rest are measured figures and timings)
RECIPE_KEYS = ("k", "min_tries", "rows", "sample", "share", "tau", "vq_sha256", "window")


def contents_hash(tensors: dict[str, torch.Tensor], meta_json: str) -> str:
    """sha256 of a sets file's contents: each tensor (by name: dtype, shape, bytes) and the recipe in its meta
    (:data:`RECIPE_KEYS`). The file's own bytes are not stable (safetensors writes metadata keys in no fixed order,
    and the meta holds timings); this is: the same command gives the same hash."""
    h = hashlib.sha256(FORMAT.encode())
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.numpy().tobytes())
    try:
        meta = json.loads(meta_json)
    except ValueError:
        meta = None
    recipe = {k: meta.get(k) for k in RECIPE_KEYS} if isinstance(meta, dict) else meta_json
    h.update(json.dumps(recipe, sort_keys=True).encode())
    return h.hexdigest()


def write_sets(path: Path, grids: torch.Tensor, neighbours: torch.Tensor, members: torch.Tensor,
               error: torch.Tensor, meta: dict) -> str:
    """Write the sets (safetensors; ``meta`` as JSON in its metadata) → their :func:`contents_hash`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tensors = {"grids": grids.to(torch.int16).contiguous(), "neighbours": neighbours.to(torch.int16).contiguous(),
               "members": members.to(torch.uint8).contiguous(), "error": error.to(torch.uint8).contiguous()}
    meta_json = json.dumps(meta, sort_keys=True)
    save_file(tensors, str(tmp), metadata={"format": FORMAT, "meta": meta_json, "grids_sha256": grids_hash(grids)})
    tmp.replace(path)
    return contents_hash(tensors, meta_json)


@dataclass(frozen=True)
class EquivalenceSets:
    """Stored sets: each row's code grid (N, T) int16, the neighbour table (V, k), members (N, T, k) bool and each
    member's expected error (N, T, k) uint8 (levels of 255); ``sha256``: their :func:`contents_hash`."""

    grids: torch.Tensor
    neighbours: torch.Tensor
    members: torch.Tensor
    error: torch.Tensor
    meta: dict
    sha256: str


def read_sets(path) -> EquivalenceSets:
    """Read :func:`write_sets`' file; anything else (missing, not safetensors, wrong format or shapes) is one
    :class:`TrainingError` line naming the file."""
    path = Path(path)
    if not path.is_file():
        raise TrainingError(f"--equivalents {path}: no such file (make it with `lantern-studio train equivalents`)")
    try:
        t = load_file(str(path))
        with safe_open(str(path), "pt") as fh:
            md = fh.metadata() or {}
    except Exception as e:  # a damaged or hostile file
        raise TrainingError(f"--equivalents {path}: not a readable safetensors file ({type(e).__name__})") from None
    if md.get("format") != FORMAT or set(t) != {"grids", "neighbours", "members", "error"}:
        raise TrainingError(f"--equivalents {path}: not an equivalence-sets file ({FORMAT})")
    g, nb, m, e = t["grids"], t["neighbours"], t["members"], t["error"]
    if (g.dtype, nb.dtype, m.dtype, e.dtype) != (torch.int16, torch.int16, torch.uint8, torch.uint8):
        raise TrainingError(f"--equivalents {path}: its tensors are not of the types a sets file holds")
    if g.ndim != 2 or nb.ndim != 2 or m.shape != (*g.shape, nb.shape[1]) or e.shape != m.shape:
        raise TrainingError(f"--equivalents {path}: its tensors' shapes do not fit together")
    if int(g.min()) < 0 or int(g.max()) >= nb.shape[0] or int(nb.min()) < 0 or int(nb.max()) >= nb.shape[0]:
        raise TrainingError(f"--equivalents {path}: a code outside its neighbour table")
    meta_json = md.get("meta", "{}")
    try:
        meta = json.loads(meta_json)
    except ValueError:
        meta = {}
    return EquivalenceSets(g.long(), nb.long(), m.bool(), e, meta, contents_hash(t, meta_json))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vq", required=True, help="the tokenizer (vq.safetensors)")
    p.add_argument("--data", default=str(data_dir() / "emoji64"))
    p.add_argument("--run", default=str(runs_dir() / "equivalents"),
                   help="a folder for the tokenized rows (the same as a train ar --run reuses its cache)")
    p.add_argument("--repertoire", default="everyday")
    p.add_argument("--styles", default=None, help="comma-separated art styles, as train ar --styles")
    p.add_argument("--grow-from", default=None, help="as train ar --grow-from: the class order the rows follow")
    p.add_argument("--tau", type=float, default=TAU, help="tolerance in levels of 255 (default 6)")
    p.add_argument("--k", type=int, default=K, help="latent neighbours tried per position (default 32)")
    p.add_argument("--window", type=int, default=WINDOW, help="crop of the code grid decoded per try (default 6)")
    p.add_argument("--sample", type=int, default=64, help="pictures measured for the code-pair table (default 64)")
    p.add_argument("--share", type=float, default=0.5,
                   help="a table cell is a member where at least this share of its tries was equivalent")
    p.add_argument("--min-tries", type=int, default=3, help="tries a table cell needs to count (default 3)")
    p.add_argument("--check", type=int, default=3, help="held-out pictures decoded whole to check the sets")
    p.add_argument("--draws", type=int, default=4, help="re-tokenisations per checked picture (compose line)")
    p.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True,
                   help="measure the sample's windows in bf16 (default; the check decodes in fp32)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="the sets file (default: beside the data, named by tau and k)")
    p.add_argument("--picture", default=None, help="also write a PNG: checked pictures beside their re-tokenisations")


def training_grids(args) -> torch.Tensor:
    """The unshifted code grids of exactly the rows ``train ar`` trains with these arguments, in its order."""
    grow = Path(args.grow_from) if args.grow_from else None
    prep = prepare_classes(Path(args.data), Path(args.vq), Path(args.run), args.repertoire, shifts=[(0, 0)],
                           log=print, grow_from=grow, styles=parse_styles(args.styles))
    return prep.codes[0]


@command
def run(args) -> int:
    if not 0 < args.tau <= 255 or args.k < 1 or args.window < 3 or args.sample < 1 or args.check < 0:
        raise TrainingError("train equivalents: --tau in (0, 255], --k >= 1, --window >= 3, --sample >= 1, "
                            "--check >= 0")
    Path(args.run).mkdir(parents=True, exist_ok=True)
    vq = load_vq(args.vq, dtype=torch.bfloat16 if args.bf16 else torch.float32)
    grids = training_grids(args)
    n = len(grids)
    neighbours = compute_neighbours(vq.codebook().float(), args.k)
    gen = torch.Generator().manual_seed(args.seed)
    order = torch.randperm(n, generator=gen)
    sample, held = order[: min(args.sample, n)], order[args.sample : args.sample + args.check]
    t0 = time.time()
    moved = measure_sets(vq, grids[sample], neighbours, args.window)
    t_measure = time.time() - t0
    counts = (moved <= args.tau).sum(-1)
    print(f"measured {len(sample)} pictures x {grids.shape[1] * grids.shape[2]} positions x {args.k} neighbours "
          f"(window {args.window}) in {t_measure:.0f} s")
    print(summary_line(f"tau {args.tau:g}, measured (windows)", summary(counts)))
    for t in sorted({args.tau / 2, args.tau * 2}):
        print(summary_line(f"tau {t:g}, measured (windows)", summary((moved <= t).sum(-1))))
    table = PairTable.from_measured(grids[sample], moved, neighbours.shape[0], args.tau)
    members, error = sets_from_table(table, grids, neighbours, args.share, args.min_tries)
    print(summary_line(f"tau {args.tau:g}, every training row (table)", summary(members.sum(-1))))
    report = {"tau": args.tau, "k": args.k, "window": args.window, "sample": len(sample), "rows": n,
              "measured": summary(counts), "table": summary(members.sum(-1)), "share": args.share,
              "min_tries": args.min_tries, "vq_sha256": sha256_file(args.vq), "seconds_measure": round(t_measure)}
    if len(held):
        t1 = time.time()
        vqf = load_vq(args.vq).float()
        chk = check_sets(vqf, grids[held], neighbours, members[held], args.tau, args.draws, gen)
        print(f"check on {len(held)} held-out pictures, whole-grid decodes: {chk['members']} members, "
              f"{chk['within']:.1%} within tau {args.tau:g} (worst {chk['worst']:.1f}/255); "
              f"compose ({args.draws} draws each, every position at once): {chk['changed']:.0%} of tokens change, "
              f"the picture moves {chk['mean']:.1f}/255 on average (99th percentile {chk['p99']:.1f}, "
              f"max {chk['max']:.0f}) [{time.time() - t1:.0f} s]")
        report["check"] = {**chk, "pictures": len(held), "draws": args.draws}
        if args.picture:
            write_picture(Path(args.picture), vqf, grids[held[:1]], neighbours, members[held[:1]], gen)
            print(f"wrote {args.picture}: a held-out picture, then four of its equivalent re-tokenisations")
    out = Path(args.out) if args.out else Path(args.data) / f"equivalents-tau{args.tau:g}-k{args.k}.safetensors"
    sha = write_sets(out, grids.reshape(n, -1), neighbours, members.reshape(n, -1, args.k),
                     error.reshape(n, -1, args.k), report)
    (out.with_suffix(".json")).write_text(json.dumps({**report, "sha256": sha}, indent=2) + "\n")
    print(f"wrote {out} (sha256 of its contents {sha})")
    return 0


def write_picture(path: Path, vq, grid: torch.Tensor, neighbours: torch.Tensor, members: torch.Tensor,
                  gen: torch.Generator) -> None:
    drawn = compose(grid, neighbours, members, 4, gen)
    img = decode(vq, torch.cat([grid.long(), drawn]))
    px = ((img.clamp(-1, 1) + 1) * LEVELS).round().byte().permute(0, 2, 3, 1).numpy()
    strip = np.concatenate(list(px), axis=1)
    Image.fromarray(strip).resize((strip.shape[1] * 3, strip.shape[0] * 3), Image.NEAREST).save(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lantern-studio train equivalents", description=__doc__.split("\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
