"""UniVLG's networks at this book's scale (Sec. 3): 2D encoder, 3D relative attention with a
zero-initialised adapter, the language-conditioned mask decoder shared by 2D and 3D, and the
box-decoder ablation.

Reconstruction notes (stated in the chapter): DINOv2 ViT-L/14 becomes a 3-layer CNN pretrained
on the 2D set and then frozen; one feature level instead of four; no deformable-attention pixel
decoder (the mask features are a linear map of the modulated 2D features plus a point positional
encoding). The fusion variant is the one with ``FIX_PANET_BUG=True``: the 3D-modulated backbone
maps feed the decoder (with the official default ``False`` they are computed and dropped, and 3D
fusion happens in the pixel decoder's kNN blocks, which this book omits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from icml25.checks import check_choice, check_int, check_real, check_tensor
from icml25.kernels import knn_attention

from .defaults import DEFAULTS
from .text import TextEncoder

__all__ = [
    "UniVLGConfig",
    "Backbone2D",
    "RelPos3DAttention",
    "Lift3DAdapter",
    "LangCondMaskDecoder",
    "BoxDecoder",
    "UniVLG",
    "modulate",
    "N_COLOUR_CLASSES",
    "N_SHAPE_CLASSES",
]

N_COLOUR_CLASSES = 8  # sky, floor, 6 colours
N_SHAPE_CLASSES = 6  # sky, floor, 4 shapes


@dataclass(frozen=True)
class UniVLGConfig:
    """Model sizes (cpu-profile defaults; the paper's are in :data:`icml25.univlg.DEFAULTS`)."""

    dim: int = DEFAULTS.cpu_dim
    n_queries: int = DEFAULTS.cpu_n_queries
    heads: int = DEFAULTS.cpu_heads
    decoder_layers: int = DEFAULTS.cpu_decoder_layers
    relpos_layers: int = DEFAULTS.cpu_relpos_layers
    k: int = DEFAULTS.k
    use_3d: bool = True
    decoder: str = "mask"  # "mask" (UniVLG) or "box" (the box-decoder ablation)
    temperature: float = DEFAULTS.temperature

    def __post_init__(self) -> None:
        for name in ("dim", "n_queries", "heads", "decoder_layers", "relpos_layers"):
            check_int(getattr(self, name), name, low=1)
        check_int(self.k, "k", low=1, high=16)
        if self.dim % self.heads:
            raise ValueError(f"heads = {self.heads} must divide dim = {self.dim}")
        if not isinstance(self.use_3d, bool):
            raise TypeError(f"use_3d must be a bool, got {type(self.use_3d).__name__}")
        check_choice(self.decoder, "decoder", ("mask", "box"))
        check_real(self.temperature, "temperature", low=0.0, low_open=True)


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """adaLN-style modulation ``x (1 + scale) + shift`` (Sec. 3.2). Shapes broadcast; returns x's shape."""
    return x * (1 + scale) + shift


class _MLP(nn.Sequential):
    def __init__(self, d_in: int, d_hidden: int, d_out: int) -> None:
        super().__init__(
            nn.Linear(d_in, d_hidden), nn.GELU(), nn.Linear(d_hidden, d_out)
        )


class Backbone2D(nn.Module):
    """The "2D backbone" (DINOv2's role): 3 convolutions, stride 2 overall, ``dim`` channels.

    ``aux`` predicts a colour and a shape class per feature cell, the dense objective it is
    pretrained with on the 2D set before being frozen.

    Args:
        dim: output channels.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        D = check_int(dim, "dim", low=1)
        self.net = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1),
            nn.GELU(),
            nn.Conv2d(64, D, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(D, D, 1),
        )
        self.aux = nn.Conv2d(D, N_COLOUR_CLASSES + N_SHAPE_CLASSES, 1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) float in [0, 1] -> (B, dim, H/2, W/2) features."""
        return self.net(images)


class RelPos3DAttention(nn.Module):
    """3D relative attention over the k nearest points (Sec. 3.2, the "cross-view" layers).

    Per layer: ``f_i <- f_i + W_o att_i``, ``att_i = sum_j softmax_j(q_i . (k_j + pe_ij)) (v_j + pe_ij)``
    over the k nearest points j of i across all views (``pe_ij = MLP(p_j - p_i)``, the query's PE
    being ``MLP(0)``), then an FFN; pre-norm residual blocks, a final LayerNorm.

    Args:
        dim: width D; k: neighbours; layers: layers; heads: attention heads (dividing D).
    """

    def __init__(
        self, dim: int, k: int = DEFAULTS.k, layers: int = 2, heads: int = 4
    ) -> None:
        super().__init__()
        self.dim, self.k = (
            check_int(dim, "dim", low=1),
            check_int(k, "k", low=1, high=knn_attention.MAX_K),
        )
        self.heads = check_int(heads, "heads", low=1)
        if self.dim % self.heads:
            raise ValueError(f"heads = {heads} must divide dim = {dim}")
        n = check_int(layers, "layers", low=1)
        # narrow hidden layer: it runs on N k offsets
        self.pe = nn.ModuleList(_MLP(3, 16, self.dim) for _ in range(n))
        self.qkv = nn.ModuleList(nn.Linear(self.dim, 3 * self.dim) for _ in range(n))
        self.out = nn.ModuleList(nn.Linear(self.dim, self.dim) for _ in range(n))
        self.n1 = nn.ModuleList(nn.LayerNorm(self.dim) for _ in range(n))
        self.n2 = nn.ModuleList(nn.LayerNorm(self.dim) for _ in range(n))
        self.ffn = nn.ModuleList(_MLP(self.dim, self.dim, self.dim) for _ in range(n))
        self.norm = nn.LayerNorm(self.dim)

    def forward(
        self, f: torch.Tensor, xyz: torch.Tensor, idx: torch.Tensor
    ) -> torch.Tensor:
        """Features ``f`` (N, D), points ``xyz`` (N, 3), neighbour rows ``idx`` (N, k) int64 -> (N, D).

        Raises:
            ValueError: shapes that disagree (naming the argument), indices out of range.
        """
        f = check_tensor(f, "f", shape=(None, self.dim))
        N = int(f.shape[0])
        xyz = check_tensor(xyz, "xyz", shape=(N, 3))
        idx = check_tensor(idx, "idx", shape=(N, None), floating=False)
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= N):
            raise ValueError(f"idx must index the {N} points")
        return self._layers(f, xyz, idx.long())

    def _layers(
        self, f: torch.Tensor, xyz: torch.Tensor, idx: torch.Tensor
    ) -> torch.Tensor:
        """The layers, trusting their inputs; relative offsets ``p_j - p_i`` make them translation invariant."""
        rel = xyz[idx] - xyz[:, None, :]  # (N, k, 3) offsets p_j - p_i
        for pe, qkv, out, n1, n2, ffn in zip(
            self.pe, self.qkv, self.out, self.n1, self.n2, self.ffn
        ):
            q, k, v = qkv(n1(f)).chunk(3, dim=-1)
            # the query's PE, PE(0)
            pe0 = pe(torch.zeros(1, 3, dtype=f.dtype, device=f.device))
            att = knn_attention.neighbour_attention(
                q + pe0, k, v, idx, pe(rel) - pe0, heads=self.heads, validate=False
            )
            f = f + out(att)
            f = f + ffn(n2(f))
        return self.norm(f)


class Lift3DAdapter(nn.Module):
    """3D layers that modulate the 2D features: ``x (1 + scale) + shift`` with ``(shift, scale)`` from
    :class:`RelPos3DAttention` through SiLU -> LayerNorm -> Linear, the Linear zero-initialised so
    that at step 0 the output equals the 2D features exactly (Sec. 3.2).

    Args:
        dim: width D; k, layers, heads: of the :class:`RelPos3DAttention`.
    """

    def __init__(
        self, dim: int, k: int = DEFAULTS.k, layers: int = 2, heads: int = 4
    ) -> None:
        super().__init__()
        D = check_int(dim, "dim", low=1)
        self.inp = nn.Sequential(nn.Linear(D, D), nn.LayerNorm(D))
        self.attn = RelPos3DAttention(D, k, layers, heads)
        self.head = nn.Sequential(nn.SiLU(), nn.LayerNorm(D), nn.Linear(D, 2 * D))
        nn.init.zeros_(self.head[-1].weight)
        nn.init.zeros_(self.head[-1].bias)

    def forward(
        self, x: torch.Tensor, xyz: torch.Tensor, idx: torch.Tensor
    ) -> torch.Tensor:
        """2D features ``x`` (N, D) at points ``xyz`` (N, 3) with neighbours ``idx`` (N, k) -> (N, D)."""
        h = self.attn(self.inp(x), xyz, idx)
        shift, scale = self.head(h).chunk(2, dim=-1)
        return modulate(x, shift, scale)


class _DecoderLayer(nn.Module):
    def __init__(self, D: int, heads: int) -> None:
        super().__init__()
        self.cross = nn.MultiheadAttention(D, heads, batch_first=True)
        self.self_attn = nn.MultiheadAttention(D, heads, batch_first=True)
        self.ffn = _MLP(D, 2 * D, D)
        self.vis = nn.MultiheadAttention(D, heads, batch_first=True)
        self.vis_ffn = _MLP(D, D, D)
        self.n = nn.ModuleList(nn.LayerNorm(D) for _ in range(5))


class LangCondMaskDecoder(nn.Module):
    """The language-conditioned mask decoder shared by 2D and 3D inputs (Sec. 3.3).

    ``Z = [queries; text]``. Per layer: (a) masked cross-attention of Z to the visual features
    (a query attends where the previous prediction has ``sigmoid(m) >= 0.5``; all-false rows reset to
    attend everywhere; text rows unmasked); (b) self-attention over Z (text padding masked);
    (c) FFN; (d) visual update ``F <- F + CrossAttn(F -> Z)`` + FFN; (e) predictions: mask logits
    ``m_q = MLP(q) . F``, grounding logits ``s_qt = cos(W_q q, W_t t) / 0.07``, optional boxes.
    Predictions are made on the initial queries and after every layer (deep supervision).

    Args:
        n_queries: Q; dim: D; heads: attention heads; layers: decoder layers;
        box_head: add a box head (normalised (min, max) corners); masks: predict masks (False for
        the :class:`BoxDecoder` ablation: no mask head, unmasked cross-attention);
        temperature: of the grounding logits.
    """

    def __init__(
        self,
        n_queries: int,
        dim: int,
        heads: int,
        layers: int,
        box_head: bool = False,
        masks: bool = True,
        temperature: float = DEFAULTS.temperature,
    ) -> None:
        super().__init__()
        self.Q, self.D = (
            check_int(n_queries, "n_queries", low=1),
            check_int(dim, "dim", low=1),
        )
        self.heads = check_int(heads, "heads", low=1)
        n = check_int(layers, "layers", low=1)
        self.masks, self.tau = bool(masks), float(temperature)
        self.query = nn.Parameter(torch.randn(self.Q, self.D) * 0.1)
        self.layers = nn.ModuleList(_DecoderLayer(self.D, self.heads) for _ in range(n))
        self.qnorm = nn.LayerNorm(self.D)
        self.mask_embed = _MLP(self.D, self.D, self.D)
        self.wq = nn.Linear(self.D, self.D)
        self.wt = nn.Linear(self.D, self.D)
        self.box = _MLP(self.D, self.D, 6) if (box_head or not masks) else None

    def forward(
        self,
        feats: torch.Tensor,
        pos: torch.Tensor,
        text: torch.Tensor,
        text_pad: torch.Tensor,
    ) -> list[dict]:
        """Decode.

        Args:
            feats: (B, M, D) visual features over M pixels or points; pos: (B, M, D) their positional
                encoding (added to keys); text: (B, S, D) token features; text_pad: (B, S) bool,
                True = padding.

        Returns:
            one dict per stage: ``"ground"`` (B, Q, S) logits (padding -inf), ``"masks"`` (B, Q, M)
            logits (mask decoder), ``"boxes"`` (B, Q, 6) (with a box head).
        """
        B, M, _ = feats.shape
        Fv = feats
        Z = torch.cat([self.query.expand(B, -1, -1), text], dim=1)
        zpad = torch.cat(
            [torch.zeros(B, self.Q, dtype=torch.bool, device=feats.device), text_pad],
            dim=1,
        )
        preds = [self._predict(Z, Fv, text_pad)]
        for L in self.layers:
            attn_mask = None
            if self.masks:
                blocked = (preds[-1]["masks"].sigmoid() < 0.5).detach()  # (B, Q, M)
                # all-false rows reset
                blocked = blocked & ~blocked.all(-1, keepdim=True)
                full = torch.cat(
                    [
                        blocked,
                        torch.zeros(
                            B,
                            Z.shape[1] - self.Q,
                            M,
                            dtype=torch.bool,
                            device=feats.device,
                        ),
                    ],
                    1,
                )
                attn_mask = full.repeat_interleave(self.heads, dim=0)
            zn = L.n[0](Z)
            # (a)
            Z = (
                Z
                + L.cross(zn, Fv + pos, Fv, attn_mask=attn_mask, need_weights=False)[0]
            )
            zn = L.n[1](Z)
            # (b)
            Z = (
                Z
                + L.self_attn(zn, zn, zn, key_padding_mask=zpad, need_weights=False)[0]
            )
            Z = Z + L.ffn(L.n[2](Z))  # (c)
            fn = L.n[3](Fv)
            # (d)
            Fv = (
                Fv + L.vis(fn + pos, Z, Z, key_padding_mask=zpad, need_weights=False)[0]
            )
            Fv = Fv + L.vis_ffn(L.n[4](Fv))
            preds.append(self._predict(Z, Fv, text_pad))  # (e)
        return preds

    def _predict(
        self, Z: torch.Tensor, Fv: torch.Tensor, text_pad: torch.Tensor
    ) -> dict:
        """Heads of stage (e): mask logits ``MLP(q) . F``, grounding ``cos(W_q q, W_t t) / tau``, boxes."""
        q = self.qnorm(Z[:, : self.Q])
        t = Z[:, self.Q :]
        s = (
            torch.einsum(
                "bqd,bsd->bqs",
                F.normalize(self.wq(q), dim=-1),
                F.normalize(self.wt(t), dim=-1),
            )
            / self.tau
        )
        out = {"ground": s.masked_fill(text_pad[:, None, :], float("-inf"))}
        if self.masks:
            out["masks"] = (
                torch.einsum("bqd,bmd->bqm", self.mask_embed(q), Fv) / self.D**0.5
            )
        if self.box is not None:
            b = self.box(q)
            centre, size = b[..., :3], F.softplus(b[..., 3:]) + 1e-3
            out["boxes"] = torch.cat([centre - size / 2, centre + size / 2], -1)
        return out


class BoxDecoder(LangCondMaskDecoder):
    """The box-only ablation: the same decoder regressing normalised 3D boxes, no masks.

    Args:
        n_queries, dim, heads, layers, temperature: as :class:`LangCondMaskDecoder`.
    """

    def __init__(
        self,
        n_queries: int,
        dim: int,
        heads: int,
        layers: int,
        temperature: float = DEFAULTS.temperature,
    ) -> None:
        super().__init__(
            n_queries,
            dim,
            heads,
            layers,
            box_head=True,
            masks=False,
            temperature=temperature,
        )


class UniVLG(nn.Module):
    """One model for 2D and 3D grounding: every weight is shared except the 3D path (:class:`Lift3DAdapter`).

    ``forward_2d`` decodes masks over the feature pixels of images; ``forward_3d`` lifts posed
    views to points, runs the 3D adapter (unless ``cfg.use_3d`` is False: the "no 3D layers"
    baseline, 2D features unprojected) and decodes masks over the points of all views.

    Args:
        cfg: :class:`UniVLGConfig`.
        minilm: ``(model, tokenizer)`` from :func:`icml25.common.load_minilm` (loaded if None).
    """

    def __init__(
        self, cfg: UniVLGConfig = UniVLGConfig(), minilm: tuple[Any, Any] | None = None
    ) -> None:
        super().__init__()
        if not isinstance(cfg, UniVLGConfig):
            raise TypeError(f"cfg must be a UniVLGConfig, got {type(cfg).__name__}")
        check_choice(cfg.decoder, "cfg.decoder", ("mask", "box"))
        self.cfg = cfg
        D = cfg.dim
        self.backbone = Backbone2D(D)
        self.text = TextEncoder(D, minilm)
        self.pos = _MLP(3, D, D)
        self.feat = nn.Sequential(nn.Linear(D, D), nn.LayerNorm(D))
        self.adapter = (
            Lift3DAdapter(D, cfg.k, cfg.relpos_layers, cfg.heads)
            if cfg.use_3d
            else None
        )
        dec = LangCondMaskDecoder if cfg.decoder == "mask" else BoxDecoder
        self.decoder = dec(
            cfg.n_queries, D, cfg.heads, cfg.decoder_layers, temperature=cfg.temperature
        )

    def _tokens(
        self, images: torch.Tensor | None, feats: torch.Tensor | None
    ) -> torch.Tensor:
        if feats is None:
            feats = self.backbone(images)
        return feats.flatten(2).transpose(1, 2)  # (B', S*S, D)

    def decode(
        self, x: torch.Tensor, xyz: torch.Tensor, text: Sequence[str]
    ) -> list[dict]:
        """Shared head: features ``x`` (B, M, D) at normalised points ``xyz`` (B, M, 3) -> stage predictions."""
        T, pad, _ = self.text.encode(list(text))
        return self.decoder(self.feat(x), self.pos(xyz), T, pad)

    def forward_2d(
        self,
        images: torch.Tensor,
        text: Sequence[str],
        feats: torch.Tensor | None = None,
    ) -> list[dict]:
        """Masks over the S x S feature pixels of each image (the 2D path: no 3D layers).

        Args:
            images: (B, 3, H, W) float in [0, 1] (ignored when ``feats`` (B, D, S, S) is given).
            text: B sentences.

        Returns:
            stage predictions (see :meth:`LangCondMaskDecoder.forward`) with M = S * S, pixels in
            row-major order; the positional encoding sees ``(u, 0, -v)`` normalised to [-1/2, 1/2].

        Raises:
            ValueError: batch sizes that disagree.
        """
        if feats is None:
            images = check_tensor(images, "images", ndim=4)
        x = self._tokens(images, feats)
        B, M, _ = x.shape
        if len(text) != B:
            raise ValueError(f"text must hold {B} sentences, got {len(text)}")
        S = int(round(M**0.5))
        v, u = torch.meshgrid(
            torch.arange(S, device=x.device),
            torch.arange(S, device=x.device),
            indexing="ij",
        )
        xyz = (
            torch.stack(
                [u / S - 0.5, torch.zeros_like(u, dtype=torch.float32), 0.5 - v / S], -1
            )
            .reshape(1, M, 3)
            .float()
            .expand(B, -1, -1)
        )
        return self.decode(x, xyz, text)

    def forward_3d(
        self, views: dict, text: Sequence[str], use_3d_layers: bool | None = None
    ) -> list[dict]:
        """Masks over the points of all views of each scene.

        Args:
            views: ``"xyz"`` (B, V, S, S, 3) normalised points, ``"knn"`` (B, N, k) int64 per-scene
                neighbour rows (N = V S S), and ``"rgb"`` (B, V, 3, H, W) or precomputed backbone
                ``"feats"`` (B, V, D, S, S).
            text: B sentences.
            use_3d_layers: override ``cfg.use_3d`` (False: 2D features unprojected; the step-0
                check compares the two).

        Returns:
            stage predictions with M = N points, ordered view by view, row-major.

        Raises:
            ValueError: missing keys, shapes that disagree.
        """
        for key in ("xyz", "knn"):
            if key not in views:
                raise ValueError(f"views needs the key {key!r}")
        xyz = check_tensor(views["xyz"], "views['xyz']", ndim=5)
        B, V, S, _, _ = xyz.shape
        N = V * S * S
        idx = check_tensor(views["knn"], "views['knn']", ndim=3, floating=False)
        if tuple(idx.shape[:2]) != (B, N):
            raise ValueError(
                f"views['knn'] must have shape ({B}, {N}, k), got {tuple(idx.shape)}"
            )
        if len(text) != B:
            raise ValueError(f"text must hold {B} sentences, got {len(text)}")
        if "feats" in views:
            f = check_tensor(views["feats"], "views['feats']", ndim=5)
            x = self._tokens(None, f.flatten(0, 1))
        else:
            rgb = check_tensor(views["rgb"], "views['rgb']", ndim=5)
            x = self._tokens(rgb.flatten(0, 1), None)
        x = x.reshape(B, N, -1)
        pts = xyz.reshape(B, N, 3).float()
        use = self.cfg.use_3d if use_3d_layers is None else bool(use_3d_layers)
        if use and self.adapter is not None:
            offs = (torch.arange(B, device=x.device) * N)[:, None, None]
            x = self.adapter(
                x.reshape(B * N, -1),
                pts.reshape(B * N, 3),
                (idx.long() + offs).reshape(B * N, -1),
            ).reshape(B, N, -1)
        return self.decode(x, pts, text)
