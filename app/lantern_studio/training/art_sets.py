"""Which art sets a dataset build uses (``train data --sets``), and where each selection goes.

``default`` is today's five styles (google, twitter and :data:`.iconify.ICON_SETS`) into
``emoji64``; ``all`` adds the opt-in sets (:data:`.iconify.EXTRA_ICON_SETS`) into ``emoji64-v5``;
a list of style names adds just those, into ``emoji64-v5-<the styles joined by +>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from .. import paths
from ..models.dataset import DATASET_NAME, DatasetError, default_out_dir
from . import iconify

VENDORS = ("google", "twitter")  # the PNG styles of emoji-datasource

# Which art sets a build uses (``--sets``), and where each selection goes by default.
DEFAULT_SETS = "default"
ALL_SETS = "all"
V5_DATASET_NAME = f"{DATASET_NAME}-v5"


def select_sets(sets: str | Iterable[str] | None = DEFAULT_SETS) -> tuple[iconify.IconSet, ...]:
    """The Iconify sets of a selection, in canonical style order (today's first, then the opt-in ones).

    ``"default"``/None: today's :data:`.iconify.ICON_SETS`; ``"all"``: every known set; else
    style keys (a list, or one comma-separated string) — today's sets are always included, so
    their rows keep their order and a model's style indices stay valid.
    """
    if sets is None or sets == DEFAULT_SETS:
        return iconify.ICON_SETS
    if sets == ALL_SETS:
        return iconify.ALL_ICON_SETS
    wanted = [w.strip() for w in (sets.split(",") if isinstance(sets, str) else sets) if w.strip()]
    known = iconify.sets_by_style()
    unknown = [w for w in wanted if w not in known and w not in VENDORS and w not in (DEFAULT_SETS, ALL_SETS)]
    if unknown:
        raise DatasetError(f"unknown art set {', '.join(unknown)} (known: {DEFAULT_SETS}, {ALL_SETS}, "
                           f"{', '.join([*VENDORS, *known])})")
    if ALL_SETS in wanted:
        return iconify.ALL_ICON_SETS
    return tuple(s for s in iconify.ALL_ICON_SETS if s in iconify.ICON_SETS or s.style in wanted)


def selection_name(sets: tuple[iconify.IconSet, ...]) -> str:
    """"default", "all", or the opt-in styles joined by '+'."""
    if sets == iconify.ICON_SETS:
        return DEFAULT_SETS
    if sets == iconify.ALL_ICON_SETS:
        return ALL_SETS
    return "+".join(s.style for s in sets if s not in iconify.ICON_SETS)


def out_dir_for(sets: tuple[iconify.IconSet, ...]) -> Path:
    """Default dataset folder of a selection: today's ``emoji64``, ``emoji64-v5`` for all sets."""
    name = selection_name(sets)
    if name == DEFAULT_SETS:
        return default_out_dir()
    if name == ALL_SETS:
        return paths.data_dir() / V5_DATASET_NAME
    return paths.data_dir() / f"{V5_DATASET_NAME}-{name}"
