"""The Features views on real models: PCA panels, correspondence, probes by depth (held out),
class token vs average pooling, LLRD; errors as sentences."""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.assets import example_images


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_pca_view_draws_four_images_and_states_the_variance(photo_path):
    from vitviz.views import features as v

    panel, text = v.pca_view(str(photo_path), "mae-tiny", 8, False)
    assert panel.dtype == np.uint8 and panel.shape[1] >= 4 * v.PANEL
    assert "block 8" in text and "Joint PCA over 4 images" in text
    fg, fg_text = v.pca_view(str(photo_path), "mae-tiny", 0, True)
    assert "Foreground share" in fg_text and not np.array_equal(fg, panel)


def test_similarity_view_marks_the_query_and_a_best_match(photo_path):
    from vitviz.views import features as v

    others = dict(v.example_choices())
    left, right, text = v.similarity_view(str(photo_path), "mae-tiny", 4, 3, 5, list(others)[0])
    assert left.shape == right.shape == (v.VIEW_PX, v.VIEW_PX, 3)
    assert "row 3, col 5" in text and "best match" in text
    left2, _, _ = v.similarity_view(str(photo_path), "mae-tiny", 4, 10, 1, list(others)[0])
    assert not np.array_equal(left, left2)
    assert v.pick_patch(str(photo_path), "mae-tiny", 4, v.VIEW_PX - 1, 0) == (0, 13)


def test_probes_are_fitted_on_other_images_than_they_are_scored_on(photo_path):
    from vitviz.models.loading import load_model
    from vitviz.views import features as v

    model = load_model("mae-tiny")
    table, control = v.probe_tables(model, str(photo_path))
    assert set(table.split.fit).isdisjoint(table.split.score) and table.split.score == (0,)
    assert table.split.names[0] == "this image" and len(table.split.fit) == len(example_images()) - 1
    assert table.r2.shape == (9, 4) and control.shuffled
    assert "fitted on 3 images" in table.describe() and "R^2 on 1 other image" in table.describe()
    fig, rows, text = v.probe_view(str(photo_path), "mae-tiny")
    assert len(rows) == 9 and rows[0][1] == "embedding" and len(fig.data) == 8
    assert "peaks at layer" in text


def test_pooling_view_for_a_classifier_an_mae_and_swin(photo_path):
    from vitviz.views import features as v

    fig, cls_top, gap_top, att, text = v.pooling_view(str(photo_path), "deit-small-distilled:random")
    assert len(fig.data[0].y) == 13 and len(cls_top) == 5 and len(gap_top) == 5
    assert att.shape == (v.PANEL, 2 * v.PANEL + 12, 3)
    assert "trained on **the class token**" in text and "mean nothing" in text
    fig, cls_top, gap_top, att, text = v.pooling_view(str(photo_path), "mae-tiny")
    assert cls_top is None and gap_top is None and "no classifier head" in text and len(fig.data[0].y) == 9
    fig, top, gap_top, att, text = v.pooling_view(str(photo_path), "swin-tiny:random")
    assert fig is None and att is None and "no class token" in text and len(top) == 5


def test_llrd_view_states_the_formula():
    from vitviz.views import features as v

    fig, text = v.llrd_view()
    assert len(fig.data) == 6 and "decay ** (L - i)" in text


def test_errors_are_sentences(photo_path):
    from vitviz.views import features as v

    with pytest.raises(ValueError, match="layer must be 0..8"):
        v.pca_view(str(photo_path), "mae-tiny", 9, False)
    with pytest.raises(ValueError, match="second image"):
        v.similarity_view(str(photo_path), "mae-tiny", 1, 0, 0, "nope")
    with pytest.raises(ValueError, match="Drop an image"):
        v.probe_view(None, "mae-tiny")


def test_warm_probes_prepares_every_fit_a_new_photo_needs(photo_path, tmp_path):
    """After the app's warm-up (vitviz.ui.warmup), a new photo's probes find the token side of every fit ready:
    no eigendecomposition is computed for it, and its numbers equal a cold computation's."""
    from vitviz.features import probes
    from vitviz.models.loading import load_choice
    from vitviz.views import features as v

    from PIL import Image

    photo = tmp_path / "new.png"  # no example photo: fitted on the photos of the first view (probe_tables)
    Image.open(photo_path).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(photo)
    model = load_choice("mae-tiny")
    probes._DESIGNS.clear()
    v._PROBES.clear()
    cold, cold_control = v.probe_tables(model, photo)
    probes._DESIGNS.clear()
    v._PROBES.clear()
    v.warm_probes("mae-tiny")
    ready = len(probes._DESIGNS)
    warm, warm_control = v.probe_tables(model, photo)
    assert ready > 0 and len(probes._DESIGNS) == ready
    assert np.array_equal(warm.r2, cold.r2) and np.array_equal(warm_control.r2, cold_control.r2)
    assert np.array_equal(warm.alpha, cold.alpha)


def test_a_new_photos_probes_reuse_the_fits_of_the_tabs_first_view(photo_path, tmp_path):
    """A photo that is no example is fitted on the photos the first view (the default example) is fitted on,
    so its probes need no new decomposition (65 of them on dinov2-small: 1.4 s on a 2-core CPU)."""
    from PIL import Image

    from vitviz.assets import default_example
    from vitviz.features import probes
    from vitviz.models.loading import load_choice
    from vitviz.views import features as v

    model = load_choice("mae-tiny")
    probes._DESIGNS.clear()
    v._PROBES.clear()
    first, _ = v.probe_tables(model, default_example())
    made = len(probes._DESIGNS)
    photo = tmp_path / "new.png"
    Image.open(photo_path).transpose(Image.Transpose.FLIP_TOP_BOTTOM).save(photo)
    table, _ = v.probe_tables(model, photo)
    assert made > 0 and len(probes._DESIGNS) == made  # every fit's decomposition was there
    fitted = [table.split.names[i] for i in table.split.fit]
    assert fitted == [first.split.names[i] for i in first.split.fit]  # the same fitting photos
    assert len(fitted) == len(example_images()) - 1 and table.split.names[0] == "this image"
