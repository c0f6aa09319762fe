"""The head atlas: entropy, prefix and self shares, and the type rule on hand-built attention."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.explain.heads import (HEAD_TYPES, LOCAL_RATIO, SELF_SHARE, SINK_SHARE, atlas_of, attention_entropy,
                                  average, classify_heads, head_statistics, prefix_share, self_share)
from vitviz.explain.layout import TokenLayout
from vitviz.explain.rollout import mean_attention_distance, uniform_distance


def _layout(grid: tuple[int, int] = (4, 4), prefix: tuple[str, ...] = ("cls",), patch: int = 16) -> TokenLayout:
    gh, gw = grid
    rc = np.stack(np.divmod(np.arange(gh * gw), gw), axis=1).astype(np.int64)
    return TokenLayout(prefix, rc, grid, patch, np.zeros(grid, bool), np.zeros(gh * gw, bool))


def _rows(lay: TokenLayout, kind: str) -> np.ndarray:
    """A (T, T) attention of one hand-built kind."""
    t, p0 = lay.num_tokens, lay.num_prefix
    if kind == "uniform":
        return np.full((t, t), 1.0 / t)
    if kind == "sink":  # every token on the first prefix token
        a = np.zeros((t, t))
        a[:, 0] = 1.0
        return a
    if kind == "self":
        return np.eye(t)
    if kind == "local":  # each patch spreads over its 4-neighbours (and itself a little)
        a = np.zeros((t, t))
        a[:p0] = 1.0 / t
        for i, (r, c) in enumerate(lay.patch_rc):
            near = [j for j, (r2, c2) in enumerate(lay.patch_rc) if abs(r - r2) + abs(c - c2) == 1]
            a[p0 + i, [p0 + j for j in near]] = 0.9 / len(near)
            a[p0 + i, p0 + i] = 0.1
        return a
    raise ValueError(kind)


def _stack(lay: TokenLayout, kinds: list[list[str]]) -> np.ndarray:
    return np.stack([np.stack([_rows(lay, k) for k in layer]) for layer in kinds]).astype(np.float32)


def test_entropy_is_one_for_uniform_rows_and_zero_for_one_hot_rows():
    lay = _layout()
    a = _stack(lay, [["uniform", "self", "sink"]])
    ent = attention_entropy(a, lay)
    assert ent.shape == (1, 3)
    assert ent[0, 0] == pytest.approx(1.0, abs=1e-6)
    assert ent[0, 1] == pytest.approx(0.0, abs=1e-6) and ent[0, 2] == pytest.approx(0.0, abs=1e-6)
    half = np.zeros((1, 1, lay.num_tokens, lay.num_tokens), np.float32)
    half[..., :2] = 0.5  # two equal keys: log 2 / log T
    assert attention_entropy(half, lay)[0, 0] == pytest.approx(np.log(2) / np.log(lay.num_tokens), rel=1e-5)


def test_prefix_and_self_shares():
    lay = _layout(prefix=("cls", "reg0"))
    a = _stack(lay, [["uniform", "sink", "self"]])
    t = lay.num_tokens
    np.testing.assert_allclose(prefix_share(a, lay)[0], [2 / t, 1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(self_share(a, lay)[0], [1 / t, 0.0, 1.0], atol=1e-6)
    mixed = np.zeros((1, 1, t, t), np.float32)  # patch queries: 0.3 on cls, 0.2 on themselves, rest on reg0
    mixed[..., 0] = 0.3
    mixed[..., 1] = 0.5
    idx = np.arange(t)
    mixed[0, 0, idx[2:], idx[2:]] = 0.2
    mixed[0, 0, 2:, 1] = 0.5
    mixed[0, 0, 2:, 0] = 0.3
    assert prefix_share(mixed, lay)[0, 0] == pytest.approx(0.8, abs=1e-6)
    assert self_share(mixed, lay)[0, 0] == pytest.approx(0.2, abs=1e-6)


def test_head_types_follow_the_stated_rule():
    lay = _layout()
    a = _stack(lay, [["sink", "self", "local", "uniform"]])
    atlas = atlas_of("hand-built", a, lay)
    assert list(atlas.type_names()[0]) == ["prefix-sink", "self", "local", "global"]
    assert atlas.counts() == {"prefix-sink": 1, "self": 1, "local": 1, "global": 1}
    np.testing.assert_allclose(atlas.distance, mean_attention_distance(a, lay))  # the one distance formula
    u = uniform_distance(lay)
    # The thresholds, and the order in which they are tested.
    d = np.array([[0.0, 0.0, LOCAL_RATIO * u, LOCAL_RATIO * u + 1e-6, 0.0]])
    p = np.array([[SINK_SHARE, SINK_SHARE - 1e-6, 0.0, 0.0, SINK_SHARE]])
    s = np.array([[0.0, SELF_SHARE, 0.0, 0.0, 1.0]])
    assert [HEAD_TYPES[i] for i in classify_heads(d, p, s, u)[0]] == ["prefix-sink", "self", "local", "global",
                                                                       "prefix-sink"]


def test_statistics_check_the_shape_and_average_over_images():
    lay = _layout()
    with pytest.raises(ValueError, match="attentions must be"):
        head_statistics(np.zeros((2, 3, 5, 5)), lay)
    one = atlas_of("m", _stack(lay, [["sink", "uniform"]]), lay)
    two = atlas_of("m", _stack(lay, [["self", "uniform"]]), lay)
    mean = average([one, two])
    assert mean.images == 2
    np.testing.assert_allclose(mean.prefix_share, (one.prefix_share + two.prefix_share) / 2)
    assert list(mean.type_names()[0]) == ["prefix-sink", "global"]  # 0.5 on the prefix: the rule's threshold


def test_head_atlas_of_mae_tiny_and_the_example_average(photo_path):
    from vitviz.assets import example_images
    from vitviz.explain.heads import EXAMPLE_CACHE, head_atlas
    from vitviz.models.loading import load_choice

    model = load_choice("mae-tiny")
    atlas = head_atlas(model, photo_path)
    assert atlas.distance.shape == (8, 3) and atlas.images == 1 and atlas.prefix == ("cls",)
    assert np.all((atlas.entropy >= 0) & (atlas.entropy <= 1))
    EXAMPLE_CACHE.clear()
    mean = head_atlas(model)
    assert mean.images == len(example_images())
    computed = EXAMPLE_CACHE.computed
    assert head_atlas(model) is mean and EXAMPLE_CACHE.computed == computed  # cached per model
