"""Model folders: how a complete generator (GPT + VQ + drafter + conditioning)
lives on disk. The bundled model in ``resources/models/`` is one of these.

``model.json``::

    {"format": "lantern-studio-model/1", "name": "...",
     "gpt": "gpt.safetensors", "vq": "vq.safetensors", "eagle": "eagle.safetensors",
     "heads": "heads.safetensors" (optional parallel draft heads, engine/draft_heads.py),
     "conditioning": {"kind": "caption", "encoder": "minilm" | "hash", "length": 24, "dim": 384}
                   | {"kind": "class", "names": [...]}
                   | {"kind": "class", "factorised": true, "identities": "identities.json", ...} (models/classes.py),
     "defaults": {GenerationSettings fields},
     "files": {"gpt.safetensors": "<sha256>", ...}}
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Optional

import torch
from safetensors.torch import load_file

from ..engine.checkpoints import (CheckpointError, load_gpt, load_state_strict, load_weights, save_gpt,
                                  save_weights, stored_as)
from ..engine.files import atomic_write, sha256_file
from ..engine.drafters import EagleHead
from ..engine.draft_heads import KIND as HEADS_KIND, DraftHeads, HeadsConfigError, check_config as check_heads_config
from ..engine.pipeline import ImagePipeline, ModelSource
from ..engine.settings import GenerationSettings, SettingsError
from ..engine.snap import IdentityConditioner, default_style_problem
from ..engine.text import CaptionConditioner, ClassConditioner, HashEncoder, MiniLMEncoder
from ..engine.tokenizer import load_vq, save_vq
from .classes import read_vocabulary
from .quality import PromptScorer
from .recogniser import load_recogniser_net
from ..paths import cache_dir

FORMAT = "lantern-studio-model/1"


def _bad(folder: Path, what: str) -> CheckpointError:
    return CheckpointError(f"{Path(folder) / 'model.json'}: {what}")


def folder_file(folder, name, key: str) -> Path:
    """The file ``name`` (from model.json's ``key``) inside ``folder``, or CheckpointError.

    Absolute paths, '..' and symlinks that resolve outside the folder are refused
    before anything is opened; so is a name that is not an existing regular file.
    """
    folder = Path(folder)
    if not isinstance(name, str) or not name.strip() or "\x00" in name:
        raise _bad(folder, f'"{key}" must be a file name inside the folder, got {name!r}')
    rel = Path(name)
    if rel.is_absolute():
        raise _bad(folder, f'"{key}": {name!r} is an absolute path; files must be inside the model folder')
    root = folder.resolve()
    full = (folder / rel).resolve()
    if full != root and root not in full.parents:
        raise _bad(folder, f'"{key}": {name!r} resolves outside the model folder (refused)')
    if not full.is_file():
        raise CheckpointError(f"{folder / rel}: missing (named by model.json's \"{key}\")")
    return full


def read_manifest(folder) -> dict:
    """model.json, checked field by field: every problem is one CheckpointError naming the file."""
    folder = Path(folder)
    path = folder / "model.json"
    if not path.is_file():
        raise CheckpointError(f"{folder}: not a model folder (no model.json)")
    try:
        man = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: unreadable ({e})") from None
    if not isinstance(man, dict):
        raise _bad(folder, f"must hold a JSON object, got {type(man).__name__}")
    if man.get("format") != FORMAT:
        raise CheckpointError(f"{path}: unknown format {man.get('format')!r}, expected {FORMAT}")
    for key in ("gpt", "vq"):
        if not isinstance(man.get(key), str):
            raise _bad(folder, f'"{key}" must name a weights file, got {man.get(key)!r}')
    for key in ("eagle", "heads", "recogniser", "name"):
        if man.get(key) is not None and not isinstance(man[key], str):
            raise _bad(folder, f'"{key}" must be a string, got {type(man[key]).__name__}')
    for key, kind in (("conditioning", dict), ("defaults", dict), ("files", dict), ("extra_files", list)):
        if key in man and not isinstance(man[key], kind):
            raise _bad(folder, f'"{key}" must be a JSON {"object" if kind is dict else "list"}, '
                               f"got {type(man[key]).__name__}")
    if "conditioning" not in man:
        raise _bad(folder, '"conditioning" is missing')
    for name, digest in (man.get("files") or {}).items():
        if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
            raise _bad(folder, f'"files": the sha256 of {name!r} must be 64 hex digits, got {digest!r}')
    cond = man["conditioning"]
    kind = cond.get("kind")
    if kind == "class" and cond.get("factorised"):
        for key in ("identities", "encoder"):
            if not isinstance(cond.get(key), str):
                raise _bad(folder, f'"conditioning.{key}" must be a string')
        for key in ("styles", "tones"):
            names = cond.get(key)
            if not (isinstance(names, list) and all(isinstance(n, str) and n for n in names)):
                raise _bad(folder, f'"conditioning.{key}" must be a list of names')
        if not cond["styles"]:
            raise _bad(folder, '"conditioning.styles" must name at least one style')
        if cond["encoder"] not in ("minilm", "hash"):
            raise _bad(folder, f'"conditioning.encoder" must be "minilm" or "hash", got {cond["encoder"]!r}')
        dim = cond.get("dim", 384)
        if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= 65536:
            raise _bad(folder, f'"conditioning.dim" must be an integer in [1, 65536], got {dim!r}')
        offered = cond.get("offered_styles", cond["styles"])
        if not (isinstance(offered, list) and offered and all(isinstance(n, str) and n in cond["styles"]
                                                              for n in offered)):
            raise _bad(folder, '"conditioning.offered_styles" must be a non-empty list of its styles')
        default = cond.get("default_style")
        problem = None if default is None else default_style_problem(default, offered, cond["styles"])
        if problem:
            raise _bad(folder, f'"conditioning.default_style": {problem}')
        snap = cond.get("snap")
        if not (isinstance(snap, dict) and isinstance(snap.get("vectors"), str)):
            raise _bad(folder, '"conditioning.snap" must be {"vectors": FILE}')
    elif kind == "class":
        names = cond.get("names")
        if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
            raise _bad(folder, '"conditioning.names" must be a non-empty list of class names')
    elif kind == "caption":
        for key in ("length", "dim"):
            v = cond.get(key, 24 if key == "length" else 1)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 65536:
                raise _bad(folder, f'"conditioning.{key}" must be an integer in [1, 65536], got {v!r}')
        snap = cond.get("snap")
        if snap is not None and not (isinstance(snap, dict) and isinstance(snap.get("captions"), str)
                                     and isinstance(snap.get("vectors"), str)):
            raise _bad(folder, '"conditioning.snap" must be {"captions": FILE, "vectors": FILE}')
    else:
        raise _bad(folder, f'"conditioning.kind" must be "class" or "caption", got {kind!r}')
    return man


def _verdicts_path() -> Path:
    return cache_dir() / "verified-files.json"


def verify_files(folder, man: dict) -> None:
    """Check every file model.json lists against its sha256, refusing names outside the folder.

    A verdict is remembered by (path, size, mtime) in the cache folder, so a
    folder is hashed once, not at every start; a changed file is hashed again.
    """
    folder = Path(folder)
    try:
        verdicts = json.loads(_verdicts_path().read_text(encoding="utf-8"))
        if not isinstance(verdicts, dict):
            verdicts = {}
    except (OSError, ValueError):
        verdicts = {}
    changed = False
    for name, digest in (man.get("files") or {}).items():
        path = folder_file(folder, name, f"files.{name}")
        st = path.stat()
        key = str(path)
        stamp = [st.st_size, st.st_mtime_ns, digest]
        if verdicts.get(key) == stamp:
            continue
        if sha256_file(path) != digest:
            raise CheckpointError(f"{path}: sha256 does not match model.json (corrupt or replaced file)")
        verdicts[key] = stamp
        changed = True
    if changed:
        try:
            atomic_write(_verdicts_path(), lambda p: Path(p).write_text(json.dumps(verdicts), encoding="utf-8"))
        except OSError:
            pass  # a read-only cache only costs hashing again next time


_ENCODERS = {}


def _encoder(spec: dict):
    enc = spec.get("encoder", "minilm")
    if enc == "minilm":
        return _ENCODERS.setdefault("minilm", MiniLMEncoder())  # one per process: it is 90 MB
    if enc == "hash":
        return HashEncoder(spec["dim"])
    if isinstance(enc, str) and enc.startswith("hash:"):
        return HashEncoder(int(enc.split(":", 1)[1]))
    raise CheckpointError(f"unknown text encoder {enc!r}")


def identity_conditioner(spec: dict, folder: Path) -> IdentityConditioner:
    """A factorised class model's conditioner from its folder: identities.json, the snap vectors."""
    vocab = read_vocabulary(folder_file(folder, spec["identities"], "conditioning.identities"),
                            spec["styles"], spec["tones"])
    t = load_file(str(folder_file(folder, spec["snap"]["vectors"], "conditioning.snap.vectors")))
    encoder = _encoder(spec)
    width = {v.shape[-1] for v in t.values() if v.ndim == 2}
    if width != {encoder.dim}:
        raise _bad(folder, f"the snap vectors are {sorted(width)}-wide but the {spec.get('encoder')} encoder makes "
                           f"{encoder.dim}-wide ones (\"conditioning.dim\")")
    try:
        return IdentityConditioner(encoder, vocab.identities, vocab.styles, vocab.tones, t.get("vectors"),
                                   t.get("tag_vectors"), spec.get("default_style"), vocab.outside,
                                   t.get("outside_vectors"), t.get("outside_tag_vectors"), spec.get("offered_styles"))
    except ValueError as e:
        raise _bad(folder, f"the snap vectors do not fit identities.json ({e})") from None


def make_conditioner(spec: dict, folder: Optional[Path] = None):
    """A model folder's conditioner from model.json's ``conditioning`` (class names, a factorised
    class model's identities and snap vectors, or MiniLM / hash captions). (A catalogue entry's:
    catalogue.entry_conditioner.)"""
    kind = spec.get("kind")
    if kind == "class" and spec.get("factorised"):
        if folder is None:
            raise CheckpointError("a factorised class model's conditioner is read from its folder")
        return identity_conditioner(spec, folder)
    if kind == "class":
        return ClassConditioner(spec["names"])
    if kind == "caption":
        encoder = _encoder(spec)
        snap = spec.get("snap")
        if snap and folder is not None:
            rows = json.loads(folder_file(folder, snap["captions"], "conditioning.snap.captions").read_text())
            captions = [r["caption"] if isinstance(r, dict) else r for r in rows]
            tensors = load_file(str(folder_file(folder, snap["vectors"], "conditioning.snap.vectors")))
            vectors, tag_vectors = tensors.get("vectors"), tensors.get("tag_vectors")
            if (vectors is None or not all(isinstance(c, str) for c in captions) or vectors.ndim != 2
                    or len(captions) != vectors.shape[0]):
                raise _bad(folder, "the snap captions and vectors do not match (one vector per caption)")
            if tag_vectors is not None and tag_vectors.shape != vectors.shape:
                raise _bad(folder, "the snap tag_vectors do not match its vectors (one per caption)")
            return CaptionConditioner(encoder, spec["length"], captions, vectors, tag_vectors)
        return CaptionConditioner(encoder, spec["length"])
    raise CheckpointError(f"unknown conditioning kind {kind!r}")


def check_conditioning_fits(folder: Path, spec: dict, conditioner, gpt) -> None:
    """The conditioning model.json describes must be the one the GPT was built for: a class list as
    long as its class table (a longer one would index past it), factors as many as its tables."""
    cfg = gpt.config
    kind = spec.get("kind")
    if kind == "class" and gpt.model_type != "c2i" or kind == "caption" and gpt.model_type != "t2i":
        raise _bad(folder, f'"conditioning.kind" is {kind!r} but the GPT is a '
                           f'{"class" if gpt.model_type == "c2i" else "text"}-conditional model')
    if kind != "class":
        return
    if isinstance(conditioner, IdentityConditioner):
        if not gpt.factorised:
            raise _bad(folder, "a factorised class list, but the GPT has one class table (not factorised)")
        have = (len(conditioner.identities), len(conditioner.styles), len(conditioner.tones))
        want = (cfg.num_classes, cfg.num_styles, cfg.num_tones)
        if have != want:
            raise _bad(folder, f"identities/styles/tones {have} do not match the GPT's tables {want}")
    elif gpt.factorised:
        raise _bad(folder, "the GPT's classes are factorised (identity, style, tone); a plain name list cannot "
                           "condition it")
    elif len(conditioner.names) > cfg.num_classes:
        raise _bad(folder, f'"conditioning.names" lists {len(conditioner.names)} classes, but the GPT has '
                           f"{cfg.num_classes}")


def load_eagle(path, gpt_config) -> EagleHead:
    sd, _ = load_weights(path, "eagle")
    head = EagleHead(gpt_config)
    load_state_strict(head, sd, path)
    return head.eval()


def load_heads(path, gpt_config) -> DraftHeads:
    """A heads file (kind "heads", its K and hidden size in the metadata) for a target of ``gpt_config``;
    every problem is a CheckpointError naming the file."""
    sd, config = load_weights(path, HEADS_KIND)
    try:  # the declared sizes, bounded by the target and by the file, before any tensor is made
        config = check_heads_config(config, gpt_config.dim, sum(v.numel() for v in sd.values()))
    except HeadsConfigError as e:
        raise CheckpointError(f"{path}: {e}") from None
    heads = DraftHeads.from_config(config)
    load_state_strict(heads, sd, path)
    return heads.eval()


def install_file(folder, src, key: str, name: str) -> dict:
    """Copy ``src`` into a model folder as ``name``, named under ``key`` and hashed in its model.json → the new
    manifest (the caller checks the file first)."""
    folder = Path(folder)
    man = read_manifest(folder)
    atomic_write(folder / name, lambda p: shutil.copyfile(src, p))
    man[key] = name
    man["files"] = {**(man.get("files") or {}), name: sha256_file(folder / name)}
    atomic_write(folder / "model.json", lambda p: Path(p).write_text(json.dumps(man, indent=2, sort_keys=True)))
    return man


def install_heads(folder, heads_file) -> dict:
    """Copy a heads file into a model folder as ``heads.safetensors``, named and hashed in its model.json
    (checked by loading it against the folder's GPT first) → the new manifest."""
    man = read_manifest(folder)
    load_heads(heads_file, load_gpt(folder_file(folder, man["gpt"], "gpt")).config)
    return install_file(folder, heads_file, "heads", "heads.safetensors")


def install_recogniser(folder, recogniser_file) -> dict:
    """Copy a recogniser into a model folder as ``recogniser.safetensors``, named and hashed in its model.json
    → the new manifest. Checked first: an identity recogniser must know every emoji the model draws. The
    folder's meter calibration (``meter``) belonged to the old recogniser and is dropped: recalibrate
    (eval/meter_check.py) before shipping."""
    folder = Path(folder)
    man = read_manifest(folder)
    net, _config = load_recogniser_net(recogniser_file)
    idents = (man.get("conditioning") or {}).get("identities")
    if net.config.label == "identity" and idents:
        rows = json.loads(folder_file(folder, idents, "identities").read_text()).get("classes") or []
        missing = [r.get("identity") for r in rows if r.get("identity") not in set(net.config.classes)]
        if missing:
            raise CheckpointError(f"{recogniser_file}: does not know {len(missing)} emoji {folder.name} draws "
                                  f"(e.g. {missing[0]})")
    man = install_file(folder, recogniser_file, "recogniser", "recogniser.safetensors")
    if "meter" in man:
        del man["meter"]
        atomic_write(folder / "model.json", lambda p: Path(p).write_text(json.dumps(man, indent=2, sort_keys=True)))
    return man


def load_model_dir(folder, verify: bool = True, device: Optional[str] = None) -> ImagePipeline:
    """Model folder → ImagePipeline. ``verify`` checks file hashes against model.json
    (remembered per file by size and mtime). Every problem is a CheckpointError
    naming the folder's file."""
    folder = Path(folder)
    man = read_manifest(folder)
    if verify:
        verify_files(folder, man)
    gpt = load_gpt(folder_file(folder, man["gpt"], "gpt"))
    try:
        vq = load_vq(folder_file(folder, man["vq"], "vq"))
    except (ValueError, KeyError, OSError) as e:
        if isinstance(e, CheckpointError):
            raise
        raise CheckpointError(f"{folder / man['vq']}: not a usable tokenizer ({e})") from None
    if vq.config.codebook_size != gpt.vocab_size:
        raise CheckpointError(f"{folder / man['vq']}: codebook of {vq.config.codebook_size} codes, but "
                              f"{man['gpt']} predicts {gpt.vocab_size} tokens")
    eagle = load_eagle(folder_file(folder, man["eagle"], "eagle"), gpt.config) if man.get("eagle") else None
    heads = load_heads(folder_file(folder, man["heads"], "heads"), gpt.config) if man.get("heads") else None
    try:
        defaults = GenerationSettings.from_dict(man.get("defaults", {})).validate(gpt.vocab_size)
    except (SettingsError, TypeError) as e:
        raise _bad(folder, f'"defaults": {e}') from None
    try:
        conditioner = make_conditioner(man["conditioning"], folder)
    except CheckpointError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise _bad(folder, f"conditioning files unusable ({type(e).__name__}: {e})") from None
    check_conditioning_fits(folder, man["conditioning"], conditioner, gpt)
    scorer = None
    if man.get("recogniser"):
        folder_file(folder, man["recogniser"], "recogniser")
        scorer = PromptScorer(folder, man, conditioner)
    pipe = ImagePipeline(
        gpt, vq, conditioner, eagle, defaults, man.get("name", folder.name),
        table_cache=cache_dir() / "neighbours", source=ModelSource(folder=folder, manifest=man), scorer=scorer,
        heads=heads,
    )
    if device:
        pipe.to(device)
    return pipe


def copy_or_save(src: Optional[Path], dst: Path, dtype: torch.dtype, save) -> None:
    """``dst`` as a byte copy of ``src`` (the file the weights were loaded from) when ``src`` already
    stores them in ``dtype`` (its bytes, hash and training metadata stay as they are), else ``save(dst)``."""
    if src is not None and stored_as(src, dtype):
        if Path(src).resolve() != Path(dst).resolve():  # (shipping into the folder it came from: already there)
            atomic_write(dst, lambda p: shutil.copyfile(src, p))
        return
    save(dst)


def save_model_dir(folder, gpt, vq, vq_args, conditioning: dict, defaults: GenerationSettings, name: str,
                   eagle: Optional[EagleHead] = None, extra: Optional[dict] = None, dtype=torch.float16,
                   vq_file: Optional[Path] = None) -> dict:
    """Write a complete model folder (fp16 safetensors + model.json with hashes). ``vq_file``: the file
    ``vq`` was loaded from, copied as it is when it is already stored in ``dtype``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_gpt(gpt, folder / "gpt.safetensors", dtype=dtype)
    copy_or_save(vq_file, folder / "vq.safetensors", dtype, lambda p: save_vq(vq, vq_args, p, dtype=dtype))
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
