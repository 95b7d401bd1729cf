"""A whole text/class → image generator: conditioning, decoding, pixels.

:class:`ImagePipeline` bundles a target GPT, a VQ tokenizer, a conditioner and
(optionally) learned drafters (an EAGLE head, parallel draft heads), and hands
out :class:`Decoding` runs. What a loaded model is beyond its networks — where it came from
(:class:`ModelSource`) and how to score its pictures (a scorer) — is declared
here too and filled in by the loader (``models/``). It holds no global state
and never imports Qt.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np
import torch

from .neighbours import ProximityTable
from .decode import Decoding, DecodeStats, StepEvent
from .drafters import Drafter, EagleDrafter, EagleHead, JacobiDrafter
from .draft_heads import DraftHeads, HeadsDrafter
from . import precision as _precision
from .compiled import StepGraphs
from .compiled_decoding import compiled_rows, compiled_widths
from .model import Transformer
from .runner import target_for
from .settings import GenerationSettings, SettingsError
from .conditioners import Conditioner

PLACEHOLDER_RGB = (128, 128, 128)


def to_uint8(images: torch.Tensor) -> np.ndarray:
    """(B, 3, H, W) in [-1, 1] → (B, H, W, 3) uint8."""
    x = ((images.detach().float().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    return x.permute(0, 2, 3, 1).cpu().numpy()


# (image (H, W, 3) uint8, prompt) → how well the image shows the prompt in [0, 1], or None when it cannot judge
Scorer = Callable[[np.ndarray, str], Optional[float]]


@dataclass(frozen=True)
class ModelSource:
    """Where a loaded model came from: a model folder (and its model.json as read),
    a catalogue entry (by name), or neither (a pipeline built in code)."""

    folder: Optional[Path] = None
    manifest: Optional[dict] = field(default=None, compare=False)
    catalogue: Optional[str] = None


@dataclass
class GenerationResult:
    image: np.ndarray  # (H, W, 3) uint8
    tokens: np.ndarray  # (h, w) int64
    decisions: np.ndarray  # (h, w) uint8
    stats: DecodeStats
    prompt: str
    note: str

    @property
    def cancelled(self) -> bool:
        return self.stats.cancelled


class ImagePipeline:
    def __init__(
        self,
        gpt: Transformer,
        vq,
        conditioner: Conditioner,
        eagle: Optional[EagleHead] = None,
        defaults: Optional[GenerationSettings] = None,
        name: str = "model",
        table_cache: Optional[Path] = None,
        source: Optional[ModelSource] = None,
        scorer: Optional[Scorer] = None,
        heads: Optional[DraftHeads] = None,
    ):
        self.gpt = gpt.eval()
        # the decode loop's target (engine/target.py): the fast path over our own GPT (engine/runner.py),
        # or the target a transformers-backed model brings (models/janus.py)
        self.runner = target_for(self.gpt)
        self.vq = vq.eval()
        self.conditioner = conditioner
        self.eagle = eagle.eval() if eagle is not None else None
        self.heads = heads.eval() if heads is not None else None  # parallel draft heads (engine/draft_heads.py)
        self.defaults = defaults or GenerationSettings()
        self.name = name
        self._table_cache = table_cache
        self._table: Optional[ProximityTable] = None
        self.source = source or ModelSource()
        self.scorer = scorer  # None: this model cannot score its pictures

    # ---------------------------------------------------------------- facts
    @property
    def vocab_size(self) -> int:
        return self.gpt.vocab_size

    @property
    def grid(self) -> int:
        return self.gpt.config.grid_size

    @property
    def drafters(self) -> tuple:
        learned = (("eagle",) if self.eagle is not None else ()) + (("heads",) if self.heads is not None else ())
        return ("none", "jacobi") + learned

    @property
    def table(self) -> ProximityTable:
        if self._table is None:
            self._table = ProximityTable(self.vq.codebook(), cache_dir=self._table_cache)
        return self._table

    def to(self, device) -> "ImagePipeline":
        self.gpt.to(device)
        self.vq.to(device)
        if self.eagle is not None:
            self.eagle.to(device)
        if self.heads is not None:
            self.heads.to(device)
        self._new_runner()  # its fused weights are copies: made again where the weights now are
        return self

    def set_precision(self, precision: "str | torch.dtype | None" = "auto") -> "ImagePipeline":
        """Weights and KV caches of the target and the drafter in ``precision``
        ('auto' → bf16 where the device runs it natively, else fp32); the VQ
        decoder, probabilities and acceptance stay fp32."""
        dtype = precision if isinstance(precision, torch.dtype) else _precision.resolve(precision, self.device)
        _precision.cast_transformer(self.gpt, dtype)
        if self.eagle is not None:
            _precision.cast_transformer(self.eagle, dtype)
        if self.heads is not None:
            _precision.cast_transformer(self.heads, dtype)
        self._new_runner()  # fused copies of the cast weights
        return self

    def _new_runner(self) -> None:
        """A runner over the target's weights as they are now, keeping the compiled steps (bound to the
        weights they were made for: new weights compile again on first use)."""
        graphs = self.runner.graphs
        self.runner = target_for(self.gpt)
        self.runner.graphs = graphs

    def with_precision(self, precision: "str | torch.dtype") -> "ImagePipeline":
        """A pipeline sharing this one's tokenizer, conditioner and neighbour table,
        with its own copies of the target and drafter in ``precision`` (this one is
        left as it is). Cast from this pipeline's weights, so derive variants from
        the most precise one."""
        dtype = precision if isinstance(precision, torch.dtype) else _precision.resolve(precision, self.device)
        if dtype == self.dtype:
            return self
        other = copy.copy(self)
        other.gpt = _precision.cast_transformer(copy.deepcopy(self.gpt), dtype)
        other.runner = target_for(other.gpt)
        if self.eagle is not None:
            other.eagle = _precision.cast_transformer(copy.deepcopy(self.eagle), dtype)
        if self.heads is not None:
            other.heads = _precision.cast_transformer(copy.deepcopy(self.heads), dtype)
        return other

    def with_compiled_steps(self, widths: Optional[Sequence[int]] = None,
                            progress: Optional[Callable[[str], None]] = None, warm: bool = True) -> "ImagePipeline":
        """A pipeline sharing this one's weights, tokenizer, conditioner and neighbour table whose runner
        (a twin of this one's: caches of its own, no copy of the weights) decodes through compiled steps
        for ``widths`` (default: ``compiled_decoding.compiled_widths``), compiled now for the defaults' row
        count when ``warm``, else on first use (or by ``Runner.warm``, e.g. in another thread). Where
        compiling fails every step runs eagerly and the graphs' ``note`` says why (``progress`` hears it
        too). This one keeps decoding eagerly. Make it once the precision and device are set (the two
        runners' fused weights are one copy, made for the weights as they were)."""
        other = copy.copy(self)
        other.runner = self.runner.twin()
        other.runner.compile(widths or compiled_widths(self.defaults), progress)
        if warm:
            other.runner.warm(compiled_rows(self.defaults))
        return other

    @property
    def compiled(self) -> Optional[StepGraphs]:
        """The compiled steps decoding uses, or None (eager)."""
        return self.runner.graphs

    @property
    def dtype(self) -> torch.dtype:
        return next(self.gpt.parameters()).dtype

    @property
    def precision(self) -> str:
        """'fp32', 'bf16' or 'fp16': what the decode path runs in."""
        return _precision.name(self.dtype)

    @property
    def device(self):
        return next(self.gpt.parameters()).device

    def warm_up(self, progress: Optional[Callable[[str], None]] = None, decode_steps: int = 2) -> None:
        """Load what the first generation would otherwise load silently — the text
        encoder (through one conditioning call), the neighbour table — and run
        ``decode_steps`` rounds of a decode at the model's defaults so the first
        real image does not pay for first-call allocations. ``progress`` hears
        what is being done, in words."""
        say = progress or (lambda _msg: None)
        say("loading text encoder…")
        try:
            self.conditioner("warm up")
        except Exception:  # a class-conditional model may not know the words
            pass
        say("preparing neighbour table…")
        _ = self.table
        if decode_steps <= 0:
            return
        say("warming up the decoder…")
        prompt = self.conditioner.warm_prompt
        try:
            run, _c = self.decoding(prompt, self.defaults)
        except ValueError:  # the conditioner refused the warm-up prompt (e.g. a class model): nothing to warm
            return
        for i, _ev in enumerate(run):
            if i + 1 >= decode_steps:
                break
        self.decode_image(torch.zeros(self.grid * self.grid, dtype=torch.long))

    # ---------------------------------------------------------------- decoding
    def make_drafter(self, settings: GenerationSettings) -> Optional[Drafter]:
        if settings.drafter == "none":
            return None
        if settings.drafter == "jacobi":
            return JacobiDrafter(coupled=settings.coupling)
        if settings.drafter == "heads":
            if self.heads is None:
                raise SettingsError("drafter", f"model {self.name!r} has no draft heads; use 'jacobi' or 'none'")
            return HeadsDrafter(self.heads)
        if self.eagle is None:
            raise SettingsError("drafter", f"model {self.name!r} has no learned drafter; use 'jacobi' or 'none'")
        return EagleDrafter(self.eagle)

    def decoding(self, prompt: str, settings: GenerationSettings, should_stop: Optional[Callable[[], bool]] = None):
        """→ (Decoding, Conditioning). Raises PromptError / SettingsError on bad input."""
        settings = settings.validate(self.vocab_size)
        c = self.conditioner(prompt, settings)
        dev = self.device
        cond = c.cond.to(dev)
        if cond.is_floating_point():
            cond = cond.to(next(self.gpt.parameters()).dtype)
        mask = c.mask.to(dev) if c.mask is not None else None
        table = self.table if settings.relaxation.active else None
        run = Decoding(self.runner, cond, settings, mask, self.make_drafter(settings), table, should_stop)
        return run, c

    @torch.no_grad()
    def decode_image(self, tokens) -> np.ndarray:
        """(N,) or (h, w) token ids → (H, W, 3) uint8."""
        t = torch.as_tensor(np.asarray(tokens), dtype=torch.long, device=self.device).reshape(1, self.grid, self.grid)
        return to_uint8(self.vq.decode_codes(t))[0]

    @torch.no_grad()
    def partial_image(self, tokens, filled: np.ndarray) -> np.ndarray:
        """Decode a partly fixed grid: unfixed tokens shown as a neutral placeholder."""
        img = self.decode_image(tokens)
        f = np.asarray(filled, dtype=bool).reshape(self.grid, self.grid)
        if f.all():
            return img
        scale = img.shape[0] // self.grid
        pix = np.kron(f, np.ones((scale, scale), dtype=bool))
        img = img.copy()
        img[~pix] = PLACEHOLDER_RGB
        return img

    def generate(
        self,
        prompt: str,
        settings: Optional[GenerationSettings] = None,
        on_event: Optional[Callable[[StepEvent], None]] = None,
        should_stop: Optional[Callable[[], bool]] = None,
    ) -> GenerationResult:
        settings = settings or self.defaults
        run, c = self.decoding(prompt, settings, should_stop)
        for ev in run:
            if on_event is not None:
                on_event(ev)
        t = time.perf_counter()
        tokens = run.tokens.cpu().numpy().reshape(self.grid, self.grid)
        image = self.decode_image(tokens) if not run.cancelled else self.partial_image(tokens, np.arange(tokens.size) < run.stats.tokens)
        run.stats.decode_image_seconds = time.perf_counter() - t
        return GenerationResult(image, tokens, run.decisions.reshape(self.grid, self.grid), run.stats, prompt, c.note)
