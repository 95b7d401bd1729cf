"""Model folders: how a complete generator (GPT + VQ + drafter + conditioning)
lives on disk. The bundled model in ``resources/models/`` is one of these.

``model.json``::

    {"format": "lantern-studio-model/1", "name": "...",
     "gpt": "gpt.safetensors", "vq": "vq.safetensors", "eagle": "eagle.safetensors",
     "conditioning": {"kind": "caption", "encoder": "minilm" | "hash", "length": 24, "dim": 384}
                   | {"kind": "class", "names": [...]},
     "defaults": {GenerationSettings fields},
     "files": {"gpt.safetensors": "<sha256>", ...}}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import torch

from ..engine.checkpoints import CheckpointError, atomic_write, sha256_file, load_gpt, load_weights, save_gpt, save_weights
from ..engine.drafters import EagleHead
from ..engine.pipeline import ImagePipeline
from ..engine.settings import GenerationSettings
from ..engine.text import CaptionConditioner, ClassConditioner, HashEncoder, MiniLMEncoder
from ..paths import cache_dir

FORMAT = "lantern-studio-model/1"


def read_manifest(folder) -> dict:
    folder = Path(folder)
    path = folder / "model.json"
    if not path.is_file():
        raise CheckpointError(f"{folder}: not a model folder (no model.json)")
    try:
        man = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: unreadable ({e})") from None
    if man.get("format") != FORMAT:
        raise CheckpointError(f"{path}: unknown format {man.get('format')!r}, expected {FORMAT}")
    return man


_ENCODERS = {}


def make_conditioner(spec: dict, folder: Optional[Path] = None):
    kind = spec.get("kind")
    if kind == "class":
        return ClassConditioner(spec["names"])
    if kind == "caption":
        enc = spec.get("encoder", "minilm")
        if enc == "minilm":
            encoder = _ENCODERS.setdefault("minilm", MiniLMEncoder())  # one per process: it is 90 MB
        elif enc == "hash":
            encoder = HashEncoder(spec["dim"])
        else:
            raise CheckpointError(f"unknown text encoder {enc!r}")
        snap = spec.get("snap")
        if snap and folder is not None:
            from safetensors.torch import load_file

            rows = json.loads((folder / snap["captions"]).read_text())
            captions = [r["caption"] if isinstance(r, dict) else r for r in rows]
            vectors = load_file(str(folder / snap["vectors"]))["vectors"]
            return CaptionConditioner(encoder, spec["length"], captions, vectors)
        return CaptionConditioner(encoder, spec["length"])
    raise CheckpointError(f"unknown conditioning kind {kind!r}")


def load_eagle(path, gpt_config) -> EagleHead:
    sd, _ = load_weights(path, "eagle")
    head = EagleHead(gpt_config)
    from ..engine.checkpoints import load_state_strict

    load_state_strict(head, sd, path)
    return head.eval()


def load_model_dir(folder, verify: bool = False, device: Optional[str] = None) -> ImagePipeline:
    """Model folder → ImagePipeline. ``verify`` checks file hashes against model.json."""
    from ..engine.tokenizer import load_vq

    folder = Path(folder)
    man = read_manifest(folder)
    if verify:
        for name, digest in man.get("files", {}).items():
            if sha256_file(folder / name) != digest:
                raise CheckpointError(f"{folder / name}: sha256 does not match model.json (corrupt or replaced file)")
    gpt = load_gpt(folder / man["gpt"])
    vq = load_vq(folder / man["vq"])
    eagle = load_eagle(folder / man["eagle"], gpt.config) if man.get("eagle") else None
    defaults = GenerationSettings.from_dict(man.get("defaults", {}))
    pipe = ImagePipeline(
        gpt, vq, make_conditioner(man["conditioning"], folder), eagle, defaults, man.get("name", folder.name),
        table_cache=cache_dir() / "neighbours",
    )
    pipe.manifest = man
    pipe.folder = folder
    if man.get("recogniser") and (folder / man["recogniser"]).is_file():
        from .quality import PromptScorer

        pipe.score = PromptScorer(folder, man, pipe.conditioner)
    if device:
        pipe.to(device)
    return pipe


def save_model_dir(folder, gpt, vq, vq_args, conditioning: dict, defaults: GenerationSettings, name: str,
                   eagle: Optional[EagleHead] = None, extra: Optional[dict] = None, dtype=torch.float16) -> dict:
    """Write a complete model folder (fp16 safetensors + model.json with hashes)."""
    from ..engine.tokenizer import save_vq

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_gpt(gpt, folder / "gpt.safetensors", dtype=dtype)
    save_vq(vq, vq_args, folder / "vq.safetensors", dtype=dtype)
    files = ["gpt.safetensors", "vq.safetensors"]
    man = {"format": FORMAT, "name": name, "gpt": "gpt.safetensors", "vq": "vq.safetensors",
           "conditioning": conditioning, "defaults": defaults.to_dict()}
    if eagle is not None:
        save_weights(eagle, folder / "eagle.safetensors", eagle.config.to_dict(), "eagle", dtype)
        man["eagle"] = "eagle.safetensors"
        files.append("eagle.safetensors")
    man.update(extra or {})
    man["files"] = {f: sha256_file(folder / f) for f in files + list(man.get("extra_files", []))}
    atomic_write(folder / "model.json", lambda p: Path(p).write_text(json.dumps(man, indent=2, sort_keys=True)))
    return man
