"""The heads the texts describe are the heads the app's own rule finds: mae-tiny's two early heads given a
positional start (attention help, docs/sources.md), dinov2-small on chelsea (the Heads screenshot's paragraph in
docs/screenshots.md: head counts, where the local heads sit, the query-key PCA's variance shares)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np

import vitviz
from vitviz.assets import example_images

ROOT = Path(__file__).resolve().parents[2]


def _chelsea():
    return vitviz.load_image(next(p for p in example_images() if str(p).endswith("chelsea.jpg")))


def test_mae_tiny_early_heads_are_one_self_and_one_global_on_chelsea() -> None:
    h = vitviz.head_atlas(vitviz.load_model("mae-tiny", device="cpu"), _chelsea())
    names = h.type_names()
    assert names[0, 0] == "self" and round(float(h.self_share[0, 0]), 2) == 0.98
    assert names[1, 2] == "global" and round(float(h.distance[1, 2])) == 62
    assert vitviz.head_atlas(vitviz.load_model("mae-tiny", device="cpu")).type_names()[1, 2] == "local"
    text = " ".join((resources.files("vitviz.ui") / "helptext" / "attention.md").read_text().split())
    assert "one *self* head (98% of its attention on itself) and one global (62 px;" in text


def test_the_heads_screenshot_paragraph_is_what_dinov2_small_shows(dinov2_small) -> None:
    text = " ".join((ROOT / "docs" / "screenshots.md").read_text().split())
    h = vitviz.head_atlas(dinov2_small, _chelsea())
    c = h.counts()
    assert f"of its 72 heads, by the tab's rule, {c['global']} come out *global*, {c['local']} *local*" in text
    layers = sorted({int(i) + 1 for i in np.nonzero(h.type_names() == "local")[0]})
    assert layers == [2, 3, 4, 5, 6, 7, 8, 12] and "(in layers 2 to 8 and 12)" in text
    assert "local" not in set(h.type_names()[0])  # no local head in layer 1
    s = vitviz.query_key_space(dinov2_small, _chelsea(), layer=0, head=0)
    a, b = (f"{100 * v:.1f}%" for v in s.explained)
    assert f"the two PCA axes hold {a} and {b}" in text


def _help(name: str) -> str:
    return " ".join((resources.files("vitviz.ui") / "helptext" / f"{name}.md").read_text().split())


def test_the_attention_help_says_what_dinov2_small_shows(dinov2_small) -> None:
    from vitviz.views.features import pca_view

    h = vitviz.head_atlas(dinov2_small, _chelsea())
    local = np.nonzero(h.type_names() == "local")[0]
    assert 0 not in local and len(local) == 17
    text = _help("attention")
    assert "has **no** local head in layer 1 on the cat photo: its 17 local heads sit in layers 2–8 and 12" in text
    photo = next(p for p in example_images() if str(p).endswith("chelsea.jpg"))
    caption = pca_view(photo, "dinov2-small", 12, True)[1]
    assert "Foreground share: this image 0%" in caption
    assert "*foreground only* split marks 0% of it at the last layer" in text
