"""vitviz against its peers, measured side by side in one process.

Usage::

    pip install -r bench/requirements.txt     # adds transformers (benchmark only)
    python bench/run.py [--quick] [--skip-app] [--skip-large]

Rows (batch 1, 224x224, CPU unless CUDA is present; median of repeated runs after
warm-up, alternating the compared implementations so machine noise hits both):

1. MAE reconstruction at 75% for mae-tiny, MAE-Base and MAE-Large: vitviz
   (``vitviz.reconstruct.predict``: normalise, embed, encode the visible tokens,
   decode, loss, de-normalise) against Hugging Face ``ViTMAEForPreTraining`` holding the
   same weights (written in the hub's file format and loaded with ``from_pretrained``)
   and the same mask (its ``noise`` argument), and against a plain timm
   ``vit_base_patch16_224`` forward as the unit of cost. Random weights for Base and
   Large (timing does not depend on them); mae-tiny uses its shipped weights.
2. A 19-stop ratio sweep (0.05 ... 0.95) batched against 19 single reconstructions.
3. End to end through the running app (``gradio_client``): a ``reconstruct`` call for a
   stop that is already computed (after the ``sweep`` endpoint ran) and for one that is
   not (a fresh seed each time), p50/p95.
4. Peak memory of each (tensor storages allocated during the call).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import interleaved, peak_mib  # noqa: E402

from vitviz.images import DataConfig, normalize, uint8_to_unit  # noqa: E402
from vitviz.masking import random_mask  # noqa: E402
from vitviz.models.convert import official_to_hf  # noqa: E402
from vitviz.models.loading import LoadedModel, load_model  # noqa: E402
from vitviz.models.mae import MAEConfig, MaskedAutoencoderViT  # noqa: E402
from vitviz.models.registry import MAE_BASE_CONFIG, MAE_LARGE_CONFIG, get_spec  # noqa: E402
from vitviz.reconstruct import predict, prepare, reconstruct  # noqa: E402
from vitviz.sweep import STOPS, sweep  # noqa: E402

EXAMPLE = ROOT / "assets" / "examples" / "chelsea.jpg"


def random_mae(name: str, config: MAEConfig, device: torch.device) -> LoadedModel:
    """An MAE with random weights, wrapped like a loaded model."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        module = MaskedAutoencoderViT(config)
    module.eval().requires_grad_(False).to(device)
    return LoadedModel(name, get_spec(name), module, DataConfig(config.img_size), device)


def hf_copy(model: LoadedModel, mask_ratio: float, device: torch.device):  # noqa: ANN201
    """A transformers ViTMAEForPreTraining with the same weights, loaded from hub-format files."""
    from transformers import ViTMAEForPreTraining

    c: MAEConfig = model.module.config
    config = {
        "model_type": "vit_mae", "architectures": ["ViTMAEForPreTraining"], "hidden_size": c.embed_dim,
        "num_hidden_layers": c.depth, "num_attention_heads": c.num_heads,
        "intermediate_size": int(c.embed_dim * c.mlp_ratio), "hidden_act": "gelu", "qkv_bias": True,
        "image_size": c.img_size, "patch_size": c.patch_size, "num_channels": c.in_chans,
        "decoder_hidden_size": c.decoder_embed_dim, "decoder_num_hidden_layers": c.decoder_depth,
        "decoder_num_attention_heads": c.decoder_num_heads,
        "decoder_intermediate_size": int(c.decoder_embed_dim * c.mlp_ratio), "mask_ratio": mask_ratio,
        "norm_pix_loss": c.norm_pix_loss, "layer_norm_eps": 1e-6,
    }
    from safetensors.torch import save_file

    with tempfile.TemporaryDirectory() as tmp:
        sd = {k: v.detach().cpu().contiguous() for k, v in official_to_hf(model.module.state_dict()).items()}
        save_file(sd, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
        Path(tmp, "config.json").write_text(json.dumps(config))
        hf = ViTMAEForPreTraining.from_pretrained(tmp)
    return hf.eval().to(device)


def hf_noise(mask: torch.Tensor) -> torch.Tensor:
    """HF keeps the lowest-noise patches in ascending order: visible first, raster order."""
    flat = mask.flatten().float()
    return (flat + torch.arange(flat.numel()) * 1e-6).unsqueeze(0)


def mae_rows(name: str, model: LoadedModel, vit: torch.nn.Module, repeats: int, device: torch.device) -> list[dict]:
    original = prepare(model, EXAMPLE)
    mask = random_mask(model.module.config.grid, 0.75, seed=0)
    hf = hf_copy(model, 0.75, device)
    x = normalize(uint8_to_unit(original), model.data_config).unsqueeze(0).to(device)
    noise = hf_noise(mask).to(device)
    with torch.inference_mode():
        ours = model.module(x, (~mask.flatten()).nonzero().flatten().unsqueeze(0).to(device))
        theirs = hf(pixel_values=x, noise=noise).logits
    diff = float((ours - theirs).abs().max())

    def run_ours():
        return predict(model, original, mask.unsqueeze(0))

    def run_hf():
        with torch.inference_mode():
            return hf(pixel_values=x, noise=noise)

    def run_vit():
        with torch.inference_mode():
            return vit(x)

    t = interleaved({"vitviz": run_ours, "transformers": run_hf, "timm ViT-B/16 forward": run_vit},
                    repeats=repeats)
    mem = {"vitviz": peak_mib(run_ours), "transformers": peak_mib(run_hf)}
    del hf
    return [{
        "row": f"{name} reconstruction, 75%",
        "vitviz_ms": t["vitviz"] * 1e3, "peer": "transformers ViTMAEForPreTraining",
        "peer_ms": t["transformers"] * 1e3, "ratio": t["vitviz"] / t["transformers"],
        "unit_ms": t["timm ViT-B/16 forward"] * 1e3, "vitviz_mib": mem["vitviz"], "peer_mib": mem["transformers"],
        "max_abs_diff": diff,
    }]


def sweep_row(name: str, model: LoadedModel, repeats: int) -> dict:
    original = prepare(model, EXAMPLE)
    ratios = STOPS[1:]

    def batched():
        return sweep(model, original, seed=0, ratios=ratios, cache=None)

    def single():
        return [reconstruct(model, original, r, seed=0) for r in ratios]

    t = interleaved({"batched": batched, "single": single}, warmup=1, repeats=repeats)
    return {"row": f"{name} 19-stop sweep", "vitviz_ms": t["batched"] * 1e3, "peer": "19 single reconstructions",
            "peer_ms": t["single"] * 1e3, "ratio": t["batched"] / t["single"], "unit_ms": float("nan"),
            "vitviz_mib": peak_mib(batched), "peer_mib": peak_mib(single), "max_abs_diff": float("nan")}


def app_rows(calls: int) -> list[dict]:
    from gradio_client import Client, handle_file

    from tests.appserver import running_app

    with running_app() as (url, _proc):
        client = Client(url, verbose=False)
        photo = handle_file(str(EXAMPLE))
        client.predict(photo, "mae-tiny", 0.75, 0, "random", api_name="/reconstruct")  # warm-up, model load
        client.predict(photo, "mae-tiny", 0, "random", api_name="/sweep")  # fills every stop for seed 0
        cached, uncached = [], []
        for i in range(calls):
            ratio = STOPS[1 + i % (len(STOPS) - 1)]
            t0 = time.perf_counter()
            client.predict(photo, "mae-tiny", ratio, 0, "random", api_name="/reconstruct")
            cached.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            client.predict(photo, "mae-tiny", ratio, 1000 + i, "random", api_name="/reconstruct")
            uncached.append(time.perf_counter() - t0)

    def pct(v: list[float], q: float) -> float:
        s = sorted(v)
        return s[min(len(s) - 1, int(q * len(s)))] * 1e3

    return [{"row": "app: slider move, cached stop (mae-tiny)", "p50_ms": statistics.median(cached) * 1e3,
             "p95_ms": pct(cached, 0.95)},
            {"row": "app: slider move, uncached stop (mae-tiny)", "p50_ms": statistics.median(uncached) * 1e3,
             "p95_ms": pct(uncached, 0.95)}]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark vitviz against its peers.")
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--skip-app", action="store_true")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    import timm

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    repeats = 3 if args.quick else 7
    print(f"# vitviz benchmark — {time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, torch {torch.__version__} with {torch.get_num_threads()} threads, device {device}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        vit = timm.create_model("vit_base_patch16_224", pretrained=False).eval().to(device)
    rows = []
    tiny = load_model("mae-tiny", device=device)
    rows += mae_rows("mae-tiny", tiny, vit, repeats, device)
    base = random_mae("mae-base", MAE_BASE_CONFIG, device)
    rows += mae_rows("MAE-Base", base, vit, repeats, device)
    if not args.skip_large:
        large = random_mae("mae-large", MAE_LARGE_CONFIG, device)
        rows += mae_rows("MAE-Large", large, vit, max(3, repeats // 2), device)
        del large
    rows.append(sweep_row("mae-tiny", tiny, max(3, repeats // 2)))
    rows.append(sweep_row("MAE-Base", base, 3))
    print()
    print("| row | vitviz ms | peer | peer ms | vitviz / peer | timm ViT-B/16 ms | vitviz MiB | peer MiB | max abs diff |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['row']} | {r['vitviz_ms']:.1f} | {r['peer']} | {r['peer_ms']:.1f} | **{r['ratio']:.2f}x** | "
              f"{r['unit_ms']:.1f} | {r['vitviz_mib']:.1f} | {r['peer_mib']:.1f} | {r['max_abs_diff']:.1e} |")
    if not args.skip_app:
        app = app_rows(10 if args.quick else 20)
        print()
        print("| end to end through the app (gradio_client) | p50 ms | p95 ms |")
        print("| --- | ---: | ---: |")
        for r in app:
            print(f"| {r['row']} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} |")
        rows += app
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
