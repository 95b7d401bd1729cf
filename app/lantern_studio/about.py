"""What the About box says: version, a description and the licences of what ships.

Qt-free. :func:`about_text` returns Markdown (readable as plain text in a
terminal; ``QTextBrowser.setMarkdown`` renders it). The licences come from the
bundled model card's ``## Licences`` section when the card has one, else from a
built-in summary of the bundled data and model.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from . import __version__
from .paths import resources_dir

APP_NAME = "Lantern Studio"
APP_LICENSE = "Apache-2.0"

DESCRIPTION = (
    "Lantern Studio is a desktop studio for autoregressive image generation. Type a prompt and watch the "
    "picture form token by token while the model decodes with LANTERN relaxed speculative decoding: a "
    "drafter proposes several image tokens, the target model verifies them in one forward pass, and tokens "
    "whose codebook vectors lie close in latent space are accepted with the probability mass of their "
    "neighbourhood, within a total-variation budget δ. It ships a small text-to-emoji model of its own, so "
    "it works offline and without a GPU; official LlamaGen checkpoints load through the same engine."
)

CC_BY = "CC-BY 4.0 (https://creativecommons.org/licenses/by/4.0/)"
BUILTIN_LICENCES = "\n".join([
    "- **Lantern Studio** (the application and its code): Apache License 2.0.",
    "- **Bundled model** (`emoji-64`): trained by this project's own training commands on the emoji artwork below; "
    "its weights are Apache License 2.0, carrying the CC-BY attributions below.",
    "- **Noto Emoji** artwork (Google), via `emoji-datasource-google`: Apache License 2.0.",
    f"- **Twemoji** artwork, via `emoji-datasource-twitter`: {CC_BY}, "
    "copyright Twitter, Inc and other contributors.",
    "- **Fluent Emoji** artwork, flat and colour (Microsoft), via `@iconify-json/fluent-emoji-flat` and "
    "`@iconify-json/fluent-emoji`: MIT License.",
    f"- **EmojiOne 2** artwork, via `@iconify-json/emojione`: {CC_BY}; emoji artwork provided by EmojiOne.",
    "- Art sets the v5 training data adds (`lantern-studio train data --sets all`):",
    "  - **Noto Emoji v1** (\"blob\") artwork (Google), via `@iconify-json/noto-v1`: Apache License 2.0.",
    "  - **Firefox OS Emoji** artwork (Mozilla), via `@iconify-json/fxemoji`: Apache License 2.0.",
    f"  - **Streamline Emojis** artwork, via `@iconify-json/streamline-emojis`: {CC_BY}; "
    "Streamline Emojis by Streamline (streamlinehq.com, Webalys LLC).",
    "- Apple's and Facebook's emoji artwork is never used; share-alike sets (OpenMoji, EmojiOne v1: CC-BY-SA 4.0) "
    "are left out, as share-alike would bind the model's licence.",
    "- **emojibase-data** (emoji names and keywords used as captions): MIT License.",
    "- **all-MiniLM-L6-v2** sentence encoder (sentence-transformers), the bundled model's text encoder: "
    "Apache License 2.0.",
])

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LICENCE_TITLES = {"licences", "licenses", "licence", "license", "licences and attribution",
                   "licenses and attribution", "licensing"}


def _card_path() -> Optional[Path]:
    try:
        return resources_dir() / "models" / "emoji-64" / "MODEL_CARD.md"
    except Exception:  # noqa: BLE001 - the About box must open even if resources cannot be located
        return None


def licences_from_card(text: str) -> Optional[str]:
    """The body of the card's ``## Licences`` section (up to the next heading of the same or a
    higher level), or None when there is no such section or it is empty."""
    lines = text.splitlines()
    start = level = None
    for i, line in enumerate(lines):
        m = _HEADING.match(line)
        if not m:
            continue
        if start is None:
            if m.group(2).strip().lower().rstrip(":") in _LICENCE_TITLES:
                start, level = i + 1, len(m.group(1))
        elif len(m.group(1)) <= level:
            body = "\n".join(lines[start:i]).strip()
            return body or None
    if start is None:
        return None
    return "\n".join(lines[start:]).strip() or None


def licences_text(card: Optional[Path] = None) -> tuple:
    """→ (Markdown list of licences, where it came from: "model card" or "built-in")."""
    card = card if card is not None else _card_path()
    if card is not None:
        try:
            body = licences_from_card(card.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            body = None
        if body:
            if "lantern studio" not in body.lower():
                body = f"- **Lantern Studio** (the application and its code): Apache License 2.0.\n{body}"
            return body, "model card"
    return BUILTIN_LICENCES.strip(), "built-in"


def about_text(card: Optional[Path] = None) -> str:
    """The About box's text, as Markdown."""
    licences, source = licences_text(card)
    where = ("As recorded in the bundled model card (`models/emoji-64/MODEL_CARD.md`)." if source == "model card"
             else "A summary of the bundled data and model.")
    return (
        f"# {APP_NAME} {__version__}\n\n"
        f"{DESCRIPTION}\n\n"
        f"## Licences\n\n"
        f"*{where}*\n\n"
        f"{licences}\n\n"
        f"Built with PyTorch (BSD-3-Clause), "
        f"Qt for Python / PySide6 (LGPL-3.0), Hugging Face transformers (Apache-2.0), NumPy (BSD-3-Clause) "
        f"and Pillow (MIT-CMU).\n"
    )


if __name__ == "__main__":  # pragma: no cover
    print(about_text())
