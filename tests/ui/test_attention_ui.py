"""The Attention tab: its handlers, its named endpoints, and a click in the browser."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image


from tools.appserver import CHROMIUM, LAUNCH_ARGS


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _select(x: float, y: float):
    import gradio as gr

    return gr.SelectData(None, {"index": [x, y], "value": None})


# ----------------------------------------------------------------------------- handlers


def test_model_choices_offer_random_weight_architectures():
    from vitviz.views.attention import model_choices
    from vitviz.models.registry import parse_choice

    values = [v for _, v in model_choices()]
    assert values[0] == "mae-tiny"
    for name in ("vit-base", "deit-small-distilled", "dino-small"):
        assert f"{name}:random" in values
    assert not any(v.startswith("swin") for v in values)
    assert parse_choice("vit-base:random") == ("vit-base", True)
    assert parse_choice("mae-tiny") == ("mae-tiny", False)


def test_views_on_mae_tiny(photo_path):
    from vitviz.ui import attention_tab as t
    from vitviz.views import attention as av

    out = t.update_all(t.Controls(str(photo_path), "mae-tiny", "encoder", 0.0, 0, 2, "patch", 3, 4, False, "mean",
                                  0.0))
    assert out.overlay.shape == (av.VIEW_PX, av.VIEW_PX, 3) and out.rollout.shape == (av.VIEW_PX, av.VIEW_PX, 3)
    assert "Layer 2 of 8" in out.query_info and "row 3, col 4" in out.query_info and out.query == "patch"
    assert "sums to 1.000" in out.rollout_info
    # a dot per head per layer
    assert sum(len(trace.x) for trace in out.distance.data if trace.mode == "markers") == 8 * 3
    assert out.top5["visible"] is False and "no ImageNet labels" in out.top5_note
    other = t.attention_query(str(photo_path), "mae-tiny", "encoder", 0.0, 0, 2, "patch", 10, 1)
    assert not np.array_equal(other.overlay, out.overlay) and "row 10, col 1" in other.query_info
    cls = t.attention_query(str(photo_path), "mae-tiny", "encoder", 0.0, 0, 8, "cls", 0, 0)
    assert "class token" in cls.query_info and "Layer 8 of 8" in cls.query_info
    r2 = t.rollout(str(photo_path), "mae-tiny", "encoder", 0.0, 0, "max", 0.5)
    assert not np.array_equal(r2.rollout, out.rollout)


def test_a_query_view_is_drawn_where_its_model_runs(photo_path, sent_calls, where_run):
    """With model workers, the capture and the drawing of a query's maps both run in the worker: the handler sends
    one call (the drawn view) and the app's own process draws nothing; without them the same view is drawn here."""
    from vitviz.models import runner
    from vitviz.ui import attention_tab as t
    from vitviz.views import attention as av

    drawn_inside = where_run(av, "query_view")
    args = (str(photo_path), "mae-tiny", "encoder", 0.0, 0, 2, "patch", 3, 4)
    there = t.attention_query(*args)
    assert sent_calls == ["_drawn"] and drawn_inside == [True]
    runner.install_dispatch(None)
    here = t.attention_query(*args)
    assert drawn_inside == [True, False]
    assert here.overlay.tobytes() == there.overlay.tobytes() and here.heads.tobytes() == there.heads.tobytes()
    assert here.query_info == there.query_info


def test_masked_encoder_and_clicks(photo_path):
    import gradio as gr

    from vitviz.core.masking import make_mask
    from vitviz.ui import attention_tab as t
    from vitviz.views import attention as av

    mask = make_mask((14, 14), 0.75, 0).numpy()
    hidden_r, hidden_c = (int(v) for v in np.argwhere(mask)[0])
    visible_r, visible_c = (int(v) for v in np.argwhere(~mask)[0])
    px = lambda v: (v + 0.5) * av.VIEW_PX / 14  # noqa: E731 - pixel centre of a patch in the overlay
    args = (str(photo_path), "mae-tiny", "encoder", 0.75, 0)
    assert t.pick_patch(_select(px(visible_c), px(visible_r)), *args) == t.Picked(visible_r, visible_c, "patch")
    with pytest.raises(gr.Error, match="hidden by the mask"):
        t.pick_patch(_select(px(hidden_c), px(hidden_r)), *args)
    with pytest.raises(gr.Error, match="hidden by the mask"):
        t.attention_query(*args, 1, "patch", hidden_r, hidden_c)
    out = t.update_all(t.Controls(*args, 1, "patch", hidden_r, hidden_c, True, "mean", 0.0))
    assert out.query == "cls"  # a hidden query patch falls back to the class token
    assert "49 patch tokens" in out.query_info and "never sees them" in out.query_info
    dec = t.update_all(t.Controls(str(photo_path), "mae-tiny", "decoder", 0.75, 0, 4, "patch", hidden_r, hidden_c,
                                  False, "mean", 0.0))
    assert "mask token" in dec.query_info and "Layer 4 of 4" in dec.query_info


def test_errors_become_messages(photo_path):
    import gradio as gr

    from vitviz.ui import attention_tab as t
    from vitviz.views import attention as av

    with pytest.raises(gr.Error, match="layer must be 1..8"):
        t.attention_query(str(photo_path), "mae-tiny", "encoder", 0.0, 0, 9, "cls", 0, 0)
    with pytest.raises(gr.Error, match="distillation"):
        t.attention_query(str(photo_path), "mae-tiny", "encoder", 0.0, 0, 1, "dist", 0, 0)
    with pytest.raises(gr.Error, match="head fusion"):
        t.rollout(str(photo_path), "mae-tiny", "encoder", 0.0, 0, "median", 0.0)
    with pytest.raises(gr.Error, match="Drop an image"):
        t.attention_distance(None, "mae-tiny", "encoder", 0.0, 0)
    with pytest.raises(gr.Error, match="Model unavailable"):
        t.attention_distance(str(photo_path), "vit-base", "encoder", 0.0, 0)
    assert av.step_layer(1, 8, -1) == 1 and av.step_layer(8, 8, +1) == 8 and av.step_layer(3, 8, +1) == 4


def test_random_deit_shows_both_tokens_and_labels(photo_path):
    from vitviz.ui import attention_tab as t
    from vitviz.views import attention as av

    c = t.on_model("deit-small-distilled:random", 20, "decoder")
    assert "Random weights" in t.model_note("deit-small-distilled:random")
    assert c.depth == 12 and c.layer["maximum"] == 12 and c.layer["value"] == 12
    assert c.part["visible"] is False and c.part["value"] == "encoder"
    assert "dist" in [v for _, v in c.query["choices"]]
    assert t.on_model("vit-base:random", 3, "encoder", "dist").query["value"] == "cls"
    out = t.update_all(t.Controls(str(photo_path), "deit-small-distilled:random", "encoder", 0.0, 0, 12, "dist", 0,
                                  0, True, "mean", 0.2))
    assert out.cls_heads.shape[1] > 2 * 3 * av.TILE  # class and distillation panels side by side
    assert "distillation token" in out.query_info and "(random weights)" in out.query_info
    assert out.top5["visible"] is True and len(out.top5["value"]) == 5 and "mean nothing" in out.top5_note


# ----------------------------------------------------------------------------- served app


@pytest.fixture(scope="module")
def attention_app():
    """The tab alone in a Blocks app on a free loopback port."""
    from tools.appserver import serving_tab
    from vitviz.ui import attention_tab

    with serving_tab("Attention", attention_tab.build, tab_id="attention") as url:
        yield url


def test_named_endpoints(attention_app, photo_path):
    from gradio_client import Client, handle_file

    client = Client(attention_app, verbose=False)
    img = handle_file(str(photo_path))
    overlay, heads, info = client.predict(img, "mae-tiny", "encoder", 0.0, 0, 3, "patch", 5, 6,
                                          api_name="/attention_query")
    assert np.asarray(Image.open(overlay)).shape[:2] == (448, 448) and "row 5, col 6" in info
    roll, text = client.predict(img, "mae-tiny", "encoder", 0.0, 0, "min", 0.3, api_name="/rollout")
    assert "sums to 1.000" in text
    fig = client.predict(img, "mae-tiny", "encoder", 0.0, 0, api_name="/attention_distance")
    assert fig
    with pytest.raises(Exception, match="layer must be|greater than maximum"):
        client.predict(img, "mae-tiny", "encoder", 0.0, 0, 99, "cls", 0, 0, api_name="/attention_query")


def _src(page, elem_id: str) -> str:
    return page.locator(f"#{elem_id} img").first.get_attribute("src") or ""


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_browser_click_a_patch_changes_the_overlay(attention_app, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(attention_app)
            page.wait_for_function("document.querySelector('#attn-query-info') && "
                                   "document.querySelector('#attn-query-info').innerText.includes('row 7, col 7')",
                                   timeout=120_000)
            # every first view has arrived (the last outputs of the page load's chain: rollout text, distance
            # plot): nothing moves the overlay any more (a box measured earlier went stale when they arrived)
            page.wait_for_function("(document.querySelector('#attn-rollout-info')?.innerText || '').trim() && "
                                   "document.querySelector('#attn-distance .js-plotly-plot')", timeout=180_000)
            before = _src(page, "attn-query-overlay")
            overlay = page.locator("#attn-query-overlay img").first
            for attempt in range(3):  # a click that lands while the image re-renders is retried
                box = overlay.bounding_box()  # measured right before each click
                side = min(box["width"], box["height"])  # the square image is drawn centred (object-fit: contain)
                x0, y0 = (box["width"] - side) / 2, (box["height"] - side) / 2
                # patch (row 11, col 2), relative to the element: Playwright scrolls it into view and waits until
                # it is stable before clicking
                overlay.click(position={"x": x0 + (2.5 / 14) * side, "y": y0 + (11.5 / 14) * side})
                try:
                    page.wait_for_function(
                        "document.querySelector('#attn-query-info').innerText.includes('row 11, col 2')",
                        timeout=40_000)
                    break
                except Exception:
                    if attempt == 2:
                        raise
            page.wait_for_function("(b) => document.querySelector('#attn-query-overlay img').src !== b",
                                   arg=before, timeout=60_000)
            assert page.locator("#attn-row input").input_value() == "11"
            assert page.locator("#attn-col input").input_value() == "2"
            # the keyboard steps through layers
            page.locator("#attn-query-info").click()
            page.keyboard.press("ArrowRight")
            page.wait_for_function("document.querySelector('#attn-query-info').innerText.includes('Layer 2 of 8')",
                                   timeout=60_000)
            page.locator("#attn-next").click()
            page.wait_for_function("document.querySelector('#attn-query-info').innerText.includes('Layer 3 of 8')",
                                   timeout=60_000)
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
