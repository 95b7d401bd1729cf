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
  a ``loose`` set (the opt-in sets, whose names follow no one scheme) is also
  matched with a numbered variant's suffix dropped (``"bird-1"``) and by the
  name without separators against labels, Unicode names and short names
  (Firefox OS's ``"alarmclock"``, Streamline's ``"bear-face"``);
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
    attribution: str = ""  # the credit a CC-BY licence requires (recorded in the manifest and card)
    match: str = "slug"  # how icons without a code-point map are aligned: "slug" or "loose" (see align)
    # (icon name, code points or "" for "no emoji") taken before any name matching: where a loose
    # match was checked wrong against the set's own sources
    codes: tuple[tuple[str, str], ...] = ()

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"


# Today's sets: the default dataset (``emoji64``) is built from exactly these.
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
            "EmojiOne 2 artwork (Emoji One), CC-BY 4.0 (attribution required)",
            attribution="Emoji artwork provided by EmojiOne (emojione.com), CC-BY 4.0"),
)

# Opt-in sets (``train data --sets all``): distinct designs of the same identities,
# appended after today's styles so a model's existing style rows keep their indices.
# Left out on purpose: OpenMoji and EmojiOne v1 (CC-BY-SA-4.0: share-alike would bind the
# derived weights' licence), Twemoji and Noto (the twitter and google art already used),
# EmojiOne monotone (monochrome), and never Apple's or Facebook's art.
EXTRA_ICON_SETS: tuple[IconSet, ...] = (
    IconSet("noto-blob", "noto blob", "@iconify-json/noto-v1", "1.2.5",
            "2bf62c26c2c2884aa99e90aec942cdaee17a5921f05690694f4978ad4b017c37",
            "Noto Emoji v1 \"blob\" artwork (Google), Apache License 2.0", match="loose",
            codes=(("pistol", ""),)),  # a revolver, where 1F52B is drawn a water pistol today
    IconSet("fxemoji", "firefox", "@iconify-json/fxemoji", "1.2.2",
            "f3e72b3c59d05e1db03b7e308d55c0d05bd7ba3f625a90da1b79313c12858eef",
            "Firefox OS Emoji artwork (Mozilla), Apache License 2.0", match="loose",
            # Firefox OS names its icons after its own words, not CLDR's: these loose matches were
            # checked wrong against the code points in Mozilla's source file names (u1F431-cat.svg)
            codes=(("bow", "1F380"), ("cat", "1F431"), ("catside", "1F408"), ("construction", "1F3D7"),
                   ("couple", "1F491"), ("dog", "1F436"), ("dogside", "1F415"), ("grin", "1F600"),
                   ("keyboard", ""), ("kiss", "1F617"), ("kissing", "1F618"), ("mouse", "1F42D"),
                   ("mouseside", "1F401"), ("pig", "1F437"), ("pigside", "1F416"), ("sparkle", ""),
                   ("star", "1F31F"), ("sunglasses", "1F60E"), ("tiger", "1F42F"), ("tigerside", "1F405"),
                   ("umbrella", "1F302"), ("up", "1F446"), ("wave", "1F30A"), ("window", ""))),
    IconSet("streamline", "streamline", "@iconify-json/streamline-emojis", "1.2.4",
            "5dac87c876b322500989828c5823143e0100d78881627a2e4081a4b897cbfdbc",
            "Streamline Emojis artwork (Streamline / Webalys), CC-BY 4.0 (attribution required)",
            attribution="Streamline Emojis by Streamline (streamlinehq.com, Webalys LLC), CC-BY 4.0",
            match="loose", codes=(("japan", ""), ("pistol", ""))),  # a flag, not the map; a revolver
)
ALL_ICON_SETS: tuple[IconSet, ...] = (*ICON_SETS, *EXTRA_ICON_SETS)


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


def compact(text: str) -> str:
    """'Alarm clock' / 'alarm-clock' / 'ALARM_CLOCK' → 'alarmclock' (separators dropped)."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


_NUMBERED = re.compile(r"^(.*\D)-\d+$")


def align(data: IconData, base: dict[str, dict], skin: dict[str, dict],
          names: dict[str, str] | None = None, codes: Iterable[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """[(icon name, normalised code point string)] of every icon matched to emojibase.

    ``base``/``skin`` map normalised hexcodes to emojibase entries (as
    ``renderings.Emojibase`` holds them). With a code-point map, an icon matches when
    its code is an emojibase base or skin entry; without one, when its name (or
    one of its aliases) is the slug of an emojibase label. Each code is used
    once (the first icon name in sorted order wins).

    ``names`` (a :func:`compact` name → code map of further names: Unicode names,
    short names) makes the match loose: icons still unmatched after the slug pass
    are tried, in order, with a numbered variant's suffix dropped (``bird-1`` →
    ``bird``), then compacted against the compacted labels, then against ``names``.
    Each icon is used once too. Without ``names`` the result is the slug pass alone.

    ``codes`` ((icon name, code points or "" for none), :attr:`IconSet.codes`) are
    taken first and those icons are never matched by name.
    """
    out: dict[str, str] = {}  # code → icon name
    fixed = dict(codes)
    for name, code in sorted(fixed.items()):
        c = _norm(code)
        if c and name in data.icons and (c in base or c in skin):
            out.setdefault(c, name)
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
        icon_names = sorted(data.icons) + sorted(data.aliases)
        icon_names = [n for n in icon_names if n not in fixed]
        for name in icon_names:
            code = by_label.get(name)
            target = data.aliases.get(name, name)
            if code is not None and target in data.icons:
                out.setdefault(code, target)
        if names is not None:
            _align_loose(data, icon_names, by_label, names, out)
    return sorted(((n, c) for c, n in out.items()), key=lambda t: t[1])


def _align_loose(data: IconData, icon_names: list[str], by_label: dict[str, str], names: dict[str, str],
                 out: dict[str, str]) -> None:
    """The loose passes of :func:`align`, adding to ``out`` (code → icon name)."""
    by_compact_label: dict[str, str] = {}
    for slug, code in by_label.items():
        by_compact_label.setdefault(compact(slug), code)

    def numbered(name: str) -> str | None:
        m = _NUMBERED.match(name)
        return by_label.get(m.group(1)) if m else None

    passes = (numbered, lambda n: by_compact_label.get(compact(n)), lambda n: names.get(compact(n)))
    for lookup in passes:
        used = set(out.values())
        for name in icon_names:
            target = data.aliases.get(name, name)
            if target in used or target not in data.icons:
                continue
            code = lookup(name)
            if code is not None and code not in out:
                out[code] = target
                used.add(target)


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
    return {s.package: s for s in ALL_ICON_SETS}


def sets_by_style() -> dict[str, IconSet]:
    return {s.style: s for s in ALL_ICON_SETS}


def wanted_members(_spec_name: str) -> Callable[[str], bool]:
    files = {"package.json", "icons.json", "chars.json", "info.json", "LICENSE", "license.txt"}
    return lambda rel: rel in files


def styles(sets: Iterable[IconSet] = ALL_ICON_SETS) -> dict[str, str]:
    return {s.style: s.words for s in sets}
