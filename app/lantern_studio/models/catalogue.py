"""Hub models: the official LlamaGen checkpoints, what they need, and how to load them.

Facts checked against LlamaGen's README (FoundationVision/LlamaGen) and its
``autoregressive/sample/sample_c2i.py`` / ``sample_t2i.py``:

* class-conditional (ImageNet-1k): ``c2i_B_256.pt``, ``c2i_L_256.pt``,
  ``c2i_B_384.pt``, ``c2i_L_384.pt``, ``c2i_XL_384.pt``, ``c2i_XXL_384.pt``,
  ``c2i_3B_384.pt`` with the tokenizer ``vq_ds16_c2i.pt``, all in the Hub repo
  ``FoundationVision/LlamaGen``. XXL and 3B were trained with FSDP and are bare
  state dicts (``--from-fsdp``). Sampling defaults: cfg 4.0, top-k 2000,
  temperature 1.0, top-p 1.0; the token grid is image size / 16 (a 384 model
  samples with ``block_size = 24**2 = 576``), one class token.
* text-conditional: ``t2i_XL_stage1_256.pt`` (16×16 tokens) and
  ``t2i_XL_stage2_512.pt`` (32×32) with ``vq_ds16_t2i.pt``, in the Hub repo
  ``peizesun/llamagen_t2i``; captions from FLAN-T5-XL (``google/flan-t5-xl``),
  120 tokens, 2048-d, left-padded. Sampling defaults: cfg 7.5, top-k 1000,
  temperature 1.0, top-p 1.0.

Sizes are approximate (parameters × 4 bytes, the fp32 checkpoints) unless
``size_exact``; the downloader asks the hub for exact sizes before it starts.
A file may pin its content (``HubFile(sha256=…, size=…, size_exact=True)``):
the download must then match the pin, whatever the server says. The official
entries below carry no pins yet, so their files are checked against the hub's
own hash for them, which must be a hash (models/hub.py).

Files are read from the standard Hugging Face cache only (never fetched here):
``lantern-studio models download NAME`` fetches them.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional

from ..engine.checkpoints import CheckpointError, load_llamagen_gpt
from ..engine.model import GPT_PRESETS, ModelArgs
from ..engine.pipeline import ImagePipeline, ModelSource
from ..engine.settings import GenerationSettings
from ..engine.t5 import FlanT5Encoder, T5CaptionConditioner
from ..engine.text import ClassConditioner
from ..engine.tokenizer import load_llamagen_vq
from ..paths import cache_dir
from .hub import HubFile, cached_path, download_files, format_size, missing, remove_files
from .janus import JANUS_DEFAULTS, load_janus_dir
from .local import load_eagle

LLAMAGEN_README = "https://github.com/FoundationVision/LlamaGen/blob/main/README.md"
C2I_REPO = "FoundationVision/LlamaGen"
T2I_REPO = "peizesun/llamagen_t2i"
T5_REPO = "google/flan-t5-xl"

LLAMAGEN_LICENCE = (
    "LlamaGen code: MIT (per its README). The weights' terms are on the Hub model cards "
    "(huggingface.co/{repo}); check them before redistributing images or weights."
)
IMAGENET_NOTE = (
    " Trained on ImageNet-1k: the ImageNet terms of access restrict use to non-commercial research."
)
T5_LICENCE = "FLAN-T5-XL (google/flan-t5-xl): Apache-2.0 per its model card."


@dataclass(frozen=True)
class TextEncoderSpec:
    """A Hub text encoder (FLAN-T5) and the caption format the GPT expects."""

    repo_id: str
    files: tuple  # HubFile
    length: int = 120  # caption tokens (the GPT's cls_token_num)
    dim: int = 2048
    params: int = 1_220_000_000  # encoder-only parameters (approximate)

    @property
    def folder_file(self) -> HubFile:
        """The file whose folder holds the whole encoder (config.json)."""
        for f in self.files:
            if f.filename == "config.json":
                return f
        return self.files[0]


@dataclass(frozen=True, eq=False)
class Entry:
    """One downloadable model: files, architecture, defaults, licence."""

    name: str
    title: str
    kind: str  # "c2i" | "t2i" | "janus" (a transformers folder: models/janus.py)
    gpt: HubFile  # the GPT's weights (janus: the whole model's, or its shard index)
    vq: Optional[HubFile]  # None for janus: its VQ is inside the model's weights
    model_args: dict  # official ModelArgs fields (+ "preset": "GPT-B" ...)
    image_size: int
    defaults: GenerationSettings
    params: int  # GPT parameters (approximate)
    licence: str
    downsample: int = 16
    text_encoder: Optional[TextEncoderSpec] = None
    class_names: Optional[tuple] = None  # None: the ImageNet-1k list
    vq_params: int = 72_000_000
    source: str = LLAMAGEN_README
    notes: str = ""
    # janus: the folder's other files (config, generation config, processor and tokenizer files)
    extra_files: tuple = ()

    @property
    def grid(self) -> int:
        return self.image_size // self.downsample

    @property
    def tokens(self) -> int:
        return self.grid * self.grid

    @property
    def files(self) -> tuple:
        extra = self.text_encoder.files if self.text_encoder is not None else ()
        return tuple(f for f in (self.gpt, self.vq, *extra, *self.extra_files, *self.shards()) if f is not None)

    def shards(self) -> tuple:
        """The weight shards a downloaded shard index names (``model.safetensors.index.json``): exactly the
        files transformers will open. Known once the index is in the cache; until then the index stands for
        them, with the weights' approximate size."""
        if not self.gpt.filename.endswith(".index.json"):
            return ()
        path = cached_path(self.gpt)
        if path is None:
            return ()
        try:
            names = sorted(set(json.loads(path.read_text(encoding="utf-8"))["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return ()
        each = self.gpt.size // max(1, len(names))
        return tuple(HubFile(self.gpt.repo_id, n, size=each, revision=self.gpt.revision, role="weights")
                     for n in names if isinstance(n, str) and "/" not in n and n.endswith(".safetensors"))

    @property
    def download_size(self) -> int:
        if self.shards():  # the index's own size stood for the weights until it was read
            return sum(f.size for f in self.files if f is not self.gpt)
        return sum(f.size for f in self.files)

    @property
    def sizes_exact(self) -> bool:
        return all(f.size_exact for f in self.files)

    def args(self):
        """The resolved ModelArgs (preset sizes + the entry's fields)."""
        d = dict(self.model_args)
        preset = d.pop("preset", None)
        if preset is not None:
            d = {**GPT_PRESETS[preset], **d}
        return ModelArgs.from_dict(d)

    def describe(self) -> str:
        size = format_size(self.download_size)
        return f"{self.title}: {self.image_size}×{self.image_size} px, {self.grid}×{self.grid} tokens, " \
               f"{'≈' if not self.sizes_exact else ''}{size} download"


# --------------------------------------------------------------------------- the official entries


def _approx_file(repo: str, filename: str, params: int, role: str) -> HubFile:
    return HubFile(repo, filename, size=params * 4, role=role)


_VQ_C2I = _approx_file(C2I_REPO, "vq_ds16_c2i.pt", 72_000_000, "vq")
_VQ_T2I = _approx_file(T2I_REPO, "vq_ds16_t2i.pt", 72_000_000, "vq")

# google/flan-t5-xl, as LlamaGen's T5Embedder needs it (config, tokenizer, the
# sharded PyTorch weights and their index). Sizes approximate (≈2.85 B params fp32).
_T5_FILES = tuple(
    HubFile(T5_REPO, name, size=size, role="text-encoder")
    for name, size in [
        ("config.json", 1_500),
        ("special_tokens_map.json", 2_200),
        ("tokenizer_config.json", 2_500),
        ("tokenizer.json", 2_420_000),
        ("spiece.model", 792_000),
        ("pytorch_model.bin.index.json", 20_000),
        ("pytorch_model-00001-of-00002.bin", 9_450_000_000),
        ("pytorch_model-00002-of-00002.bin", 1_950_000_000),
    ]
)
FLAN_T5_XL = TextEncoderSpec(T5_REPO, _T5_FILES, length=120, dim=2048, params=1_220_000_000)

C2I_DEFAULTS = GenerationSettings(cfg_scale=4.0, top_k=2000, top_p=1.0, temperature=1.0, drafter="none")
T2I_DEFAULTS = GenerationSettings(cfg_scale=7.5, top_k=1000, top_p=1.0, temperature=1.0, drafter="none")


def _c2i(size_name: str, preset: str, image_size: int, params: int, fsdp: bool = False) -> Entry:
    filename = f"c2i_{size_name}_{image_size}.pt"
    grid = image_size // 16
    notes = "FSDP checkpoint (a bare state dict)." if fsdp else ""
    return Entry(
        name=f"llamagen-c2i-{size_name.lower()}-{image_size}",
        title=f"LlamaGen-{size_name} class→image {image_size}px",
        kind="c2i",
        gpt=_approx_file(C2I_REPO, filename, params, "gpt"),
        vq=_VQ_C2I,
        model_args=dict(preset=preset, vocab_size=16384, block_size=grid * grid, num_classes=1000,
                        cls_token_num=1, model_type="c2i"),
        image_size=image_size,
        defaults=C2I_DEFAULTS,
        params=params,
        licence=LLAMAGEN_LICENCE.format(repo=C2I_REPO) + IMAGENET_NOTE,
        notes=notes,
    )


def _t2i(filename: str, image_size: int, stage: str) -> Entry:
    grid = image_size // 16
    return Entry(
        name=f"llamagen-t2i-xl-{image_size}",
        title=f"LlamaGen-XL text→image {image_size}px ({stage})",
        kind="t2i",
        gpt=_approx_file(T2I_REPO, filename, 775_000_000, "gpt"),
        vq=_VQ_T2I,
        model_args=dict(preset="GPT-XL", vocab_size=16384, block_size=grid * grid, cls_token_num=120,
                        caption_dim=2048, model_type="t2i"),
        image_size=image_size,
        defaults=T2I_DEFAULTS,
        params=775_000_000,
        text_encoder=FLAN_T5_XL,
        licence=LLAMAGEN_LICENCE.format(repo=T2I_REPO) + " " + T5_LICENCE,
        notes=("Stage 1: trained on LAION-COCO (50M images), per the README." if stage == "stage 1"
               else "Stage 2: trained on internal data (10M images), per the README."),
    )


JANUS_SOURCE = "https://github.com/deepseek-ai/Janus"
JANUS_LICENCE = (
    "Janus-Pro: MIT per the Hub model card (huggingface.co/{repo}); DeepSeek's repository also names the "
    "DeepSeek Model License for the weights' use: check both before redistributing images or weights."
)
# What transformers' from_pretrained reads from a Janus folder beside the weights (sizes approximate)
_JANUS_SMALL = [("config.json", 2_000), ("generation_config.json", 200), ("preprocessor_config.json", 400),
                ("processor_config.json", 300), ("special_tokens_map.json", 500), ("tokenizer.json", 7_610_000),
                ("tokenizer_config.json", 170_000)]


def _janus(size: str, params: int) -> Entry:
    """Janus-Pro in transformers' format (deepseek-community/Janus-Pro-*), bf16 weights (2 bytes a parameter):
    1B in one model.safetensors, 7B in shards named by model.safetensors.index.json."""
    repo = f"deepseek-community/Janus-Pro-{size}"
    single = size == "1B"
    weights = HubFile(repo, "model.safetensors" if single else "model.safetensors.index.json", size=params * 2,
                      role="weights")
    dim, layers, heads = (2048, 24, 16) if single else (4096, 30, 32)
    return Entry(
        name=f"janus-pro-{size.lower()}",
        title=f"Janus-Pro-{size} text→image 384px (DeepSeek, via transformers)",
        kind="janus",
        gpt=weights,
        vq=None,
        extra_files=tuple(HubFile(repo, n, size=b, role="config") for n, b in _JANUS_SMALL),
        model_args=dict(dim=dim, n_layer=layers, n_head=heads, vocab_size=16384, block_size=576, cls_token_num=64,
                        model_type="janus"),
        image_size=384,
        defaults=JANUS_DEFAULTS,
        params=params - 72_000_000,
        licence=JANUS_LICENCE.format(repo=repo),
        source=JANUS_SOURCE,
        notes=("Conditioning: Janus's chat template and <begin_of_image>; guidance as Janus does it (pad-masked "
               "unconditional rows), CFG 5, temperature 1. Its VQ is LlamaGen's design (16,384 codes of 8 dims). "
               "Memory: ≈4.6 GB in bf16, ≈8.5 GB in fp32" if single else
               "Memory: ≈15 GB in bf16, ≈30 GB in fp32 (a CPU without native bf16 runs fp32)") + ".",
    )


_ENTRIES = [
    _c2i("B", "GPT-B", 256, 111_000_000),
    _c2i("L", "GPT-L", 256, 343_000_000),
    _c2i("B", "GPT-B", 384, 111_000_000),
    _c2i("L", "GPT-L", 384, 343_000_000),
    _c2i("XL", "GPT-XL", 384, 775_000_000),
    _c2i("XXL", "GPT-XXL", 384, 1_400_000_000, fsdp=True),
    _c2i("3B", "GPT-3B", 384, 3_100_000_000, fsdp=True),
    _t2i("t2i_XL_stage1_256.pt", 256, "stage 1"),
    _t2i("t2i_XL_stage2_512.pt", 512, "stage 2"),
    _janus("1B", 2_090_000_000),
    _janus("7B", 7_420_000_000),
]

CATALOGUE: Dict[str, Entry] = {e.name: e for e in _ENTRIES}


@contextlib.contextmanager
def temporary_entry(entry: Entry):
    """Register an extra entry (tests, experiments) for the duration of a ``with`` block."""
    if entry.name in CATALOGUE and CATALOGUE[entry.name] is not entry:
        raise ValueError(f"catalogue already has an entry named {entry.name!r}")
    CATALOGUE[entry.name] = entry
    try:
        yield entry
    finally:
        if CATALOGUE.get(entry.name) is entry:
            del CATALOGUE[entry.name]


def get_entry(name: str) -> Entry:
    if isinstance(name, Entry):
        return name
    if name in CATALOGUE:
        return CATALOGUE[name]
    low = {k.lower(): v for k, v in CATALOGUE.items()}
    if str(name).lower() in low:
        return low[str(name).lower()]
    close = difflib.get_close_matches(str(name), list(CATALOGUE), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(CATALOGUE)}"
    raise KeyError(f"no catalogue model named {name!r}{hint}")


# --------------------------------------------------------------------------- class names


@lru_cache(maxsize=1)
def imagenet_class_names() -> tuple:
    """The 1000 ImageNet-1k class names in class-id order (comma-separated synonyms)."""
    path = Path(__file__).with_name("imagenet_classes.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    names = tuple(data["classes"])
    if len(names) != 1000:
        raise CheckpointError(f"{path}: expected 1000 class names, found {len(names)}")
    return names


# --------------------------------------------------------------------------- local state


def drafter_path(name: str) -> Path:
    """Where a self-distilled EAGLE drafter for a catalogue model lives (our cache, not the HF cache)."""
    return cache_dir() / "drafters" / get_entry(name).name / "eagle.safetensors"


def status(name: str) -> dict:
    """What is on disk for an entry: installed / partial / missing, bytes still to fetch, drafter."""
    e = get_entry(name)
    absent = missing(e.files)
    state = "installed" if not absent else ("missing" if len(absent) == len(e.files) else "partial")
    return {
        "name": e.name, "title": e.title, "kind": e.kind, "state": state,
        "missing_files": [f.label for f in absent],
        "to_fetch_bytes": sum(f.size for f in absent), "sizes_exact": all(f.size_exact for f in absent),
        "drafter": drafter_path(e.name).is_file(),
    }


def local_files(name: str) -> dict:
    """{HubFile: path} for every file of the entry, from the local cache only."""
    e = get_entry(name)
    out, absent = {}, []
    for f in e.files:
        p = cached_path(f)
        (absent.append(f) if p is None else out.__setitem__(f, p))
    if absent:
        what = ", ".join(f.filename for f in absent[:3]) + (" …" if len(absent) > 3 else "")
        raise CheckpointError(
            f"{e.name}: not downloaded ({what} missing from the Hugging Face cache): "
            f"run lantern-studio models download {e.name}"
        )
    return out


def shared_files(name: str) -> list:
    """Files of ``name`` that another installed entry also uses (kept by remove())."""
    e = get_entry(name)
    key = lambda f: (f.repo_id, f.filename, f.revision)  # noqa: E731
    mine = {key(f): f for f in e.files}
    keep = {}
    for other in CATALOGUE.values():
        common = {key(f) for f in other.files} & set(mine)
        if other is e or not common or missing(other.files):
            continue
        keep.update({k: mine[k] for k in common})
    return list(keep.values())


def download(name: str, progress=None, cancel=None) -> dict:
    """Fetch an entry's files into the HF cache (see hub.download_files). A sharded entry's shards are known
    once its index is in: they are fetched in a second pass."""
    e = get_entry(name)
    got = download_files(e.files, progress=progress, cancel=cancel)
    if e.shards() and missing(e.files):
        got.update(download_files(e.files, progress=progress, cancel=cancel))
    return got


def remove(name: str, dry_run: bool = False) -> int:
    """Delete an entry's files from the HF cache, keeping files another installed entry needs,
    and its self-distilled drafter. Returns bytes freed."""
    e = get_entry(name)
    freed = remove_files(e.files, keep=shared_files(e.name), dry_run=dry_run)
    d = drafter_path(e.name)
    if d.is_file():
        freed += d.stat().st_size
        if not dry_run:
            d.unlink()
    return freed


# --------------------------------------------------------------------------- loading

_T5_CACHE: dict = {}
_T5_LOCK = threading.Lock()


def text_encoder(entry: Entry, device: Optional[str] = None):
    """The entry's FLAN-T5 encoder from the local cache (one instance per folder and device)."""
    spec = entry.text_encoder
    paths = local_files(entry.name)
    folder = paths[spec.folder_file].parent
    key = (str(folder), device or "cpu")
    with _T5_LOCK:
        enc = _T5_CACHE.get(key)
        if enc is None:
            enc = _T5_CACHE[key] = FlanT5Encoder(folder, device=device or "cpu")
    return enc


def entry_conditioner(entry: Entry, device: Optional[str] = None):
    """A catalogue entry's conditioner: ImageNet (or the entry's) class names for a c2i model,
    FLAN-T5 captions from the local HF cache for a t2i one. (A model folder's comes from its
    model.json: local.make_conditioner.)"""
    if entry.kind == "c2i":
        return ClassConditioner(list(entry.class_names or imagenet_class_names()))
    return T5CaptionConditioner(text_encoder(entry, device), entry.args().cls_token_num)


def load_entry(name: str, device: Optional[str] = None, dtype="auto", drafter: bool = True):
    """Catalogue name → ImagePipeline, from files already in the HF cache (never downloads).

    Raises CheckpointError("… not downloaded: run lantern-studio models download NAME") when
    files are missing. ``dtype``: a precision name or torch dtype; "auto" is bf16 where the
    device runs it natively (engine/precision.py), else fp32. A self-distilled drafter (see
    training.self_distill) is attached when present.
    """
    e = get_entry(name)
    paths = local_files(e.name)
    if e.kind == "janus":  # a transformers folder: the snapshot folder holding its files
        return load_janus_dir(paths[e.gpt].parent, device=device, precision=dtype, name=e.name,
                              source=ModelSource(catalogue=e.name))
    gpt = load_llamagen_gpt(paths[e.gpt], **dict(e.model_args))
    try:
        vq = load_llamagen_vq(paths[e.vq])
    except (ValueError, FileNotFoundError) as err:
        raise CheckpointError(str(err)) from None
    if vq.config.codebook_size != gpt.vocab_size:
        raise CheckpointError(f"{paths[e.vq]}: codebook of {vq.config.codebook_size} codes, "
                              f"but the GPT predicts {gpt.vocab_size} tokens")
    eagle = None
    dp = drafter_path(e.name)
    if drafter and dp.is_file():
        eagle = load_eagle(dp, gpt.config)
    pipe = ImagePipeline(gpt, vq, entry_conditioner(e, device), eagle, e.defaults, e.name,
                         table_cache=cache_dir() / "neighbours", source=ModelSource(catalogue=e.name))
    if device:
        pipe.to(device)
    return pipe.set_precision(dtype)
