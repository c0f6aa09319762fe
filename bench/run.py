"""vitviz against its peers, measured side by side in one process.

Usage::

    pip install -r bench/requirements.txt     # adds transformers (benchmark only)
    python bench/run.py [--quick] [--skip-app] [--skip-large]
    python bench/run.py --only MAE-Base [--trees BEFORE_DIR ... --rounds 3] [--pair --repeats 15]

``--only`` runs the named reconstruction rows alone. ``--trees`` runs them on each given
checkout (a ``git worktree`` of an older commit; this one is always last), one fresh
process per checkout and round, alternated, and prints each checkout's median ratio and
the load average: how a ratio moved between commits, measured side by side. With
``--pair`` only vitviz and transformers are timed (``--repeats`` calls each, alternated);
each row gives the ratio of the medians and that of the fastest calls, which a loaded
machine disturbs least.

Rows (batch 1, 224x224, CPU unless CUDA is present; median of repeated runs after
warm-up, alternating the compared implementations so machine noise hits both):

1. MAE reconstruction at 75% for mae-tiny, MAE-Base and MAE-Large: vitviz
   (``vitviz.mae.reconstruct.predict``: normalise, embed, encode the visible tokens,
   decode, loss, de-normalise) against Hugging Face ``ViTMAEForPreTraining`` holding the
   same weights (written in the hub's file format and loaded with ``from_pretrained``)
   and the same mask (its ``noise`` argument), and against a plain timm
   ``vit_base_patch16_224`` forward as the unit of cost. Random weights for Base and
   Large (timing does not depend on them); mae-tiny uses its shipped weights. vitviz
   runs with its default kernels (oneDNN-packed fp32 linears on CPU), and on CPU also
   with plain eager linears (``kernels="eager"``, the before/after of that lever) and
   with the opt-in int8 mode, whose error against fp32 is measured on mae-tiny.
2. A 19-stop ratio sweep (0.05 ... 0.95) batched against 19 single reconstructions, with
   its FLOP floor: the sweep's FLOPs (closed form) at this machine's measured fp32 GEMM
   rate, the least time any fp32 implementation could take.
3. End to end through the running app (mae-tiny), p50/p95: ``gradio_client`` calls of
   the ``reconstruct`` endpoint (it uploads the image on every call); the same endpoint
   over Gradio's HTTP API with the image uploaded once, as the page does (every output
   image downloaded); and slider moves in Chromium timed inside the page
   (``bench/browser.py``). "Cached" stops were filled by a sweep first; "uncached" ones
   use a fresh seed.
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

import browser  # noqa: E402
from common import interleaved, interleaved_times, peak_mib, percentile  # noqa: E402

from vitviz.core.images import normalize, uint8_to_unit  # noqa: E402
from vitviz.core.masking import random_mask  # noqa: E402
from vitviz.models.convert import official_to_hf  # noqa: E402
from vitviz.compute.formulas import mae_flops  # noqa: E402
from vitviz.models.loading import LoadedModel, load_model  # noqa: E402
from vitviz.models.mae import MAEConfig  # noqa: E402
from vitviz.mae.reconstruct import predict, prepare, reconstruct  # noqa: E402
from vitviz.mae.sweep import STOPS, sweep  # noqa: E402

EXAMPLE = ROOT / "assets" / "examples" / "chelsea.jpg"


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


def mae_rows(name: str, registry_name: str, vit: torch.nn.Module, repeats: int, device: torch.device,
             pair: bool = False) -> list[dict]:
    """Reconstruction at 75%: vitviz (default kernels, eager, int8) against transformers and a timm forward
    (``pair``: vitviz and transformers only, so more repeats fit in the same time).

    ``ratio`` is the ratio of the medians; ``best_ratio`` that of the fastest call of each (on a loaded
    machine the least disturbed calls, whose ratio spreads less from run to run than the medians')."""
    random_init = registry_name != "mae-tiny"
    model = load_model(registry_name, device=device, random_init=random_init)
    variants = {"vitviz": model}
    if device.type == "cpu" and not pair:
        variants["vitviz eager"] = load_model(registry_name, device=device, random_init=random_init, kernels="eager")
        variants["vitviz int8"] = load_model(registry_name, device=device, random_init=random_init, kernels="int8")
    original = prepare(model, EXAMPLE)
    mask = random_mask(model.module.config.grid, 0.75, seed=0)
    hf = hf_copy(model, 0.75, device)
    x = normalize(uint8_to_unit(original), model.data_config).unsqueeze(0).to(device)
    noise = hf_noise(mask).to(device)
    with torch.inference_mode():
        ours = model.module(x, (~mask.flatten()).nonzero().flatten().unsqueeze(0).to(device))
        theirs = hf(pixel_values=x, noise=noise).logits
    diff = float((ours - theirs).abs().max())

    fns = {k: (lambda m=m: predict(m, original, mask.unsqueeze(0))) for k, m in variants.items()}

    def run_hf():
        with torch.inference_mode():
            return hf(pixel_values=x, noise=noise)

    def run_vit():
        with torch.inference_mode():
            return vit(x)

    timed = {**fns, "transformers": run_hf} if pair else {**fns, "transformers": run_hf, "timm ViT-B/16 forward": run_vit}
    times = interleaved_times(timed, repeats=repeats)
    t = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    mem = {"vitviz": peak_mib(fns["vitviz"]), "transformers": peak_mib(run_hf)}
    del hf
    nan = float("nan")
    return [{
        "row": f"{name} reconstruction, 75%", "kernels": model.kernels,
        "vitviz_ms": t["vitviz"] * 1e3, "eager_ms": t.get("vitviz eager", nan) * 1e3,
        "int8_ms": t.get("vitviz int8", nan) * 1e3, "peer_ms": t["transformers"] * 1e3,
        "ratio": t["vitviz"] / t["transformers"], "best_ratio": best["vitviz"] / best["transformers"],
        "repeats": repeats, "eager_ratio": t.get("vitviz eager", nan) / t["transformers"],
        "int8_ratio": t.get("vitviz int8", nan) / t["transformers"],
        "unit_ms": t.get("timm ViT-B/16 forward", nan) * 1e3, "vitviz_mib": mem["vitviz"], "peer_mib": mem["transformers"],
        "max_abs_diff": diff,
    }]


def int8_error(photos: list[Path], seeds: tuple[int, ...] = (0, 1, 2)) -> dict:
    """int8 against fp32 on the shipped mae-tiny at 75%: hidden-patch MSE and pixel differences."""
    fp32 = load_model("mae-tiny", device="cpu")
    q = load_model("mae-tiny", device="cpu", kernels="int8")
    rel, mean_px, max_px = [], [], []
    for photo in photos:
        for seed in seeds:
            a = reconstruct(fp32, photo, 0.75, seed=seed)
            b = reconstruct(q, photo, 0.75, seed=seed)
            rel.append((b.masked_mse - a.masked_mse) / a.masked_mse)
            d = np.abs(a.reconstruction.astype(int) - b.reconstruction.astype(int))
            mean_px.append(float(d.mean()))
            max_px.append(int(d.max()))
    return {"runs": len(rel), "mse_rel_change_mean": float(np.mean(rel)), "mse_rel_change_max": float(np.max(np.abs(rel))),
            "pixel_diff_mean": float(np.mean(mean_px)), "pixel_diff_max": int(np.max(max_px))}


def peak_gflops(device: torch.device) -> float:
    """This machine's fastest fp32 GEMM rate: the better of a 2048x2048 matmul and, on CPU, a
    oneDNN-packed linear layer of MAE-Base's MLP shape on 2048 tokens. The ceiling for any
    fp32 implementation's linear layers."""
    from vitviz.models.kernels import PackedLinear, onednn_available

    a = torch.randn(2048, 2048, device=device)
    b = torch.randn(2048, 2048, device=device)
    fns = {"mm": lambda: a @ b}
    work = {"mm": 2 * 2048**3}
    if device.type == "cpu" and onednn_available():
        lin = PackedLinear(torch.nn.Linear(768, 3072).requires_grad_(False))
        x = torch.randn(2048, 768)
        fns["packed"] = lambda: lin(x)
        work["packed"] = 2 * 2048 * 768 * 3072
    with torch.inference_mode():
        t = interleaved(fns, warmup=2, repeats=9)
    return max(work[k] / t[k] / 1e9 for k in fns)


def sweep_row(name: str, registry_name: str, repeats: int, device: torch.device, peak: float) -> dict:
    """19 stops batched against 19 single reconstructions, with the FLOP floor of the batched run."""
    model = load_model(registry_name, device=device, random_init=registry_name != "mae-tiny")
    original = prepare(model, EXAMPLE)
    ratios = STOPS[1:]

    def batched():
        return sweep(model, original, seed=0, ratios=ratios, cache=None)

    def single():
        return [reconstruct(model, original, r, seed=0) for r in ratios]

    t = interleaved({"batched": batched, "single": single}, warmup=1, repeats=repeats)
    flops = sum(mae_flops(model.module.config, r)["total"] for r in ratios)
    floor = flops / (peak * 1e9)
    return {"row": f"{name} 19-stop sweep", "vitviz_ms": t["batched"] * 1e3, "peer_ms": t["single"] * 1e3,
            "ratio": t["batched"] / t["single"], "gflops": flops / 1e9, "floor_ms": floor * 1e3,
            "floor_ratio": floor / t["single"], "vitviz_mib": peak_mib(batched), "peer_mib": peak_mib(single)}


def _api_call(http, url: str, api: str, data: list) -> list:  # noqa: ANN001
    """One call of a named endpoint over Gradio's HTTP API, its output images downloaded."""
    event = http.post(f"{url}gradio_api/call/{api}", json={"data": data}).json()["event_id"]
    result = None
    with http.stream("GET", f"{url}gradio_api/call/{api}/{event}") as resp:
        kind = ""
        for line in resp.iter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and kind in ("complete", "error"):
                if kind == "error":
                    raise RuntimeError(f"{api} failed: {line}")
                result = json.loads(line[5:])
                break
    assert result is not None
    for item in result:
        if isinstance(item, dict) and item.get("url"):
            http.get(item["url"]).raise_for_status()
    return result


def app_rows(calls: int) -> list[dict]:
    """End to end through the running app, three ways (see the module docstring)."""
    import httpx
    from gradio_client import Client, handle_file

    from tools.appserver import running_app

    rows = []
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
        rows += [{"row": "gradio_client (uploads the image every call): cached stop", "values": cached},
                 {"row": "gradio_client (uploads the image every call): uncached stop", "values": uncached}]
        # An API client that uploads once, as the page does, and downloads every output image.
        with httpx.Client(timeout=120) as http:
            with EXAMPLE.open("rb") as fh:
                server_path = http.post(f"{url}gradio_api/upload", files=[("files", (EXAMPLE.name, fh))]).json()[0]
            image = {"path": server_path, "orig_name": EXAMPLE.name, "meta": {"_type": "gradio.FileData"}}
            _api_call(http, url, "sweep", [image, "mae-tiny", 0, "random"])
            cached, uncached = [], []
            for i in range(calls):
                ratio = STOPS[1 + (7 * i) % (len(STOPS) - 1)]
                t0 = time.perf_counter()
                _api_call(http, url, "reconstruct", [image, "mae-tiny", ratio, 0, "random"])
                cached.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                _api_call(http, url, "reconstruct", [image, "mae-tiny", ratio, 2000 + i, "random"])
                uncached.append(time.perf_counter() - t0)
        rows += [{"row": "HTTP API, image uploaded once: cached stop", "values": cached},
                 {"row": "HTTP API, image uploaded once: uncached stop", "values": uncached}]
        in_browser = []
        if Path(browser.CHROMIUM).exists():
            in_browser = browser.measure(moves=calls, url=url)
        else:
            print(f"(no {browser.CHROMIUM}: browser rows skipped; run bash tests/setup.sh)")
    out = [{"row": r["row"], "p50_ms": statistics.median(r["values"]) * 1e3, "p95_ms": percentile(r["values"], 0.95) * 1e3,
            "n": len(r["values"])} for r in rows]
    out += in_browser
    return out


#: Reconstruction rows: name -> registry name.
MAE_ROWS = {"mae-tiny": "mae-tiny", "MAE-Base": "mae-base", "MAE-Large": "mae-large"}


def compare_trees(trees: list[Path], only: list[str], rounds: int, quick: bool, repeats: int | None = None,
                  pair: bool = False) -> int:
    """``--only`` rows on each checkout in ``trees`` and on this one, a fresh process each, alternated
    (``repeats``, ``pair``: passed on to each process)."""
    import subprocess

    order = [t.resolve() for t in trees] + [ROOT]
    ratios: dict[tuple[str, str], list[float]] = {}
    best: dict[tuple[str, str], list[float]] = {}
    print(f"load average before: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for tree in order:
                out = Path(tmp, "rows.json")
                env = {**os.environ, "VITVIZ_BENCH_TREE": str(tree)}
                env.pop("PYTHONPATH", None)
                subprocess.run([sys.executable, str(Path(__file__).resolve()), "--only", *only, "--json", str(out)]
                               + (["--quick"] if quick else []) + (["--pair"] if pair else [])
                               + ([] if repeats is None else ["--repeats", str(repeats)]), cwd=tree, env=env, check=True,
                               stdout=subprocess.DEVNULL)
                for row in json.loads(out.read_text()):
                    ratios.setdefault((row["row"], str(tree)), []).append(row["ratio"])
                    best.setdefault((row["row"], str(tree)), []).append(row["best_ratio"])
                    print(f"  round {r + 1} {tree}: {row['row']} {row['vitviz_ms']:.1f} ms / {row['peer_ms']:.1f} ms "
                          f"= {row['ratio']:.3f}x, fastest calls {row['best_ratio']:.3f}x "
                          f"(load {Path('/proc/loadavg').read_text().split()[0]})", flush=True)
    print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print("| row | checkout | vitviz / transformers, median of the rounds (min–max) | the same, fastest calls |")
    print("| --- | --- | ---: | ---: |")
    for (row, tree), v in ratios.items():
        b = best[(row, tree)]
        print(f"| {row} | {tree} | {statistics.median(v):.2f}x ({min(v):.2f}–{max(v):.2f}) | "
              f"{statistics.median(b):.2f}x ({min(b):.2f}–{max(b):.2f}) |")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark vitviz against its peers.")
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--skip-app", action="store_true")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--only", nargs="+", choices=list(MAE_ROWS), default=None,
                    help="only these reconstruction rows (no sweep, app or int8-error rows)")
    ap.add_argument("--trees", nargs="+", type=Path, default=None,
                    help="other checkouts to run --only on, side by side with this one")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=None, help="timed calls per implementation (default 7, --quick 3)")
    ap.add_argument("--pair", action="store_true",
                    help="with --only: time vitviz and transformers only (no eager, int8 or timm rows)")
    args = ap.parse_args(argv)
    if args.trees:
        return compare_trees(args.trees, args.only or ["MAE-Base"], args.rounds, args.quick, args.repeats, args.pair)
    import timm

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    repeats = args.repeats or (3 if args.quick else 7)
    started = time.perf_counter()
    print(f"# vitviz benchmark — {time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, torch {torch.__version__} with {torch.get_num_threads()} threads, device {device}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        vit = timm.create_model("vit_base_patch16_224", pretrained=False).eval().to(device)
    rows = []
    for name, registry_name in MAE_ROWS.items():
        if (args.only is None and not (args.skip_large and name == "MAE-Large")) or name in (args.only or ()):
            rows += mae_rows(name, registry_name, vit, max(3, repeats // 2) if name == "MAE-Large" else repeats,
                             device, pair=args.pair and bool(args.only))
    print()
    print("| row | kernels | vitviz ms | transformers ms | **vitviz / transformers** | vitviz eager ms | eager / "
          "transformers | vitviz int8 ms | int8 / transformers | timm ViT-B/16 ms | vitviz MiB | transformers MiB "
          "| max abs diff |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['row']} | {r['kernels']} | {r['vitviz_ms']:.1f} | {r['peer_ms']:.1f} | **{r['ratio']:.2f}x** | "
              f"{r['eager_ms']:.1f} | {r['eager_ratio']:.2f}x | {r['int8_ms']:.1f} | {r['int8_ratio']:.2f}x | "
              f"{r['unit_ms']:.1f} | {r['vitviz_mib']:.1f} | {r['peer_mib']:.1f} | {r['max_abs_diff']:.1e} |")
    if args.only:
        if args.json is not None:
            args.json.write_text(json.dumps(rows, indent=1, default=float))
        return 0
    if device.type == "cpu":
        err = int8_error(sorted((ROOT / "assets" / "examples").glob("*.jpg")))
        rows.append({"row": "int8 error", **err})
        print(f"\nint8 against fp32, mae-tiny at 75%, {err['runs']} runs (4 example photos x 3 seeds): hidden-patch "
              f"MSE changed by {err['mse_rel_change_mean']:+.2%} on average ({err['mse_rel_change_max']:.2%} at most); "
              f"reconstruction pixels differ by {err['pixel_diff_mean']:.2f} levels of 255 on average, "
              f"{err['pixel_diff_max']} at most.")
    peak = peak_gflops(device)
    sweeps = [sweep_row("mae-tiny", "mae-tiny", max(3, repeats // 2), device, peak),
              sweep_row("MAE-Base", "mae-base", 3, device, peak)]
    print()
    print(f"| sweep | batched ms | 19 single ms | **batched / single** | GFLOPs | floor ms at {peak:.0f} GFLOP/s "
          "| floor / single | batched MiB | single MiB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in sweeps:
        print(f"| {r['row']} | {r['vitviz_ms']:.0f} | {r['peer_ms']:.0f} | **{r['ratio']:.2f}x** | {r['gflops']:.1f} | "
              f"{r['floor_ms']:.0f} | {r['floor_ratio']:.2f}x | {r['vitviz_mib']:.1f} | {r['peer_mib']:.1f} |")
    rows += sweeps
    if not args.skip_app:
        app = app_rows(10 if args.quick else 20)
        print()
        print("| end to end through the app, mae-tiny | calls | p50 ms | p95 ms |")
        print("| --- | ---: | ---: | ---: |")
        for r in app:
            print(f"| {r['row']} | {r['n']} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} |")
        rows += app
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1, default=float))
    print(f"\n(the whole run took {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tools.appserver import client_temp_folder  # gradio_client's empty download folders go with it

    with client_temp_folder():
        raise SystemExit(main())
