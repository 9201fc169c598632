"""Networks that take a label hint: a U-Net (segmentation), an MLP (regression) and an EGNN (n-body).

The hint enters as extra input features (the paper's Sec. 4: extra channels for images,
concatenated node features for graphs) and the noise step ``t`` through a sinusoidal embedding
(an inferred architecture detail). With ``hint=False`` each network is the supervised-learning
baseline on the same trunk: the hint channels and the time embedding are absent and
``forward(x)`` ignores ``y_t`` and ``t``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from icml25.checks import check_bool, check_budget, check_int

__all__ = ["TimeEmbedding", "HintedUNet", "HintedMLP", "HintedEGNN", "n_parameters"]


def n_parameters(model: nn.Module) -> int:
    """Number of trainable parameters of ``model``."""
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


class TimeEmbedding(nn.Module):
    """Sinusoidal embedding of the noise step followed by a two-layer MLP (DDPM style).

    ``e(t)_{2i} = sin(t / 10000^{2i/d})``, ``e(t)_{2i+1} = cos(...)``, then Linear-SiLU-Linear.
    """

    def __init__(self, dim: int) -> None:
        """Args: dim: even embedding width >= 2. Raises: ValueError: odd or small ``dim``."""
        super().__init__()
        dim = check_int(dim, "dim", low=2)
        if dim % 2:
            raise ValueError(f"dim must be even, got {dim}")
        self.dim = dim
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        """``(B,)`` steps (int or float) -> ``(B, dim)`` float embedding."""
        half = self.dim // 2
        freqs = torch.exp(
            -math.log(10000.0)
            * torch.arange(half, device=t.device, dtype=torch.float32)
            / half
        )
        ang = t.float()[:, None] * freqs[None, :]
        return self.mlp(torch.cat([torch.sin(ang), torch.cos(ang)], dim=1))


class _Block(nn.Module):
    """Two 3x3 conv layers with GroupNorm and SiLU; the time embedding adds a per-channel bias."""

    def __init__(self, c_in: int, c_out: int, t_dim: int | None) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.n1 = nn.GroupNorm(4, c_out)
        self.c2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.n2 = nn.GroupNorm(4, c_out)
        self.act = nn.SiLU()
        self.t_proj = nn.Linear(t_dim, c_out) if t_dim else None

    def forward(self, h: torch.Tensor, temb: torch.Tensor | None) -> torch.Tensor:
        h = self.act(self.n1(self.c1(h)))
        if self.t_proj is not None and temb is not None:
            h = h + self.t_proj(temb)[:, :, None, None]
        return self.act(self.n2(self.c2(h)))


class HintedUNet(nn.Module):
    """A two-level U-Net predicting per-pixel class logits from an image and a one-hot label hint.

    Input channels: ``in_ch`` image channels, plus ``n_classes`` hint channels when ``hint``.
    Widths ``base, 2 base, 4 base`` (encoder, bottleneck); skip connections; 1x1 output conv.
    ``base = 16`` has about 0.1 M parameters.
    """

    def __init__(
        self, in_ch: int, n_classes: int, base: int = 16, hint: bool = True
    ) -> None:
        """Args: in_ch >= 1, n_classes >= 2, base >= 4 (a multiple of 4), hint: bool.

        Raises: ValueError / TypeError naming the argument.
        """
        super().__init__()
        in_ch, n_classes = (
            check_int(in_ch, "in_ch", low=1),
            check_int(n_classes, "n_classes", low=2),
        )
        base = check_int(base, "base", low=4)
        if base % 4:
            raise ValueError(
                f"base must be a multiple of 4 (GroupNorm groups), got {base}"
            )
        # about 280 base^2 weights (plus Adam's two moments):
        # refuse a width that cannot fit
        check_budget(f"HintedUNet(base={base})", n_bytes=3 * 4.0 * 280 * base * base)
        self.hint, self.n_classes, self.label_type = (
            check_bool(hint, "hint"),
            n_classes,
            "categorical",
        )
        self.in_ch = in_ch
        t_dim = 2 * base if self.hint else None
        self.temb = TimeEmbedding(t_dim) if self.hint else None
        c0 = in_ch + (n_classes if self.hint else 0)
        self.e1 = _Block(c0, base, t_dim)
        self.e2 = _Block(base, 2 * base, t_dim)
        self.mid = _Block(2 * base, 2 * base, t_dim)
        self.d2 = _Block(4 * base, 2 * base, t_dim)
        self.d1 = _Block(3 * base, base, t_dim)
        self.out = nn.Conv2d(base, n_classes, 1)

    def hint_shape(self, x: torch.Tensor) -> tuple[int, ...]:
        """Shape of the hint for input ``x``: ``(B, K, H, W)``."""
        return (int(x.shape[0]), self.n_classes, int(x.shape[2]), int(x.shape[3]))

    def forward(
        self,
        x: torch.Tensor,
        y_t: torch.Tensor | None = None,
        t: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``x (B, in_ch, H, W)``, ``y_t (B, K, H, W)`` one-hot hint, ``t (B,)`` -> logits ``(B, K, H, W)``.

        H and W must be divisible by 4. Without a hint (``hint=False``) ``y_t`` and ``t`` are ignored.
        """
        temb = None
        if self.hint:
            if y_t is None or t is None:
                raise ValueError("a hinted network needs y_t and t")
            x = torch.cat([x, y_t], dim=1)
            temb = self.temb(t)
        h1 = self.e1(x, temb)
        h2 = self.e2(nn.functional.max_pool2d(h1, 2), temb)
        m = self.mid(nn.functional.max_pool2d(h2, 2), temb)
        u2 = self.d2(
            torch.cat([nn.functional.interpolate(m, scale_factor=2.0), h2], dim=1), temb
        )
        u1 = self.d1(
            torch.cat([nn.functional.interpolate(u2, scale_factor=2.0), h1], dim=1),
            temb,
        )
        return self.out(u1)


class HintedMLP(nn.Module):
    """An MLP ``f(x, y_t, t) -> y_hat`` for continuous labels (inpainting, regression).

    Input ``[x, y_t]`` (``x_dim + y_dim`` features) to ``n_layers`` hidden SiLU layers of width
    ``hidden``; the time embedding is added to the first hidden layer. ``hint=False`` drops ``y_t``
    and ``t`` (the SL baseline on the same trunk).
    """

    def __init__(
        self,
        x_dim: int,
        y_dim: int,
        hidden: int = 256,
        hint: bool = True,
        n_layers: int = 3,
    ) -> None:
        """Args: x_dim, y_dim, hidden >= 1; n_layers >= 1; hint: bool. Raises: ValueError/TypeError."""
        super().__init__()
        x_dim, y_dim = (
            check_int(x_dim, "x_dim", low=1),
            check_int(y_dim, "y_dim", low=1),
        )
        hidden, n_layers = (
            check_int(hidden, "hidden", low=1),
            check_int(n_layers, "n_layers", low=1),
        )
        self.hint, self.y_dim, self.label_type = (
            check_bool(hint, "hint"),
            y_dim,
            "gaussian",
        )
        self.x_dim = x_dim
        self.inp = nn.Linear(x_dim + (y_dim if self.hint else 0), hidden)
        self.temb = TimeEmbedding(2 * ((hidden + 1) // 2)) if self.hint else None
        self.t_proj = nn.Linear(2 * ((hidden + 1) // 2), hidden) if self.hint else None
        self.layers = nn.ModuleList(
            [nn.Linear(hidden, hidden) for _ in range(n_layers - 1)]
        )
        self.out = nn.Linear(hidden, y_dim)
        self.act = nn.SiLU()

    def hint_shape(self, x: torch.Tensor) -> tuple[int, ...]:
        """Shape of the hint for input ``x``: ``(B, y_dim)``."""
        return (int(x.shape[0]), self.y_dim)

    def forward(
        self,
        x: torch.Tensor,
        y_t: torch.Tensor | None = None,
        t: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``x (B, x_dim)``, ``y_t (B, y_dim)``, ``t (B,)`` -> ``(B, y_dim)``."""
        if self.hint:
            if y_t is None or t is None:
                raise ValueError("a hinted network needs y_t and t")
            h = self.inp(torch.cat([x, y_t], dim=1)) + self.t_proj(self.temb(t))
        else:
            h = self.inp(x)
        h = self.act(h)
        for layer in self.layers:
            h = self.act(layer(h))
        return self.out(h)


class HintedEGNN(nn.Module):
    """An E(n)-equivariant GNN (Satorras et al. 2021 style) predicting particle displacements.

    Nodes carry invariant features ``h`` (speed, charge-free; plus ``|hint|`` and the time
    embedding when hinted) and coordinates ``x``. Each of ``n_layers`` layers computes messages
    ``m_ij = phi_e(h_i, h_j, |x_i - x_j|^2, a_ij)`` over all pairs (``a_ij``: the spring
    adjacency), updates ``x_i += mean_j (x_i - x_j) phi_x(m_ij) + v_i phi_v(h_i) [+ y_t,i phi_y(h_i)]``
    and ``h_i = phi_h(h_i, sum_j m_ij)``. The output ``x^L - x^0`` is the predicted displacement,
    equivariant to rotations and translations. The hint (a noisy displacement) is a vector
    channel, so equivariance holds with it (a reconstruction of the paper's "concatenated node
    features").
    """

    def __init__(self, hidden: int = 64, n_layers: int = 4, hint: bool = True) -> None:
        """Args: hidden >= 2 (even), n_layers >= 1, hint: bool. Raises: ValueError/TypeError."""
        super().__init__()
        hidden, n_layers = (
            check_int(hidden, "hidden", low=2),
            check_int(n_layers, "n_layers", low=1),
        )
        if hidden % 2:
            raise ValueError(f"hidden must be even, got {hidden}")
        self.hint, self.label_type, self.n_layers = (
            check_bool(hint, "hint"),
            "gaussian",
            n_layers,
        )
        self.temb = TimeEmbedding(hidden) if self.hint else None
        self.h_in = nn.Linear(2 if self.hint else 1, hidden)
        act = nn.SiLU()
        self.phi_e = nn.ModuleList(
            [
                nn.Sequential(
                    nn.Linear(2 * hidden + 2, hidden),
                    act,
                    nn.Linear(hidden, hidden),
                    act,
                )
                for _ in range(n_layers)
            ]
        )
        self.phi_x = nn.ModuleList(
            [
                nn.Sequential(nn.Linear(hidden, hidden), act, nn.Linear(hidden, 1))
                for _ in range(n_layers)
            ]
        )
        self.phi_v = nn.ModuleList(
            [
                nn.Sequential(nn.Linear(hidden, hidden), act, nn.Linear(hidden, 1))
                for _ in range(n_layers)
            ]
        )
        self.phi_y = (
            nn.ModuleList(
                [
                    nn.Sequential(nn.Linear(hidden, hidden), act, nn.Linear(hidden, 1))
                    for _ in range(n_layers)
                ]
            )
            if self.hint
            else None
        )
        self.phi_h = nn.ModuleList(
            [
                nn.Sequential(
                    nn.Linear(2 * hidden, hidden), act, nn.Linear(hidden, hidden)
                )
                for _ in range(n_layers)
            ]
        )

    def hint_shape(self, x: Any) -> tuple[int, ...]:
        """Shape of the hint for input ``x = (pos, vel, adj)``: ``(B, N * 3)``."""
        return (int(x[0].shape[0]), int(x[0].shape[1]) * 3)

    def forward(
        self, x: Any, y_t: torch.Tensor | None = None, t: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``x``: tuple ``(pos (B, N, 3), vel (B, N, 3), adj (B, N, N))``; ``y_t (B, N * 3)`` -> ``(B, N * 3)``."""
        pos, vel, adj = x
        B, N, _ = pos.shape
        feats = [vel.norm(dim=-1, keepdim=True)]
        hint_vec = None
        if self.hint:
            if y_t is None or t is None:
                raise ValueError("a hinted network needs y_t and t")
            hint_vec = y_t.view(B, N, 3)
            feats.append(hint_vec.norm(dim=-1, keepdim=True))
        h = self.h_in(torch.cat(feats, dim=-1))
        if self.hint:
            h = h + self.temb(t)[:, None, :]
        coords = pos
        off = 1.0 - torch.eye(N, device=pos.device)[None, :, :, None]
        for k in range(self.n_layers):
            diff = coords[:, :, None, :] - coords[:, None, :, :]  # (B, N, N, 3)
            d2 = (diff**2).sum(-1, keepdim=True)
            hi = h[:, :, None, :].expand(B, N, N, h.shape[-1])
            hj = h[:, None, :, :].expand(B, N, N, h.shape[-1])
            m = self.phi_e[k](torch.cat([hi, hj, d2, adj[..., None]], dim=-1)) * off
            upd = (diff * self.phi_x[k](m)).sum(2) / max(N - 1, 1) + vel * self.phi_v[
                k
            ](h)
            if hint_vec is not None:
                upd = upd + hint_vec * self.phi_y[k](h)
            coords = coords + upd
            h = h + self.phi_h[k](torch.cat([h, m.sum(2)], dim=-1))
        return (coords - pos).reshape(B, N * 3)
