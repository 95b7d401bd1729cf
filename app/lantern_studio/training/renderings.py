"""The dataset's rows before they are drawn: every rendering of every emoji, captioned.

:func:`collect_pngs` takes the PNG styles' renderings (emoji-datasource: each emoji's base and
skin-tone variants, in every vendor) and :func:`collect_icons` an Iconify set's, aligned to the
emojibase entries (:class:`Emojibase`) so every style of one emoji shares its identity. Each
:class:`Rendering` is a PNG path or SVG markup with its row of metadata (caption, identity, split,
group, …); :func:`.data.build_from_extracted` draws them and writes the dataset.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..models.dataset import DatasetError
from . import iconify
from .captions import SKIN_TONES, STYLE_WORDS, skin_tone_words
from .identities import normalize_code, split_of


def group_key(text: str) -> str:
    """'People & Body' → 'people-body' (emojibase's group key style)."""
    out = []
    for ch in text.lower():
        out.append(ch if ch.isalnum() else "-")
    return "-".join(p for p in "".join(out).split("-") if p)


def _read_json(path: Path, what: str) -> Any:
    return iconify.read_json(path, what, DatasetError)


class Emojibase:
    """Lookup of emojibase entries by normalised hexcode (base and skins)."""

    def __init__(self, emojibase_dir: Path):
        data = _read_json(emojibase_dir / "en" / "data.json", "emojibase en/data.json")
        groups_path = emojibase_dir / "meta" / "groups.json"
        groups = _read_json(groups_path, "emojibase meta/groups.json") if groups_path.is_file() else {}
        self.group_names: dict[int, str] = {int(k): v for k, v in (groups.get("groups") or {}).items()}
        self.subgroup_names: dict[int, str] = {
            int(k): v for k, v in (groups.get("subgroups") or {}).items()
        }
        self.base: dict[str, dict] = {}
        self.skin: dict[str, dict] = {}
        self.parent: dict[str, dict] = {}  # skin hexcode → its base entry
        for entry in data:
            code = entry.get("hexcode")
            if not code:
                continue
            self.base.setdefault(normalize_code(code), entry)
            for skin in entry.get("skins") or []:
                if skin.get("hexcode"):
                    self.skin.setdefault(normalize_code(skin["hexcode"]), skin)
                    self.parent.setdefault(normalize_code(skin["hexcode"]), entry)

    def group(self, entry: dict | None) -> str | None:
        if entry is None or entry.get("group") is None:
            return None
        return self.group_names.get(int(entry["group"]))

    def subgroup(self, entry: dict | None) -> str | None:
        if entry is None or entry.get("subgroup") is None:
            return None
        return self.subgroup_names.get(int(entry["subgroup"]))


@dataclass
class Rendering:
    path: Path | None  # a PNG, or
    meta: dict[str, Any]
    svg: str | None = None  # SVG markup to rasterise


def collect_pngs(
    vendor_dirs: dict[str, Path], eb: Emojibase
) -> tuple[list[Rendering], dict[str, int], int]:
    """All renderings, identity-major: base then skins, each in every vendor.

    Returns (renderings, skipped counts per vendor, number of base entries
    without an emojibase match).
    """
    per_vendor: dict[str, list[dict]] = {}
    for vendor, vdir in vendor_dirs.items():
        per_vendor[vendor] = _read_json(vdir / "emoji.json", f"{vendor} emoji.json")

    # Union of base entries over vendors, ordered by sort_order then code.
    bases: dict[str, dict[str, dict]] = {}
    for vendor, entries in per_vendor.items():
        for e in entries:
            if not e.get("unified"):
                continue
            bases.setdefault(e["unified"].upper(), {})[vendor] = e

    def order(item: tuple[str, dict[str, dict]]) -> tuple:
        entry = next(iter(item[1].values()))
        so = entry.get("sort_order")
        return (so if isinstance(so, (int, float)) else float("inf"), item[0])

    renderings: list[Rendering] = []
    skipped = {v: 0 for v in vendor_dirs}
    unmatched = 0
    for identity, by_vendor in sorted(bases.items(), key=order):
        any_entry = next(iter(by_vendor.values()))
        eb_base = eb.base.get(normalize_code(identity))
        if eb_base is None:
            unmatched += 1
        if eb_base is not None and eb_base.get("label"):
            name = eb_base["label"]
        else:
            name = (any_entry.get("short_name") or identity).replace("_", " ")
        group = eb.group(eb_base) or (group_key(any_entry["category"]) if any_entry.get("category") else None)
        subgroup = eb.subgroup(eb_base) or any_entry.get("subcategory")
        tags = list((eb_base or {}).get("tags") or [])
        split = split_of(identity)

        # Renderings of this identity: (skin key or None, per-vendor entry).
        skin_keys: list[str] = []
        for e in by_vendor.values():
            for k in (e.get("skin_variations") or {}):
                if k not in skin_keys:
                    skin_keys.append(k)
        variants: list[str | None] = [None, *skin_keys]

        for key in variants:
            for vendor in vendor_dirs:
                base_entry = by_vendor.get(vendor)
                if base_entry is None:
                    continue
                if key is None:
                    item = base_entry
                else:
                    item = (base_entry.get("skin_variations") or {}).get(key)
                    if item is None:
                        continue
                if not item.get(f"has_img_{vendor}", False) or not item.get("image"):
                    continue
                path = vendor_dirs[vendor] / "img" / vendor / "64" / item["image"]
                if not path.is_file():
                    skipped[vendor] += 1
                    continue
                code = (item.get("unified") or identity).upper()
                if key is None:
                    tone = None
                    label = name
                else:
                    tone = skin_tone_words(key)
                    eb_skin = eb.skin.get(normalize_code(code))
                    label = eb_skin["label"] if eb_skin and eb_skin.get("label") else f"{name}: {tone}"
                caption = f"{label}, {STYLE_WORDS[vendor]} style"
                renderings.append(
                    Rendering(
                        path,
                        {
                            "caption": caption,
                            "identity": identity,
                            "name": name,
                            "vendor": vendor,
                            "style": vendor,
                            "skin_tone": tone,
                            "group": group,
                            "subgroup": subgroup,
                            "tags": tags,
                            "emoji_version": (eb_base or {}).get("version"),
                            "split": split,
                            "code": code,
                        },
                    )
                )
    return renderings, skipped, unmatched


def loose_names(vendor_dirs: dict[str, Path], eb: Emojibase) -> dict[str, str]:
    """{compacted Unicode or short name: normalised base code} from emoji-datasource's
    ``emoji.json`` (the first vendor's), for the loose alignment of the opt-in sets."""
    names: dict[str, str] = {}
    for vendor, vdir in vendor_dirs.items():
        entries = _read_json(vdir / "emoji.json", f"{vendor} emoji.json")
        for field in ("name", "short_names"):
            for e in entries:
                code = normalize_code(e.get("unified") or "")
                if code not in eb.base:
                    continue
                values = e.get(field)
                for v in (values if isinstance(values, list) else [values]):
                    if isinstance(v, str) and v:
                        names.setdefault(iconify.compact(v), code)
        break
    return names


def collect_icons(
    style: str, data: iconify.IconData, eb: Emojibase, identities: dict[str, str],
    names: dict[str, str] | None = None, codes: Iterable[tuple[str, str]] = (),
) -> tuple[list[Rendering], int, int]:
    """Renderings of one Iconify set aligned to emojibase; (renderings, icons not matched,
    icons of an identity the PNG styles do not draw).

    ``identities`` maps a normalised base code to the identity string the PNG
    styles use for it, so every style of one emoji shares one identity; an icon
    set adds pictures to those identities, never identities of its own (Firefox
    OS's bare regional-indicator letters would be).
    ``names`` makes the alignment loose, ``codes`` fixes some icons' code points (:func:`.iconify.align`).
    """
    pairs = iconify.align(data, eb.base, eb.skin, names, codes)
    out: list[Rendering] = []
    outside = 0
    for name, code in pairs:
        entry = eb.base.get(code) or eb.skin.get(code) or {}
        base = eb.base.get(code) or eb.parent.get(code) or eb.base.get(iconify.without_skin(code))
        if base is None or not base.get("label"):
            continue
        base_code = normalize_code(base["hexcode"])
        identity = identities.get(base_code)
        if identity is None:
            outside += 1
            continue
        modifiers = [p for p in code.split("-") if p in SKIN_TONES]
        tone = skin_tone_words("-".join(modifiers)) if modifiers and code not in eb.base else None
        label = entry.get("label") or (f"{base['label']}: {tone}" if tone else base["label"])
        out.append(Rendering(None, {
            "caption": f"{label}, {STYLE_WORDS[style]} style",
            "identity": identity,
            "name": base["label"],
            "vendor": style,
            "style": style,
            "skin_tone": tone,
            "group": eb.group(base),
            "subgroup": eb.subgroup(base),
            "tags": list(base.get("tags") or []),
            "emoji_version": base.get("version"),
            "split": split_of(identity),
            "code": code,
        }, svg=iconify.svg_document(data, name)))
    return out, len(data.icons) - len(pairs), outside
