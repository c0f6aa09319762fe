"""The live section's panels as the page shows them (:mod:`vitviz.views.live_panels`), without Gradio."""

from __future__ import annotations


def test_the_panels_travel_inside_the_answer_as_jpeg_data_urls():
    import base64
    import io

    import numpy as np
    from PIL import Image

    from vitviz.views import live_panels

    masked = np.zeros((224, 224, 3), dtype=np.uint8)
    pasted = np.full((224, 224, 3), 200, dtype=np.uint8)
    html = live_panels.panels_html(masked, pasted)
    assert "id='mae-live-masked'" in html and "id='mae-live-pasted'" in html
    urls = [part.split("'")[0] for part in html.split("src='data:image/jpeg;base64,")[1:]]
    decoded = [np.asarray(Image.open(io.BytesIO(base64.b64decode(u)))) for u in urls]
    assert [d.shape for d in decoded] == [(224, 224, 3)] * 2
    assert np.abs(decoded[0].astype(int)).max() <= 2 and np.abs(decoded[1].astype(int) - 200).max() <= 2
    assert "start the camera or play a video" in live_panels.panels_html(None, None)
    assert "data-live='12:13:14'" in live_panels.panels_html(masked, pasted, "12:13:14")
    assert "data-live=''" in live_panels.panels_html(masked, pasted, "x' onload='alert(1)")  # only digits or "video"
