"""Prompt → (emoji identity, art style, skin tone): the text box of a factorised class model.

The bundled model draws classes, not sentences: :class:`IdentityConditioner`
snaps what a person types to the nearest identity the model knows, by
sentence similarity to the identity's name and to its name with its
emojibase keywords (the mean of the two: "a fluffy sheep" finds "ewe"),
picks the art style (the setting ``style``: the model's default, a style by
name, or ``"any"`` for one drawn per seed among the styles that identity has
art in) and the skin tone the prompt names ("thumbs up, dark skin"), and
says in one line what will be drawn::

    dog face · fluent flat — matched from 'a happy dog', 0.83

Identities the model was not taught (``outside``) are matched too, so a
prompt whose best match is one of them is told so and gets the nearest
identity the model can draw.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch

from .settings import SettingsError
from .text import Conditioning, PromptError, TextEncoder, check_prompt

#: ``style`` setting values that are not style names
DEFAULT_STYLE, ANY_STYLE = "", "any"

# words people use for the five Fitzpatrick tones (CLDR names first), light → dark
_TONE_WORDS = (
    ("light", r"(?:very\s+)?(?:light|pale|fair|white)"),
    ("medium-light", r"medium[\s-]+light|light[\s-]+brown|olive"),
    ("medium", r"medium|brown|tan"),
    ("medium-dark", r"medium[\s-]+dark|dark[\s-]+brown"),
    ("dark", r"(?:very\s+)?(?:dark|black)"),
)


def find_tone(prompt: str) -> tuple:
    """(the skin tone a prompt names as an index into CLDR's five tones (0 light … 4 dark) or None,
    the prompt without those words) — "thumbs up, dark skin" → (4, "thumbs up").

    Only words next to "skin" or "skin tone" count ("a white heart" is a colour, not a tone);
    the longest tone phrase wins ("medium-dark skin" is not "dark skin")."""
    best = None
    for i, (_name, words) in enumerate(_TONE_WORDS):
        pattern = rf"\b({words})[\s-]+(?:skin[\s-]+tone|skinned|skin)\b"
        for m in re.finditer(pattern, prompt, flags=re.IGNORECASE):
            if best is None or len(m.group(1)) > len(best[1].group(1)):
                best = (i, m)
    if best is None:
        m = re.search(r"\bskin[\s-]+tone\s+([1-5])\b", prompt, flags=re.IGNORECASE)
        if m is None:
            return None, prompt
        best = (int(m.group(1)) - 1, m)
    i, m = best
    rest = " ".join((prompt[: m.start()] + " " + prompt[m.end() :]).replace(" ,", ",").split()).strip(" ,;-")
    rest = re.sub(r"\b(with|and|in)$", "", rest).strip(" ,;-")
    return i, rest or prompt


@dataclass
class Match:
    """What a prompt was understood as."""

    identity: int  # class row
    name: str
    similarity: float
    style: str
    tone: Optional[str]  # CLDR tone words, or None (the default yellow)
    prompt: str
    alternatives: list = field(default_factory=list)  # [(class row, name, similarity)] next best
    outside: Optional[str] = None  # the better-matching identity this model does not draw
    tone_note: str = ""

    def note(self) -> str:
        style = self.style.replace("-", " ")
        what = f"{self.name}{': ' + self.tone if self.tone else ''} · {style}"
        line = f"{what} — matched from {self.prompt!r}, {self.similarity:.2f}"
        if self.outside:
            line += f" (nearest this model draws: it does not know {self.outside!r})"
        return line + (f"; {self.tone_note}" if self.tone_note else "")


def default_style_problem(default: str, offered: Sequence[str], styles: Sequence[str]) -> Optional[str]:
    """Why ``default`` cannot be a model's default style, or None when it can: one of the named styles it
    offers, or "any" where the model was taught that row."""
    if default == ANY_STYLE:
        return None if ANY_STYLE in styles else ("default style 'any' needs a model taught the style 'any' "
                                                 "(train ar --style-dropout)")
    if default not in offered:
        return f"default style {default!r} is not one of {', '.join(s for s in offered if s != ANY_STYLE)}"
    return None


class IdentityConditioner:
    """Prompt → a (1, 3) class condition [identity, style, tone] and a note saying what it is.

    ``identities``: the model's classes in class order, each a dict with ``name`` and
    optionally ``styles`` (the styles it has art in) and ``tones`` (whether it has skin-tone
    variants); ``vectors`` / ``tag_vectors``: (N, D) l2-normalised sentence vectors of each
    name and of each name with its keywords; ``outside`` (+ its two vector sets): identities
    of the data the model was not taught. ``#12`` picks class row 12 directly. ``offered_styles``:
    the styles the model draws well enough to offer (default: all); the others keep their class
    rows (the embedding has them) but are refused by name and never chosen for "any".
    """

    warm_prompt = "#0"

    def __init__(self, encoder: TextEncoder, identities: Sequence[dict], styles: Sequence[str],
                 tones: Sequence[str], vectors: torch.Tensor, tag_vectors: Optional[torch.Tensor] = None,
                 default_style: Optional[str] = None, outside: Sequence[dict] = (),
                 outside_vectors: Optional[torch.Tensor] = None, outside_tag_vectors: Optional[torch.Tensor] = None,
                 offered_styles: Optional[Sequence[str]] = None):
        self.encoder = encoder
        self.identities = list(identities)
        self.styles = list(styles)
        self.tones = list(tones)
        if not self.identities or not self.styles:
            raise ValueError("an identity conditioner needs at least one identity and one style")
        # the learned "any" row is a setting of its own, never a named style
        self.offered_styles = [s for s in (offered_styles or self.styles) if s != ANY_STYLE]
        unknown = [s for s in self.offered_styles if s not in self.styles]
        if unknown:
            raise ValueError(f"offered style {unknown[0]!r} is not one of {', '.join(self.styles)}")
        if not self.offered_styles:
            raise ValueError("an identity conditioner needs at least one named style")
        self.default_style = default_style or self.offered_styles[0]
        problem = default_style_problem(self.default_style, self.offered_styles, self.styles)
        if problem:
            raise ValueError(problem)
        self.vectors = _check_vectors(vectors, len(self.identities), "vectors")
        self.tag_vectors = _check_vectors(tag_vectors, len(self.identities), "tag_vectors")
        self.outside = list(outside)
        self.outside_vectors = _check_vectors(outside_vectors, len(self.outside), "outside_vectors")
        self.outside_tag_vectors = _check_vectors(outside_tag_vectors, len(self.outside), "outside_tag_vectors")
        self.names = [r["name"] for r in self.identities]  # what a class picker lists

    # ---------------------------------------------------------------- matching
    def _similarities(self, v: torch.Tensor, vectors, tag_vectors) -> torch.Tensor:
        sims = vectors @ v
        return 0.5 * (sims + tag_vectors @ v) if tag_vectors is not None else sims

    def nearest(self, prompt: str, n: int = 4) -> list:
        """[(class row, name, similarity)] best first."""
        return self._nearest(check_prompt(prompt), n)[0]

    def _nearest(self, text: str, n: int) -> tuple:
        """(:meth:`nearest` of checked text, its sentence vector or None for ``#N``): the vector is made once
        and reused for the outside check."""
        direct = re.fullmatch(r"#(\d+)", text)
        if direct:
            i = int(direct.group(1))
            if not 0 <= i < len(self.identities):
                raise PromptError(f"prompt: class number must be in [0, {len(self.identities) - 1}], got {i}")
            return [(i, self.names[i], 1.0)], None
        v = self.encoder.pooled([text])[0].float()
        return self._ranked(v, n), v

    def _ranked(self, v: torch.Tensor, n: int) -> list:
        sims = self._similarities(v, self.vectors, self.tag_vectors)
        top = torch.topk(sims, min(n, len(self.identities)))
        return [(int(i), self.names[int(i)], float(s)) for s, i in zip(top.values, top.indices)]

    def _outside_better(self, v: torch.Tensor, sim: float) -> Optional[int]:
        """The identity outside the repertoire that matches the prompt (vector ``v``) better than any inside."""
        if self.outside_vectors is None or not self.outside:
            return None
        sims = self._similarities(v, self.outside_vectors, self.outside_tag_vectors)
        j = int(sims.argmax())
        return j if float(sims[j]) > sim else None

    def _nearest_to_outside(self, v: torch.Tensor, j: int, n: int) -> list:
        """Inside identities for a prompt (vector ``v``) whose best match is outside identity ``j``: ranked by the
        prompt and that identity's name together ("a happy dog" → *dog*, outside → *dog face*, not *grinning cat*)."""
        v = v + self.outside_vectors[j]
        return self._ranked(v / v.norm().clamp(min=1e-8), n)

    def style_for(self, identity: int, style: str, seed: int) -> str:
        """The style drawn: ``style`` by name (an offered one), the default ("" — the model's default style,
        which may be its learned "any"; when the identity has no art in it, its first offered style, else its
        first style), or "any" (one of the
        identity's offered styles, chosen by the seed; the model's own learned "any" where it has one)."""
        if not isinstance(style, str):
            raise SettingsError("style", f"must be a style name, got {type(style).__name__}")
        offered = self.offered_styles
        have = [s for s in self.identities[identity].get("styles") or self.styles if s in self.styles]
        if style == ANY_STYLE:
            if ANY_STYLE in self.styles:  # a model taught the style "any" (train ar --style-dropout) draws it
                return ANY_STYLE
            return random.Random(seed).choice([s for s in have if s in offered] or offered)
        if style == DEFAULT_STYLE:
            if self.default_style == ANY_STYLE:  # a model that ships "any" as its default: its learned row
                return ANY_STYLE
            if self.default_style in have or not have:
                return self.default_style
            return next((s for s in offered if s in have), have[0])
        if style not in offered:
            raise SettingsError("style", f"unknown style {style!r}; choose from {', '.join(offered)} or 'any'")
        return style

    def match(self, prompt: str, style: str = DEFAULT_STYLE, seed: int = 0, alternatives: int = 3) -> Match:
        text = check_prompt(prompt)
        t, what = find_tone(text)  # the tone words name a tone, not a thing to draw
        near, v = self._nearest(what, alternatives + 1)
        outside = None if v is None else self._outside_better(v, near[0][2])
        if outside is not None:
            near = self._nearest_to_outside(v, outside, alternatives + 1)
            outside = self.outside[outside]["name"]
        i, name, sim = near[0]
        tone, tone_note = None, ""
        if t is not None and t < len(self.tones):
            if self.identities[i].get("tones", True):
                tone = self.tones[t]
            else:
                tone_note = f"{name} has no skin tones"
        return Match(i, name, sim, self.style_for(i, style, seed), tone, text, near[1:], outside, tone_note)

    def condition_of(self, m: Match) -> torch.Tensor:
        tone = self.tones.index(m.tone) + 1 if m.tone else 0
        return torch.tensor([[m.identity, self.styles.index(m.style), tone]])

    def __call__(self, prompt: str, settings=None) -> Conditioning:
        style = getattr(settings, "style", DEFAULT_STYLE) if settings is not None else DEFAULT_STYLE
        seed = getattr(settings, "seed", 0) if settings is not None else 0
        m = self.match(prompt, style, seed)
        return Conditioning(self.condition_of(m), None, m.note(), match=m)


def _check_vectors(v: Optional[torch.Tensor], rows: int, what: str) -> Optional[torch.Tensor]:
    if v is None:
        return None
    if v.ndim != 2 or v.shape[0] != rows or not v.is_floating_point():
        raise ValueError(f"{what}: need ({rows}, D) floating-point vectors, got {tuple(v.shape)} {v.dtype}")
    return v.float()
