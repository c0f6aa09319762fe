"""Texts a newcomer stumbled on (the metrics line's jargon): each says what it measures in plain words."""

from __future__ import annotations

from vitviz.views import mae as mv


def _metrics(norm_pix: bool) -> dict:
    return {"model": "m", "hidden_patches": 147, "num_patches": 196, "psnr_db": 20.4, "masked_mse": 0.0091,
            "model_loss": 0.178, "tokens_encoded": 49, "encoder_flops_saving": 4.0, "encoder_gflops": 0.43,
            "encoder_gflops_full_sequence": 1.69, "norm_pix": norm_pix}


def test_metrics_line_says_what_its_losses_are_measured_on():
    """It said "(RGB in [0, 1])" and "model loss 0.178 (its training space)"."""
    plain, norm = mv.metrics_markdown(_metrics(False)), mv.metrics_markdown(_metrics(True))
    for text in (plain, norm):
        assert "training space" not in text and "RGB in [0, 1]" not in text
        assert "(pixel values 0 to 1)" in text and "training loss 0.178" in text
    assert "standardised pixels" in plain and "per-patch normalised pixels" in norm
