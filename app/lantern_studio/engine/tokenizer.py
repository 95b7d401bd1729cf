"""VQ image tokenizer, state-dict compatible with LlamaGen's ``VQModel``.

The network follows LlamaGen's ``tokenizer/tokenizer_image/vq_model.py``
(itself derived from taming-transformers / MaskGIT): a convolutional encoder
with group norm, swish, residual blocks and self-attention at the lowest
resolution, a vector quantizer with (optionally) l2-normalised codes, and a
mirrored decoder. Parameter and buffer names and shapes are identical to the
official module, so official checkpoints such as ``vq_ds16_c2i.pt`` load with
``strict=True`` through :func:`load_llamagen_vq`.

Our own tokenizers are stored as safetensors with the :class:`VQArgs` as JSON
in the file's metadata (:func:`save_vq` / :func:`load_vq`).

Qt-free; tensors in, tensors out.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from .checkpoints import CheckpointError, read_torch_state_dict
from .checkpoints import describe_mismatch as _describe_mismatch
from .files import atomic_write

__all__ = [
    "VQArgs",
    "VQ_PRESETS",
    "vq_preset",
    "VQModel",
    "VectorQuantizer",
    "load_llamagen_vq",
    "infer_vq_args",
    "save_vq",
    "load_vq",
    "read_vq_args",
]

# Length of LlamaGen's rolling window of recently used code indices.
_USAGE_WINDOW = 65536
_FORMAT = "lantern-studio-vq"
_FORMAT_VERSION = "1"


# --------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------


@dataclass
class VQArgs:
    """Tokenizer hyper-parameters.

    Field names match LlamaGen's ``ModelArgs``; ``ch`` and ``num_res_blocks``
    are the Encoder/Decoder constructor defaults there (128 and 2), and
    ``norm_groups`` is the group-norm group count (32 there). The spatial
    downsampling factor is ``2 ** (len(encoder_ch_mult) - 1)``.
    """

    codebook_size: int = 16384
    codebook_embed_dim: int = 8
    codebook_l2_norm: bool = True
    codebook_show_usage: bool = True
    commit_loss_beta: float = 0.25
    entropy_loss_ratio: float = 0.0
    encoder_ch_mult: list[int] = field(default_factory=lambda: [1, 1, 2, 2, 4])
    decoder_ch_mult: list[int] = field(default_factory=lambda: [1, 1, 2, 2, 4])
    z_channels: int = 256
    dropout_p: float = 0.0
    ch: int = 128
    num_res_blocks: int = 2
    norm_groups: int = 32

    def __post_init__(self) -> None:
        self.encoder_ch_mult = [int(m) for m in self.encoder_ch_mult]
        self.decoder_ch_mult = [int(m) for m in self.decoder_ch_mult]
        self.validate()

    def validate(self) -> None:
        def need(cond: bool, name: str, allowed: str) -> None:
            if not cond:
                raise ValueError(f"VQArgs.{name}={getattr(self, name)!r}: must be {allowed}")

        need(self.codebook_size >= 1, "codebook_size", ">= 1")
        need(self.codebook_embed_dim >= 1, "codebook_embed_dim", ">= 1")
        need(self.commit_loss_beta >= 0, "commit_loss_beta", ">= 0")
        need(self.entropy_loss_ratio >= 0, "entropy_loss_ratio", ">= 0")
        need(len(self.encoder_ch_mult) >= 1 and all(m >= 1 for m in self.encoder_ch_mult),
             "encoder_ch_mult", "a non-empty list of positive ints")
        need(len(self.decoder_ch_mult) == len(self.encoder_ch_mult)
             and all(m >= 1 for m in self.decoder_ch_mult),
             "decoder_ch_mult", "positive ints, as many as encoder_ch_mult")
        need(self.z_channels >= 1, "z_channels", ">= 1")
        need(0.0 <= self.dropout_p < 1.0, "dropout_p", "in [0, 1)")
        need(self.ch >= 1, "ch", ">= 1")
        need(self.num_res_blocks >= 1, "num_res_blocks", ">= 1")
        need(self.norm_groups >= 1, "norm_groups", ">= 1")
        for m in set(self.encoder_ch_mult) | set(self.decoder_ch_mult):
            need((self.ch * m) % self.norm_groups == 0, "norm_groups",
                 f"a divisor of every level's width (ch*mult = {self.ch * m})")

    @property
    def downsample_factor(self) -> int:
        return 2 ** (len(self.encoder_ch_mult) - 1)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "VQArgs":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"VQArgs: unknown field(s) {unknown}; known: {sorted(known)}")
        return cls(**dict(d))

    def replace(self, **changes: Any) -> "VQArgs":
        return dataclasses.replace(self, **changes)


def _preset(ch_mult: list[int]) -> VQArgs:
    return VQArgs(encoder_ch_mult=list(ch_mult), decoder_ch_mult=list(ch_mult))


#: The official LlamaGen configurations (``VQ_16`` / ``VQ_8`` in vq_model.py).
VQ_PRESETS: dict[str, VQArgs] = {
    "VQ-16": _preset([1, 1, 2, 2, 4]),
    "VQ-8": _preset([1, 2, 2, 4]),
}


def vq_preset(name: str, **overrides: Any) -> VQArgs:
    """A fresh copy of an official preset, with optional field overrides."""
    if name not in VQ_PRESETS:
        raise ValueError(f"unknown VQ preset {name!r}; choose one of {sorted(VQ_PRESETS)}")
    return dataclasses.replace(VQ_PRESETS[name], **overrides)


# --------------------------------------------------------------------------
# building blocks (names and shapes follow LlamaGen's vq_model.py)
# --------------------------------------------------------------------------


def _norm(channels: int, groups: int) -> nn.GroupNorm:
    return nn.GroupNorm(num_groups=groups, num_channels=channels, eps=1e-6, affine=True)


class ResnetBlock(nn.Module):
    """norm → swish → conv3 → norm → swish → dropout → conv3, plus a (1×1) shortcut."""

    def __init__(self, in_channels: int, out_channels: int, dropout: float, groups: int):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.norm1 = _norm(in_channels, groups)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, 1, 1)
        self.norm2 = _norm(out_channels, groups)
        self.dropout = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1)
        if in_channels != out_channels:
            self.nin_shortcut = nn.Conv2d(in_channels, out_channels, 1, 1, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(self.dropout(F.silu(self.norm2(h))))
        if self.in_channels != self.out_channels:
            x = self.nin_shortcut(x)
        return x + h


class AttnBlock(nn.Module):
    """Single-head spatial self-attention with 1×1 q/k/v/out projections, residual."""

    def __init__(self, channels: int, groups: int):
        super().__init__()
        self.norm = _norm(channels, groups)
        self.q = nn.Conv2d(channels, channels, 1)
        self.k = nn.Conv2d(channels, channels, 1)
        self.v = nn.Conv2d(channels, channels, 1)
        self.proj_out = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, hh, ww = x.shape
        n = self.norm(x)

        def tokens(t: torch.Tensor) -> torch.Tensor:  # (b, c, h, w) -> (b, 1, hw, c)
            return t.reshape(b, c, hh * ww).transpose(1, 2).unsqueeze(1)

        out = F.scaled_dot_product_attention(tokens(self.q(n)), tokens(self.k(n)), tokens(self.v(n)))
        out = out.squeeze(1).transpose(1, 2).reshape(b, c, hh, ww)
        return x + self.proj_out(out)


class Downsample(nn.Module):
    """Zero-pad one pixel right and bottom, then a stride-2 3×3 conv."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, 2, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(F.pad(x, (0, 1, 0, 1), mode="constant", value=0.0))


class Upsample(nn.Module):
    """Nearest-neighbour ×2, then a 3×3 conv."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class Encoder(nn.Module):
    def __init__(self, args: VQArgs, in_channels: int = 3):
        super().__init__()
        ch, mult, g = args.ch, args.encoder_ch_mult, args.norm_groups
        self.num_resolutions = len(mult)
        self.num_res_blocks = args.num_res_blocks
        self.conv_in = nn.Conv2d(in_channels, ch, 3, 1, 1)
        self.conv_blocks = nn.ModuleList()
        width = ch
        for level, m in enumerate(mult):
            last = level == self.num_resolutions - 1
            block = nn.Module()
            block.res = nn.ModuleList()
            block.attn = nn.ModuleList()
            for _ in range(args.num_res_blocks):
                block.res.append(ResnetBlock(width, ch * m, args.dropout_p, g))
                width = ch * m
                if last:
                    block.attn.append(AttnBlock(width, g))
            if not last:
                block.downsample = Downsample(width)
            self.conv_blocks.append(block)
        self.mid = nn.ModuleList([
            ResnetBlock(width, width, args.dropout_p, g),
            AttnBlock(width, g),
            ResnetBlock(width, width, args.dropout_p, g),
        ])
        self.norm_out = _norm(width, g)
        self.conv_out = nn.Conv2d(width, args.z_channels, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv_in(x)
        for level, block in enumerate(self.conv_blocks):
            for i, res in enumerate(block.res):
                h = res(h)
                if len(block.attn) > 0:
                    h = block.attn[i](h)
            if level != self.num_resolutions - 1:
                h = block.downsample(h)
        for layer in self.mid:
            h = layer(h)
        return self.conv_out(F.silu(self.norm_out(h)))


class Decoder(nn.Module):
    def __init__(self, args: VQArgs, out_channels: int = 3):
        super().__init__()
        ch, mult, g = args.ch, args.decoder_ch_mult, args.norm_groups
        self.num_resolutions = len(mult)
        width = ch * mult[-1]
        self.conv_in = nn.Conv2d(args.z_channels, width, 3, 1, 1)
        self.mid = nn.ModuleList([
            ResnetBlock(width, width, args.dropout_p, g),
            AttnBlock(width, g),
            ResnetBlock(width, width, args.dropout_p, g),
        ])
        self.conv_blocks = nn.ModuleList()
        for level in reversed(range(self.num_resolutions)):
            block = nn.Module()
            block.res = nn.ModuleList()
            block.attn = nn.ModuleList()
            for _ in range(args.num_res_blocks + 1):
                block.res.append(ResnetBlock(width, ch * mult[level], args.dropout_p, g))
                width = ch * mult[level]
                if level == self.num_resolutions - 1:
                    block.attn.append(AttnBlock(width, g))
            if level != 0:
                block.upsample = Upsample(width)
            self.conv_blocks.append(block)
        self.norm_out = _norm(width, g)
        self.conv_out = nn.Conv2d(width, out_channels, 3, 1, 1)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.conv_in(z)
        for layer in self.mid:
            h = layer(h)
        for i_level, block in enumerate(self.conv_blocks):
            for i, res in enumerate(block.res):
                h = res(h)
                if len(block.attn) > 0:
                    h = block.attn[i](h)
            if i_level != self.num_resolutions - 1:
                h = block.upsample(h)
        return self.conv_out(F.silu(self.norm_out(h)))


def _entropy_loss(affinity: torch.Tensor, temperature: float = 0.01) -> torch.Tensor:
    """Per-sample entropy minus entropy of the mean assignment (LlamaGen/MaskGIT)."""
    logits = affinity.reshape(-1, affinity.shape[-1]) / temperature
    probs = torch.softmax(logits, dim=-1)
    log_probs = torch.log_softmax(logits + 1e-5, dim=-1)
    mean_probs = probs.mean(dim=0)
    mean_entropy = -(mean_probs * torch.log(mean_probs + 1e-5)).sum()
    sample_entropy = -(probs * log_probs).sum(dim=-1).mean()
    return sample_entropy - mean_entropy


class VectorQuantizer(nn.Module):
    """Nearest-code quantizer with codebook / commitment losses and a straight-through estimator."""

    def __init__(self, args: VQArgs):
        super().__init__()
        self.n_e = args.codebook_size
        self.e_dim = args.codebook_embed_dim
        self.beta = args.commit_loss_beta
        self.entropy_loss_ratio = args.entropy_loss_ratio
        self.l2_norm = args.codebook_l2_norm
        self.show_usage = args.codebook_show_usage
        self.embedding = nn.Embedding(self.n_e, self.e_dim)
        with torch.no_grad():
            self.embedding.weight.uniform_(-1.0 / self.n_e, 1.0 / self.n_e)
            if self.l2_norm:
                self.embedding.weight.copy_(F.normalize(self.embedding.weight, p=2, dim=-1))
        if self.show_usage:
            # Rolling window of the most recent code indices (float, as upstream).
            self.register_buffer("codebook_used", torch.zeros(_USAGE_WINDOW))

    def codebook(self) -> torch.Tensor:
        w = self.embedding.weight
        return F.normalize(w, p=2, dim=-1) if self.l2_norm else w

    def _prepare(self, z: torch.Tensor) -> torch.Tensor:
        """(B, D, h, w) → (B, h, w, D) fp32, normalised when l2_norm."""
        z = z.float().permute(0, 2, 3, 1).contiguous()
        return F.normalize(z, p=2, dim=-1) if self.l2_norm else z

    def _distances(self, flat: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        return (flat.pow(2).sum(1, keepdim=True) + emb.pow(2).sum(1)) - 2.0 * flat @ emb.t()

    def nearest(self, z: torch.Tensor) -> torch.Tensor:
        """Code indices (B, h, w) for pre-quantisation latents z (B, D, h, w)."""
        with torch.autocast(device_type=z.device.type, enabled=False):
            zz = self._prepare(z)
            d = self._distances(zz.reshape(-1, self.e_dim), self.codebook().float())
            return d.argmin(dim=1).view(zz.shape[:-1])

    def get_codebook_entry(self, indices: torch.Tensor) -> torch.Tensor:
        """Code vectors (B, D, h, w) for indices (B, h, w)."""
        return self.codebook()[indices].permute(0, 3, 1, 2).contiguous()

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, dict[str, Any], torch.Tensor]:
        with torch.autocast(device_type=z.device.type, enabled=False):
            zz = self._prepare(z)
            flat = zz.reshape(-1, self.e_dim)
            emb = self.codebook().float()
            d = self._distances(flat, emb)
            idx = d.argmin(dim=1)
            zq = emb[idx].view(zz.shape)

            info: dict[str, Any] = {}
            if self.show_usage and self.training:
                with torch.no_grad():
                    n = min(idx.shape[0], _USAGE_WINDOW)
                    used = self.codebook_used
                    used.copy_(torch.cat([used[n:], idx[-n:].to(used.dtype)]))
                    info["usage"] = float(torch.unique(used).numel()) / self.n_e
            if self.training:
                info["codebook"] = torch.mean((zq - zz.detach()) ** 2)
                info["commit"] = self.beta * torch.mean((zq.detach() - zz) ** 2)
                if self.entropy_loss_ratio > 0:
                    info["entropy"] = self.entropy_loss_ratio * _entropy_loss(-d)
                else:
                    info["entropy"] = zq.new_zeros(())
            info["latents"] = flat.detach()
            zq = zz + (zq - zz).detach()  # straight-through
            zq = zq.permute(0, 3, 1, 2).contiguous()
        return zq, info, idx.view(zz.shape[:-1])


# --------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------


class VQModel(nn.Module):
    """LlamaGen-compatible VQ tokenizer.

    ``encode(images)`` → (B, h, w) int64 codes; ``decode_codes(codes)`` →
    images in [-1, 1]; ``codebook()`` → (V, D) code vectors; ``forward`` for
    training returns the reconstruction and a dict of losses.
    """

    def __init__(self, args: VQArgs | None = None):
        super().__init__()
        args = VQArgs() if args is None else args
        args.validate()
        self.args = args
        self.encoder = Encoder(args)
        self.decoder = Decoder(args)
        self.quantize = VectorQuantizer(args)
        self.quant_conv = nn.Conv2d(args.z_channels, args.codebook_embed_dim, 1)
        self.post_quant_conv = nn.Conv2d(args.codebook_embed_dim, args.z_channels, 1)

    @property
    def config(self) -> VQArgs:  # LlamaGen's attribute name
        return self.args

    @property
    def downsample_factor(self) -> int:
        return self.args.downsample_factor

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # -- pieces ------------------------------------------------------------
    def encode_latents(self, images: torch.Tensor) -> torch.Tensor:
        """Pre-quantisation latents (B, D, h, w) (not yet l2-normalised)."""
        return self.quant_conv(self.encoder(images))

    def decode(self, quant: torch.Tensor) -> torch.Tensor:
        """Decode code vectors (B, D, h, w) → images (unclamped), as upstream."""
        return self.decoder(self.post_quant_conv(quant))

    def codebook(self) -> torch.Tensor:
        """(V, D) code vectors as used for lookup (l2-normalised when codebook_l2_norm)."""
        return self.quantize.codebook().detach()

    # -- inference ---------------------------------------------------------
    def _check_images(self, images: torch.Tensor) -> None:
        if not isinstance(images, torch.Tensor) or images.ndim != 4 or images.shape[1] != 3:
            shape = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__
            raise ValueError(f"images: expected a (B, 3, H, W) tensor in [-1, 1], got {shape}")
        f = self.downsample_factor
        if images.shape[2] % f or images.shape[3] % f:
            raise ValueError(f"images: height and width must be multiples of {f}, got "
                             f"{images.shape[2]}x{images.shape[3]}")

    @torch.no_grad()
    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Images (B, 3, H, W) in [-1, 1] → codes (B, H/f, W/f) int64."""
        self._check_images(images)
        param = next(self.parameters())
        z = self.encode_latents(images.to(device=param.device, dtype=param.dtype))
        return self.quantize.nearest(z).long()

    @torch.no_grad()
    def decode_codes(self, codes: torch.Tensor) -> torch.Tensor:
        """Codes (B, h, w) → images (B, 3, h*f, w*f) clamped to [-1, 1]."""
        if not isinstance(codes, torch.Tensor) or codes.ndim != 3:
            shape = tuple(codes.shape) if isinstance(codes, torch.Tensor) else type(codes).__name__
            raise ValueError(f"codes: expected a (B, h, w) integer tensor, got {shape}")
        if codes.dtype.is_floating_point or codes.dtype == torch.bool:
            raise ValueError(f"codes: expected an integer tensor, got {codes.dtype}")
        if codes.numel() and (int(codes.min()) < 0 or int(codes.max()) >= self.args.codebook_size):
            raise ValueError(f"codes: values must be in [0, {self.args.codebook_size - 1}], got "
                             f"[{int(codes.min())}, {int(codes.max())}]")
        param = next(self.parameters())
        quant = self.quantize.get_codebook_entry(codes.to(param.device).long()).to(param.dtype)
        return self.decode(quant).clamp(-1.0, 1.0)

    # -- training ----------------------------------------------------------
    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, dict[str, Any]]:
        """Reconstruct images; returns (recon, losses).

        In training mode ``losses`` holds scalar tensors ``codebook``,
        ``commit`` (already scaled by beta) and ``entropy`` (scaled by
        entropy_loss_ratio; zero when it is 0), and, when show_usage,
        ``usage`` (float fraction over the rolling window). In any mode it
        also holds ``indices`` (B, h, w) and ``latents`` ((B*h*w, D) detached,
        normalised pre-quantisation vectors) for codebook maintenance.
        """
        z = self.encode_latents(images)
        quant, info, idx = self.quantize(z)
        recon = self.decode(quant.to(z.dtype))
        info["indices"] = idx
        return recon, info


# --------------------------------------------------------------------------
# official checkpoints
# --------------------------------------------------------------------------


def _strip_prefix(sd: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    if sd and all(k.startswith(prefix) for k in sd):
        return {k[len(prefix):]: v for k, v in sd.items()}
    return sd


def infer_vq_args(sd: Mapping[str, torch.Tensor]) -> VQArgs:
    """Architecture hyper-parameters read off a LlamaGen-layout state dict."""
    try:
        emb = sd["quantize.embedding.weight"]
        ch = sd["encoder.conv_in.weight"].shape[0]
        z_channels = sd["quant_conv.weight"].shape[1]
        levels = 1 + max(int(k.split(".")[2]) for k in sd if k.startswith("encoder.conv_blocks."))
        nres = 1 + max(int(k.split(".")[4]) for k in sd if k.startswith("encoder.conv_blocks.0.res."))
        enc_mult = [sd[f"encoder.conv_blocks.{i}.res.0.conv1.weight"].shape[0] // ch for i in range(levels)]
        # decoder blocks run from the deepest level up
        dec_mult = [sd[f"decoder.conv_blocks.{levels - 1 - i}.res.0.conv1.weight"].shape[0] // ch
                    for i in range(levels)]
    except (KeyError, ValueError, IndexError) as e:
        raise ValueError(f"not a LlamaGen VQModel state dict (could not read {e})") from None
    return VQArgs(
        codebook_size=int(emb.shape[0]),
        codebook_embed_dim=int(emb.shape[1]),
        codebook_show_usage="quantize.codebook_used" in sd,
        encoder_ch_mult=enc_mult,
        decoder_ch_mult=dec_mult,
        z_channels=int(z_channels),
        ch=int(ch),
        num_res_blocks=int(nres),
        norm_groups=32 if ch % 32 == 0 else _largest_divisor_le(int(ch), 32),
    )


def _largest_divisor_le(n: int, cap: int) -> int:
    return max(d for d in range(1, cap + 1) if n % d == 0)


def load_llamagen_vq(path: str | os.PathLike, *, map_location: str | torch.device = "cpu",
                     **vq_args: Any) -> VQModel:
    """Load an official LlamaGen VQ checkpoint (``.pt``) with ``strict=True``.

    Accepts ``{"model": sd}``, ``{"state_dict": sd}`` or a bare state dict,
    read by :func:`engine.checkpoints.read_torch_state_dict` (``weights_only=True``,
    on the CPU; ``map_location`` is kept for callers). The architecture is inferred
    from the tensor shapes; keyword arguments (VQArgs fields) override it and
    then must agree with the file. Raises ``ValueError`` (a ``CheckpointError``
    when the file itself is unreadable) naming the file if it is unreadable or
    its keys/shapes don't fit.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such VQ checkpoint")
    # The one reader of foreign .pt files (weights_only=True, one line, never torch's advice to retry
    # with weights_only=False): a VQ from the Hub is refused the way a GPT checkpoint is.
    sd = read_torch_state_dict(path)
    if not sd:
        raise CheckpointError(f"{path}: expected a state dict (or {{'model': state_dict}}) of tensors, got none")
    sd = _strip_prefix(dict(sd), "module.")
    try:
        args = infer_vq_args(sd)
    except ValueError as e:
        raise ValueError(f"{path}: {e}; keys start with {sorted(sd)[:5]}") from None
    if vq_args:
        try:
            args = VQArgs.from_dict({**args.to_dict(), **vq_args})
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: bad VQ arguments: {e}") from None
    with torch.device("meta"):
        probe = VQModel(args)
    problem = _describe_mismatch(probe, sd)
    if problem:
        raise ValueError(f"{path}: checkpoint does not match the VQ architecture: {problem}")
    model = VQModel(args)
    model.load_state_dict(sd, strict=True)
    return model.eval()


# --------------------------------------------------------------------------
# our format: safetensors + VQArgs JSON in the metadata
# --------------------------------------------------------------------------


def save_vq(model: VQModel, args: VQArgs | None, path: str | os.PathLike,
            *, dtype: torch.dtype = torch.float16, metadata: Mapping[str, str] | None = None) -> Path:
    """Write weights as safetensors (fp16 by default) with the VQArgs in the metadata, atomically."""
    if dtype not in (torch.float16, torch.float32, torch.bfloat16):
        raise ValueError(f"dtype: must be float16, bfloat16 or float32, got {dtype}")
    args = model.args if args is None else args
    path = Path(path)
    tensors = {}
    for k, v in model.state_dict().items():
        v = v.detach().to("cpu")
        if v.is_floating_point():
            v = v.to(dtype)
        tensors[k] = v.contiguous()
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    meta.update({"format": _FORMAT, "format_version": _FORMAT_VERSION, "vq_args": args.to_json()})
    return atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=meta))


def read_vq_args(path: str | os.PathLike) -> tuple[VQArgs, dict[str, str]]:
    """The VQArgs and the raw metadata stored in one of our safetensors files."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such tokenizer file")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = dict(f.metadata() or {})
    except Exception as e:
        raise ValueError(f"{path}: not a readable safetensors file ({type(e).__name__}: {e})") from None
    if "vq_args" not in meta:
        raise ValueError(f"{path}: safetensors metadata has no 'vq_args' (not a Lantern Studio tokenizer)")
    try:
        args = VQArgs.from_dict(json.loads(meta["vq_args"]))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: bad 'vq_args' metadata: {e}") from None
    return args, meta


def load_vq(path: str | os.PathLike, *, device: str | torch.device = "cpu",
            dtype: torch.dtype = torch.float32) -> VQModel:
    """Load a tokenizer written by :func:`save_vq` (eval mode)."""
    path = Path(path)
    args, _ = read_vq_args(path)
    try:
        sd = load_file(str(path), device="cpu")
    except Exception as e:
        raise ValueError(f"{path}: not a readable safetensors file ({type(e).__name__}: {e})") from None
    model = VQModel(args)
    problem = _describe_mismatch(model, sd)
    if problem:
        raise ValueError(f"{path}: weights do not match its vq_args: {problem}")
    model.load_state_dict(sd, strict=True)
    return model.to(device=device, dtype=dtype).eval()
