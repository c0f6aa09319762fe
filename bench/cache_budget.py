"""The cache budget under load: many different images through the cached computations, bytes held checked.

``python bench/cache_budget.py [--budget 64mb] [--images 40]`` runs mae-tiny (embedded, CPU) on
``--images`` different random photos (one ``numpy.random.default_rng(seed)`` per image), each through
the library's cached computations: every slider stop (``mae.sweep``), the captured attention
(``vitviz.attention``), every layer's tokens (``vitviz.layer_tokens``) and the head atlas (from the
captured attention; "other" is every other budgeted cache). After each
image it prints what the budgeted caches hold (:func:`vitviz.cache.usage`, measured sizes) and the
process's resident memory, and at the end the largest total seen against the budget. Without the
budget, the same run holds what every cache's entry count allows (``--budget 100gb``).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="64mb", help="VITVIZ_CACHE_BUDGET for the run")
    parser.add_argument("--images", type=int, default=40)
    args = parser.parse_args()
    os.environ["VITVIZ_CACHE_BUDGET"] = args.budget
    os.environ.setdefault("VITVIZ_SWEEP_CACHE", "1000")  # entry counts out of the way: the budget bounds
    os.environ.setdefault("VITVIZ_ATTENTION_CACHE", "1000")

    import numpy as np

    import vitviz
    from vitviz import cache, settings
    from vitviz.mae.sweep import sweep

    budget = cache.budget_bytes()
    model = vitviz.load_model("mae-tiny", device="cpu")
    print(f"budget {settings.get('VITVIZ_CACHE_BUDGET') / 2**20:.0f} MiB; load {open('/proc/loadavg').read().split()[:3]}")
    print("| image | sweep MiB | attention MiB | tokens MiB | other MiB | total MiB | RSS MiB | s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    peak = 0
    t0 = time.perf_counter()
    for i in range(args.images):
        rng = np.random.default_rng(i)
        photo = rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)
        sweep(model, photo, seed=0)
        vitviz.attention(model, photo)
        vitviz.layer_tokens(model, photo)
        vitviz.head_atlas(model, photo)
        use = cache.usage()
        peak = max(peak, use["total"])

        def mib(prefix: str) -> float:
            return sum(v for k, v in use.items() if k.startswith(prefix)) / 2**20

        other = use["total"] / 2**20 - mib("mae.sweep") - mib("vitviz.explain.attention") - mib("vitviz.features.layer_tokens")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"| {i + 1} | {mib('mae.sweep'):.1f} | {mib('vitviz.explain.attention'):.1f} | "
              f"{mib('vitviz.features.layer_tokens'):.1f} | {other:.1f} | {use['total'] / 2**20:.1f} | "
              f"{rss:.0f} | {time.perf_counter() - t0:.0f} |", flush=True)
    print(f"\nlargest total held: {peak / 2**20:.1f} MiB of a {budget / 2**20:.0f} MiB budget "
          f"({'within' if peak <= budget else 'OVER'} the budget)")


if __name__ == "__main__":
    main()
