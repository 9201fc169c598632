"""kNN search and fused neighbour attention (chapter 08, UniVLG, Jain et al., ICML 2025).

Two kernels (``knn_attention.cu``), each with a reference (the contract), a CuPy launcher and a
dispatcher:

- :func:`knn`: the ``k`` nearest reference points of every query inside its own scene (batch ids
  per point, the paper's kNN "across all views" of one scene), ties broken by the lower index.
  NumPy in, NumPy out. The reference is a tiled ``torch.cdist`` + stable sort (memory
  ``tile x M`` instead of ``N x M``); tests compare it with ``scipy.spatial.cKDTree``.
- :func:`neighbour_attention`: ``softmax_j(q_i . (k_j + pe_ij) / sqrt(d_h))`` over the ``k``
  neighbours, then ``sum_j a_ij (v_j + pe_ij)`` per head (the relative-position cross-attention of
  the 3D layers). Torch in, torch out; the reference is gather + einsum and is differentiable, so
  the kernel (no backward) serves CUDA tensors that need no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_budget, check_int, check_tensor
from icml25.common import gpu_available

__all__ = [
    "MAX_K",
    "knn",
    "knn_reference",
    "knn_gpu",
    "neighbour_attention",
    "neighbour_attention_reference",
    "neighbour_attention_gpu",
]

#: the kernel keeps at most this many neighbours per thread in registers
MAX_K = 16
_BLOCK = 128
_TILE_BYTES = 64 * 2**20  # the reference's distance tile: at most 64 MiB of float32


# ----------------------------------------------------------------------------- kNN


def _check_knn(
    q: Any, ref: Any, k: Any, q_batch: Any, ref_batch: Any
) -> tuple[Any, ...]:
    q = check_array(q, "q", ndim=2, dtype=np.float32)
    ref = check_array(ref, "ref", ndim=2, dtype=np.float32)
    if q.shape[1] != 3:
        raise ValueError(f"q must have shape (N, 3), got {q.shape}")
    if ref.shape[1] != 3:
        raise ValueError(f"ref must have shape (M, 3), got {ref.shape}")
    k = check_int(k, "k", low=1, high=MAX_K)
    if q_batch is None and ref_batch is None:
        q_batch = np.zeros(len(q), dtype=np.int64)
        ref_batch = np.zeros(len(ref), dtype=np.int64)
    elif q_batch is None or ref_batch is None:
        raise ValueError(
            "q_batch and ref_batch must be given together (or both None: one scene)"
        )
    q_batch = check_array(q_batch, "q_batch", shape=(len(q),), kind="int")
    ref_batch = check_array(ref_batch, "ref_batch", shape=(len(ref),), kind="int")
    if len(ref_batch) and np.any(np.diff(ref_batch) < 0):
        raise ValueError(
            "ref_batch must be sorted (each scene's reference points contiguous)"
        )
    counts = (
        np.bincount(ref_batch, minlength=int(q_batch.max(initial=0)) + 1)
        if len(ref_batch)
        else np.zeros(1, int)
    )
    need = np.unique(q_batch)
    short = [int(b) for b in need if (b >= len(counts) or counts[b] < k)]
    if short:
        raise ValueError(
            f"k = {k} exceeds the reference points of scene(s) {short[:5]} (ref_batch)"
        )
    return q, ref, k, q_batch, ref_batch


def _ranges(
    q_batch: np.ndarray, ref_batch: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the reference index range ``[lo, hi)`` of its scene (``ref_batch`` sorted)."""
    lo = np.searchsorted(ref_batch, q_batch, side="left").astype(np.int64)
    hi = np.searchsorted(ref_batch, q_batch, side="right").astype(np.int64)
    return lo, hi


def _knn_torch(
    q: np.ndarray, ref: np.ndarray, k: int, q_batch: np.ndarray, ref_batch: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Tiled brute force: per scene, squared distances of a tile of queries to all its references,
    stable sort (ties by index), first ``k``."""
    import torch

    idx = np.empty((len(q), k), dtype=np.int64)
    dist = np.empty((len(q), k), dtype=np.float32)
    lo, hi = _ranges(q_batch, ref_batch)
    for b in np.unique(q_batch):
        rows = np.flatnonzero(q_batch == b)
        a, z = int(lo[rows[0]]), int(hi[rows[0]])
        R = torch.from_numpy(ref[a:z]).double()
        tile = max(1, min(len(rows), _TILE_BYTES // (8 * max(1, z - a))))
        for s in range(0, len(rows), tile):
            r = rows[s : s + tile]
            Q = torch.from_numpy(q[r]).double()
            # exact squared distances (cdist's sqrt adds rounding)
            d = ((Q[:, None, :] - R[None, :, :]) ** 2).sum(-1)
            order = torch.sort(d, dim=1, stable=True).indices[:, :k]
            idx[r] = order.numpy() + a
            dist[r] = torch.gather(d, 1, order).float().numpy()
    return idx, dist


def knn_reference(
    q: Any, ref: Any, k: int, q_batch: Any = None, ref_batch: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest reference points of each query within its scene (reference).

    Args:
        q: (N, 3) float32 query coordinates (metres).
        ref: (M, 3) float32 reference coordinates.
        k: neighbours per query, 1 <= k <= 16 (the kernel's register list).
        q_batch: (N,) int scene id of each query; ref_batch: (M,) int scene id of each reference,
            sorted. Both None: a single scene.

    Returns:
        ``(idx, dist2)``: (N, k) int64 global indices into ``ref``, nearest first, ties by the
        lower index; (N, k) float32 squared distances.

    Raises:
        ValueError: wrong shapes, non-finite coordinates, k out of range or larger than a scene's
        reference count, unsorted ``ref_batch``, only one of the batch arrays given.
    """
    q, ref, k, qb, rb = _check_knn(q, ref, k, q_batch, ref_batch)
    check_budget(
        f"knn(N={len(q)}, M={len(ref)})",
        n_operations=float(len(q)) * max(1, len(ref)) * 3,
    )
    return _knn_torch(q, ref, k, qb, rb)


def knn_gpu(
    q: Any, ref: Any, k: int, lo: Any, hi: Any
) -> tuple[Any, Any]:  # pragma: no cover - GPU
    """CuPy launcher of :func:`knn` (CuPy arrays in and out; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    q = cp.ascontiguousarray(cp.asarray(q, dtype=cp.float32))
    ref = cp.ascontiguousarray(cp.asarray(ref, dtype=cp.float32))
    lo = cp.ascontiguousarray(cp.asarray(lo, dtype=cp.int64))
    hi = cp.ascontiguousarray(cp.asarray(hi, dtype=cp.int64))
    N = int(q.shape[0])
    idx = cp.empty((N, k), dtype=cp.int64)
    dist = cp.empty((N, k), dtype=cp.float32)
    fn = load_module("knn_attention").get_function("knn_topk")
    fn(
        ((N + _BLOCK - 1) // _BLOCK,),
        (_BLOCK,),
        (q, ref, lo, hi, idx, dist, np.int64(N), np.int32(k)),
    )
    return idx, dist


def knn(
    q: Any, ref: Any, k: int, q_batch: Any = None, ref_batch: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """kNN within scenes (contract of :func:`knn_reference`); the CUDA kernel when a GPU is usable.

    NumPy in, NumPy out. Queries are sorted by scene before the launch, so a block's reference
    range stays one scene wide.
    """
    q, ref, k, qb, rb = _check_knn(q, ref, k, q_batch, ref_batch)
    if gpu_available() and len(q):  # pragma: no cover - GPU
        import cupy as cp

        order = np.argsort(qb, kind="stable")
        lo, hi = _ranges(qb[order], rb)
        idx_s, dist_s = knn_gpu(q[order], ref, k, lo, hi)
        idx = np.empty((len(q), k), dtype=np.int64)
        dist = np.empty((len(q), k), dtype=np.float32)
        idx[order] = cp.asnumpy(idx_s)
        dist[order] = cp.asnumpy(dist_s)
        return idx, dist
    check_budget(
        f"knn(N={len(q)}, M={len(ref)})",
        n_operations=float(len(q)) * max(1, len(ref)) * 3,
    )
    return _knn_torch(q, ref, k, qb, rb)


# ------------------------------------------------------------------ neighbour attention


def _check_attn(
    q: Any, k: Any, v: Any, idx: Any, pe: Any, heads: Any
) -> tuple[Any, ...]:
    import torch

    q = check_tensor(q, "q", ndim=2)
    N, c = (int(s) for s in q.shape)
    k = check_tensor(k, "k", ndim=2)
    v = check_tensor(v, "v", ndim=2)
    if tuple(k.shape) != tuple(v.shape) or int(k.shape[1]) != c:
        raise ValueError(
            f"k and v must have shape (M, {c}), got {tuple(k.shape)} and {tuple(v.shape)}"
        )
    idx = check_tensor(idx, "idx", ndim=2, floating=False)
    if idx.dtype not in (torch.int64, torch.int32) or int(idx.shape[0]) != N:
        raise ValueError(
            f"idx must be an integer tensor of shape ({N}, kn), got {idx.dtype} {tuple(idx.shape)}"
        )
    kn = int(idx.shape[1])
    if not 1 <= kn <= MAX_K:
        raise ValueError(f"idx: the neighbour count must lie in [1, {MAX_K}], got {kn}")
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= int(k.shape[0])):
        raise ValueError(f"idx must index rows of k and v (0..{int(k.shape[0]) - 1})")
    pe = check_tensor(pe, "pe", shape=(N, kn, c))
    heads = check_int(heads, "heads", low=1)
    if c % heads:
        raise ValueError(f"heads = {heads} must divide the channel count {c}")
    return q, k, v, idx.long(), pe, heads


def _attend(q: Any, k: Any, v: Any, idx: Any, pe: Any, heads: int) -> Any:
    """``a_ij = softmax_j(q_i . (k_j + pe_ij) / sqrt(d_h))``, ``out_i = sum_j a_ij (v_j + pe_ij)``
    per head (the relative-position attention of Sec. 3.2; ``pe_ij`` is the MLP of ``p_j - p_i``)."""
    N, c = q.shape
    kn = idx.shape[1]
    dh = c // heads
    # keys of the neighbours, with relative PE
    kj = (k[idx] + pe).view(N, kn, heads, dh)
    vj = (v[idx] + pe).view(N, kn, heads, dh)
    logits = (q.view(N, 1, heads, dh) * kj).sum(-1) / dh**0.5  # (N, kn, heads)
    a = logits.softmax(dim=1)
    return (a[..., None] * vj).sum(1).reshape(N, c)


def neighbour_attention_reference(
    q: Any, k: Any, v: Any, idx: Any, pe: Any, heads: int = 1
) -> Any:
    """Relative-position neighbour attention (reference, differentiable).

    Args:
        q: (N, c) float tensor, queries (one per point).
        k, v: (M, c) keys and values of the reference points.
        idx: (N, kn) int64/int32 neighbour rows of ``k``/``v`` (from :func:`knn`), 1 <= kn <= 16.
        pe: (N, kn, c) relative positional encodings of ``p_j - p_i``.
        heads: attention heads, dividing ``c``.

    Returns:
        (N, c) tensor on the input's device.

    Raises:
        TypeError: not tensors. ValueError: wrong ranks or shapes (naming the argument), indices
        out of range, non-finite values, ``heads`` not dividing ``c``.
    """
    return _attend(*_check_attn(q, k, v, idx, pe, heads))


def neighbour_attention_gpu(
    q: Any, k: Any, v: Any, idx: Any, pe: Any, heads: int = 1
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`neighbour_attention` (CuPy arrays in and out; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    q, k, v, pe = (
        cp.ascontiguousarray(cp.asarray(a, dtype=cp.float32)) for a in (q, k, v, pe)
    )
    idx = cp.ascontiguousarray(cp.asarray(idx, dtype=cp.int64))
    N, c = (int(s) for s in q.shape)
    kn = int(idx.shape[1])
    out = cp.empty((N, c), dtype=cp.float32)
    fn = load_module("knn_attention").get_function("neighbour_attention")
    total = N * heads
    fn(
        ((total + _BLOCK - 1) // _BLOCK,),
        (_BLOCK,),
        (
            q,
            k,
            v,
            idx,
            pe,
            out,
            np.int64(N),
            np.int32(kn),
            np.int32(c),
            np.int32(heads),
        ),
    )
    return out


def neighbour_attention(
    q: Any, k: Any, v: Any, idx: Any, pe: Any, heads: int = 1, validate: bool = True
) -> Any:
    """Neighbour attention (contract of :func:`neighbour_attention_reference`). Torch in, torch out.

    CUDA tensors that need no gradient go through the kernel (DLPack) when a GPU is usable; the
    rest takes the differentiable reference. ``validate=False`` skips the checks for callers that
    built ``idx`` and ``pe`` themselves (:class:`icml25.univlg.RelPos3DAttention`).
    """
    if validate:
        q, k, v, idx, pe, heads = _check_attn(q, k, v, idx, pe, heads)
    needs_grad = any(t.requires_grad for t in (q, k, v, pe))
    if q.is_cuda and not needs_grad and gpu_available():  # pragma: no cover - GPU
        import cupy as cp
        import torch

        out = neighbour_attention_gpu(
            *(cp.from_dlpack(t.detach().float().contiguous()) for t in (q, k, v)),
            cp.from_dlpack(idx.long().contiguous()),
            cp.from_dlpack(pe.detach().float().contiguous()),
            heads=int(heads),
        )
        return torch.from_dlpack(out)
    return _attend(q, k, v, idx.long(), pe, int(heads))
