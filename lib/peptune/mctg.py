"""Monte Carlo Tree Guidance (MCTG, PepTune Sec. 3.5): multi-objective search over partial unmaskings.

A node is a partially unmasked sequence ``z`` at step ``k`` of the reverse time grid (time
``t_k``); the root is the all-mask sequence. Each iteration:

1. **select**: from the root, among the children that can still be expanded, compute the select
   vectors ``U = W / N`` (``K`` objectives), keep the non-dominated ones, take one uniformly at
   random; repeat until a leaf;
2. **expand**: draw ``M`` children with one batched reverse step ``t_k -> t_{k+1}``;
3. **roll out**: unmask every child fully with the remaining reverse steps, *from the child's own
   time* (the official code restarts at ``t = 1``: ``rollout_restart=True``), then arg-max;
4. **score**: an invalid rollout gets reward 0; a valid one its classifier vector ``s``;
5. **reward and front**: ``r_k = mean_{f in F} 1[s_k >= f_k]`` (``1`` on an empty front); a valid
   child joins the front ``F`` if no member dominates it or while ``|F| < front_size``; dominated
   members are pruned only while ``|F| > front_size``;
6. **backup**: ``R = sum_children r − lambda_inv · (invalid fraction)``, added to ``W`` of the leaf
   and every ancestor, ``N += 1``; each child starts with its own ``r`` and ``N = 1``.

The exploration term of the official code (``c p(child) sqrt(N_root)/N``) is inactive there (the
child probability is never stored) and is left out here; diversity comes from the random choice
among non-dominated children, as in the code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from icml25.checks import check_int, check_real, check_rng
from icml25.kernels import dominance, mdlm_sampler

from .chem import is_valid_peptide
from .model import (
    MaskedDiffusionTransformer,
    denoise_argmax,
    reverse_step,
    rollout,
    time_grid,
)

__all__ = ["MCTG", "Node", "ParetoFront", "check_scores"]


def check_scores(S: np.ndarray, n: int, K: int, name: str = "scores") -> np.ndarray:
    """``S`` as a finite ``(n, K)`` float64 array, or ``ValueError`` naming ``name``."""
    S = np.asarray(S, dtype=np.float64)
    if S.shape != (n, K):
        raise ValueError(f"{name} must have shape ({n}, {K}), got {S.shape}")
    if not np.isfinite(S).all():
        raise ValueError(f"{name} holds NaN or inf")
    return S


@dataclass
class Node:
    """A tree node: ``tokens (L,)`` at grid step ``step``; ``W (K,)`` total reward, ``N`` visits."""

    tokens: torch.Tensor
    step: int
    W: np.ndarray
    N: int = 0
    parent: "Node | None" = None
    children: list["Node"] = field(default_factory=list)


class ParetoFront:
    """The MCTG front: SMILES with score vectors, capped as in the paper (Sec. 3.5).

    A candidate joins if no member dominates it, or while the front holds fewer than ``size``;
    dominated members are pruned only while it holds more than ``size``. A SMILES already on the
    front is not added twice (this chapter's rule).
    """

    def __init__(self, K: int, size: int):
        self.K = check_int(K, "K", low=1)
        self.size = check_int(size, "size", low=1)
        self.smiles: list[str] = []
        self.scores = np.zeros((0, self.K))

    def __len__(self) -> int:
        return len(self.smiles)

    def add(self, smiles: str, s: np.ndarray) -> bool:
        """Offer one candidate; returns whether it joined."""
        if smiles in self.smiles:
            return False
        s = np.asarray(s, dtype=np.float64)
        if s.shape not in ((self.K,), (1, self.K)):
            raise ValueError(
                f"s must be a score vector of shape ({self.K},), got shape {s.shape}"
            )
        if not np.isfinite(s).all():
            raise ValueError("s must be finite (it holds NaN or inf)")
        s = s.reshape(1, self.K)
        dominated = len(self) > 0 and bool(
            np.any(np.all(self.scores >= s, 1) & np.any(self.scores > s, 1))
        )
        if dominated and len(self) >= self.size:
            return False
        self.smiles.append(smiles)
        self.scores = np.vstack([self.scores, s])
        if len(self) > self.size:
            keep = dominance.pareto_mask(self.scores)
            # prune dominated members, oldest first, only down to the cap
            drop = [i for i in np.flatnonzero(~keep)][: len(self) - self.size]
            if drop:
                mask = np.ones(len(self), bool)
                mask[drop] = False
                self.smiles = [x for x, m in zip(self.smiles, mask) if m]
                self.scores = self.scores[mask]
        return True

    def nondominated(self) -> tuple[list[str], np.ndarray]:
        """The non-dominated members (the front proper)."""
        if len(self) == 0:
            return [], self.scores
        m = dominance.pareto_mask(self.scores)
        return [x for x, k in zip(self.smiles, m) if k], self.scores[m]


class MCTG:
    """Monte Carlo Tree Guidance over a trained :class:`MaskedDiffusionTransformer`.

    Args:
        model: the denoiser (eval mode).
        score_fns: one callable per objective, ``list[str] -> (n,)`` (maximised); called on the
            valid rollouts of each iteration.
        num_children: ``M``, children per expansion (>= 1; paper 50).
        num_iter: iterations (>= 1; paper 128).
        n_steps: reverse steps of the time grid (>= 1; paper 128).
        invalid_penalty: ``lambda_inv`` (>= 0; paper 0.5).
        front_size: the front's cap (>= 1; paper 100).
        L: sequence length (default the model's ``max_len``).
        rng: NumPy generator (tie-breaks; seeds the torch generator of the reverse steps).
        rollout_restart: the official code's rollout grid ``linspace(1, eps, remaining)``.
        strict: validity rule.

    Raises:
        ValueError: any size < 1, ``invalid_penalty < 0``, no score functions.
    """

    def __init__(
        self,
        model: MaskedDiffusionTransformer,
        score_fns: Sequence[Callable[[list[str]], np.ndarray]],
        num_children: int = 50,
        num_iter: int = 128,
        n_steps: int = 128,
        invalid_penalty: float = 0.5,
        front_size: int = 100,
        L: int | None = None,
        rng: np.random.Generator | None = None,
        rollout_restart: bool = False,
        strict: bool = True,
        eps: float = 1e-5,
    ):
        if not isinstance(model, MaskedDiffusionTransformer):
            raise ValueError("model must be a MaskedDiffusionTransformer")
        self.model = model
        self.score_fns = list(score_fns)
        if not self.score_fns or not all(callable(f) for f in self.score_fns):
            raise ValueError("score_fns must be a non-empty list of callables")
        self.K = len(self.score_fns)
        self.M = check_int(num_children, "num_children", low=1)
        self.num_iter = check_int(num_iter, "num_iter", low=1)
        self.steps = check_int(n_steps, "n_steps", low=1)
        self.lam = check_real(invalid_penalty, "invalid_penalty", low=0.0)
        self.front = ParetoFront(self.K, check_int(front_size, "front_size", low=1))
        self.L = check_int(
            L if L is not None else model.config["max_len"],
            "L",
            low=1,
            high=model.config["max_len"],
        )
        self.rng = check_rng(rng)
        self.gen = torch.Generator().manual_seed(int(self.rng.integers(2**62)))
        self.rollout_restart = bool(rollout_restart)
        self.strict = bool(strict)
        self.times = time_grid(self.steps, eps)
        self.eps = eps
        self.root = Node(
            torch.full(
                (self.L,), model.mask_id, dtype=torch.long, device=model.pos.device
            ),
            0,
            np.zeros(self.K),
        )
        self.log: list[dict] = []
        self.calls = 0
        self.all_valid: list[tuple[str, np.ndarray]] = []

    # ------------------------------------------------------------------ the four phases

    def select(self) -> Node:
        """Descend by non-dominated ``W/N`` among expandable children, random tie-break."""
        node = self.root
        while node.children:
            cand = [c for c in node.children if c.step < self.steps]
            if not cand:
                return node
            U = np.stack([c.W / max(c.N, 1) for c in cand])
            nd = np.flatnonzero(dominance.pareto_mask(U))
            node = cand[int(self.rng.choice(nd))]
        return node

    @torch.no_grad()
    def expand(self, node: Node) -> torch.Tensor:
        """``M`` children of ``node``: one batched reverse step ``t_k -> t_{k+1}``; ``(M, L)`` ids."""
        z = node.tokens[None].expand(self.M, -1).clone()
        t, s = float(self.times[node.step]), float(self.times[node.step + 1])
        return reverse_step(self.model, z, t, s, rng=self.gen)

    @torch.no_grad()
    def rollout(self, z: torch.Tensor, step: int) -> torch.Tensor:
        """Unmask ``z (M, L)`` at grid step ``step`` fully (remaining steps, then arg-max)."""
        if self.rollout_restart:
            times = np.linspace(1.0, self.eps, max(2, self.steps - step + 1))
        else:
            times = self.times[step:]
        if len(times) < 2:
            return denoise_argmax(self.model, z)
        return rollout(self.model, z, times, self.gen)

    def score(self, smiles: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(valid (M,) bool, scores (M, K))``; invalid rows are zeros."""
        valid = np.array(
            [is_valid_peptide(s, strict=self.strict) for s in smiles], dtype=bool
        )
        S = np.zeros((len(smiles), self.K))
        idx = np.flatnonzero(valid)
        if idx.size:
            sub = [smiles[i] for i in idx]
            cols = [
                np.asarray(f(sub), dtype=np.float64).reshape(-1) for f in self.score_fns
            ]
            S[idx] = check_scores(
                np.stack(cols, axis=1), idx.size, self.K, "score_fns output"
            )
            self.calls += idx.size
        return valid, S

    def rewards(
        self, smiles: list[str], valid: np.ndarray, S: np.ndarray
    ) -> np.ndarray:
        """Pareto rewards ``(M, K)`` against the front before this batch; then update the front."""
        R = np.zeros_like(S)
        idx = np.flatnonzero(valid)
        if idx.size:
            R[idx] = mdlm_sampler.pareto_reward(
                S[idx].astype(np.float32), self.front.scores.astype(np.float32)
            )[0]
            for i in idx:
                self.front.add(smiles[i], S[i])
                self.all_valid.append((smiles[i], S[i]))
        return R

    @staticmethod
    def backup(node: Node, R: np.ndarray) -> None:
        """``W += R``, ``N += 1`` on ``node`` and every ancestor."""
        while node is not None:
            node.W = node.W + R
            node.N += 1
            node = node.parent

    # ------------------------------------------------------------------ the loop

    def iterate(self) -> dict:
        """One select-expand-rollout-score-backup iteration; returns its log row."""
        leaf = self.select()
        # nothing left to unmask: re-score the leaf's decode
        if leaf.step >= self.steps:
            zc = denoise_argmax(self.model, leaf.tokens[None].clone())
            kids = zc.expand(self.M, -1)
            done = kids
        else:
            kids = self.expand(leaf)
            done = self.rollout(kids.clone(), leaf.step + 1)
        smiles = self.model.tokenizer.decode_batch(done.cpu().numpy())
        valid, S = self.score(smiles)
        R = self.rewards(smiles, valid, S)
        if leaf.step < self.steps:
            for i in range(self.M):
                leaf.children.append(
                    Node(kids[i].clone(), leaf.step + 1, R[i].copy(), 1, leaf)
                )
        total = R.sum(0) - self.lam * (1.0 - valid.mean())
        self.backup(leaf, total)
        row = {
            "iteration": len(self.log),
            "depth": leaf.step,
            "valid_fraction": float(valid.mean()),
            "front_size": len(self.front),
            "calls": self.calls,
        }
        self.log.append(row)
        return row

    def run(self) -> tuple[list[str], np.ndarray]:
        """Run ``num_iter`` iterations; returns the non-dominated front ``(smiles, scores (f, K))``."""
        self.model.eval()
        for _ in range(self.num_iter):
            self.iterate()
        return self.front.nondominated()

    @property
    def valid_fraction(self) -> np.ndarray:
        """Valid fraction of the children, per iteration, ``(iterations,)``."""
        return np.array([r["valid_fraction"] for r in self.log])
