"""What the studio remembers between launches, as one typed record read and written in one place.

The window's geometry and splitter sizes are Qt's own bytes and stay with the window (gui/storage.py keeps
both in one INI file). Everything else a person set is a field here. :meth:`StudioPreferences.read` takes
each value from a key-value store (``get_json(key, default)``) and keeps it only when it has the field's
type, so a damaged or hand-edited file costs that one value its default, never the launch;
:meth:`StudioPreferences.write` writes every field back.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Optional, Protocol

from ..export import UPSCALE_FACTORS

EXPORT_METHODS = ("nearest", "lanczos")  # the export bar's filters: crisp, smooth
ZOOMS = ("fit", 1, 2, 3, 4, 5, 6, 7, 8)  # the canvas's zoom choices
MAX_PROMPT_HISTORY = 20  # the prompt box's recent prompts
MAX_RECENT_MODELS = 8  # the model menu's recent folders and Hub models
# Generate ▸ Compiled decoding, until a person sets it: on. The steps compile in the background after the
# model is ready (a minute or more on a CPU the first time, about half that from the compile cache at a
# relaunch) while Generate decodes eagerly; without a C++ compiler the status line says so once, stays eager
COMPILED_DECODING_DEFAULT = True
NEW_SEED_DEFAULT = True  # "New seed each Generate", until a person sets it: a new picture at every press


class KeyValueStore(Protocol):
    def get_json(self, key: str, default: Any = None) -> Any: ...

    def set_json(self, key: str, value: Any) -> None: ...


def _strings(value: Any, most: int) -> Optional[list]:
    if not isinstance(value, list):
        return None
    return [v for v in value if isinstance(v, str)][:most]


@dataclass
class StudioPreferences:
    settings: Optional[dict] = None  # GenerationSettings.to_dict() of the controls; None: the model's defaults
    prompt: str = ""
    prompt_history: list = field(default_factory=list)
    model: Optional[str] = None  # a model spec (models.resolve_spec); None: the bundled model
    recent_models: list = field(default_factory=list)
    zoom: Any = "fit"
    overlay: bool = False
    export_factor: int = 8
    export_method: str = "nearest"
    new_seed_each_generate: bool = NEW_SEED_DEFAULT
    compiled_decoding: bool = COMPILED_DECODING_DEFAULT

    @classmethod
    def defaults(cls) -> "StudioPreferences":
        """A first start's (the module's defaults read now, so a test may change them)."""
        return cls(new_seed_each_generate=NEW_SEED_DEFAULT, compiled_decoding=COMPILED_DECODING_DEFAULT)

    @classmethod
    def read(cls, store: KeyValueStore) -> "StudioPreferences":
        """Every field from ``store``; a missing value, or one of the wrong type or out of range, is the
        field's default."""
        p = cls.defaults()
        get = store.get_json
        settings = get("settings")
        if isinstance(settings, dict):
            p.settings = settings
        prompt = get("prompt")
        if isinstance(prompt, str):
            p.prompt = prompt
        p.prompt_history = _strings(get("prompt_history"), MAX_PROMPT_HISTORY) or []
        model = get("model")
        if isinstance(model, str) and model:
            p.model = model
        p.recent_models = _strings(get("recent_models"), MAX_RECENT_MODELS) or []
        zoom = get("zoom")
        if zoom in ZOOMS and not isinstance(zoom, bool):
            p.zoom = zoom
        for name in ("overlay", "new_seed_each_generate", "compiled_decoding"):
            value = get(name)
            if isinstance(value, bool):
                setattr(p, name, value)
        factor = get("export_factor")
        if factor in UPSCALE_FACTORS and not isinstance(factor, bool):
            p.export_factor = int(factor)
        method = get("export_method")
        if method in EXPORT_METHODS:
            p.export_method = method
        return p

    def write(self, store: KeyValueStore) -> None:
        for f in fields(self):
            store.set_json(f.name, getattr(self, f.name))

    def remember_model(self, spec: str) -> None:
        """A model folder or Hub name was opened: first in the recent list, at most MAX_RECENT_MODELS."""
        self.recent_models = ([spec] + [m for m in self.recent_models if m != spec])[:MAX_RECENT_MODELS]
