"""Writing finished images: PNG with the generation parameters embedded.

Two text chunks: ``parameters`` in the A1111 style that other tools read
("prompt\\nSteps: …, Sampler: …, CFG scale: …, Seed: …, Size: …, Model: …"), and
``lantern-studio`` holding every setting and stat as JSON. Writes are atomic
(temp file + rename) and never overwrite unless asked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

import numpy as np
from PIL import Image, PngImagePlugin

from . import fidelity
from .engine.decode_method import DecodeMethod
from .engine.files import atomic_write
from .records import JSON_KEY, read_record

UPSCALE_FACTORS = (1, 2, 3, 4, 5, 6, 7, 8)


class ExportError(OSError):
    pass


def slug(text: str, limit: int = 40) -> str:
    """A file name stem from a prompt: lower-case ASCII words joined by hyphens ("image" if none)."""
    s = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return (s[:limit].rstrip("-") or "image")


def target_forwards(engine_count):
    """The one count of target forwards the studio and its PNGs show (the PNG's "Steps", the stats panel,
    the canvas line, the Compare): the prefill's forward included, so one per decoding step (a vanilla
    256-token image: 256). ``engine_count`` is the engine's ``DecodeStats.target_forwards`` (or a frame's),
    which counts the image-token forwards after the prefill; None (or a non-integer) gives None."""
    if not isinstance(engine_count, int) or isinstance(engine_count, bool):
        return None
    return engine_count + 1


def a1111_parameters(record: dict) -> str:
    s = record.get("settings", {})
    method = DecodeMethod.of_dict(s)  # the one home of what a method is called
    stats = record.get("stats", {})
    h, w = record.get("size", (0, 0))
    fields = [
        ("Steps", target_forwards(stats.get("target_forwards"))),
        ("Sampler", method.sampler),
        ("CFG scale", s.get("cfg_scale")),
        ("Seed", s.get("seed")),
        ("Size", f"{w}x{h}"),
        ("Model", record.get("model")),
        ("Temperature", s.get("temperature")),
        ("Top-k", s.get("top_k")),
        ("Top-p", s.get("top_p")),
        ("Bound", method.bound_field),
        ("TV budget per token", _budget_field(method, stats)),
        ("Compiled", _compiled_field(record)),
        ("Prompt fidelity", None if fidelity.of_record(record) is None else fidelity.format_value(fidelity.of_record(record))),
    ]
    return record.get("prompt", "") + "\n" + ", ".join(f"{k}: {v}" for k, v in fields if v is not None)


def _compiled_field(record: dict) -> Optional[str]:
    """The A1111 "Compiled" field: yes when compiled decode steps made the image (a seed redraws it on the
    same path only), no when eager ones did; None for a record from before the studio kept it."""
    if "compiled" not in record:
        return None
    return "yes" if record["compiled"] else "no"


def _budget_field(method: DecodeMethod, stats: dict) -> Optional[str]:
    """The A1111 "TV budget per token" field: the per-step bounds summed over the image
    (DecodeStats.tv_budget_total) averaged over its tokens, a number on δ's own scale (0 … 1)
    that a person compares with the δ they set. The sum itself ("TV budget: 50.2" read as
    nothing) stays in the JSON record's stats; without a token count the field is left out."""
    if method.bound_field in (None, "lantern++"):
        return None
    total, tokens = stats.get("tv_budget_total"), stats.get("tokens")
    if not isinstance(total, (int, float)) or not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:
        return None
    return f"{total / tokens:.3g}"


def upscale(image: np.ndarray, factor: int, method: str = "nearest") -> Image.Image:
    if factor not in UPSCALE_FACTORS:
        raise ValueError(f"upscale: factor must be one of {UPSCALE_FACTORS}, got {factor}")
    if method not in ("nearest", "lanczos"):
        raise ValueError(f"upscale: method must be 'nearest' or 'lanczos', got {method!r}")
    img = Image.fromarray(np.asarray(image, dtype=np.uint8))
    if factor == 1:
        return img
    resample = Image.NEAREST if method == "nearest" else Image.LANCZOS
    return img.resize((img.width * factor, img.height * factor), resample)


def save_png(path, image: np.ndarray, record: dict, overwrite: bool = False, factor: int = 1,
             method: str = "nearest") -> Path:
    """Write ``image`` (H, W, 3 uint8) to ``path`` with ``record`` embedded."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise ExportError(f"{path}: already exists (not overwritten)")
    img = upscale(image, factor, method)
    record = dict(record)
    record.setdefault("size", (int(np.asarray(image).shape[0]), int(np.asarray(image).shape[1])))
    info = PngImagePlugin.PngInfo()
    info.add_text("parameters", a1111_parameters(record))
    info.add_itxt(JSON_KEY, json.dumps(record, sort_keys=True, default=_jsonable))
    try:
        # the ".export-" prefix is how the history recognises a killed write's leftover (studio/history_store.py)
        atomic_write(path, lambda tmp: img.save(tmp, format="PNG", pnginfo=info), temp_prefix=".export-",
                     exclusive=not overwrite)
    except FileExistsError:
        raise ExportError(f"{path}: already exists (not overwritten)") from None
    except OSError as e:
        raise ExportError(f"{path}: could not be written ({e.strerror or e})") from None
    return path


def read_png_record(path) -> Optional[dict]:
    """The record embedded in a studio PNG (None when it has none), read and checked by the one reader
    of untrusted records (records.py): RecordError names the file and what was wrong."""
    return read_record(path)


def _jsonable(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)
