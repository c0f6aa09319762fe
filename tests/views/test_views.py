"""Per-tab view models (vitviz.views): plain data in and out, no gradio, the library's conventions."""

from __future__ import annotations

import numpy as np
import pytest


def test_no_view_imports_gradio():
    import sys

    import vitviz.views.attention  # noqa: F401
    import vitviz.views.compute  # noqa: F401
    import vitviz.views.mae  # noqa: F401
    import vitviz.views.patches  # noqa: F401
    import vitviz.views.swin  # noqa: F401

    for name, module in list(sys.modules.items()):
        if name.startswith("vitviz.views"):
            assert "gradio" not in getattr(module, "__dict__", {}), name


def test_patches_view_points_are_x_y_fractions(photo_path):
    from vitviz.core.patches import patch_center
    from vitviz.views import patches as pv

    # the default point is patch (row 4, col 9) of a 14x14 grid
    grid = pv.grid_views(str(photo_path), 16, 224, list(pv.DEFAULT_POINT), False)
    assert "row 4, column 9" in grid.token_text
    point = list(patch_center(2, 11, (14, 14)))
    layout = grid.overlay_layout
    x, y = layout.left + point[0] * layout.side, layout.top + point[1] * layout.side
    picked = pv.click_overlay(layout, x, y, None)
    assert np.allclose(picked.point, point, atol=1e-6) and picked.on_cls is False
    assert pv.readouts(pv.grid_view(str(photo_path), 16, 224)[0])["attention_gflops_c768"] > 0


def test_patches_view_refuses_models_it_does_not_offer():
    from vitviz.views import patches as pv

    keys = pv.model_keys()
    assert "mae-tiny" in keys and "vit-base:random" in keys and not any(k.startswith("swin") for k in keys)
    for bad in ("swin-tiny", "/etc/passwd", None):
        with pytest.raises(ValueError, match="choose one of"):
            pv.load(bad)


def test_patches_resolution_recomputes_sincos_only_for_an_mae(photo_path):
    """The sin-cos panel of the Patches tab: recomputed maps and reconstructions for an MAE (fixed 2-D
    sin-cos embeddings); nothing for a model whose embeddings were learned (only interpolation applies)."""
    from vitviz.views import patches as pv

    text, interp, recomputed, recon = pv.resolution_views(str(photo_path), "mae-tiny", 320)
    assert recomputed is not None and recomputed.ndim == 3 and recon is not None
    assert interp.shape[-1] == 3 and "320" in text
    text, interp, recomputed, recon = pv.resolution_views(str(photo_path), "deit-small-distilled:random", 320)
    assert recomputed is None and recon is None and interp.ndim == 3
    assert "resampled bicubically" in text


def test_common_checks_read_as_sentences():
    from vitviz.views.common import as_seed, require_image

    assert as_seed(3.0) == 3
    for bad in (-1, 2.5, "x", float("inf")):
        with pytest.raises(ValueError, match="seed"):
            as_seed(bad)
    with pytest.raises(ValueError, match="Drop an image"):
        require_image(None)


def test_swin_view_says_which_weights(monkeypatch, tmp_path):
    import huggingface_hub.constants

    from vitviz.views import swin as sv

    monkeypatch.setenv("VITVIZ_WEIGHTS_DIR", str(tmp_path))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    a = sv.attention_view(None, 1, 1, 10, 10)
    assert len(a.tiles) == 3 and a.overlay.shape == (448, 448, 3)
    assert "random weights" in a.attn_text
    assert sv.pick(1, 447, 447, rolled=False) == sv.Point(222, 222)


def test_explain_class_picker_lists_every_class_and_refuses_typed_text():
    """Issue 34, bug 2: the class box offers all 1000 ImageNet classes (searchable), and text that names no
    class is the predicted class for the page, never an error."""
    from vitviz.explain.labels import imagenet_labels
    from vitviz.views import explain as ev

    choices = ev.class_choices()
    values = [value for _, value in choices]
    # every Explain model's classes: ImageNet's, then dinov2-small-lab8's 8 (the server validates a pick against them)
    assert values[0] == ev.PREDICTED and sorted(values[1:]) == sorted(ev.all_class_names())
    assert set(imagenet_labels()) < set(values) and {"bird", "renewable energy"} < set(values)
    assert len(values) == len(set(values)) == 1 + 1000 + 8
    assert ev.page_class("predicted class (top-1)macaw") == ev.PREDICTED
    assert ev.page_class("macaw") == "macaw" and ev.page_class("88") == imagenet_labels()[88]
    assert ev.page_class("5000") == ev.PREDICTED and ev.page_class("") == ev.PREDICTED
