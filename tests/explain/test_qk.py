"""The query-key space: q and k from the blocks' own modules reproduce the captured attention."""

from __future__ import annotations

import numpy as np
import pytest


def _hooks(module) -> int:  # noqa: ANN001
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in module.modules())


@pytest.mark.parametrize("choice", ["mae-tiny", "deit-small-distilled:random"])
def test_softmax_of_the_returned_queries_and_keys_is_the_captured_attention(choice, photo_path):
    from vitviz.explain.attention import attention
    from vitviz.explain.qk import normalise, query_key_space
    from vitviz.models.loading import load_choice

    model = load_choice(choice)
    maps = attention(model, photo_path)
    for layer, head in ((0, 0), (maps.depth - 1, maps.num_heads - 1), (2, 1)):
        s = query_key_space(model, photo_path, layer, head)
        assert s.queries.shape == s.keys.shape == (maps.num_tokens, s.queries.shape[1])
        assert s.query_xy.shape == s.key_xy.shape == (maps.num_tokens, 2)
        np.testing.assert_allclose(s.attention(), maps.attentions[layer, head], atol=1e-5)
        # The picture's changes (keys moved to the queries' mean, norms matched) keep every weight.
        qn, kn = normalise(s.queries, s.keys)
        logits = qn @ kn.T * s.scale
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        np.testing.assert_allclose(e / e.sum(axis=1, keepdims=True), maps.attentions[layer, head], atol=1e-5)
        assert 0 < s.explained.sum() <= 1 + 1e-9
    assert _hooks(model.module) == 0  # nothing left behind


def test_projection_is_a_joint_pca():
    from vitviz.explain.qk import normalise, project

    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(20, 8)), rng.normal(size=(20, 8)) + 3.0
    q_xy, k_xy, explained = project(q, k)
    qn, kn = normalise(q, k)
    both = np.concatenate([qn, kn])
    centred = both - both.mean(axis=0)
    xy = np.concatenate([q_xy, k_xy])
    _, _, vt = np.linalg.svd(centred, full_matrices=False)  # the first two right singular vectors, up to sign
    np.testing.assert_allclose(np.abs(xy), np.abs(centred @ vt[:2].T), atol=1e-9)
    s = np.linalg.svd(centred, compute_uv=False) ** 2
    np.testing.assert_allclose(explained, s[:2] / s.sum())
    assert xy[:, 0].var() >= xy[:, 1].var()


def test_bad_layer_or_head_names_the_range(photo_path):
    from vitviz.explain.qk import query_key_space
    from vitviz.models.loading import load_choice

    model = load_choice("mae-tiny")
    with pytest.raises(ValueError, match="layer must be 0..7"):
        query_key_space(model, photo_path, 8, 0)
    with pytest.raises(ValueError, match="head must be 0..2"):
        query_key_space(model, photo_path, 0, 3)
