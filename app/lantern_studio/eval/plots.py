"""Pictures for the benchmark, drawn with Pillow only (no plotting library).

* :func:`tradeoff_plot` — speed-up (y) against a quality measure (x), one
  point per method/setting, the Pareto front (higher is better on both axes)
  joined, ringed and labelled.
* :func:`sample_grid` — the same prompts and seeds across settings: rows are
  methods, columns are prompt/seed pairs, each image upscaled.
* :func:`pareto_front` — indices of the non-dominated points.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

# One colour per method family (anything else is grey).
FAMILY_COLOURS = {
    "vanilla": (40, 40, 40),
    "exact": (31, 119, 180),
    "lantern": (214, 39, 40),
    "lantern++": (148, 103, 189),
    "jacobi-relaxed": (255, 127, 14),
    "step": (44, 160, 44),
}
_GREY = (127, 127, 127)
_FONT_CACHE: dict = {}


def font(size: int = 13):
    """DejaVu Sans when the system has it (δ and λ render), else Pillow's default."""
    if size in _FONT_CACHE:
        return _FONT_CACHE[size]
    f = None
    for name in ("DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "Arial.ttf"):
        try:
            f = ImageFont.truetype(name, size)
            break
        except OSError:
            continue
    if f is None:
        try:
            f = ImageFont.load_default(size=size)
        except TypeError:  # Pillow < 10.1
            f = ImageFont.load_default()
    _FONT_CACHE[size] = f
    return f


def _text(draw: ImageDraw.ImageDraw, xy, text: str, fnt, fill=(0, 0, 0), anchor: Optional[str] = None):
    try:
        draw.text(xy, text, font=fnt, fill=fill, anchor=anchor)
    except (UnicodeEncodeError, ValueError):  # a bitmap font without δ/λ, or no anchor support
        ascii_text = text.replace("δ", "d").replace("λ", "lam").replace("×", "x").replace("−", "-")
        draw.text(xy, ascii_text.encode("ascii", "replace").decode(), font=fnt, fill=fill)


def _text_size(draw: ImageDraw.ImageDraw, text: str, fnt) -> tuple[int, int]:
    try:
        l, t, r, b = draw.textbbox((0, 0), text, font=fnt)
    except (UnicodeEncodeError, ValueError):
        l, t, r, b = draw.textbbox((0, 0), text.encode("ascii", "replace").decode(), font=fnt)
    return r - l, b - t


# --------------------------------------------------------------------------- Pareto


def pareto_front(xs: Sequence[float], ys: Sequence[float]) -> list[int]:
    """Indices of points no other point beats on both x and y (higher is better),
    sorted by x. Ties (identical points) are all kept."""
    pts = [(i, float(x), float(y)) for i, (x, y) in enumerate(zip(xs, ys))
           if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]
    front = []
    for i, x, y in pts:
        dominated = any((x2 >= x and y2 >= y) and (x2 > x or y2 > y) for _, x2, y2 in pts)
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: (float(xs[i]), -float(ys[i])))


# --------------------------------------------------------------------------- plot


def _nice_ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    start = math.ceil(lo / step - 1e-9) * step
    ticks, v = [], start
    while v <= hi + 1e-9:
        ticks.append(round(v, 10))
        v += step
    return ticks


def tradeoff_plot(points: Sequence[dict], path, *, x_label: str, y_label: str = "wall-clock speed-up over vanilla (×)",
                  title: str = "", subtitle: str = "", size: tuple[int, int] = (960, 640)) -> Path:
    """Draw one point per entry of ``points`` (dicts with ``x``, ``y``, ``name``,
    ``family`` and optionally ``y_lo``/``y_hi`` for a spread bar) into a PNG.

    Points with x or y None are left out (listed under the plot). The Pareto
    front (max x, max y) is joined by a step line, ringed and labelled; the
    vanilla point is always labelled.
    """
    W, H = size
    left, right, top, bottom = 80, 30, 60, 90
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    f_title, f_axis, f_small = font(16), font(13), font(11)
    usable = [p for p in points if p.get("x") is not None and p.get("y") is not None]
    skipped = [p["name"] for p in points if p not in usable]

    if title:
        _text(d, (left, 12), title, f_title)
    if subtitle:
        _text(d, (left, 34), subtitle, f_small, fill=(90, 90, 90))

    xs = [float(p["x"]) for p in usable]
    ys = [float(p["y"]) for p in usable] + [float(p[k]) for p in usable for k in ("y_lo", "y_hi") if p.get(k) is not None]
    ys.append(1.0)
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y_lo, y_hi = min(ys), max(ys)
    pad_x = max((x_hi - x_lo) * 0.08, 0.02)
    pad_y = max((y_hi - y_lo) * 0.08, 0.05)
    x_lo, x_hi, y_lo, y_hi = x_lo - pad_x, x_hi + pad_x, max(0.0, y_lo - pad_y), y_hi + pad_y

    pw, ph = W - left - right, H - top - bottom

    def sx(x):
        return left + (x - x_lo) / (x_hi - x_lo) * pw

    def sy(y):
        return top + ph - (y - y_lo) / (y_hi - y_lo) * ph

    # grid, ticks, axes
    for t in _nice_ticks(x_lo, x_hi):
        X = sx(t)
        d.line([(X, top), (X, top + ph)], fill=(235, 235, 235))
        _text(d, (X - 12, top + ph + 6), f"{t:g}", f_small)
    for t in _nice_ticks(y_lo, y_hi):
        Y = sy(t)
        d.line([(left, Y), (left + pw, Y)], fill=(235, 235, 235))
        lab = f"{t:g}"
        tw, th = _text_size(d, lab, f_small)
        _text(d, (left - tw - 6, Y - th / 2 - 2), lab, f_small)
    d.rectangle([left, top, left + pw, top + ph], outline=(0, 0, 0))
    if y_lo < 1.0 < y_hi:  # the vanilla reference
        Y = sy(1.0)
        for x0 in range(left, left + pw, 10):
            d.line([(x0, Y), (min(x0 + 5, left + pw), Y)], fill=(120, 120, 120))
    tw, _ = _text_size(d, x_label, f_axis)
    _text(d, (left + pw / 2 - tw / 2, top + ph + 26), x_label, f_axis)
    # y label, rotated
    tw, th = _text_size(d, y_label, f_axis)
    lab = Image.new("RGBA", (tw + 4, th + 8), (255, 255, 255, 0))
    _text(ImageDraw.Draw(lab), (2, 0), y_label, f_axis)
    lab = lab.rotate(90, expand=True)
    img.paste(lab, (8, int(top + ph / 2 - lab.height / 2)), lab)

    front = set(pareto_front([p["x"] for p in usable], [p["y"] for p in usable]))
    order = sorted(front, key=lambda i: usable[i]["x"])
    if len(order) > 1:  # step line along the front
        pts = []
        for a, b in zip(order, order[1:]):
            pa, pb = usable[a], usable[b]
            pts += [(sx(pa["x"]), sy(pa["y"])), (sx(pb["x"]), sy(pa["y"]))]
        pts.append((sx(usable[order[-1]]["x"]), sy(usable[order[-1]]["y"])))
        d.line(pts, fill=(0, 150, 0), width=2)

    # spread bars, points, labels
    placed: list[tuple[float, float, float, float]] = []
    for i, p in enumerate(usable):
        colour = FAMILY_COLOURS.get(p.get("family"), _GREY)
        X, Y = sx(p["x"]), sy(p["y"])
        if p.get("y_lo") is not None and p.get("y_hi") is not None:
            d.line([(X, sy(p["y_lo"])), (X, sy(p["y_hi"]))], fill=colour, width=1)
        r = 6 if i in front else 4
        d.ellipse([X - r, Y - r, X + r, Y + r], fill=colour)
        if i in front:
            d.ellipse([X - r - 4, Y - r - 4, X + r + 4, Y + r + 4], outline=(0, 150, 0), width=2)
    for i, p in enumerate(usable):
        if i not in front and p.get("family") != "vanilla":
            continue
        X, Y = sx(p["x"]), sy(p["y"])
        label = p["name"]
        tw, th = _text_size(d, label, f_small)
        # try a few positions; take the first that overlaps nothing placed and stays inside
        for dx, dy in ((12, -th - 6), (12, 4), (-tw - 12, -th - 6), (-tw - 12, 4), (12, -2 * th - 10), (12, th + 8)):
            box = (X + dx, Y + dy, X + dx + tw, Y + dy + th)
            inside = box[0] >= left and box[2] <= left + pw and box[1] >= top and box[3] <= top + ph
            if inside and not any(not (box[2] < b[0] or box[0] > b[2] or box[3] < b[1] or box[1] > b[3]) for b in placed):
                break
        placed.append(box)
        d.rectangle([box[0] - 1, box[1] - 1, box[2] + 1, box[3] + 3], fill=(255, 255, 255))
        _text(d, (box[0], box[1]), label, f_small, fill=(0, 100, 0) if i in front else (0, 0, 0))

    # legend
    lx, ly = left, H - 34
    present = {p.get("family") for p in points}
    for fam, colour in FAMILY_COLOURS.items():
        if fam not in present:
            continue
        d.ellipse([lx, ly + 3, lx + 9, ly + 12], fill=colour)
        _text(d, (lx + 13, ly), fam, f_small)
        lx += 22 + _text_size(d, fam, f_small)[0] + 12
    d.ellipse([lx, ly, lx + 14, ly + 14], outline=(0, 150, 0), width=2)
    _text(d, (lx + 19, ly), "Pareto front (labelled)", f_small)
    if skipped:
        _text(d, (left, H - 16), "not plotted (no value): " + ", ".join(skipped)[:140], f_small, fill=(150, 0, 0))

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)
    return path


# --------------------------------------------------------------------------- sample grid


def sample_grid(rows: Sequence[tuple[str, Sequence[np.ndarray]]], col_labels: Sequence[str], path, *,
                scale: int = 2, title: str = "") -> Path:
    """Rows of images (``(label, [H×W×3 uint8, …])``) under column labels → PNG.

    Every image is upscaled ``scale``× with nearest-neighbour (the token grid
    stays visible); missing cells stay blank.
    """
    f, f_title = font(12), font(14)
    ncols = max([len(c) for _, c in rows] + [len(col_labels)] or [1])
    cell = max([np.asarray(im).shape[0] for _, c in rows for im in c] or [64]) * scale
    gap = 6
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    label_w = max([_text_size(probe, lab, f)[0] for lab, _ in rows] + [60]) + 16
    head_h = (24 if title else 0) + 40
    W = label_w + ncols * (cell + gap) + gap
    if title:
        W = max(W, _text_size(probe, title, f_title)[0] + 16)
    H = head_h + len(rows) * (cell + gap) + gap
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    if title:
        _text(d, (8, 6), title, f_title)
    y_head = head_h - 40
    for j, lab in enumerate(col_labels):
        x = label_w + j * (cell + gap)
        for n, line in enumerate(str(lab).split("\n")[:2]):
            line = line if _text_size(d, line, f)[0] <= cell else _fit(d, line, f, cell)
            _text(d, (x, y_head + 4 + n * 16), line, f)
    for i, (lab, ims) in enumerate(rows):
        y = head_h + i * (cell + gap)
        th = _text_size(d, lab, f)[1]
        _text(d, (8, y + cell / 2 - th / 2), lab, f)
        for j, im in enumerate(ims):
            a = np.asarray(im, dtype=np.uint8)
            pic = Image.fromarray(a).resize((a.shape[1] * scale, a.shape[0] * scale), Image.NEAREST)
            img.paste(pic, (label_w + j * (cell + gap), y))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)
    return path


def _fit(d, text: str, f, width: int) -> str:
    while text and _text_size(d, text + "…", f)[0] > width:
        text = text[:-1]
    return text + "…"
