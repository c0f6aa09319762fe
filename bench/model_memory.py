"""Resident memory of each model on the CPU: what a Space's RAM must hold per model.

Usage::

    python bench/model_memory.py                     # every model, one fresh process each
    python bench/model_memory.py --models mae-tiny vit-base

Each model is measured in a fresh Python process: the resident set (RSS) after ``import torch,
vitviz`` and reading a photo (the floor), after loading the model (weights on disk where present,
else seeded random weights of the published shape: the same tensor sizes), and the process's peak
RSS after one call of the model's main entry point (reconstruct for an MAE, tokenize for the
tokenizer, beit_predict for BEiT, attention for a ViT, layer tokens for Swin). Prints a Markdown table
in MiB; "weights" says whether the real weights or random ones of the same shape were measured.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODELS = ("mae-tiny", "vq-tiny", "beit-tiny", "dinov2-small", "dinov2-small-448", "deit-small-distilled",
          "dino-small", "swin-tiny", "vit-base", "beit-base-pt22k", "mae-base", "mae-large", "mae-huge")

CHILD = r"""
import json, resource, sys
sys.path.insert(0, {root!r})
import torch, vitviz
from vitviz.models.loading import available_models

def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) / 1024

name = {name!r}
photo = vitviz.load_image({photo!r})
floor = rss()
info = {{m.name: m for m in available_models()}}[name]
random_init = not info.available
m = vitviz.load_model(name, device="cpu", random_init=random_init)
loaded = rss()
params = sum(p.numel() for p in m.module.parameters())
family = m.family
if family == "mae":
    vitviz.reconstruct(m, photo, mask_ratio=0.75, seed=0)
elif family == "vq":
    vitviz.tokenize(m, photo)
elif family == "beit":
    if name == "beit-tiny":
        vitviz.beit_predict(m, photo, mask_ratio=0.4, seed=0)
    else:
        from vitviz.beit.api import guess_tokens
        guess_tokens(m, photo, mask_ratio=0.4, seed=0)
elif family == "swin":
    from vitviz.features.layer_tokens import layer_tokens
    layer_tokens(m, photo)
else:
    vitviz.attention(m, photo)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(dict(model=name, random=random_init, params=params, floor=floor, loaded=loaded,
                      after=rss(), peak=peak)))
"""


def measure(name: str, photo: str) -> dict:
    code = CHILD.format(root=str(ROOT), name=name, photo=photo)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"model": name, "error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--photo", default=str(ROOT / "assets" / "examples" / "chelsea.jpg"))
    args = ap.parse_args()
    print("| model | weights | parameters (M) | RSS floor MiB | + model loaded MiB | peak after one call MiB |")
    print("|---|---|---:|---:|---:|---:|")
    for name in args.models:
        r = measure(name, args.photo)
        if "error" in r:
            print(f"| {name} | error: {r['error']} | | | | |")
            continue
        print(f"| {name} | {'random, same shape' if r['random'] else 'real'} | {r['params'] / 1e6:.1f} | "
              f"{r['floor']:.0f} | +{r['loaded'] - r['floor']:.0f} | {r['peak']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
