"""A bundled model's MODEL_CARD.md, written from the model's own folder and its recipe.

What the model is (the recipe's summary), what it draws well and what not (the recipe's ``[card]`` text, from
looking at the folder's own ``samples.png``), the measured table (the folder's ``lantern_profile.json``: the
sliders' δ ladder, measured by the bench on its common prompts), how it was made (one row per recipe stage, the
recipe's file hash and the replay command), the files' hashes (``model.json``), the defaults and the licences.
``train ship --recipe FILE`` writes it; ``python -m lantern_studio.training.model_card FOLDER RECIPE`` rewrites it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..engine.files import sha256_file
from .common import atomic_write_text
from .errors import TrainingError, command
from .recipe import Recipe, read_recipe, shown_path

#: the grid ``train ship --grid`` draws: rows 1, 3, 5, 7 are seeds 0-3 of the first eight prompts, rows 2, 4,
#: 6, 8 of the last eight (plain-language prompts, as people type them)
GRID_PROMPTS = [
    "a red heart", "a smiling sun", "slice of pizza", "penguin", "a happy dog", "hot coffee", "rocket launching",
    "birthday cake", "crying face", "thumbs up", "a ghost", "green apple", "a cute cat", "fire", "a rainbow",
    "heart eyes",
]

PROMPTING = """## Prompting

The model draws classes: an emoji identity in an art style, with a skin tone where the emoji has variants. What a
person types is parsed (tone, gender and filler words apart) and snapped to the nearest identity the model was
taught, by all-MiniLM-L6-v2 sentence similarity beside a keyword score; every picture's note says what was drawn
and how close the match was, and a weak match says so. The style is a setting (`--style`, the Style selector):
empty for the model's default, `any` for one of the identity's styles chosen by the seed, or a style's name.
"""

LICENCES = """## Licences and attribution

* **Emoji artwork** (training data): Noto Emoji (Google), Apache 2.0, via `emoji-datasource-google`; Twemoji
  (Twitter, Inc and other contributors), CC-BY 4.0 (https://creativecommons.org/licenses/by/4.0/), via
  `emoji-datasource-twitter`; Fluent Emoji flat and colour (Microsoft), MIT, via `@iconify-json/fluent-emoji-flat`
  and `@iconify-json/fluent-emoji`; EmojiOne 2 (Emoji One), CC-BY 4.0, via `@iconify-json/emojione`. With
  `train data --sets all` also Noto Emoji v1 "blob" (Google, Apache 2.0, `@iconify-json/noto-v1`), Firefox OS
  Emoji (Mozilla, Apache 2.0, `@iconify-json/fxemoji`) and Streamline Emojis (Webalys LLC, CC-BY 4.0,
  `@iconify-json/streamline-emojis`). A package is used only when pinned (name, version, tarball sha256) with a
  licence of Apache-2.0, MIT or CC-BY-4.0; share-alike sets and Apple or Facebook artwork are not used.
* **Labels and tags**: `emojibase-data` (MIT). **Text encoder**: all-MiniLM-L6-v2 (Apache 2.0), not redistributed.
* **These weights**: Apache 2.0, carrying the CC-BY 4.0 attributions above.
"""


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.0f} %"


def _interval(rung: dict) -> str:
    lo_hi = rung.get("fidelity_interval")
    body = _pct(rung.get("fidelity"))
    return body + (f" ({100 * lo_hi[0]:.0f}–{100 * lo_hi[1]:.0f})" if lo_hi else "")


def measured_table(profile: dict) -> list[str]:
    """The sliders' δ ladder as a table: vanilla, then each δ at the profile's k."""
    ladder = (profile.get("ladders") or {}).get("delta")
    if not ladder:
        return ["No profile measured (run the bench with --write-profile)."]
    k = (ladder.get("fixed") or {}).get("k")
    lines = [f"Measured by the bench ({profile.get('images')} pictures: the common prompts × seeds, "
             f"{profile.get('machine')}, {profile.get('measured')}), LANTERN with a Jacobi window of "
             f"{profile.get('draft_length')} at k {k}; speed-up against the fastest vanilla of the same run; prompt "
             "fidelity is the meter's mean probability that the picture is the asked emoji (95 % interval), "
             "recognised the share it ranks the asked emoji first.", "",
             "| δ | tokens per forward | speed-up | relaxed share | prompt fidelity | recognised |",
             "|---|---|---|---|---|---|",
             f"| vanilla | 1.00 | 1.00× | — | {_interval({'fidelity': ladder.get('vanilla_fidelity'), 'fidelity_interval': ladder.get('vanilla_fidelity_interval')})} | — |"]
    for r in ladder.get("rungs", []):
        lines.append(f"| {r['delta']:g} | {r['tokens_per_forward']:.2f} | {r['speedup']:.2f}× | "
                     f"{_pct(r.get('relaxed_share'))} | {_interval(r)} | {_pct(r.get('recognised'))} |")
    if ladder.get("breaks_at") is not None:
        lines += ["", f"Fidelity falls by more than {100 * (ladder.get('break_drop') or 0):.0f} points from δ "
                  f"{ladder['breaks_at']:g} on (where the δ slider's warning starts)."]
    return lines


def _schedule(stage) -> str:
    if stage.pinned:
        return "pinned: " + ", ".join(f"`{v}`" for v in stage.pinned.values())
    if not stage.schedule:
        return "—"
    return " → ".join(f"{s.steps}" + (f" (to {s.until})" if s.until else "") for s in stage.schedule)


def made_table(recipe: Recipe, recipe_file: Path) -> list[str]:
    shown = shown_path(recipe_file)
    lines = [f"Recipe `{shown}` (sha256 `{sha256_file(recipe_file)}`), replayed by "
             f"`lantern-studio train replay {shown}` (one stage: `--stage S`; a short span: "
             "`--until-step N`). A stage whose schedule changed while it ran lists the schedule that ran: `--steps` "
             "per segment, each to the step it was stopped at.", "",
             f"Hardware and time: {recipe.hardware}.", "",
             "| stage | command | schedule (--steps) | what it made |", "|---|---|---|---|"]
    for s in recipe.stages:
        lines.append(f"| {s.name} | {s.run or 'files from git'} | {_schedule(s)} | {s.note.replace('|', '/')} |")
    return lines


def card_text(folder: Path, recipe: Recipe, recipe_file: Path) -> str:
    man = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    profile_path = folder / "lantern_profile.json"
    profile = json.loads(profile_path.read_text(encoding="utf-8")) if profile_path.is_file() else {}
    card = recipe.card
    d = man.get("defaults", {})
    cond = man.get("conditioning", {})
    lines = [f"# {man.get('name', recipe.name)} — {card.get('role', 'a bundled model')}", "", recipe.summary + ".", ""]
    if (folder / "samples.png").is_file():
        lines += ["## What it draws", "", "![samples](samples.png)", "",
                  "Rows 1, 3, 5, 7 (seeds 0–3): " + ", ".join(f"“{p}”" for p in GRID_PROMPTS[:8]) + ". Rows 2, 4, 6, 8: "
                  + ", ".join(f"“{p}”" for p in GRID_PROMPTS[8:]) + ". The model's defaults, no picking.", ""]
    lines += [card.get("draws", "").strip(), "", "## Measured", "", *measured_table(profile), ""]
    meter = man.get("meter")
    if meter:
        lines += [f"The meter (`recogniser.safetensors`) is calibrated for this model at temperature "
                  f"{meter.get('temperature'):.3g}, fitted on the labelled set `{str(meter.get('labelled_set'))[:8]}…` "
                  "(tests/data/labelled; docs/results.md, session 2026-12-07).", ""]
    lines += ["## Defaults", "",
              f"Temperature {d.get('temperature')}, top-k {d.get('top_k') or 'off'}, CFG {d.get('cfg_scale')}, "
              f"style `{cond.get('default_style') or 'any'}`"
              + (f" (offered: {', '.join(cond['offered_styles'])})" if cond.get("offered_styles") else "")
              + f"; LANTERN k {d.get('k')}, δ {d.get('delta')}, {d.get('drafter')} drafts of {d.get('draft_length')}.",
              "", "## How it was made", "", *made_table(recipe, recipe_file), "",
              "## Files (sha256)", "", "| file | MB | sha256 |", "|---|---|---|"]
    for f, h in sorted(man.get("files", {}).items()):
        size = (folder / f).stat().st_size / 1e6 if (folder / f).is_file() else float("nan")
        lines.append(f"| `{f}` | {size:.2f} | `{h}` |")
    lines += ["", PROMPTING, LICENCES]
    return "\n".join(lines)


def write_card(folder: Path, recipe_file: Path) -> Path:
    """MODEL_CARD.md in ``folder`` from its files and the recipe at ``recipe_file``."""
    folder, recipe_file = Path(folder), Path(recipe_file)
    if not (folder / "model.json").is_file():
        raise TrainingError(f"{folder}: no model.json (ship the model first)")
    recipe = read_recipe(recipe_file)
    path = folder / "MODEL_CARD.md"
    atomic_write_text(path, card_text(folder, recipe, recipe_file))
    return path


@command
def run(args) -> int:
    print(write_card(Path(args.folder), Path(args.recipe)))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m lantern_studio.training.model_card", description=__doc__.split("\n")[0])
    p.add_argument("folder", help="the model folder (model.json, samples.png, lantern_profile.json)")
    p.add_argument("recipe", help="its recipe, e.g. recipes/emoji-64.toml")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
