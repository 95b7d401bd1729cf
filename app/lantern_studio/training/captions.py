"""The words of a dataset row's caption: 'thumbs up: medium skin tone, fluent flat style'.

An emoji's emojibase label, its skin tone in CLDR words (:func:`skin_tone_words`) and its art
style's words (:data:`STYLE_WORDS`); :func:`short_caption` drops the style again.
"""

from __future__ import annotations

from . import iconify

# How captions name each style: "thumbs up, fluent flat style".
STYLE_WORDS: dict[str, str] = {"google": "google", "twitter": "twitter", **iconify.styles()}

# Fitzpatrick modifiers → CLDR skin tone names.
SKIN_TONES = {
    "1F3FB": "light skin tone",
    "1F3FC": "medium-light skin tone",
    "1F3FD": "medium skin tone",
    "1F3FE": "medium-dark skin tone",
    "1F3FF": "dark skin tone",
}


def short_caption(caption: str) -> str:
    """'thumbs up: medium skin tone, fluent flat style' → 'thumbs up: medium skin tone'."""
    for words in STYLE_WORDS.values():
        suffix = f", {words} style"
        if caption.endswith(suffix):
            return caption[: -len(suffix)]
    return caption


def skin_tone_words(key: str) -> str:
    """emoji-datasource skin key ('1F3FD' or '1F3FB-1F3FF') → CLDR words.

    Two equal tones collapse to one ('1F3FB-1F3FB' → 'light skin tone'), as CLDR
    names them.
    """
    parts = [p for p in key.upper().split("-") if p]
    words = [SKIN_TONES.get(p, f"skin tone {p}") for p in parts]
    if len(set(words)) == 1:
        return words[0]
    return ", ".join(words)
