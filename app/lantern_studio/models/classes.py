"""The class vocabulary of a factorised class model: emoji identities, art styles, skin tones.

A v3 model folder carries it as ``identities.json`` (one row per identity
row of the model's class table, in order) and the style and tone lists in
``model.json``'s ``conditioning``::

    {"kind": "class", "factorised": true, "identities": "identities.json",
     "styles": ["google", "twitter", ...], "tones": ["light skin tone", ...],
     "default_style": "fluent-flat", "encoder": "minilm",
     "snap": {"vectors": "snap_vectors.safetensors"}}

Each identity row: ``{"identity": code, "name", "subgroup", "styles": [names
it has art in], "tones": bool (it has skin-tone variants)}``. Trainers build it
from the dataset (:func:`vocabulary_from_meta`) under a repertoire rule
(:data:`REPERTOIRES`); loaders read it back (:func:`read_vocabulary`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

#: Skin tones in CLDR words, light to dark: tone index i + 1 in the class condition (0: none).
TONES = ("light skin tone", "medium-light skin tone", "medium skin tone", "medium-dark skin tone", "dark skin tone")

#: Subgroups left out of the "everyday" repertoire: people drawn in roles, activities, sports and
#: families (hundreds of look-alike figures, each only a small accessory apart), national and
#: regional flags (259 rectangles told apart by small details) and the bare skin-tone swatches.
NOT_EVERYDAY = frozenset({
    "country-flag", "subdivision-flag", "person-role", "person-activity", "person-sport", "family",
    "person-fantasy", "person", "person-resting", "person-symbol", "skin-tone",
})

def _everyday(row: dict) -> bool:
    return row.get("subgroup") not in NOT_EVERYDAY


#: name → (what it keeps, in words; a predicate on an identity row)
REPERTOIRES = {
    "all": ("every identity of the dataset", lambda row: True),
    "everyday": ("every identity except people in roles, activities, sports and families, flags and "
                 "skin-tone swatches (subgroups: " + ", ".join(sorted(NOT_EVERYDAY)) + ")", _everyday),
    # the emoji people have typed longest: the first emoji set (Emoji 0.6, the carriers' sets Unicode 6.0
    # encoded in 2010), less what "everyday" leaves out
    "core": ("the everyday identities that were emoji from the first set (Emoji 0.6, Unicode 6.0, 2010)",
             lambda row: _everyday(row) and row.get("emoji_version") is not None
             and float(row["emoji_version"]) <= 0.6),
}


MAX_VOCABULARY_BYTES = 64 * 2**20


class VocabularyError(ValueError):
    """A class vocabulary that does not fit its model or is malformed; the message says which."""


@dataclass
class ClassVocabulary:
    identities: list  # the model's classes, in class order: [{"identity", "name", "subgroup", "styles", "tones", "tags"}]
    styles: list  # style names, index = style id
    tones: list = field(default_factory=lambda: list(TONES))  # tone id = index + 1 (0: none)
    # identities of the dataset the repertoire left out: prompts that match one best are told so
    outside: list = field(default_factory=list)

    def identity_index(self) -> dict:
        return {row["identity"]: i for i, row in enumerate(self.identities)}

    def style_id(self, name: str) -> int:
        if name not in self.styles:
            raise VocabularyError(f"style: unknown style {name!r}; choose from {', '.join(self.styles)}")
        return self.styles.index(name)

    def tone_id(self, words) -> int:
        """'medium skin tone' → 3; None (or a two-tone pair, drawn as its first tone) → as named."""
        if not words:
            return 0
        first = str(words).split(",")[0].strip()
        return self.tones.index(first) + 1 if first in self.tones else 0

    def grown(self, extra_rows: Iterable[dict], styles: Iterable[str] = ()) -> "ClassVocabulary":
        """This vocabulary with identities appended (old indices unchanged); rows already present are skipped.
        ``styles``: art styles appended after this vocabulary's own (old style indices unchanged too); an
        identity already here then also lists the appended styles ``extra_rows`` give it."""
        extra = list(extra_rows)
        style_list = list(self.styles) + [s for s in dict.fromkeys(styles) if s not in self.styles]
        appended = set(style_list[len(self.styles):])
        by_id = {r["identity"]: r for r in extra}
        have = self.identity_index()
        old = []
        for r in self.identities:
            more = [s for s in by_id.get(r["identity"], {}).get("styles", ()) if s in appended and s not in r["styles"]]
            old.append({**r, "styles": [*r["styles"], *more]} if more else r)
        new = [r for r in extra if r["identity"] not in have]
        added = {r["identity"] for r in new}
        return ClassVocabulary(old + new, style_list, list(self.tones),
                               [r for r in self.outside if r["identity"] not in added])

    def to_json(self) -> str:
        return json.dumps({"classes": self.identities, "outside": self.outside}, ensure_ascii=False, indent=0)


def vocabulary_from_meta(meta: list, repertoire: str = "all", styles: Iterable[str] | None = None) -> ClassVocabulary:
    """Every identity of the dataset rows that the repertoire rule keeps, in dataset order."""
    if repertoire not in REPERTOIRES:
        raise VocabularyError(f"repertoire: unknown rule {repertoire!r}; choose from {', '.join(REPERTOIRES)}")
    keep = REPERTOIRES[repertoire][1]
    rows: dict = {}
    style_list = list(styles) if styles is not None else []
    for m in meta:
        if styles is None and m["style"] not in style_list:
            style_list.append(m["style"])
        row = rows.get(m["identity"])
        if row is None:
            row = rows[m["identity"]] = {"identity": m["identity"], "name": m["name"], "subgroup": m.get("subgroup"),
                                         "styles": [], "tones": False, "tags": list(m.get("tags") or []),
                                         "emoji_version": m.get("emoji_version")}
        if m["style"] not in row["styles"]:
            row["styles"].append(m["style"])
        row["tones"] = row["tones"] or bool(m.get("skin_tone"))
    kept = [r for r in rows.values() if keep(r)]
    return ClassVocabulary(kept, style_list, list(TONES), [r for r in rows.values() if not keep(r)])


def class_rows(meta: list, vocab: ClassVocabulary) -> list:
    """Per dataset row: [identity, style, tone] indices, or None when the row is outside the vocabulary."""
    index = vocab.identity_index()
    out = []
    for m in meta:
        i = index.get(m["identity"])
        out.append(None if i is None or m["style"] not in vocab.styles
                   else [i, vocab.styles.index(m["style"]), vocab.tone_id(m.get("skin_tone"))])
    return out


def read_vocabulary(path: Path, styles, tones) -> ClassVocabulary:
    """identities.json + the style and tone lists → a checked ClassVocabulary (VocabularyError names the problem)."""
    if Path(path).is_file() and Path(path).stat().st_size > MAX_VOCABULARY_BYTES:
        raise VocabularyError(f"{path}: larger than {MAX_VOCABULARY_BYTES // 2**20} MiB; not a class list")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise VocabularyError(f"{path}: unreadable ({type(e).__name__})") from None
    return vocabulary_from_json(text, styles, tones, where=str(path))


def vocabulary_from_json(text: str, styles, tones, where: str = "identities.json") -> ClassVocabulary:
    """The text of an identities.json (``ClassVocabulary.to_json``) + the style and tone lists → a checked
    ClassVocabulary; VocabularyError names ``where`` and the problem."""
    path = where
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise VocabularyError(f"{path}: unreadable ({type(e).__name__})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("classes"), list) or not doc["classes"]:
        raise VocabularyError(f'{path}: must hold {{"classes": [identities, ...], "outside": [...]}}')
    rows, outside = doc["classes"], doc.get("outside", [])
    if not isinstance(outside, list):
        raise VocabularyError(f'{path}: "outside" must be a list of identities')
    for i, r in enumerate(rows + outside):
        if not (isinstance(r, dict) and isinstance(r.get("identity"), str) and isinstance(r.get("name"), str)
                and r["name"].strip()):
            raise VocabularyError(f"{path}: row {i} needs text fields \"identity\" and \"name\"")
        if not (isinstance(r.get("styles", []), list) and all(isinstance(s, str) for s in r.get("styles", []))):
            raise VocabularyError(f"{path}: row {i}: \"styles\" must be a list of style names")
    for what, names in (("styles", styles), ("tones", tones)):
        if not (isinstance(names, list) and all(isinstance(n, str) and n for n in names)):
            raise VocabularyError(f'"conditioning.{what}" must be a list of names')
    if not styles:
        raise VocabularyError('"conditioning.styles" must name at least one style')
    return ClassVocabulary(rows, list(styles), list(tones), outside)


def styles_tones_of(gpt_path: Path) -> tuple:
    """The style and tone lists of a class model: its run's metrics.json or its folder's model.json."""
    for name, get in (("metrics.json", lambda d: d.get("classes") or {}),
                      ("model.json", lambda d: d.get("conditioning") or {})):
        f = gpt_path.parent / name
        if f.is_file():
            c = get(json.loads(f.read_text(encoding="utf-8")))
            if c.get("styles"):
                return c["styles"], c.get("tones", list(TONES))
    raise FileNotFoundError(f"{gpt_path.parent}: no metrics.json or model.json naming the model's styles")
