"""LlamaGen's 2D rotary positions: the table and the rotation it applies to queries and keys."""

from __future__ import annotations

import torch


def rope_table(grid_size: int, head_dim: int, base: float, prefix_len: int) -> torch.Tensor:
    """2D rotary table of shape (prefix_len + grid_size**2, head_dim // 2, 2) holding (cos, sin).

    The first half of each head's rotary pairs encodes the row, the second half
    the column; prefix positions get cos = sin = 0 (the official convention).
    """
    half = head_dim // 2
    inv = 1.0 / (base ** (torch.arange(0, half, 2)[: half // 2].float() / half))
    ang = torch.outer(torch.arange(grid_size).float(), inv)  # (g, half/2)
    rows = ang[:, None, :].expand(-1, grid_size, -1)
    cols = ang[None, :, :].expand(grid_size, -1, -1)
    grid = torch.cat([rows, cols], dim=-1).reshape(grid_size * grid_size, -1)  # (g*g, half)
    table = torch.stack([grid.cos(), grid.sin()], dim=-1)
    return torch.cat([torch.zeros(prefix_len, head_dim // 2, 2), table])


def rope_complex(rope: torch.Tensor) -> torch.Tensor:
    """A rotary table slice (S, D/2, 2) as the complex factors (1, S, 1, D/2) ``apply_rope``
    multiplies by: made once per forward instead of once per layer."""
    return torch.view_as_complex(rope)[None, :, None, :]


def apply_rope(x: torch.Tensor, rope: torch.Tensor) -> torch.Tensor:
    """x: (B, S, H, D); rope: ``rope_complex`` of a table slice, or the slice (S, D/2, 2) (cos, sin)
    itself -> x with each interleaved pair (x[2i], x[2i+1]) rotated. A complex table is one complex
    multiplication (eager's fastest); a real one the same rotation in real arithmetic, which
    ``torch.compile`` generates code for (it has none for complex numbers)."""
    xf = x if x.dtype == torch.float32 else x.float()
    if rope.is_complex():
        out = torch.view_as_real(torch.view_as_complex(xf.unflatten(-1, (-1, 2))) * rope).flatten(-2)
    else:
        pairs = xf.unflatten(-1, (-1, 2))
        x0, x1 = pairs[..., 0], pairs[..., 1]
        cos, sin = rope[None, :, None, :, 0], rope[None, :, None, :, 1]
        out = torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).flatten(-2)
    return out if out.dtype == x.dtype else out.type_as(x)
