"""Models of chapter 13: the synthetic pipelines of the cpu profile and the gpu-profile shapes.

``HeteroMLP`` and ``TinyUNet`` are this book's constructions (the paper's note prescribes their
shape: 24 blocks whose width grows x4 over depth; a two-level UNet with skips and a conditioning
input read at every level). ``GPT2LargeLike`` is a randomly initialised transformer with
GPT-2-large's shape (36 layers, width 1280, 20 heads); ``sdxl_like_unet`` builds a diffusers
``UNet2DConditionModel`` with an SDXL-like configuration (random weights, nothing downloaded).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from icml25.checks import check_int, check_real

__all__ = ["HeteroMLP", "TinyUNet", "GPT2LargeLike", "sdxl_like_unet", "hetero_widths"]


def hetero_widths(n_blocks: int, width: int, growth: float) -> list[int]:
    """Widths ``w_0..w_n`` of :class:`HeteroMLP`: geometric from ``width`` to ``growth x width``.

    Args:
        n_blocks: number of blocks (>= 1). width: first width (>= 1). growth: last / first (>= 1).

    Returns:
        ``n_blocks + 1`` integer widths (rounded to multiples of 8, at least 8).

    Raises:
        ValueError: a non-positive size or ``growth < 1``.
    """
    n = check_int(n_blocks, "n_blocks", low=1)
    w = check_int(width, "width", low=1)
    g = check_real(growth, "growth", low=1.0)
    return [max(8, int(round(w * g ** (i / n) / 8)) * 8) for i in range(n + 1)]


class HeteroMLP(nn.Module):
    """A chain of ``n_blocks`` blocks ``tanh(Linear(w_i -> w_{i+1}))`` with widths growing x``growth``.

    The cost of block i grows like ``w_i w_{i+1}``, so equal-count splits are imbalanced: with
    ``growth = 4`` and 24 blocks the second half holds about 81 % of the flops (this book's
    construction for the paper's heterogeneous models).

    Input ``(B, w_0)`` float32, output ``(B, out_dim)``.
    """

    def __init__(
        self,
        n_blocks: int = 24,
        width: int = 128,
        growth: float = 4.0,
        out_dim: int = 16,
    ) -> None:
        super().__init__()
        self.widths = hetero_widths(n_blocks, width, growth)
        self.blocks = nn.ModuleList(
            nn.Linear(a, b) for a, b in zip(self.widths[:-1], self.widths[1:])
        )
        self.head = nn.Linear(self.widths[-1], check_int(out_dim, "out_dim", low=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, w_0) -> (B, out_dim)``."""
        for blk in self.blocks:
            x = torch.tanh(blk(x))
        return self.head(x)


class _Level(nn.Module):
    """Conv block with the conditioning added per channel: ``silu(conv(x) + proj(cond))``."""

    def __init__(self, c_in: int, c_out: int, cond_dim: int, stride: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.proj = nn.Linear(cond_dim, c_out)

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.silu(self.conv(x) + self.proj(cond)[:, :, None, None])
        return torch.nn.functional.silu(self.conv2(h))


class TinyUNet(nn.Module):
    """A two-level UNet: skips from each down level to its up level, ``cond`` read at every level.

    ``forward(x (B, c_in, H, W), cond (B, cond_dim)) -> (B, c_in, H, W)``; ``H, W`` divisible by 4.
    The skip connections and the conditioning input make its graph a DAG that is not a chain
    (this book's construction after the paper's Stable Diffusion UNet).
    """

    def __init__(self, c_in: int = 3, ch: int = 16, cond_dim: int = 16) -> None:
        super().__init__()
        ch = check_int(ch, "ch", low=1)
        self.inc = _Level(check_int(c_in, "c_in", low=1), ch, cond_dim)
        self.down1 = _Level(ch, 2 * ch, cond_dim, stride=2)
        self.down2 = _Level(2 * ch, 4 * ch, cond_dim, stride=2)
        self.mid = _Level(4 * ch, 4 * ch, cond_dim)
        self.up2 = _Level(8 * ch, 2 * ch, cond_dim)
        self.up1 = _Level(4 * ch, ch, cond_dim)
        self.outc = nn.Conv2d(2 * ch, c_in, 1)

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """``x (B, c_in, H, W)``, ``cond (B, cond_dim)`` -> ``(B, c_in, H, W)``."""
        h0 = self.inc(x, cond)
        h1 = self.down1(h0, cond)
        h2 = self.down2(h1, cond)
        m = self.mid(h2, cond)
        u2 = self.up2(torch.cat([m, h2], 1), cond)
        u2 = torch.nn.functional.interpolate(u2, scale_factor=2.0, mode="nearest")
        u1 = self.up1(torch.cat([u2, h1], 1), cond)
        u1 = torch.nn.functional.interpolate(u1, scale_factor=2.0, mode="nearest")
        return self.outc(torch.cat([u1, h0], 1))


class _Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class GPT2LargeLike(nn.Module):
    """A GPT-2-large-shaped transformer (random weights; no causal mask, an MSE head).

    ``forward(x (B, T, d)) -> (B, T, d)``: the token embedding is left out (inputs are
    embeddings) so the model runs on random tensors. Defaults: 36 layers, d = 1280, 20 heads.
    """

    def __init__(self, n_layers: int = 36, d: int = 1280, heads: int = 20) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            _Block(check_int(d, "d", low=1), check_int(heads, "heads", low=1))
            for _ in range(check_int(n_layers, "n_layers", low=1))
        )
        self.ln_f = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, d) -> (B, T, d)``."""
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x)


def sdxl_like_unet(sample_size: int = 16, cross_attention_dim: int = 2048) -> Any:
    """A diffusers ``UNet2DConditionModel`` with SDXL's block layout (random weights).

    Channels (320, 640, 1280), transformer depths (0, 2, 10) as in SDXL's config, without the
    added time/text embeddings (``addition_embed_type=None``). Needs ``diffusers`` (extra
    ``pfeife``). The gpu profile profiles it; it is never trained here.

    Returns:
        the ``UNet2DConditionModel`` (float32, on the CPU).
    """
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(
        sample_size=check_int(sample_size, "sample_size", low=8),
        in_channels=4,
        out_channels=4,
        down_block_types=(
            "DownBlock2D",
            "CrossAttnDownBlock2D",
            "CrossAttnDownBlock2D",
        ),
        up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
        block_out_channels=(320, 640, 1280),
        layers_per_block=2,
        transformer_layers_per_block=(1, 2, 10),
        cross_attention_dim=check_int(
            cross_attention_dim, "cross_attention_dim", low=1
        ),
        attention_head_dim=(5, 10, 20),
        use_linear_projection=True,
    )
