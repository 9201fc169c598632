"""Chapter 08 (UniVLG): geometry by hand, scatter means, Hungarian vs brute force, losses by formula,
positive maps on crafted sentences, ray-caster depths in closed form, the model's invariances,
the shipped weights, and every bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy.spatial import cKDTree

from icml25 import univlg
from icml25.checks import TooLargeError  # noqa: F401  (the budget error type exists)


def _cams(V=2, res=8, seed=0):
    rng = np.random.default_rng(seed)
    K = np.repeat(np.array([[[10.0, 0, 3.5], [0, 12.0, 3.5], [0, 0, 1]]]), V, 0)
    T = np.stack(
        [
            univlg.look_at(rng.normal(size=3) * 3 + [0, 0, 4], [0, 0, 0])
            for _ in range(V)
        ]
    )
    depth = rng.uniform(1, 5, size=(V, res, res))
    return depth, K, T


@pytest.fixture(scope="module")
def minilm():
    from icml25.common import load_minilm

    return load_minilm()


# ----------------------------------------------------------------------------- geometry


def test_unproject_matches_hand_computation():
    depth, K, T = _cams()
    X = univlg.unproject(depth, K, T)
    v, u, view = 2, 5, 1
    d = depth[view, v, u]
    cam = np.array([(u - 3.5) * d / 10.0, (v - 3.5) * d / 12.0, d, 1.0])
    assert np.allclose(X[view, v, u], (T[view] @ cam)[:3])


def test_project_inverts_unproject_and_holes_are_nan():
    depth, K, T = _cams()
    depth[0, 0, 0], depth[1, 2, 3] = 0.0, 20.0
    X = univlg.unproject(depth, K, T)
    assert np.isnan(X[0, 0, 0]).all() and np.isnan(X[1, 2, 3]).all()
    uvz = univlg.project(X, K, T)
    v, u = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    ok = np.isfinite(uvz[..., 0])
    assert (
        np.abs(uvz[..., 0] - u)[ok].max() < 1e-9
        and np.abs(uvz[..., 1] - v)[ok].max() < 1e-9
    )


@pytest.mark.parametrize(
    "which", ["K_shape", "K_singular", "T_shape", "T_nonrigid", "depth_ndim"]
)
def test_unproject_refuses_bad_cameras(which):
    depth, K, T = _cams()
    if which == "K_shape":
        K = K[:1]
    elif which == "K_singular":
        K[0, 0, 0] = 0.0
        K[0, 0, 2] = 0.0
        K[0, 1, :] = 0.0
    elif which == "T_shape":
        T = T[:, :3]
    elif which == "T_nonrigid":
        T[0, :3, :3] *= 2.0
    else:
        depth = depth[0]
    with pytest.raises(ValueError, match="K|T_cw|depth"):
        univlg.unproject(depth, K, T)


def test_lift_monocular_normalises_scale():
    d = np.random.default_rng(0).uniform(2, 4, (8, 8))
    P = univlg.lift_monocular(np.zeros((8, 8, 3)), d)
    assert P.shape == (8, 8, 3) and abs(np.median(P[..., 2]) - 1) < 1e-12
    # scale-free
    assert np.allclose(univlg.lift_monocular(np.zeros((8, 8, 3)), 3 * d), P)
    with pytest.raises(ValueError):
        univlg.lift_monocular(np.zeros((8, 8, 3)), -d)
    with pytest.raises(ValueError):
        univlg.lift_monocular(np.zeros((8, 8, 3)), d[:4])
    with pytest.raises(ValueError):
        univlg.lift_monocular(np.zeros((8, 8, 3)), d, fov_deg=180)


def test_resample_xyz_averages_valid_points():
    X = np.random.default_rng(1).normal(size=(1, 4, 4, 3))
    X[0, 0, 0] = np.nan
    X[0, 2:, 2:] = np.nan
    R = univlg.resample_xyz(X, 2)
    assert np.allclose(R[0, 0, 0], X[0, [0, 1, 1], [1, 0, 1]].mean(0))
    assert np.isnan(R[0, 1, 1]).all()
    with pytest.raises(ValueError):
        univlg.resample_xyz(X, 3)
    with pytest.raises(ValueError):
        univlg.resample_xyz(X[..., :2], 2)


def test_voxelize_matches_scatter_reduce_mean():
    rng = np.random.default_rng(2)
    X, Fe = rng.uniform(0, 1, (500, 3)), rng.normal(size=(500, 5))
    vf, vx, p2v = univlg.voxelize(X, Fe, 0.25)
    idx = torch.from_numpy(p2v)
    want = torch.zeros(len(vf), 5, dtype=torch.float64).scatter_reduce(
        0,
        idx[:, None].expand(-1, 5),
        torch.from_numpy(Fe),
        reduce="mean",
        include_self=False,
    )
    assert np.allclose(vf, want.numpy())
    keys = np.floor(X / 0.25).astype(int)
    assert all(len({tuple(k) for k in keys[p2v == j]}) == 1 for j in range(len(vf)))
    assert np.allclose(vx[p2v].min(), vx.min()) and vf[p2v].shape == Fe.shape
    with pytest.raises(ValueError):
        univlg.voxelize(X, Fe[:10], 0.25)
    with pytest.raises(ValueError):
        univlg.voxelize(X, Fe, 0.0)


def test_knn_points_across_views_per_scene():
    rng = np.random.default_rng(4)
    pts = rng.normal(size=(2, 120, 3)).astype(np.float32)
    b = np.repeat([0, 1], 120)
    idx = univlg.knn_points(pts.reshape(-1, 3), pts.reshape(-1, 3), 8, b, b)
    for s in range(2):
        _, want = cKDTree(pts[s]).query(pts[s], 8)
        assert np.array_equal(idx[b == s] - 120 * s, want)


def test_disparity_to_depth():
    D = univlg.disparity_to_depth(np.array([[2.0, 0.0]]), 100.0, 0.5)
    assert D[0, 0] == 25.0 and np.isnan(D[0, 1])
    with pytest.raises(ValueError):
        univlg.disparity_to_depth(np.ones((2, 2)), -1.0, 0.5)


# ----------------------------------------------------------------------------- data


def test_ray_caster_depths_in_closed_form():
    res = 33
    K = univlg.data._intrinsics(res)
    # horizontal view through the sphere's centre
    T = univlg.look_at([0, -4, 1.0], [0, 0, 1.0])
    obj = {
        "shape": "sphere",
        "center": np.array([0.0, 0.0, 1.0]),
        "radius": 0.5,
        "rgb": np.ones(3),
    }
    rgb, depth, inst = univlg.render_view([obj], K, T, res)
    c = res // 2
    assert inst[c, c] == 1 and abs(depth[c, c] - 3.5) < 1e-5
    # a floor pixel: the ray through pixel (u, v) meets z = 0 at depth h / (down
    # component per unit depth)
    v = res - 1
    ray = np.array([(c - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], 1.0])
    world = T[:3, :3] @ ray
    assert inst[v, c] == 0 and abs(depth[v, c] - 1.0 / -world[2]) < 1e-4
    for shape in ("cube", "cylinder", "cone"):
        o = dict(obj, shape=shape)
        _, d, i = univlg.render_view([o], K, T, res)
        assert (
            i[c, c] == 1
            and abs(d[c, c] - 3.5) < 1e-4
            or (shape == "cone" and i[c, c] == 1)
        )


def test_expressions_are_resolved_in_3d_and_spans_match():
    ds = univlg.SyntheticRGBDScenes(25, 3, 32, np.random.default_rng(5))
    n_rel = 0
    for sc in ds.scenes:
        for e in sc.expressions:
            objs = sc.objects
            t, a, b = e.spans[0]
            assert t == e.target and e.text[a:b].split()[-1] in (
                objs[t]["shape"],
                "object",
            )
            if e.relation == "left of":
                anchor = e.spans[1][0]
                assert objs[t]["center"][0] < objs[anchor]["center"][0]
            if e.relation == "closest to":
                anchor = e.spans[1][0]
                words = e.text[a:b].split()
                same = [
                    j
                    for j, o in enumerate(objs)
                    if (o["shape"] == words[0] or o["colour"] == words[0])
                    and j != anchor
                ]
                dist = [
                    np.linalg.norm(objs[j]["center"] - objs[anchor]["center"])
                    for j in same
                ]
                assert same[int(np.argmin(dist))] == t
            n_rel += e.kind == "relational"
    assert n_rel > 10


def test_scene_labels_cover_targets_and_data_refuse_bad_sizes():
    sc = univlg.make_scene(np.random.default_rng(6))
    for e in sc.expressions:
        assert (sc.point_labels == e.target + 1).sum() >= 3
    with pytest.raises(ValueError):
        univlg.make_scene(np.random.default_rng(0), res=32, feature_res=5)
    with pytest.raises(TypeError):
        univlg.SyntheticRGBDScenes(2, 3, 32, 0)
    with pytest.raises(ValueError):
        univlg.Synthetic2DRef(2, 32, np.random.default_rng(0), depth_noise=2.0)


# ----------------------------------------------------------------------------- text


def test_positive_map_on_hand_offsets():
    off = [(0, 0), (0, 3), (4, 7), (8, 14), (0, 0)]  # [CLS] the red sphere [SEP]
    pm = univlg.positive_map(off, [(4, 14), (8, 14)], 6)
    assert np.allclose(pm[0], [0, 0, 0.5, 0.5, 0, 0]) and np.allclose(
        pm[1], [0, 0, 0, 1, 0, 0]
    )
    with pytest.raises(ValueError):
        univlg.positive_map(off, [(20, 25)], 6)
    with pytest.raises(ValueError):
        univlg.positive_map(off, [(4, 7)], 3)


def test_positive_map_with_the_fast_tokenizer(minilm):
    enc = univlg.TextEncoder(16, minilm)
    text = "the purple cylinder closest to the large orange cone"
    ((h, off),) = enc.tokens([text])
    a = text.index("large orange cone")
    pm = univlg.positive_map(off, [(4, 19), (a, len(text))], len(off))
    toks = minilm[1].convert_ids_to_tokens(minilm[1](text)["input_ids"])
    assert {toks[i] for i in np.flatnonzero(pm[0])} == {"purple", "cylinder"}
    assert {toks[i] for i in np.flatnonzero(pm[1])} == {"large", "orange", "cone"}
    T, pad, maps = enc.encode([text, "the cube"], [[(4, 19)], [(4, 8)]])
    assert (
        T.shape == (2, len(off), 16)
        and pad[1].sum() == len(off) - 4
        and maps[1].shape == (1, len(off))
    )
    with pytest.raises(ValueError):
        enc.encode([])


# ----------------------------------------------------------------------------- losses


def test_hungarian_matches_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(5):
        C = rng.normal(size=(5, 3))
        rows, cols = univlg.hungarian_match(C)
        best = min(
            itertools.permutations(range(5), 3),
            key=lambda p: sum(C[p[j], j] for j in range(3)),
        )
        assert np.isclose(C[rows, cols].sum(), sum(C[best[j], j] for j in range(3)))
    with pytest.raises(ValueError):
        univlg.hungarian_match(np.zeros((2, 3)))
    with pytest.raises(ValueError):
        univlg.hungarian_match(np.full((3, 2), np.nan))


def test_focal_and_dice_by_formula():
    x = torch.tensor([[2.0, -1.0, 0.5]])
    t = torch.tensor([[1.0, 0.0, 1.0]])
    p = 1 / (1 + np.exp(-x.numpy()))
    pt = np.where(t.numpy() == 1, p, 1 - p)
    at = np.where(t.numpy() == 1, 0.25, 0.75)
    assert np.allclose(
        univlg.sigmoid_focal_loss(x, t).numpy(),
        -at * (1 - pt) ** 2 * np.log(pt),
        atol=1e-6,
    )
    want = 1 - (2 * (p * t.numpy()).sum() + 1) / (p.sum() + t.numpy().sum() + 1)
    assert np.isclose(float(univlg.dice_loss(x, t)[0]), want, atol=1e-6)
    with pytest.raises(ValueError):
        univlg.dice_loss(x, t[:, :2])
    with pytest.raises(ValueError):
        univlg.sigmoid_focal_loss(x, t, gamma=-1.0)


def test_token_grounding_loss_ignores_padding_and_weights_queries():
    g = torch.tensor([[3.0, -3.0, 100.0], [-2.0, -2.0, -100.0]])
    pm = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    valid = torch.tensor([True, True, False])
    loss = univlg.token_grounding_loss(g, pm, valid, torch.tensor([1.0, 0.1]))
    f = univlg.sigmoid_focal_loss(g[:, :2], pm[:, :2]).mean(1)
    assert torch.isclose(loss, (f[0] + 0.1 * f[1]) / 1.1)
    with pytest.raises(ValueError):
        univlg.token_grounding_loss(g, pm[:, :2], valid)


def test_box_l1_giou_3d_by_hand():
    a = torch.tensor([[0.0, 0, 0, 1, 1, 1]])
    b = torch.tensor([[0.5, 0, 0, 1.5, 1, 1]])
    l1, gl = univlg.box_l1_giou_3d(a, b)
    # IoU 1/3, hull = union
    assert torch.isclose(l1, torch.tensor(1.0 / 6)) and torch.isclose(
        gl, torch.tensor(1 - 1 / 3)
    )
    with pytest.raises(ValueError):
        univlg.box_l1_giou_3d(a, torch.tensor([[1.0, 0, 0, 0, 1, 1]]))


# ------------------------------------------------------------------- metrics, baselines


def test_metrics_by_hand():
    B = lambda *x: np.array(x, dtype=bool)  # noqa: E731
    assert univlg.mask_iou_3d(B(1, 1, 0, 0), B(1, 0, 1, 0)) == pytest.approx(1 / 3)
    assert univlg.mask_iou_3d(B(0, 0), B(0, 0)) == 0.0
    xyz = np.array([[0, 0, 0], [1, 2, 3], [5, 5, 5.0]])
    assert np.allclose(
        univlg.box_from_mask(xyz, B(1, 1, 0), pad=0.0), [0, 0, 0, 1, 2, 3]
    )
    assert np.isnan(univlg.box_from_mask(xyz, B(0, 0, 0))).all()
    gt = np.array([[0, 0, 0, 1, 1, 1.0]] * 3)
    # IoU 1, 0.4, empty mask
    pred = np.array([[0, 0, 0, 1, 1, 1.0], [0, 0, 0, 1, 1, 0.4], [np.nan] * 6])
    assert univlg.acc_at_iou(pred, gt) == {
        0.25: pytest.approx(2 / 3),
        0.5: pytest.approx(1 / 3),
    }
    with pytest.raises(ValueError):
        univlg.acc_at_iou(pred, gt, thr=(0.0,))
    with pytest.raises(ValueError):
        univlg.mask_iou_3d(B(1, 0), B(1, 0, 0))


def test_keyword_heuristic_finds_a_uniquely_coloured_object():
    rng = np.random.default_rng(8)
    hits = []
    for _ in range(15):
        sc = univlg.make_scene(rng)
        for e in sc.expressions:
            words = e.text.split()
            if (
                e.kind == "attribute"
                and any(w in univlg.COLOURS for w in words)
                and sum(o["colour"] in words for o in sc.objects) == 1
            ):
                m = univlg.keyword_heuristic(sc, e)
                hits.append(
                    univlg.mask_iou_3d(m, sc.point_labels == e.target + 1) > 0.5
                )
    assert len(hits) > 5 and np.mean(hits) > 0.8


def test_paired_bootstrap():
    a, b = np.array([1.0, 1, 0, 1, 1, 0]), np.array([0.0, 1, 0, 0, 1, 0])
    r = univlg.paired_bootstrap(a, b, np.random.default_rng(0), n_reps=500)
    assert (
        r["diff"] == pytest.approx(2 / 6) and 0 <= r["lo"] <= r["diff"] <= r["hi"] <= 1
    )
    with pytest.raises(ValueError):
        univlg.paired_bootstrap(a, b[:3], np.random.default_rng(0))


# ----------------------------------------------------------------------------- model


def test_relpos_attention_is_translation_invariant_not_rotation_invariant():
    torch.manual_seed(0)
    layer = univlg.RelPos3DAttention(16, k=8, layers=2, heads=2)
    xyz = torch.randn(60, 3)
    f = torch.randn(60, 16)
    idx = torch.from_numpy(univlg.knn_points(xyz.numpy(), xyz.numpy(), 8))
    out = layer(f, xyz, idx)
    assert torch.allclose(
        out, layer(f, xyz + torch.tensor([3.0, -2.0, 7.0]), idx), atol=1e-5
    )
    R = torch.tensor([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    assert not torch.allclose(out, layer(f, xyz @ R.T, idx), atol=1e-3)
    with pytest.raises(ValueError):
        layer(f, xyz[:10], idx)
    with pytest.raises(ValueError):
        layer(f, xyz, idx + 60)


def _scene_batch(model, n=2):
    ds = univlg.SyntheticRGBDScenes(n, 3, 32, np.random.default_rng(9))
    cache = univlg.build_cache(ds, model.backbone)
    return cache, univlg.make_batch(
        cache, list(range(min(4, len(cache.samples)))), model
    )


def test_zero_init_adapter_keeps_2d_features_and_one_decoder_serves_2d_and_3d(minilm):
    torch.manual_seed(0)
    model = univlg.UniVLG(
        univlg.UniVLGConfig(dim=32, n_queries=4, heads=2, decoder_layers=2), minilm
    )
    cache, (views, sentences, targets, pad) = _scene_batch(model)
    with torch.no_grad():
        a = model.forward_3d(views, sentences)
        b = model.forward_3d(views, sentences, use_3d_layers=False)
        img = torch.rand(len(sentences), 3, 32, 32)
        p2 = model.forward_2d(img, sentences)
    for sa, sb in zip(a, b):
        assert torch.allclose(sa["masks"], sb["masks"], atol=1e-6)
    assert a[-1]["masks"].shape == (len(sentences), 4, 768) and p2[-1][
        "masks"
    ].shape == (len(sentences), 4, 256)
    assert len(a) == 3 and all(torch.isfinite(s["masks"]).all() for s in a)
    loss = univlg.set_loss(model.forward_3d(views, sentences), targets, pad)
    loss.backward()
    assert torch.isfinite(loss) and model.adapter.head[-1].weight.grad.abs().sum() > 0
    with pytest.raises(ValueError):
        model.forward_3d(views, sentences[:1])
    with pytest.raises(ValueError):
        model.forward_3d({"xyz": views["xyz"]}, sentences)
    with pytest.raises(ValueError):
        model.forward_2d(img, sentences[:1])


def test_box_decoder_predicts_valid_boxes(minilm):
    torch.manual_seed(0)
    model = univlg.UniVLG(
        univlg.UniVLGConfig(
            dim=32, n_queries=4, heads=2, decoder_layers=1, decoder="box"
        ),
        minilm,
    )
    cache, (views, sentences, targets, pad) = _scene_batch(model)
    out = model.forward_3d(views, sentences)[-1]
    assert "masks" not in out and (out["boxes"][..., 3:] > out["boxes"][..., :3]).all()
    assert torch.isfinite(
        univlg.set_loss(model.forward_3d(views, sentences), targets, pad)
    )
    with pytest.raises(ValueError):
        univlg.UniVLG(univlg.UniVLGConfig(decoder="boxes"), minilm)


def test_training_lowers_the_loss(minilm):
    torch.manual_seed(0)
    model = univlg.UniVLG(
        univlg.UniVLGConfig(dim=32, n_queries=4, heads=2, decoder_layers=1), minilm
    )
    cache, _ = _scene_batch(model, n=3)
    h = univlg.train_grounding(
        model, [cache], 25, np.random.default_rng(0), batch_size=4, lr=3e-3
    )
    assert np.mean(h["loss"][-5:]) < np.mean(h["loss"][:5])
    r = univlg.evaluate_grounding(model, cache)
    assert len(r["iou"]) == len(cache.samples) and 0 <= r["acc25"] <= 1
    with pytest.raises(ValueError):
        univlg.train_grounding(model, [], 5, np.random.default_rng(0))


def test_shipped_weights_load_and_stay_small(minilm):
    assert univlg.WEIGHTS_PATH.exists(), (
        "run python -m icml25.univlg.train (data/08-univlg/README.md)"
    )
    assert univlg.WEIGHTS_PATH.stat().st_size <= 5 * 2**20
    backbone, models, meta = univlg.load_weights(minilm=minilm)
    assert set(models) == {"full", "no3d", "box", "scarce_3donly", "scarce_cotrain"}
    assert models["no3d"].adapter is None and models["box"].cfg.decoder == "box"
    assert all(m.backbone is backbone for m in models.values())
    with pytest.raises(FileNotFoundError):
        univlg.load_weights("/nonexistent/weights.pt", minilm=minilm)


def test_bad_configs_cameras_spans_and_loop_arguments_raise(minilm):
    for bad in (
        dict(dim=-1),
        dict(n_queries=0),
        dict(dim=64, heads=5),
        dict(k=0),
        dict(k=17),
        dict(temperature=0.0),
        dict(decoder="boxes"),
        dict(decoder_layers=0),
    ):
        with pytest.raises(ValueError):
            univlg.UniVLGConfig(**bad)
    with pytest.raises(TypeError):
        univlg.UniVLGConfig(use_3d="yes")
    with pytest.raises(ValueError, match="target"):
        univlg.look_at([0, 0, 1], [0, 0, 1])
    with pytest.raises(ValueError, match="vertical"):
        univlg.look_at([0, 0, 3], [0, 0, 0])
    with pytest.raises(ValueError, match="spans"):
        univlg.positive_map([(0, 0), (0, 3)], [(-3, 2)], 2)
    torch.manual_seed(0)
    model = univlg.UniVLG(
        univlg.UniVLGConfig(dim=32, n_queries=4, heads=2, decoder_layers=1), minilm
    )
    cache, _ = _scene_batch(model)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="time_limit_s"):
        univlg.train_grounding(model, [cache], 5, rng, time_limit_s=-1.0)
    with pytest.raises(ValueError, match="time_limit_s"):
        univlg.train_grounding(model, [cache], 5, rng, time_limit_s=float("nan"))
    with pytest.raises(ValueError, match="weight_decay"):
        univlg.train_grounding(model, [cache], 5, rng, weight_decay=-0.1)
    with pytest.raises(TypeError, match="sources"):
        univlg.train_grounding(model, cache, 5, rng)
    with pytest.raises(ValueError, match="batch_size"):
        univlg.evaluate_grounding(model, cache, batch_size=0)
    with pytest.raises(TypeError, match="cache"):
        univlg.evaluate_grounding(model, [cache])
    with pytest.raises(ValueError, match="picks"):
        univlg.make_batch(cache, [len(cache.samples)], model)
    with pytest.raises(ValueError, match="picks"):
        univlg.make_batch(cache, [], model)
    with pytest.raises(ValueError, match="batch_size"):
        univlg.pretrain_backbone(model.backbone, cache.dataset, 1, rng, batch_size=0)
