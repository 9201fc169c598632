"""Synthetic posed RGB-D rooms with referring expressions (this book's stand-in for ScanNet/SR3D).

ScanNet, ReferIt3D (SR3D/NR3D), ScanRefer and RefCOCO are not available offline, so the chapter
renders its own data: a NumPy ray caster with analytic intersections (floor plane; spheres,
axis-aligned cubes, vertical cylinders and cones), 6 colours and 3 sizes, posed RGB-D views with
instance masks, and template expressions with attributes and relations (left of / right of /
closest to / farthest from / between) resolved in 3D, each with character spans for the target
and anchor phrases (the positive map of MDETR-style span grounding).

Frame: world z is up; view 0 sits at ``(0, -R, h)`` looking at the origin, so "left" means smaller
world x, i.e. left as seen from the first view (SR3D resolves view-dependent relations from a
stated viewpoint too). A reconstruction: templates and sizes are this book's, not the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.checks import check_int, check_real, check_rng

from .geometry import _unproject, lift_monocular

__all__ = [
    "COLOURS",
    "SHAPES",
    "SIZES",
    "Expression",
    "Scene",
    "render_view",
    "make_scene",
    "SyntheticRGBDScenes",
    "Synthetic2DRef",
    "look_at",
]

COLOURS = {
    "red": (0.85, 0.15, 0.15),
    "green": (0.15, 0.7, 0.2),
    "blue": (0.15, 0.3, 0.9),
    "yellow": (0.92, 0.86, 0.15),
    "purple": (0.6, 0.2, 0.75),
    "orange": (0.97, 0.55, 0.1),
}
SHAPES = ("cube", "sphere", "cylinder", "cone")
SIZES = {"small": 0.15, "medium": 0.22, "large": 0.3}
FLOOR_RGB = (0.55, 0.55, 0.55)
_LIGHT = np.array([0.4, -0.3, 1.0]) / np.linalg.norm([0.4, -0.3, 1.0])
FOV_DEG = 60.0


@dataclass(frozen=True)
class Expression:
    """A referring expression: text, target object, kind, relation and character spans.

    ``spans[0]`` is the target phrase ``(object, start, end)``; the rest are anchors.
    """

    text: str
    target: int
    kind: str  # "attribute" or "relational"
    relation: str  # "", "left of", "right of", "closest to", "farthest from", "between"
    spans: tuple[tuple[int, int, int], ...]


@dataclass
class Scene:
    """One rendered scene: objects, posed RGB-D views, feature-level points and labels.

    rgb (V, H, W, 3) float32 in [0, 1]; depth (V, H, W) float32 metres; inst (V, H, W) int64
    (0 floor, i + 1 object i); K (V, 3, 3); T_cw (V, 4, 4); xyz (V, S, S, 3) feature-cell points;
    labels (V, S, S) int64 majority instance per cell; boxes (n_obj, 6) true (min, max) extents.
    """

    objects: list[dict]
    rgb: np.ndarray
    depth: np.ndarray
    inst: np.ndarray
    K: np.ndarray
    T_cw: np.ndarray
    xyz: np.ndarray
    labels: np.ndarray
    expressions: list[Expression] = field(default_factory=list)

    @property
    def points(self) -> np.ndarray:
        """(V*S*S, 3) float32 feature-cell points of all views."""
        return self.xyz.reshape(-1, 3).astype(np.float32)

    @property
    def point_labels(self) -> np.ndarray:
        """(V*S*S,) int64 instance label per point (0 floor, i + 1 object i)."""
        return self.labels.reshape(-1)


def look_at(position: Any, target: Any) -> np.ndarray:
    """(4, 4) camera-to-world pose of an OpenCV camera at ``position`` looking at ``target`` (z up)."""
    p, t = np.asarray(position, float), np.asarray(target, float)
    if (
        p.shape != (3,)
        or t.shape != (3,)
        or not (np.isfinite(p).all() and np.isfinite(t).all())
    ):
        raise ValueError(
            f"position and target must be finite 3-vectors, got shapes {p.shape} and {t.shape}"
        )
    if np.linalg.norm(t - p) < 1e-9:
        raise ValueError("target must differ from position (no viewing direction)")
    fwd = (t - p) / np.linalg.norm(t - p)
    right = np.cross(fwd, [0.0, 0.0, 1.0])
    if np.linalg.norm(right) < 1e-9:
        raise ValueError(
            "target - position is vertical: the camera's roll is undefined (z is up)"
        )
    right /= np.linalg.norm(right)
    down = np.cross(fwd, right)
    T = np.eye(4)
    T[:3, :3] = np.stack([right, down, fwd], axis=1)
    T[:3, 3] = p
    return T


def _intersect(
    obj: dict, o: np.ndarray, d: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Ray parameter t (inf on a miss) and unit normal of rays ``o + t d`` with one primitive."""
    P = len(d)
    t = np.full(P, np.inf)
    n = np.zeros((P, 3))
    c, r, s = np.asarray(obj["center"]), obj["radius"], obj["shape"]
    oc = o - c
    with np.errstate(invalid="ignore", divide="ignore"):
        if s == "sphere":
            b = d @ oc
            disc = b * b - (oc @ oc - r * r)
            hit = disc >= 0
            tt = -b - np.sqrt(np.where(hit, disc, 0))
            hit &= tt > 1e-6
            t[hit] = tt[hit]
            n[hit] = (o + tt[hit, None] * d[hit] - c) / r
        elif s == "cube":
            t1 = (-r - oc) / d
            t2 = (r - oc) / d
            tmin, tmax = np.minimum(t1, t2), np.maximum(t1, t2)
            tn, tf = tmin.max(1), tmax.min(1)
            hit = (tn <= tf) & (tn > 1e-6)
            t[hit] = tn[hit]
            ax = tmin.argmax(1)
            nn = np.zeros((P, 3))
            nn[np.arange(P), ax] = -np.sign(d[np.arange(P), ax])
            n[hit] = nn[hit]
        else:  # vertical cylinder or cone, base on the floor (centre z = r), height 2r
            h = 2 * r
            X0, Y0, Z0 = oc[0], oc[1], o[2]
            if s == "cylinder":
                a = d[:, 0] ** 2 + d[:, 1] ** 2
                b = 2 * (X0 * d[:, 0] + Y0 * d[:, 1])
                cc = X0**2 + Y0**2 - r * r
            else:
                k = (r / h) ** 2
                Zp0 = h - Z0
                a = d[:, 0] ** 2 + d[:, 1] ** 2 - k * d[:, 2] ** 2
                b = 2 * (X0 * d[:, 0] + Y0 * d[:, 1] + k * Zp0 * d[:, 2])
                cc = X0**2 + Y0**2 - k * Zp0**2
            disc = b * b - 4 * a * cc
            ok = (disc >= 0) & (np.abs(a) > 1e-12)
            sq = np.sqrt(np.where(ok, disc, 0))
            best = np.full(P, np.inf)
            for root in ((-b - sq) / (2 * a), (-b + sq) / (2 * a)):
                z = Z0 + root * d[:, 2]
                good = ok & (root > 1e-6) & (z >= 0) & (z <= h) & (root < best)
                best[good] = root[good]
            if s == "cylinder":  # top cap
                tc = (h - Z0) / d[:, 2]
                px, py = X0 + tc * d[:, 0], Y0 + tc * d[:, 1]
                cap = (tc > 1e-6) & (px**2 + py**2 <= r * r) & (tc < best)
                best[cap] = tc[cap]
            hit = np.isfinite(best)
            t[hit] = best[hit]
            q = o + best[hit, None] * d[hit] - np.array([c[0], c[1], 0.0])
            if s == "cylinder":
                nn = np.concatenate([q[:, :2], np.zeros((len(q), 1))], 1)
                top = np.abs(q[:, 2] - h) < 1e-6
                nn[top] = [0.0, 0.0, 1.0]
            else:
                nn = np.concatenate([q[:, :2], (r / h) ** 2 * (h - q[:, 2:3])], 1)
            n[hit] = nn / np.linalg.norm(nn, axis=1, keepdims=True).clip(1e-12)
    return t, n


def render_view(
    objects: list[dict], K: Any, T_cw: Any, res: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ray-cast one view: shaded RGB, z-depth and instance ids (0 floor, i + 1 object i, -1 sky).

    Args:
        objects: dicts with ``shape``, ``center`` (3,), ``radius``, ``rgb`` (3,).
        K: (3, 3) intrinsics; T_cw: (4, 4) camera-to-world pose; res: image side in pixels.

    Returns:
        ``(rgb (res, res, 3) float32, depth (res, res) float32, inst (res, res) int64)``.

    Raises:
        ValueError: ``res`` < 1.
    """
    res = check_int(res, "res", low=1)
    K, T = np.asarray(K, float), np.asarray(T_cw, float)
    v, u = np.meshgrid(
        np.arange(res, dtype=float), np.arange(res, dtype=float), indexing="ij"
    )
    cam = np.stack(
        [(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones_like(u)], -1
    ).reshape(-1, 3)
    dirs = cam @ T[:3, :3].T
    zscale = np.linalg.norm(dirs, axis=1)  # t along a unit ray = z-depth * |dir|
    dirs = dirs / zscale[:, None]
    o = T[:3, 3]
    P = len(dirs)
    best = np.full(P, np.inf)
    inst = np.full(P, -1, dtype=np.int64)
    normal = np.zeros((P, 3))
    rgb = np.zeros((P, 3))
    with np.errstate(divide="ignore", invalid="ignore"):
        tf = np.where(dirs[:, 2] < -1e-9, -o[2] / dirs[:, 2], np.inf)
    floor = np.isfinite(tf)
    best[floor], inst[floor] = tf[floor], 0
    normal[floor] = [0.0, 0.0, 1.0]
    rgb[floor] = FLOOR_RGB
    for i, obj in enumerate(objects):
        t, n = _intersect(obj, o, dirs)
        closer = t < best
        best[closer], inst[closer], normal[closer] = t[closer], i + 1, n[closer]
        rgb[closer] = obj["rgb"]
    shade = 0.4 + 0.6 * np.clip(normal @ _LIGHT, 0.0, 1.0)
    img = np.where(inst[:, None] >= 0, rgb * shade[:, None], 0.0)
    depth = np.where(np.isfinite(best), best / zscale, 0.0)
    return (
        img.reshape(res, res, 3).astype(np.float32),
        depth.reshape(res, res).astype(np.float32),
        inst.reshape(res, res),
    )


def _intrinsics(res: int) -> np.ndarray:
    f = 0.5 * res / np.tan(np.radians(FOV_DEG) / 2)
    return np.array([[f, 0, (res - 1) / 2], [0, f, (res - 1) / 2], [0, 0, 1.0]])


def _place_objects(rng: np.random.Generator, n_obj: int) -> list[dict]:
    objs: list[dict] = []
    colours, sizes = list(COLOURS), list(SIZES)
    while len(objs) < n_obj:
        for _ in range(200):
            size = sizes[rng.integers(3)]
            r = SIZES[size]
            xy = rng.uniform(-1.0, 1.0, 2)
            if all(
                np.linalg.norm(xy - o["center"][:2]) > r + o["radius"] + 0.12
                for o in objs
            ):
                break
        else:
            break
        col = colours[rng.integers(len(colours))]
        objs.append(
            {
                "shape": SHAPES[rng.integers(4)],
                "colour": col,
                "size": size,
                "radius": r,
                "center": np.array([xy[0], xy[1], r]),
                "rgb": np.array(COLOURS[col]),
            }
        )
    return objs


def _cameras(rng: np.random.Generator, n_views: int) -> np.ndarray:
    Ts = []
    for v in range(n_views):
        az = -np.pi / 2 + (
            0.0 if v == 0 else 2 * np.pi * v / n_views + rng.uniform(-0.4, 0.4)
        )
        R = rng.uniform(2.4, 2.8)
        h = rng.uniform(1.7, 2.1)
        target = np.array([*rng.uniform(-0.15, 0.15, 2), 0.15])
        Ts.append(look_at([R * np.cos(az), R * np.sin(az), h], target))
    return np.stack(Ts)


def _cell_labels(inst: np.ndarray, S: int) -> np.ndarray:
    """Majority instance id per (H/S x W/S) cell, ties to the larger id (objects over floor)."""
    V, H, W = inst.shape
    cells = (
        inst.reshape(V, S, H // S, S, W // S)
        .transpose(0, 1, 3, 2, 4)
        .reshape(V, S, S, -1)
    )
    ids = np.arange(-1, cells.max() + 1)
    counts = (cells[..., None] == ids).sum(-2)  # (V, S, S, n_ids)
    best = counts.shape[-1] - 1 - np.argmax(counts[..., ::-1], axis=-1)
    return ids[best]


def _matches(o: dict, attrs: dict) -> bool:
    return all(o[k] == v for k, v in attrs.items())


_PHRASES = (
    ("colour", "shape"),
    ("size", "shape"),
    ("colour",),
    ("size", "colour", "shape"),
    ("shape",),
)


def _phrase(o: dict, keys: tuple[str, ...]) -> tuple[str, dict]:
    attrs = {k: o[k] for k in keys}
    words = [o[k] for k in ("size", "colour") if k in keys] + [
        o["shape"] if "shape" in keys else "object"
    ]
    return " ".join(words), attrs


def _unique_phrase(objs: list[dict], i: int, rng: np.random.Generator) -> str | None:
    opts = [
        k
        for k in _PHRASES
        if sum(_matches(o, _phrase(objs[i], k)[1]) for o in objs) == 1
    ]
    return None if not opts else _phrase(objs[i], opts[rng.integers(len(opts))])[0]


def _expressions(
    objs: list[dict], visible: np.ndarray, rng: np.random.Generator, n: int
) -> list[Expression]:
    """Up to ``n`` expressions, about half relational, each resolved in 3D and unambiguous."""
    out: list[Expression] = []
    cen = np.array([o["center"] for o in objs])
    n_rel, n_att = (n + 1) // 2, n // 2
    for attempt in range(60 * n):
        if n_rel <= 0 and n_att <= 0:
            break
        t = int(rng.integers(len(objs)))
        if not visible[t]:
            continue
        if n_rel <= 0 or (n_att > 0 and attempt % 3 == 0):  # attribute expression
            p = _unique_phrase(objs, t, rng)
            if p is None:
                continue
            text = f"the {p}"
            out.append(Expression(text, t, "attribute", "", ((t, 4, len(text)),)))
            n_att -= 1
            continue
        keys = (("shape",), ("colour",))[rng.integers(2)]
        p, attrs = _phrase(objs[t], keys)
        cands = [j for j, o in enumerate(objs) if _matches(o, attrs)]
        if len(cands) < 2:
            continue
        rel = ("left of", "right of", "closest to", "farthest from", "between")[
            rng.integers(5)
        ]
        anchors = [j for j in range(len(objs)) if j not in cands and visible[j]]
        need = 2 if rel == "between" else 1
        if len(anchors) < need:
            continue
        a = [int(x) for x in rng.choice(anchors, need, replace=False)]
        aph = [_unique_phrase(objs, j, rng) for j in a]
        if any(x is None for x in aph):
            continue
        ok = False
        if rel in ("left of", "right of"):
            sgn = 1 if rel == "left of" else -1
            # > 0: on the stated side
            side = [sgn * (cen[a[0], 0] - cen[j, 0]) for j in cands]
            yes = [j for j, s in zip(cands, side) if s > 0.1]
            ok = (
                len(yes) == 1
                and yes[0] == t
                and all(s < -0.1 for j, s in zip(cands, side) if j != t)
            )
        elif rel in ("closest to", "farthest from"):
            dist = np.array([np.linalg.norm(cen[j, :2] - cen[a[0], :2]) for j in cands])
            order = np.argsort(dist if rel == "closest to" else -dist)
            ok = cands[order[0]] == t and (
                dist[order[1]] / dist[order[0]] >= 1.3
                if rel == "closest to"
                else dist[order[0]] / dist[order[1]] >= 1.3
            )
        else:
            A, B = cen[a[0], :2], cen[a[1], :2]
            ab = B - A
            s = [float(np.clip((cen[j, :2] - A) @ ab / (ab @ ab), 0, 1)) for j in cands]
            dseg = np.array(
                [np.linalg.norm(cen[j, :2] - (A + sj * ab)) for j, sj in zip(cands, s)]
            )
            inside = [0.15 < sj < 0.85 for sj in s]
            i0 = int(np.argmin(dseg))
            ok = (
                cands[i0] == t
                and inside[i0]
                and dseg[i0] < 0.45
                and all(
                    dseg[j] > 2 * dseg[i0] + 0.2 for j in range(len(cands)) if j != i0
                )
            )
        if not ok:
            continue
        if rel == "between":
            text = f"the {p} between the {aph[0]} and the {aph[1]}"
            s1 = text.index(" between the ") + len(" between the ")
            s2 = text.index(" and the ") + len(" and the ")
            spans = (
                (t, 4, 4 + len(p)),
                (a[0], s1, s1 + len(aph[0])),
                (a[1], s2, s2 + len(aph[1])),
            )
        else:
            text = f"the {p} {rel} the {aph[0]}"
            s1 = len(text) - len(aph[0])
            spans = ((t, 4, 4 + len(p)), (a[0], s1, len(text)))
        out.append(Expression(text, t, "relational", rel, spans))
        n_rel -= 1
    return out


def make_scene(
    rng: np.random.Generator,
    n_views: int = 3,
    res: int = 32,
    feature_res: int = 16,
    n_expressions: int = 4,
    n_objects: tuple[int, int] = (3, 6),
) -> Scene:
    """Render one random scene with ``n_views`` posed RGB-D views and its expressions.

    Args:
        rng: the generator for every draw.
        n_views: views (view 0 faces +y); res: pixels per side; feature_res: feature cells per side
            (divides ``res``); n_expressions: at most this many expressions; n_objects: (low, high)
            object count, inclusive.

    Returns:
        a :class:`Scene` (objects with at least 3 labelled feature cells are referable).

    Raises:
        ValueError: bad sizes, ``feature_res`` not dividing ``res``.
    """
    rng = check_rng(rng)
    V = check_int(n_views, "n_views", low=1)
    res = check_int(res, "res", low=2)
    S = check_int(feature_res, "feature_res", low=1)
    if res % S:
        raise ValueError(f"feature_res = {S} must divide res = {res}")
    lo, hi = (check_int(x, "n_objects", low=1) for x in n_objects)
    objs = _place_objects(rng, int(rng.integers(lo, hi + 1)))
    T = _cameras(rng, V)
    K = np.repeat(_intrinsics(res)[None], V, 0)
    views = [render_view(objs, K[v], T[v], res) for v in range(V)]
    rgb = np.stack([x[0] for x in views])
    rgb = np.clip(rgb + rng.normal(0, 0.02, rgb.shape), 0, 1).astype(np.float32)
    depth = np.stack([x[1] for x in views])
    inst = np.stack([x[2] for x in views])
    xyz_full = _unproject(depth.astype(np.float64), K, T, 15.0)
    V_, H, W, _ = xyz_full.shape
    cells = xyz_full.reshape(V, S, H // S, S, W // S, 3)
    xyz = (
        np.nanmean(cells, axis=(2, 4))
        if np.isfinite(cells).all()
        else _nanmean_cells(cells)
    )
    labels = _cell_labels(inst, S)
    counts = np.bincount(labels.reshape(-1).clip(0), minlength=len(objs) + 1)[1:]
    scene = Scene(objs, rgb, depth, inst, K, T, xyz, labels)
    scene.expressions = _expressions(
        objs, counts >= 3, rng, check_int(n_expressions, "n_expressions", low=0)
    )
    return scene


def _nanmean_cells(cells: np.ndarray) -> np.ndarray:
    ok = np.isfinite(cells).all(-1, keepdims=True)
    n = ok.sum(axis=(2, 4))
    s = np.where(ok, cells, 0).sum(axis=(2, 4))
    return np.where(n > 0, s / np.maximum(n, 1), 0.0)


class SyntheticRGBDScenes:
    """``n_scenes`` rendered multi-view scenes (the 3D grounding set).

    Args:
        n_scenes: scenes; n_views: views per scene; res: pixels per side; rng: generator;
        feature_res: feature cells per side; n_expressions: expressions per scene (at most).

    Raises:
        ValueError: bad sizes.
    """

    def __init__(
        self,
        n_scenes: int,
        n_views: int,
        res: int,
        rng: np.random.Generator,
        feature_res: int = 16,
        n_expressions: int = 4,
    ) -> None:
        n = check_int(n_scenes, "n_scenes", low=1)
        rng = check_rng(rng)
        self.scenes = [
            make_scene(rng, n_views, res, feature_res, n_expressions) for _ in range(n)
        ]

    def __len__(self) -> int:
        """Number of scenes."""
        return len(self.scenes)

    def __getitem__(self, i: int) -> Scene:
        return self.scenes[i]

    def samples(self, kind: str | None = None) -> list[tuple[int, int]]:
        """(scene, expression) index pairs, all or those of one ``kind`` ("attribute"/"relational")."""
        return [
            (i, j)
            for i, s in enumerate(self.scenes)
            for j, e in enumerate(s.expressions)
            if kind is None or e.kind == kind
        ]


class Synthetic2DRef(SyntheticRGBDScenes):
    """Single-view referring images whose pointmap comes from degraded ("monocular") depth.

    The depth is blurred (3x3 box) and scaled by ``1 + N(0, depth_noise)`` per image, then lifted in
    the camera frame with :func:`lift_monocular` (pose = identity, median depth 1), the way UniVLG
    lifts RefCOCO images with MoGe. Camera x is right, as world x is for view 0 of the 3D scenes,
    so "left of" means the same in both sets.

    Raises:
        ValueError: bad sizes, ``depth_noise`` outside [0, 1].
    """

    def __init__(
        self,
        n_scenes: int,
        res: int,
        rng: np.random.Generator,
        feature_res: int = 16,
        n_expressions: int = 4,
        depth_noise: float = 0.1,
    ) -> None:
        noise = check_real(depth_noise, "depth_noise", low=0.0, high=1.0)
        super().__init__(n_scenes, 1, res, rng, feature_res, n_expressions)
        S = check_int(feature_res, "feature_res", low=1)
        for s in self.scenes:
            d = s.depth[0].astype(np.float64)
            pad = np.pad(d, 1, mode="edge")
            blur = (
                sum(
                    pad[i : i + d.shape[0], j : j + d.shape[1]]
                    for i in range(3)
                    for j in range(3)
                )
                / 9
            )
            blur = blur * (1 + rng.normal(0, noise)) if noise > 0 else blur
            pm = lift_monocular(s.rgb[0], np.maximum(blur, 1e-3))
            H = pm.shape[0]
            cells = pm.reshape(S, H // S, S, H // S, 3)
            # camera frame (x right, y down, z forward) -> (x right, y forward,
            # z up), like the 3D scenes
            xyz = cells.mean(axis=(1, 3))
            s.xyz = np.stack([xyz[..., 0], xyz[..., 2], -xyz[..., 1]], -1)[None]
            s.T_cw = np.eye(4)[None]
