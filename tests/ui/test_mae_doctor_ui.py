"""The MAE tab's *Check a checkpoint* section: the handler, the ``/doctor`` endpoint through gradio_client, and
the section in Chromium (open, check, read the report)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image

from tools.appserver import CHROMIUM, browser_page


def test_handler_reports_on_registry_models_and_refuses_paths_on_a_public_host(tmp_path, monkeypatch):
    import gradio as gr

    from vitviz.ui import mae_doctor

    out = mae_doctor.check_checkpoint("mae-tiny", "")
    assert "Clean report" in out.doctor_report and "healthy MAE" in out.doctor_report
    assert out.doctor_json["healthy"] is True and out.doctor_panel.ndim == 3
    cut = tmp_path / "checkpoint-1.pth"
    cut.write_bytes(b"PK\x03\x04" + bytes(100))
    monkeypatch.delenv("VITVIZ_PUBLIC", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert "the file is truncated" in mae_doctor.check_checkpoint("mae-tiny", str(cut)).doctor_report
    monkeypatch.setenv("VITVIZ_PUBLIC", "1")
    with pytest.raises(gr.Error, match="public host"):
        mae_doctor.check_checkpoint("mae-tiny", str(cut))
    with pytest.raises(gr.Error, match="valid|unknown|pick"):
        mae_doctor.check_checkpoint("no-such-model", "")


def test_doctor_endpoint(app_url, tmp_path):
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    report, panel, data = client.predict("mae-tiny", "", api_name="/doctor")
    assert "Clean report" in report and data["healthy"] is True
    assert {f["severity"] for f in data["findings"]} <= {"note", "ok"}
    img = np.asarray(Image.open(panel).convert("RGB"))
    assert img.shape[1] > 3 * img.shape[0]  # one row of four panels
    cut = tmp_path / "checkpoint-2.pth"
    cut.write_bytes(b"PK\x03\x04" + bytes(100))
    report, panel, data = client.predict("mae-tiny", str(cut), api_name="/doctor")
    assert data["findings"][0]["title"] == "the file is truncated" and panel is None


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_check_a_checkpoint_in_the_page(app_url, tmp_path):
    from playwright.sync_api import expect

    with browser_page(failure_shot=tmp_path / "failure.png") as page:
        page.goto(app_url)
        page.get_by_text("Check a checkpoint", exact=True).click()
        button = page.locator("#mae-doctor-run")
        expect(button).to_be_visible(timeout=30_000)
        button.click()
        page.wait_for_function("() => { const e = document.querySelector('#mae-doctor-report');"
                               " return e && e.innerText.includes('Clean report'); }", timeout=240_000)
        text = page.locator("#mae-doctor-report").inner_text()
        assert "beats its random-weight twin" in text and "measured on mae-tiny" in text
        page.wait_for_function("() => { const i = document.querySelector('#mae-doctor-panel img');"
                               " return i && i.complete && i.naturalWidth > 0; }", timeout=60_000)
        page.locator("#mae-doctor-panel").scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "doctor.png"))
