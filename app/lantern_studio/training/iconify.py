"""Emoji art styles that ship as Iconify icon sets (SVG bodies in JSON), for the dataset.

An Iconify package (``@iconify-json/NAME``) holds ``icons.json`` — ``{"icons":
{name: {"body": svg inner markup, "width"?, "height"?}}, "aliases": {...},
"width", "height"}`` — and usually ``chars.json`` mapping hex code points to
icon names. This module turns one set into aligned renderings:

* :func:`read_icon_set` reads the two JSON files of an extracted package;
* :func:`align` finds, for every icon, the emojibase entry it draws — by code
  point through ``chars.json`` (of the set itself, or of a sibling set with the
  same icon names: Fluent colour uses Fluent flat's map), or by the CLDR name
  (``"thumbs-up-light-skin-tone"``) when a set has no code-point map (EmojiOne);
* :func:`rasterize` renders an icon with resvg (PyPI ``resvg-py``: the Rust
  resvg renderer, with full gradient/filter support and no system libraries,
  unlike cairosvg which needs libcairo) and composes it on white at 64 px.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
from PIL import Image


class IconSetError(RuntimeError):
    """An icon set could not be read or rendered."""


@dataclass(frozen=True)
class IconSet:
    """One Iconify package used as an art style."""

    style: str  # the style key in the dataset ("fluent-flat")
    words: str  # how captions name it ("fluent flat")
    package: str  # npm name
    version: str
    sha256: str  # of the tarball `npm pack` produces
    license: str  # of the artwork, for the model card
    chars_from: str | None = None  # another set's package whose chars.json maps these names

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"


ICON_SETS: tuple[IconSet, ...] = (
    IconSet("fluent-flat", "fluent flat", "@iconify-json/fluent-emoji-flat", "1.2.6",
            "7d064769dee690815f823bc5bcc511d957198caf9f5edd8dd9c1aa48a6aeb175",
            "Fluent Emoji flat artwork (Microsoft), MIT License"),
    IconSet("fluent-color", "fluent color", "@iconify-json/fluent-emoji", "1.2.7",
            "8044210dbf11e016d4de85f15d01a243423bd832457e7e2491df1b751c0e272b",
            "Fluent Emoji colour artwork (Microsoft), MIT License",
            chars_from="@iconify-json/fluent-emoji-flat"),
    IconSet("emojione", "emojione", "@iconify-json/emojione", "1.2.3",
            "26a14f44284407e8bcde91799388dca2bfd91dbcd55a97f425524a1c5b73610e",
            "EmojiOne 2 artwork (Emoji One), CC-BY 4.0 (attribution required)"),
)


def icon_name(text: str) -> str:
    """'Thumbs up: light skin tone' → 'thumbs-up-light-skin-tone' (Iconify's naming)."""
    return "-".join(p for p in re.sub(r"[^a-z0-9]+", "-", text.lower()).split("-") if p)


@dataclass
class IconData:
    icons: dict[str, dict[str, Any]]
    aliases: dict[str, str]  # alias name → parent icon name
    chars: dict[str, str]  # hex code points ('1f44d-1f3fb') → icon name
    width: float
    height: float


def read_json(path: Path, what: str, error: type = None) -> Any:
    """A package's JSON file, or ``error`` (IconSetError by default) naming it and what is wrong."""
    error = error or IconSetError
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise error(f"{what} not found: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{what} is not readable JSON ({path}): {exc}") from None


def read_icon_set(pkg_dir: str | Path, chars_dir: str | Path | None = None) -> IconData:
    """Read ``icons.json`` (and ``chars.json``, from ``chars_dir`` if given) of an extracted package."""
    pkg_dir = Path(pkg_dir)
    doc = read_json(pkg_dir / "icons.json", "icons.json")
    if not isinstance(doc, dict) or not isinstance(doc.get("icons"), dict):
        raise IconSetError(f"{pkg_dir / 'icons.json'}: no 'icons' object")
    icons = {n: v for n, v in doc["icons"].items() if isinstance(v, dict) and isinstance(v.get("body"), str)}
    aliases = {}
    for name, a in (doc.get("aliases") or {}).items():
        if isinstance(a, dict) and isinstance(a.get("parent"), str):
            aliases[name] = a["parent"]
    chars: dict[str, str] = {}
    cpath = Path(chars_dir or pkg_dir) / "chars.json"
    if cpath.is_file():
        raw = read_json(cpath, "chars.json")
        if isinstance(raw, dict):
            chars = {str(k): str(v) for k, v in raw.items()}
    return IconData(icons, aliases, chars, float(doc.get("width") or 16), float(doc.get("height") or 16))


SKIN_MODIFIERS = ("1F3FB", "1F3FC", "1F3FD", "1F3FE", "1F3FF")


def _norm(code: str) -> str:
    return "-".join(p for p in code.strip().upper().split("-") if p and p != "FE0F")


def without_skin(code: str) -> str:
    """'1F44D-1F3FB' → '1F44D' (the base a skin-tone variant belongs to)."""
    return "-".join(p for p in code.split("-") if p not in SKIN_MODIFIERS)


def align(data: IconData, base: dict[str, dict], skin: dict[str, dict]) -> list[tuple[str, str]]:
    """[(icon name, normalised code point string)] of every icon matched to emojibase.

    ``base``/``skin`` map normalised hexcodes to emojibase entries (as
    ``data._Emojibase`` holds them). With a code-point map, an icon matches when
    its code is an emojibase base or skin entry; without one, when its name (or
    one of its aliases) is the slug of an emojibase label. Each code is used
    once (the first icon name in sorted order wins).
    """
    out: dict[str, str] = {}  # code → icon name
    if data.chars:
        for code, name in sorted(data.chars.items()):
            name = data.aliases.get(name, name)
            c = _norm(code)
            if name in data.icons and (c in base or c in skin or without_skin(c) in base):
                out.setdefault(c, name)
    else:
        by_label: dict[str, str] = {}
        for table in (base, skin):
            for c, entry in table.items():
                if entry.get("label"):
                    by_label.setdefault(icon_name(entry["label"]), c)
        names = sorted(data.icons) + sorted(data.aliases)
        for name in names:
            code = by_label.get(name)
            target = data.aliases.get(name, name)
            if code is not None and target in data.icons:
                out.setdefault(code, target)
    return sorted(((n, c) for c, n in out.items()), key=lambda t: t[1])


def svg_document(data: IconData, name: str) -> str:
    icon = data.icons[name]
    w = float(icon.get("width") or data.width)
    h = float(icon.get("height") or data.height)
    left, top = float(icon.get("left") or 0), float(icon.get("top") or 0)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
            f'viewBox="{left:g} {top:g} {w:g} {h:g}" width="{w:g}" height="{h:g}">{icon["body"]}</svg>')


def rasterize(svg: str, size: int = 64) -> np.ndarray:
    """SVG markup → (size, size, 3) uint8 on white, via resvg."""
    try:
        import resvg_py  # noqa: PLC0415 - optional package (the data extra), guarded here
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise IconSetError("resvg-py is needed to render SVG emoji: pip install resvg-py") from exc
    try:
        png = resvg_py.svg_to_bytes(svg_string=svg, width=size, height=size, skip_system_fonts=True)
    except (ValueError, RuntimeError) as exc:
        raise IconSetError(f"resvg could not render the icon: {exc}") from exc
    with Image.open(io.BytesIO(bytes(png))) as im:
        return compose_on_white(im, size)


def compose_on_white(image: Any, size: int = 64) -> np.ndarray:
    """Alpha-composite a PIL image (any mode) on white → (size, size, 3) uint8.

    Every rendering of the dataset ends here, the emoji-datasource PNGs
    (training/data.py) and the Iconify SVGs alike.
    """
    rgba = image.convert("RGBA")
    if rgba.size != (size, size):
        rgba = rgba.resize((size, size), Image.LANCZOS)
    arr = np.asarray(rgba, dtype=np.uint16)
    rgb, alpha = arr[..., :3], arr[..., 3:4]
    out = (rgb * alpha + 255 * (255 - alpha) + 127) // 255
    return out.astype(np.uint8)


def sets_by_package() -> dict[str, IconSet]:
    return {s.package: s for s in ICON_SETS}


def wanted_members(_spec_name: str) -> Callable[[str], bool]:
    files = {"package.json", "icons.json", "chars.json", "info.json", "LICENSE", "license.txt"}
    return lambda rel: rel in files


def styles(sets: Iterable[IconSet] = ICON_SETS) -> dict[str, str]:
    return {s.style: s.words for s in sets}
